"""An agent whose summary is good but whose node answers are broken, as a process of its own:
``python tests/fleet/hostile_node_agent.py HOST DOCS READY``. ``DOCS`` is a JSON file of a real
agent's answers for its node ``real-1`` (``summary``, ``view``: ``/nodes/real-1.json``,
``detail``: ``/api/v1/nodes/real-1``, ``nrt``, ``restart``, ``dryrun``); under ``/<mode>/`` it
serves them for node ``<mode>-1`` with the one document of ``MODES[mode]`` broken. The port is
written to ``READY`` once it listens. Standard library only: it stands for any program at an
agent's address.
"""

from __future__ import annotations

import copy
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DOCS: dict[str, Any] = {}
DEEP = '{"a": ' * 1000 + "1" + "}" * 1000
FREE_DEEP: dict[str, Any] = {}
_inner = FREE_DEEP
for _ in range(40):
    _inner["a"] = {}
    _inner = _inner["a"]

#: mode -> (the document it breaks, how: a JSON path and the raw JSON text put there).
MODES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "hugeint": ("view", ("summary", "pods"), "9" * 4300),
    "nan": ("detail", ("summary", "cpus", "total"), "NaN"),
    "deep": ("view", ("kubeletConfig",), DEEP),
    "longname": ("view", ("summary", "name"), json.dumps("x" * 5000)),
    "freedeep": ("detail", ("kubeletConfig",), json.dumps(FREE_DEEP)),
    "restartcount": ("restart", ("summary", "kept"), "-1"),
    "restartgates": ("restart", ("featureGates",), json.dumps({"PodLevelResources": "yes"})),
    "nrtkind": ("nrt", ("kind",), json.dumps("Pod")),
    "dryrunname": ("dryrun", ("results", 0, "pod", "name"), json.dumps("n" * 1000)),
}


def document(mode: str, kind: str) -> bytes:
    doc = copy.deepcopy(DOCS[kind])
    if kind == "summary":
        doc["nodes"] = [dict(doc["nodes"][0], node=f"{mode}-1")]
    broken, path, raw = MODES[mode]
    if kind != broken:
        return json.dumps(doc).encode()
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = "@RAW@"
    return json.dumps(doc).replace('"@RAW@"', raw).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _kind(self) -> tuple[str, str | None]:
        mode, _, rest = self.path.strip("/").partition("/")
        rest = rest.split("?")[0]
        node = f"{mode}-1"
        kinds = {
            "api/v1/summary": "summary",
            f"nodes/{node}.json": "view",
            f"api/v1/nodes/{node}": "detail",
            f"api/v1/nodes/{node}/noderesourcetopology": "nrt",
            f"api/v1/nodes/{node}/restart": "restart",
            f"api/v1/nodes/{node}/pods": "dryrun",
        }
        return mode, kinds.get(rest)

    def do_GET(self) -> None:
        mode, kind = self._kind()
        if mode in MODES and kind in ("summary", "view", "detail", "nrt"):
            self._send(200, document(mode, kind))
        else:
            self._send(404, b'{"error": {"reason": "NotFound", "message": "no such thing"}}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        mode, kind = self._kind()
        if mode in MODES and kind in ("restart", "dryrun"):
            self._send(200, document(mode, kind))
        else:
            self._send(404, b'{"error": {"reason": "NotFound", "message": "no such thing"}}')

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


def main() -> None:
    host, docs, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    DOCS.update(json.loads(docs.read_text()))
    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    tmp = ready.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.rename(ready)
    server.serve_forever()


if __name__ == "__main__":
    main()

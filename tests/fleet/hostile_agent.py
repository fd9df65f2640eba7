"""A hostile agent, as a process of its own: ``python tests/fleet/hostile_agent.py HOST BASE
READY``. It serves, under ``/<mode>/``, an agent's three documents (``api/v1/summary``, a node's
dry run and its upgrade check) broken in one way per mode, starting from ``BASE`` (a real agent's
summary document, JSON), and writes its port to ``READY`` once it listens. Standard library only:
it stands for any program at an agent's address, not for Numascope.

Modes (``MODES``): numbers past every limit, nesting 950 deep, ``NaN``/``Infinity``, huge
strings, negative counts, wrong types, more nodes than the hub takes from one agent, the hub's own ``sim-*`` names, a node name
another agent has, a body trickled a byte a second, and hostile dry-run and upgrade answers
behind a good summary, a dry run whose allocation has a size that is not a number, a dry run that takes 8 s.
None of these has a watch stream (404), so a hub polls them.

Node modes (``NODE_MODES``, with ``DOCS`` before ``READY``: a JSON file of a real agent's
answers for its node ``real-1`` — ``summary``, ``view`` (``/nodes/real-1.json``), ``detail``
(``/api/v1/nodes/real-1``), ``nrt``, ``restart``, ``dryrun``) serve those answers for node
``<mode>-1``, a good summary and the one document the mode names broken, for the hub's pages of
a remote node.

Watch modes (``WATCH_MODES``) serve ``api/v1/summary/watch`` instead, broken in one way each:
garbage, a line with no end, ``NaN`` in a node, an unknown event type, an event trickled a byte a
second, a stream that opens and says nothing, and an ``ERROR`` event that is not ``410``.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODES = (
    "bignum",
    "deep",
    "nan",
    "infinity",
    "hugestring",
    "negative",
    "wrongtype",
    "manynodes",
    "simname",
    "duplicate",
    "trickle",
    "evilanswers",
    "badalloc",
    "slowfit",
)
WATCH_MODES = (
    "watchgarbage",
    "watchhuge",
    "watchnan",
    "watchtype",
    "watchtrickle",
    "watchsilent",
    "watcherror",
)
BASE: dict[str, Any] = {}
DOCS: dict[str, Any] = {}
_FREE_DEEP: dict[str, Any] = {}
_inner = _FREE_DEEP
for _ in range(40):
    _inner["a"] = {}
    _inner = _inner["a"]
#: mode -> (the node document it breaks, the JSON path, the raw JSON text put there).
NODE_MODES: dict[str, tuple[str, tuple[str | int, ...], str]] = {
    "nodebignum": ("view", ("summary", "pods"), "9" * 4300),
    "nodenan": ("detail", ("summary", "cpus", "total"), "NaN"),
    "nodedeep": ("view", ("kubeletConfig",), '{"a": ' * 1000 + "1" + "}" * 1000),
    "nodelongname": ("view", ("summary", "name"), json.dumps("x" * 5000)),
    "nodefreedeep": ("detail", ("kubeletConfig",), json.dumps(_FREE_DEEP)),
    "restartcount": ("restart", ("summary", "kept"), "-1"),
    "restartgates": ("restart", ("featureGates",), json.dumps({"PodLevelResources": "yes"})),
    "nrtkind": ("nrt", ("kind",), json.dumps("Pod")),
    "dryrunname": ("dryrun", ("results", 0, "pod", "name"), json.dumps("n" * 1000)),
}
#: Nodes the ``manynodes`` agent claims (the test's hub takes fewer from one agent).
MANY = 60


def _node(name: str) -> dict[str, Any]:
    node = copy.deepcopy(BASE["nodes"][0])
    node["node"] = name
    return node


def summary(mode: str) -> bytes:
    """The summary document of ``mode`` (raw JSON text where JSON cannot say it)."""
    doc = copy.deepcopy(BASE)
    node = _node(f"{mode}-1")
    doc["nodes"] = [node]
    raw: dict[str, str] = {}
    if mode == "bignum":
        node["numa"][0]["exclusive"] = "@BIG@"
        raw["@BIG@"] = "9" * 4300
    elif mode == "deep":
        node["policies"] = "@DEEP@"
        raw["@DEEP@"] = '{"a": ' * 950 + "1" + "}" * 950
    elif mode == "nan":
        node["featureGates"]["PodLevelResources"] = "@NAN@"
        raw["@NAN@"] = "NaN"
    elif mode == "infinity":
        node["topology"]["cpus"] = "@INF@"
        raw["@INF@"] = "Infinity"
    elif mode == "hugestring":
        node["findings"] = [{"code": "x", "severity": "error", "message": "m" * 200_000}]
    elif mode == "negative":
        node["pods"] = -5
    elif mode == "wrongtype":
        node["numa"][0]["available"] = "lots"
    elif mode == "manynodes":
        doc["nodes"] = [_node(f"many-{i}") for i in range(MANY)]
    elif mode == "simname":
        node["node"] = "sim-0000"
    elif mode == "duplicate":
        node["node"] = BASE["nodes"][0]["node"]
    text = json.dumps(doc)
    for marker, value in raw.items():
        text = text.replace(json.dumps(marker), value)
    return text.encode()


def watch_lines(mode: str) -> list[bytes]:
    """The lines of the watch stream of ``mode`` (``[]``: headers, then silence)."""
    rv = "abc-1"
    added = {"type": "ADDED", "resourceVersion": rv, "object": _node(f"{mode}-1")}
    if mode == "watchgarbage":
        return [b"\x00\xffthis is not an event\n"]
    if mode == "watchhuge":
        return [b'{"type": "ADDED", "x": "' + b"x" * (4 * 1024 * 1024)]  # never ends
    if mode == "watchnan":
        text = json.dumps(added).replace('"cpus": ', '"cpus": NaN, "was": ', 1)
        return [text.encode() + b"\n"]
    if mode == "watchtype":
        return [json.dumps({"type": "EXPLODED", "resourceVersion": rv}).encode() + b"\n"]
    if mode == "watchtrickle":
        return [json.dumps(added).encode() + b"\n"]
    if mode == "watcherror":
        status = {"code": 500, "reason": "InternalError", "message": "boom"}
        error = {"type": "ERROR", "resourceVersion": rv, "status": status}
        return [json.dumps(error).encode() + b"\n"]
    return []


def node_document(mode: str, kind: str) -> bytes:
    """Document ``kind`` of node ``<mode>-1``: broken where ``NODE_MODES[mode]`` says."""
    doc = copy.deepcopy(DOCS[kind])
    if kind == "summary":
        doc["nodes"] = [dict(doc["nodes"][0], node=f"{mode}-1")]
    broken, path, raw = NODE_MODES[mode]
    if kind != broken:
        return json.dumps(doc).encode()
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = "@RAW@"
    return json.dumps(doc).replace('"@RAW@"', raw).encode()


def node_kind(mode: str, rest: str) -> str | None:
    """Which node document the path ``rest`` (after ``/<mode>/``) asks for."""
    node = f"{mode}-1"
    return {
        "api/v1/summary": "summary",
        f"nodes/{node}.json": "view",
        f"api/v1/nodes/{node}": "detail",
        f"api/v1/nodes/{node}/noderesourcetopology": "nrt",
        f"api/v1/nodes/{node}/restart": "restart",
        f"api/v1/nodes/{node}/pods": "dryrun",
        f"api/v1/nodes/{node}/watch": "watch",
    }.get(rest.split("?")[0])


EVIL_DRY_RUN = (
    b'{"node": "evilanswers-1", "admitted": true, "score": NaN, "results": [{"x": 1e400}]}'
)
#: A dry run whose allocation a page would render: a size that is not a number.
BAD_ALLOCATION = json.dumps(
    {
        "node": "badalloc-1",
        "admitted": True,
        "results": [
            {
                "admitted": True,
                "allocation": {
                    "qosClass": "Guaranteed",
                    "podSharedCpuset": "",
                    "containers": [
                        {
                            "name": "c",
                            "kind": "app",
                            "isolation": "container",
                            "cpuset": "1-2",
                            "memory": [{"numaAffinity": [0], "type": "memory", "size": "huge"}],
                        }
                    ],
                },
            }
        ],
    }
).encode()
EVIL_UPGRADE = b'{"verdict": "compatible", "deep": ' + b"[" * 950 + b"]" * 950 + b"}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        mode, _, rest = self.path.strip("/").partition("/")
        if mode in NODE_MODES:
            kind = node_kind(mode, rest)
            if kind in ("summary", "view", "detail", "nrt"):
                self._send(200, node_document(mode, kind))
            elif kind == "watch":  # a good token: the page's own document decides
                self._send(200, b'{"token": "t-1"}')
            else:
                self._send(404, b'{"error": {"reason": "NotFound", "message": "no such thing"}}')
        elif mode == "evilanswers" and rest.startswith("api/v1/nodes/"):
            self._send(200, EVIL_UPGRADE)
        elif rest.startswith("api/v1/summary/watch") and mode in WATCH_MODES:
            self._stream(mode)
        elif rest == "api/v1/summary" and mode in MODES:
            body = summary(mode)
            if mode == "trickle":
                self._trickle(body)
            else:
                self._send(200, body)
        else:
            self._send(404, b'{"error": {"reason": "NotFound", "message": "no such thing"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        mode, _, rest = self.path.strip("/").partition("/")
        if mode in NODE_MODES and node_kind(mode, rest) in ("restart", "dryrun"):
            self._send(200, node_document(mode, str(node_kind(mode, rest))))
        elif self.path.startswith("/evilanswers/"):
            self._send(200, EVIL_DRY_RUN)
        elif self.path.startswith("/badalloc/"):
            self._send(200, BAD_ALLOCATION)
        elif self.path.startswith("/slowfit/"):
            time.sleep(8.0)  # past any deadline the hub gives a dry run
            self._send(200, BAD_ALLOCATION)
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

    def _stream(self, mode: str) -> None:
        """A watch stream's headers, then its lines (no length: the body ends with the
        connection), kept open at most two minutes."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            for line in watch_lines(mode):
                if mode == "watchtrickle":
                    for i in range(min(len(line), 120)):
                        self.wfile.write(line[i : i + 1])
                        self.wfile.flush()
                        time.sleep(1.0)
                else:
                    self.wfile.write(line)
                    self.wfile.flush()
            time.sleep(120.0)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _trickle(self, body: bytes) -> None:
        """Headers at once, then one byte a second (each read well within any read timeout)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            for i in range(min(len(body), 120)):  # stops by itself after two minutes
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(1.0)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def main() -> None:
    host, base, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[-1])
    BASE.update(json.loads(base.read_text()))
    if len(sys.argv) > 4:
        DOCS.update(json.loads(Path(sys.argv[3]).read_text()))
    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    tmp = ready.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.rename(ready)
    server.serve_forever()


if __name__ == "__main__":
    main()

"""A small Kubernetes API server for the publisher's tests: cluster-scoped custom objects over
real HTTP (or HTTPS) on 127.0.0.1, so the client (``app.adapters.kube_api``) is exercised as it
is (its URLs, JSON bodies, TLS, error decoding). No API server can run here, so this one keeps what the
real one does for the calls Numascope makes:

* ``GET /apis/G/V/PLURAL/NAME``: the object, or a ``NotFound`` Status (404);
* ``POST /apis/G/V/PLURAL``: stores it with a new ``resourceVersion`` (201), ``AlreadyExists``
  (409) when the name is taken;
* ``PUT /apis/G/V/PLURAL/NAME``: optimistic concurrency as the API server does it: the body's
  ``metadata.resourceVersion`` must be the stored one, else ``Conflict`` (409); a body without
  one is refused (422, as for a custom resource update).

``others`` answers a few more paths to GET (a Namespace). Only the served group/version/plural
answers writes; anything else is the API server's 404 for an
unknown resource (what a cluster without the NodeResourceTopology CRD answers). Every request
is recorded; ``before`` hooks let a test act as a concurrent writer or force an error status.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Call:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


#: A hook sees the call before it is served; returning ``(code, body)`` answers that instead.
Hook = Callable[["FakeKubeAPI", Call], tuple[int, dict[str, Any]] | None]


@dataclass
class FakeKubeAPI:
    group: str
    version: str
    plural: str
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Other objects answered by ``GET path`` (``/api/v1/namespaces/numascope``).
    others: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    url: str = ""
    _rv: int = 100
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}/{self.plural}"

    def next_version(self) -> str:
        self._rv += 1
        return str(self._rv)

    def store(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Keep ``obj`` under its name with a fresh ``resourceVersion`` (a writer's change)."""
        stored = json.loads(json.dumps(obj))
        meta = stored.setdefault("metadata", {})
        meta["resourceVersion"] = self.next_version()
        meta.setdefault("uid", f"uid-{meta['name']}")
        self.objects[meta["name"]] = stored
        return stored

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def serve(self, call: Call) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append(call)
            for hook in list(self.hooks):
                answer = hook(self, call)
                if answer is not None:
                    return answer
            return self._serve(call)

    def _serve(self, call: Call) -> tuple[int, dict[str, Any]]:
        path = call.path.split("?", 1)[0]
        if call.method == "GET" and path in self.others:
            return 200, self.others[path]
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        name = path[len(self.prefix) + 1 :]
        what = f'{self.plural}.{self.group} "{name}"'
        if call.method == "GET" and name:
            if name not in self.objects:
                return 404, status(404, "NotFound", f"{what} not found")
            return 200, self.objects[name]
        if call.method == "POST" and not name:
            body = call.body if isinstance(call.body, dict) else {}
            new = body.get("metadata", {}).get("name", "")
            if new in self.objects:
                return 409, status(
                    409, "AlreadyExists", f'{self.plural}.{self.group} "{new}" already exists'
                )
            return 201, self.store(body)
        if call.method == "PUT" and name:
            if name not in self.objects:
                return 404, status(404, "NotFound", f"{what} not found")
            body = call.body if isinstance(call.body, dict) else {}
            rv = body.get("metadata", {}).get("resourceVersion")
            if not rv:
                return 422, status(
                    422,
                    "Invalid",
                    f"{what} is invalid: metadata.resourceVersion: Invalid value: 0x0: "
                    "must be specified for an update",
                )
            if rv != self.objects[name]["metadata"]["resourceVersion"]:
                return 409, status(
                    409,
                    "Conflict",
                    f"Operation cannot be fulfilled on {what}: the object has been modified; "
                    "please apply your changes to the latest version and try again",
                )
            return 200, self.store(body)
        return 405, status(405, "MethodNotAllowed", "the server does not allow this method")


class _Handler(BaseHTTPRequestHandler):
    api: FakeKubeAPI

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        call = Call(self.command, self.path, body, {k.lower(): v for k, v in self.headers.items()})
        code, doc = self.api.serve(call)
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


@contextmanager
def running(
    group: str, version: str, plural: str, *, tls: tuple[Path, Path] | None = None
) -> Iterator[FakeKubeAPI]:
    """A fake API server on a free 127.0.0.1 port, stopped on exit; HTTPS with
    ``tls=(certificate, key)``, as a real API server (and in-cluster clients) speak."""
    api = FakeKubeAPI(group, version, plural)
    handler = type("Handler", (_Handler,), {"api": api})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    api.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def kubeconfig(url: str, token: str = "test-token") -> str:
    """A kubeconfig pointing at ``url`` with a bearer token (what a pod's config carries)."""
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: fake\n  cluster:\n    server: {url}\n"
        f"users:\n- name: agent\n  user:\n    token: {token}\n"
        "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: agent\n"
        "current-context: fake\n"
    )


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA (``openssl``), and its key."""
    cert, key = directory / "apiserver.crt", directory / "apiserver.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def namespace(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid}}

"""The fleet's real processes: three agents on 127.0.0.2-4 (one port), a fourth the tests may
kill, a misbehaving fake agent (garbage, huge bodies, wrong types, silence; without a watch
stream, so it is polled) served from the test, and a hub following all of them. Module-scoped: they start once per test module."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from app.services.demo import bubble_pod, classic_pod
from tests.helpers import POD_SCOPE, SMALL
from tests.processes import Server, agent_hosts, free_port, server_env, wait_for

CONTAINER_SCOPE = """\
cpuManagerPolicy: static
cpuManagerPolicyOptions: {full-pcpus-only: "true"}
memoryManagerPolicy: Static
topologyManagerPolicy: restricted
topologyManagerScope: container
kubeReserved: {cpu: "1", memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
- numaNode: 0
  limits: {memory: 2148Mi}
"""
#: Per agent: its nodes as (name, preset, kubelet config, release, pods).
LAYOUT = (
    (
        (
            "alpha-1",
            SMALL,
            POD_SCOPE,
            "1.37",
            (bubble_pod("db", "prod", 4, {"main": 2}, ("side",)),),
        ),
    ),
    (
        ("beta-1", SMALL, CONTAINER_SCOPE, "1.36", (classic_pod("web", "prod", "2", "1Gi"),)),
        ("beta-2", "server-2s-4numa-128t", POD_SCOPE, "1.38", ()),
    ),
    (("gamma-1", SMALL, CONTAINER_SCOPE, "1.35", (classic_pod("big", "batch", "4", "2Gi"),)),),
)
#: The fake agent's behaviours, one per URL path prefix.
FAKE_MODES = ("garbage", "huge", "wrongtypes", "silent", "notfound")
HUB_ENV = {
    "hub_poll_interval": "0.3",
    "hub_agent_timeout": "2.0",
    "hub_max_body_bytes": str(256 * 1024),
}


class FakeAgent(BaseHTTPRequestHandler):
    """Answers like a broken agent, by the first path segment."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        mode = self.path.strip("/").split("/")[0]
        if self.path.split("?")[0].endswith("/summary/watch"):
            # An agent of before the watch stream: the hub polls it (the polled path's errors).
            self._send(404, b'{"error": {"reason": "NotFound", "message": "no watch"}}')
        elif mode == "garbage":
            self._send(200, b"\x00\xffthis is not json at all")
        elif mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # no Content-Length: the hub must stop reading at its cap
            try:
                for _ in range(64):  # 64 MiB if nobody stops reading
                    self.wfile.write(b" " * (1024 * 1024))
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif mode == "wrongtypes":
            row = dict.fromkeys(("numaNode", "total", "reserved", "nodeShared", "podShared"), 0)
            row |= {"exclusive": 0, "available": "lots"}
            doc = {"nodes": [{"node": "fake-1", "numa": [row]}]}
            self._send(200, json.dumps(doc).encode())
        elif mode == "silent":
            time.sleep(5.0)  # longer than the hub's timeout
            self._send(200, b"{}")
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


@dataclass
class Cluster:
    agents: list[Server]  # the three that stay up
    victim: Server  # the one a test may kill
    hub: Server
    fake_urls: dict[str, str]

    def all_agents(self) -> list[Server]:
        return [*self.agents, self.victim]

    def fleet(self) -> dict[str, object]:
        return dict(self.hub.json("/api/v1/fleet"))

    def agent_status(self) -> dict[str, str]:
        return {a["url"]: a["status"] for a in self.fleet()["agents"]}  # type: ignore[index]


def start_agents(tmp: Path, hosts: list[str], port: int, **env: str) -> list[Server]:
    """Agents launched together (they start in parallel), then waited for."""
    servers = [
        Server(
            tmp / f"agent-{h}", server_env(tmp / f"agent-{h}", **env), host=h, port=port
        ).launch()
        for h in hosts
    ]
    try:
        for s in servers:
            s.wait_ready()
    except Exception:
        for s in servers:
            s.close()
        raise
    return servers


@pytest.fixture(scope="module")
def fake_agent() -> Iterator[dict[str, str]]:
    server = ThreadingHTTPServer(("127.0.0.20", 0), FakeAgent)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-agent", daemon=True)
    thread.start()
    base = f"http://127.0.0.20:{server.server_address[1]}"
    yield {mode: f"{base}/{mode}" for mode in FAKE_MODES}
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, fake_agent: dict[str, str]
) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("fleet")
    hosts = agent_hosts(2, 4)
    port = free_port(hosts)
    servers = start_agents(tmp, hosts, port)
    hub: Server | None = None
    try:
        for server, nodes in zip(servers, LAYOUT, strict=False):
            for name, preset, config, release, pods in nodes:
                server.create_node(name, preset, config, release)
                for pod in pods:
                    r = server.admit(name, pod)
                    assert r.status_code == 201 and r.json()["admitted"], r.text
        servers[3].create_node("delta-1", SMALL, POD_SCOPE, "1.37")
        urls = [s.url for s in servers] + list(fake_agent.values())
        hub_host = "127.0.0.10"
        hub_tmp = tmp / "hub"
        args = ["--hub", "--agents", ",".join(urls)]
        hub = Server(hub_tmp, server_env(hub_tmp, **HUB_ENV), args, host=hub_host).start()
        c = Cluster(servers[:3], servers[3], hub, fake_agent)
        real = {s.url for s in servers}
        try:
            wait_for(lambda: all(c.agent_status().get(u) == "ok" for u in real))
        except AssertionError:
            print(c.fleet()["agents"], real, hub.output())
            raise
        yield c
    finally:
        if hub is not None:
            hub.close()
        for s in servers:
            s.close()

"""The fan-in by watch streams, with real processes: two real agents (one behind a TCP proxy the
test can cut, as a network blip or a hub-side disconnect would), a hostile agent process whose
watch streams are broken in one way each (``tests/fleet/hostile_agent.py``, ``WATCH_MODES``) and
a real hub process that polls only every 30 s, so whatever it shows within seconds came by the
streams.

The agent's stream itself: every node as ``ADDED`` then an ``initialEventsEnd`` bookmark, a
change as ``MODIFIED``, a deleted node as ``DELETED``, a resume from a version that sends only
what changed since, ``410 Expired`` for a version of another process, 422 for a malformed one.
The hub: an admission shows in ``/api/v1/fleet`` at once, with no poll at all; the fleet's
ETag stays put across bookmarks; after a cut it resumes from its version (the agent's bytes
after the cut hold no ``ADDED``); a killed agent turns unreachable and, restarted (a new
process: its versions are unknown, so the hub lists again), is followed again; each hostile
stream makes its agent unreachable, naming the field where one is to blame, and nothing 5xx.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.services.demo import classic_pod
from tests.fleet.conftest import start_agents
from tests.fleet.hostile_agent import WATCH_MODES
from tests.helpers import POD_SCOPE, SMALL
from tests.processes import Server, agent_hosts, free_port, server_env, wait_for

HOSTILE = Path(__file__).with_name("hostile_agent.py")
BOOKMARK = 0.5
HUB_ENV = {
    "hub_poll_interval": "30",
    "hub_watch_bookmark": str(BOOKMARK),
    "hub_agent_timeout": "2.0",
    "hub_max_body_bytes": str(256 * 1024),
}
#: Per hostile watch mode: the field named (``None``: none to blame) and a text of the error.
HOSTILE_ERRORS: dict[str, tuple[str | None, str]] = {
    "watchgarbage": ("event", "not JSON"),
    "watchhuge": (None, "over the 262144-byte cap"),
    "watchnan": ("object.topology.cpus", "whose object.topology.cpus breaks the contract"),
    "watchtype": ("type", "whose type breaks the contract"),
    "watchtrickle": (None, f"no whole event within {3 * BOOKMARK:g} s"),
    "watchsilent": (None, f"no whole event within {3 * BOOKMARK:g} s"),
    "watcherror": ("status", "500 InternalError: boom"),
}


class Proxy:
    """A TCP proxy on ``host`` to ``target`` that keeps what the target sent on each
    connection, and can cut every open connection at once."""

    def __init__(self, host: str, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server((host, 0))
        self.url = f"http://{host}:{self.listener.getsockname()[1]}"
        self.received: list[bytearray] = []  # per connection: the target's bytes
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="proxy").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            got = bytearray()
            with self._lock:
                self.received.append(got)
                self._open += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, got), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, keep: bytearray | None) -> None:
        try:
            while data := src.recv(65536):
                if keep is not None:
                    keep += data
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            sockets, self._open = self._open, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()


@dataclass
class Watched:
    agents: list[Server]  # [behind the proxy, direct]
    proxy: Proxy
    hub: Server
    hostile: dict[str, str]  # mode -> URL
    urls: list[str] = field(default_factory=list)  # the hub's URL of each real agent

    def fleet(self) -> dict[str, Any]:
        return dict(self.hub.json("/api/v1/fleet"))

    def agent(self, url: str) -> dict[str, Any]:
        return next(a for a in self.fleet()["agents"] if a["url"] == url)

    def node(self, name: str) -> dict[str, Any] | None:
        return next((n for n in self.fleet()["nodes"] if n["node"] == name), None)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    tmp = tmp_path_factory.mktemp("watch")
    hosts = agent_hosts(41, 2)
    agents = start_agents(tmp, hosts, free_port(hosts), allowed_hosts="127.0.0.43")
    proc: subprocess.Popen[bytes] | None = None
    hub: Server | None = None
    proxy = Proxy("127.0.0.43", (agents[0].host, agents[0].port))
    try:
        agents[0].create_node("wa-1", SMALL, POD_SCOPE, "1.37")
        agents[1].create_node("wb-1", SMALL, POD_SCOPE, "1.37")
        agents[1].create_node("wb-2", SMALL, POD_SCOPE, "1.36")
        base = tmp / "base.json"
        base.write_text(agents[1].client.get("/api/v1/summary").text)
        ready = tmp / "hostile.port"
        proc = subprocess.Popen(
            [sys.executable, str(HOSTILE), "127.0.0.45", str(base), str(ready)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(ready.exists)
        root = f"http://127.0.0.45:{ready.read_text()}"
        hostile = {mode: f"{root}/{mode}" for mode in WATCH_MODES}
        urls = [proxy.url, agents[1].url]
        hub_tmp = tmp / "hub"
        args = ["--hub", "--agents", ",".join([*urls, *hostile.values()])]
        hub = Server(hub_tmp, server_env(hub_tmp, **HUB_ENV), args, host="127.0.0.44").start()
        w = Watched(agents, proxy, hub, hostile, urls)
        try:
            wait_for(lambda: all(w.agent(u)["status"] == "ok" for u in urls))
        except AssertionError:
            print(w.fleet()["agents"], hub.output())
            raise
        yield w
    finally:
        if hub is not None:
            hub.close()
        if proc is not None:
            proc.kill()
            proc.wait()
        proxy.close()
        for a in agents:
            a.close()


def read_events(
    lines: Iterator[str], until: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The events of an open stream's lines up to and including the first that ``until``
    accepts (or to the stream's end)."""
    out = []
    for line in lines:
        if line:
            event = json.loads(line)
            out.append(event)
            if until(event):
                return out
    return out


def _stream(agent: Server, rv: str = "") -> Any:
    params = {"resourceVersion": rv, "bookmarkSeconds": "0.3"}
    return agent.client.stream("GET", "/api/v1/summary/watch", params=params, timeout=10.0)


def _kinds(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["type"], (e.get("object") or {}).get("node")) for e in events]


def _ends_list(e: dict[str, Any]) -> bool:
    return bool(e.get("initialEventsEnd"))


def _is_change(e: dict[str, Any]) -> bool:
    return e["type"] != "BOOKMARK"


def test_the_agent_lists_streams_changes_and_resumes_from_a_version(watched: Watched) -> None:
    agent = watched.agents[1]
    with _stream(agent) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = r.iter_lines()
        listed = read_events(lines, _ends_list)
        assert sorted(_kinds(listed)[:-1]) == [("ADDED", "wb-1"), ("ADDED", "wb-2")]
        pods = {e["object"]["node"]: e["object"]["pods"] for e in listed[:-1]}
        assert agent.admit("wb-1", classic_pod("w1", "prod", "1", "1Gi")).status_code == 201
        change = read_events(lines, _is_change)[-1]
        assert (change["type"], change["object"]["node"]) == ("MODIFIED", "wb-1")
        assert change["object"]["pods"] == pods["wb-1"] + 1
        rv = change["resourceVersion"]
    # Disconnected: a change meanwhile, then a resume from the version reached.
    assert agent.admit("wb-2", classic_pod("w2", "prod", "1", "1Gi")).status_code == 201
    with _stream(agent, rv) as r:
        resumed = read_events(r.iter_lines(), lambda e: e["type"] == "BOOKMARK")
    assert _kinds(resumed) == [("MODIFIED", "wb-2"), ("BOOKMARK", None)]
    assert resumed[0]["object"]["pods"] == pods["wb-2"] + 1
    # A node deleted while someone watches.
    agent.create_node("wb-3", SMALL, POD_SCOPE, "1.38")
    wait_for(lambda: watched.node("wb-3"))
    rv = _last_version(agent)
    assert agent.client.delete("/api/v1/nodes/wb-3").status_code in (200, 204)
    with _stream(agent, rv) as r:
        gone = read_events(r.iter_lines(), _is_change)[-1]
    assert (gone["type"], gone["object"]["node"]) == ("DELETED", "wb-3")
    wait_for(lambda: watched.node("wb-3") is None)


def _last_version(agent: Server) -> str:
    with _stream(agent) as r:
        return str(read_events(r.iter_lines(), _ends_list)[-1]["resourceVersion"])


def test_a_version_of_another_process_is_expired_and_a_malformed_one_refused(
    watched: Watched,
) -> None:
    agent = watched.agents[1]
    with _stream(agent, "deadbeef-1") as r:
        events = read_events(r.iter_lines(), lambda e: False)  # the agent ends the stream
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["status"]["code"] == 410 and events[0]["status"]["reason"] == "Expired"
    bad = agent.client.get("/api/v1/summary/watch", params={"resourceVersion": "x y"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "resourceVersion"
    bad = agent.client.get("/api/v1/summary/watch", params={"bookmarkSeconds": "0"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "bookmarkSeconds"


def _pods(w: Watched, node: str) -> int:
    found = w.node(node)
    return -1 if found is None else int(found["pods"])


def _metric(hub: Server, name: str) -> float:
    total = 0.0
    for line in hub.client.get("/metrics").text.splitlines():
        if line.startswith(name):
            total += float(line.split()[-1])
    return total


def test_an_admission_shows_in_the_fleet_at_once_without_polling(watched: Watched) -> None:
    before = _pods(watched, "wa-1")
    first = watched.hub.client.get("/api/v1/fleet")
    etag = first.headers["etag"]
    time.sleep(4 * BOOKMARK)  # bookmarks arrive: the fleet does not change
    again = watched.hub.client.get("/api/v1/fleet")
    # The real agents' rows and entries (lastSeen too) are as they were; only a hostile
    # agent's error text may have moved on a busy machine (a connect timing out instead).
    hostile = set(watched.hostile.values())
    real = [[a for a in r.json()["agents"] if a["url"] not in hostile] for r in (first, again)]
    assert real[0] == real[1] and first.json()["nodes"] == again.json()["nodes"]
    if first.json()["agents"] == again.json()["agents"]:
        assert again.headers["etag"] == etag
    started = time.monotonic()
    assert watched.agents[0].admit("wa-1", classic_pod("f1", "prod", "1", "1Gi")).status_code == 201
    wait_for(lambda: _pods(watched, "wa-1") == before + 1)
    took = time.monotonic() - started
    assert took < 5.0, took  # the hub polls every 30 s: this came by the stream
    answer = watched.hub.client.get("/api/v1/fleet")
    assert answer.headers["etag"] != etag
    # Joined from rows encoded one by one, the bytes are the whole document's compact JSON.
    whole = json.dumps(answer.json(), separators=(",", ":"), sort_keys=True).encode()
    assert answer.content == whole
    assert _metric(watched.hub, "numascope_hub_poll_duration_seconds_count") == 0
    assert _metric(watched.hub, 'numascope_hub_watch_events_total{type="BOOKMARK"}') > 0


def test_after_a_cut_the_hub_resumes_and_is_sent_only_the_change(watched: Watched) -> None:
    proxy = watched.proxy
    before = _pods(watched, "wa-1")
    connections = len(proxy.received)
    proxy.cut()
    assert watched.agents[0].admit("wa-1", classic_pod("c1", "prod", "1", "1Gi")).status_code == 201
    wait_for(lambda: _pods(watched, "wa-1") == before + 1)
    assert len(proxy.received) > connections  # the hub reconnected through the proxy
    after = b"".join(proxy.received[connections:])
    assert b'"resourceVersion":"' in after
    assert b'"type":"MODIFIED"' in after
    assert b'"type":"ADDED"' not in after and b'"type":"ERROR"' not in after
    assert watched.agent(proxy.url)["status"] == "ok"


def test_a_killed_agent_turns_unreachable_and_is_followed_again_once_restarted(
    watched: Watched,
) -> None:
    agent = watched.agents[1]
    pods = _pods(watched, "wb-1")
    expired = _metric(watched.hub, 'numascope_hub_watch_events_total{type="ERROR"}')
    agent.kill9()
    wait_for(lambda: watched.agent(agent.url)["status"] == "unreachable")
    # (a reconnect racing the dying process may first read a reset)
    wait_for(lambda: "cannot connect" in watched.agent(agent.url)["error"])
    assert _pods(watched, "wb-1") == pods  # still listed, with its agent's status
    assert watched.node("wb-1")["status"] == "unreachable"  # type: ignore[index]
    agent.start()
    wait_for(lambda: watched.agent(agent.url)["status"] == "ok", timeout=30)
    # A new process: the hub's version is unknown there (410), so it listed again.
    assert _metric(watched.hub, 'numascope_hub_watch_events_total{type="ERROR"}') > expired
    assert _pods(watched, "wb-1") == pods and watched.node("wb-2") is not None
    assert agent.admit("wb-1", classic_pod("k1", "prod", "1", "1Gi")).status_code == 201
    wait_for(lambda: _pods(watched, "wb-1") == pods + 1)


def test_each_hostile_stream_makes_its_agent_unreachable_and_nothing_5xx(
    watched: Watched,
) -> None:
    def settled() -> dict[str, dict[str, Any]] | None:
        agents = {a["url"]: a for a in watched.fleet()["agents"]}
        mine = {mode: agents[url] for mode, url in watched.hostile.items()}
        return mine if all(a["status"] == "unreachable" for a in mine.values()) else None

    seen = wait_for(settled, timeout=30)
    for mode, (field_name, text) in HOSTILE_ERRORS.items():
        assert seen[mode]["field"] == field_name, (mode, seen[mode])
        assert text in seen[mode]["error"], (mode, seen[mode])
    names = {n["node"] for n in watched.fleet()["nodes"]}
    assert not any(name.startswith("watch") for name in names)
    for u in watched.urls:
        assert watched.agent(u)["status"] == "ok"
    for path in ("/fleet", "/fleet.json", "/api/v1/fleet", "/metrics"):
        r = watched.hub.client.get(path)
        assert r.status_code == 200, (path, r.text[:300])

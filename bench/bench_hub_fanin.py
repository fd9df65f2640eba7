"""Hub fan-in at fleet scale (issue 20): a real hub process following N agents' watch streams,
side by side with the same hub polling them (``hub_watch`` off: the polled path as before).

Run: .venv/bin/python bench/bench_hub_fanin.py [--agents 1000] [--samples 100] [--steady 20]
     [--modes watch,poll]

The agents are one fake-agent process of this script's own (``--fake``: asyncio, standard
library and the contracts only), one agent per loopback address 127.0.{10+i/250}.{1+i%250} on
one port, each with one node: ``GET /api/v1/summary`` with ETags (a 304 when unchanged) and
``GET /api/v1/summary/watch`` with the agent's watch semantics (initial list, resume from a
version, ``410`` for another epoch, bookmarks), or a 404 there in the polled run. A control
line (``change I``) on a second port bumps agent I's pod count. It serves at most 5,000 agents
and stops by itself after ``--lifetime`` seconds.

Figures per run: the time until every agent is ``ok``; hub CPU (process time, user + system)
per second and RSS at steady state (``--steady`` seconds, no changes); then ``--samples``
changes one after another, each from the control line to ``/api/v1/fleet`` showing it (the
bench asks with ``If-None-Match`` every 20 ms): p50 / p99 / worst, and the median time of a
full ``/api/v1/fleet`` answer after a change. Targets at 5,000 agents: p99 <= 2 s, hub <= 0.5
core, RSS <= 512 MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (the repository on sys.path)
import httpx

from app.contracts.summary import (
    SUMMARY_FORMAT,
    MemoryRow,
    NodeSummaryV1,
    NumaRow,
    Policies,
    TopologyBrief,
)
from tests.processes import Server, server_env

MAX_AGENTS = 5000
#: Seconds a change may take to show before the sample counts as never seen.
MAX_WAIT = 120.0
GIB = 1024**3


def agent_host(i: int) -> str:
    return f"127.0.{10 + i // 250}.{1 + i % 250}"


def _node(i: int, pods: int, version: int) -> dict[str, Any]:
    numa = [
        NumaRow(
            numa_node=n,
            total=32,
            reserved=1,
            node_shared=31 - pods,
            pod_shared=0,
            exclusive=pods,
            available=31 - pods,
            memory=[
                MemoryRow(resource="memory", allocatable=60 * GIB, reserved=GIB, free=59 * GIB)
            ],
        )
        for n in range(2)
    ]
    summary = NodeSummaryV1(
        node=f"fake-{i:05d}",
        source="simulation",
        simulated=True,
        release="1.37",
        policies=Policies(
            cpu_manager_policy="static",
            memory_manager_policy="Static",
            topology_manager_policy="single-numa-node",
            topology_manager_scope="pod",
            pod_level_resources=True,
            pod_level_resource_managers=True,
        ),
        topology=TopologyBrief(
            name="fake-2numa-64t", sockets=2, numa_nodes=2, cpus=64, memory_bytes=128 * GIB
        ),
        numa=numa,
        pods=pods,
        rejected=0,
        url=f"/nodes/fake-{i:05d}",
        version=version,
    )
    return summary.model_dump(mode="json", by_alias=True)


class FakeAgents:
    """N agents in one process (see the module docstring)."""

    def __init__(self, count: int, watch: bool) -> None:
        self.watch = watch
        self.epoch = secrets.token_hex(4)
        self.index = {agent_host(i): i for i in range(count)}
        self.pods = [0] * count
        self.version = [1] * count
        self.nodes = [json.dumps(_node(i, 0, 1)).encode() for i in range(count)]
        self.changed = [asyncio.Event() for _ in range(count)]

    def change(self, i: int) -> None:
        self.pods[i] = (self.pods[i] + 1) % 30
        self.version[i] += 1
        self.nodes[i] = json.dumps(_node(i, self.pods[i], self.version[i])).encode()
        self.changed[i].set()
        self.changed[i] = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        i = self.index.get(writer.get_extra_info("sockname")[0], 0)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *headers = head.decode("latin-1").split("\r\n")
                path = line.split(" ")[1]
                fields = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (h.partition(":") for h in headers if h)
                }
                if path.startswith("/api/v1/summary/watch"):
                    await self._watch(i, path, writer)
                    return
                if path.startswith("/api/v1/summary"):
                    etag = f'"{i}-{self.version[i]}"'
                    if fields.get("if-none-match") == etag:
                        writer.write(b"HTTP/1.1 304 Not Modified\r\nETag: " + etag.encode())
                        writer.write(b"\r\nContent-Length: 0\r\n\r\n")
                    else:
                        body = (
                            b'{"format":"' + SUMMARY_FORMAT.encode() + b'","agent":{"version":'
                            b'"bench","observe":false},"nodes":[' + self.nodes[i] + b"]}"
                        )
                        writer.write(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: "
                            + etag.encode()
                            + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                            + body
                        )
                else:
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, IndexError):
            pass
        except asyncio.CancelledError:  # the process's lifetime is over
            pass
        finally:
            writer.close()

    async def _watch(self, i: int, path: str, writer: asyncio.StreamWriter) -> None:
        if not self.watch:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()
            return
        query = dict(p.partition("=")[::2] for p in path.partition("?")[2].split("&") if p)
        bookmark = float(query.get("bookmarkSeconds") or 10)
        rv = query.get("resourceVersion", "")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n"
        )
        epoch, _, number = rv.rpartition("-")
        at = self.version[i]
        if not rv:
            writer.write(self._event("ADDED", i) + self._bookmark(i, end=True))
        elif epoch != self.epoch or not number.isdigit() or int(number) > at:
            writer.write(
                b'{"type":"ERROR","resourceVersion":"'
                + f"{self.epoch}-{at}".encode()
                + b'","status":{"code":410,"reason":"Expired","message":"unknown version"}}\n'
            )
            await writer.drain()
            return
        elif int(number) < at:
            writer.write(self._event("MODIFIED", i))
        await writer.drain()
        while True:
            changed = self.changed[i]
            try:
                await asyncio.wait_for(changed.wait(), bookmark)
                writer.write(self._event("MODIFIED", i))
            except TimeoutError:
                writer.write(self._bookmark(i))
            await writer.drain()

    def _event(self, kind: str, i: int) -> bytes:
        rv = f"{self.epoch}-{self.version[i]}"
        return (
            f'{{"type":"{kind}","resourceVersion":"{rv}","object":'.encode()
            + self.nodes[i]
            + b"}\n"
        )

    def _bookmark(self, i: int, end: bool = False) -> bytes:
        rv = f"{self.epoch}-{self.version[i]}"
        extra = ',"initialEventsEnd":true' if end else ""
        return f'{{"type":"BOOKMARK","resourceVersion":"{rv}"{extra}}}\n'.encode()

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                verb, _, arg = line.decode().strip().partition(" ")
                if verb == "change":
                    self.change(int(arg))
                    writer.write(f"{self.pods[int(arg)]}\n".encode())
                    await writer.drain()
        finally:
            writer.close()


async def fake_main(count: int, watch: bool, ready: Path, lifetime: float) -> None:
    agents = FakeAgents(count, watch)
    hosts = [agent_host(i) for i in range(count)]
    for _ in range(20):
        port = random.randint(20000, 60000)
        try:
            server = await asyncio.start_server(agents.serve, hosts, port, backlog=4096)
            break
        except OSError:
            continue
    else:
        raise SystemExit("no port free on every agent address")
    control = await asyncio.start_server(agents.control, "127.0.0.1", 0)
    control_port = control.sockets[0].getsockname()[1]
    tmp = ready.with_suffix(".tmp")
    tmp.write_text(f"{port} {control_port}")
    tmp.rename(ready)
    async with server, control:
        await asyncio.sleep(lifetime)


# -- the driver -------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(count: int, mode: str, samples: int, steady: float, tmp: Path) -> None:
    ready = tmp / f"fake-{mode}.ready"
    lifetime = 1800.0
    fake = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--fake",
            str(count),
            "--mode",
            mode,
            "--ready",
            str(ready),
            "--lifetime",
            str(lifetime),
        ],
        start_new_session=True,
    )
    hub: Server | None = None
    try:
        end = time.monotonic() + 60
        while not ready.exists():
            if time.monotonic() > end or fake.poll() is not None:
                raise SystemExit("the fake agents did not start")
            time.sleep(0.1)
        port, control_port = (int(x) for x in ready.read_text().split())
        urls = ",".join(f"http://{agent_host(i)}:{port}" for i in range(count))
        env = server_env(
            tmp / f"hub-{mode}",
            hub_agents=urls,
            hub_watch="true" if mode == "watch" else "false",
            log_level="error",
        )
        t0 = time.monotonic()
        hub = Server(tmp / f"hub-{mode}", env, ["--hub"], host="127.0.0.1").start()
        assert hub.proc is not None
        pid = hub.proc.pid
        fleet = Fleet(hub)
        if not fleet.wait(lambda doc: all(a["status"] == "ok" for a in doc["agents"]), 600):
            raise SystemExit("not every agent ok within 600 s")
        all_ok = time.monotonic() - t0
        time.sleep(5.0)
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(steady)
        cpu = (cpu_seconds(pid) - c0) / (time.monotonic() - w0)
        rss = rss_mib(pid)
        print(
            f"  {mode:5s} {count:5d} agents: all ok after {all_ok:5.1f} s | steady hub CPU "
            f"{cpu:5.3f} core, RSS {rss:6.1f} MiB",
            flush=True,
        )
        control = socket.create_connection(("127.0.0.1", control_port))
        lines = control.makefile("rwb")
        delays: list[float] = []
        for _ in range(samples):
            i = random.randrange(count)
            name = f"fake-{i:05d}"
            t = time.monotonic()
            lines.write(f"change {i}\n".encode())
            lines.flush()
            pods = int(lines.readline())
            seen = fleet.wait(lambda doc, n=name, p=pods: fleet.pods(doc, n) == p, MAX_WAIT)
            delays.append(time.monotonic() - t if seen else math.inf)
        control.close()
        fetch = statistics.median(fleet.fetches) * 1000 if fleet.fetches else 0.0
        print(
            f"  {mode:5s} {count:5d} agents: change -> /api/v1/fleet p50 "
            f"{pct(delays, 0.5):5.2f} s p99 {pct(delays, 0.99):5.2f} s worst {max(delays):5.2f} s "
            f"({samples}; inf: not seen within {MAX_WAIT:g} s) | full fleet answer "
            f"{fetch:6.1f} ms",
            flush=True,
        )
    except BaseException:
        if hub is not None:
            print(hub.output(tail=4000), file=sys.stderr)
        raise
    finally:
        if hub is not None:
            hub.close()
        fake.kill()
        fake.wait()


class Fleet:
    """``/api/v1/fleet`` asked with ``If-None-Match`` every 20 ms."""

    def __init__(self, hub: Server) -> None:
        self.client = httpx.Client(base_url=hub.url, timeout=60.0, trust_env=False)
        self.etag: str | None = None
        self.doc: dict[str, Any] = {}
        self.fetches: list[float] = []
        self.index: dict[str, int] = {}

    def get(self) -> dict[str, Any]:
        headers = {"If-None-Match": self.etag} if self.etag else {}
        t = time.perf_counter()
        r = self.client.get("/api/v1/fleet", headers=headers)
        if r.status_code not in (200, 304):
            raise SystemExit(f"/api/v1/fleet answered {r.status_code}: {r.text[:500]}")
        if r.status_code == 200:
            self.fetches.append(time.perf_counter() - t)
            self.etag = r.headers.get("etag")
            self.doc = r.json()
            self.index = {n["node"]: k for k, n in enumerate(self.doc["nodes"])}
        return self.doc

    def pods(self, doc: dict[str, Any], name: str) -> int:
        k = self.index.get(name)
        return -1 if k is None else int(doc["nodes"][k]["pods"])

    def wait(self, check: Any, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if check(self.get()):
                return True
            time.sleep(0.02)
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--steady", type=float, default=20.0)
    parser.add_argument("--modes", default="watch,poll")
    parser.add_argument("--fake", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="watch", help=argparse.SUPPRESS)
    parser.add_argument("--ready", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--lifetime", type=float, default=1800.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fake is not None:
        if not 0 < args.fake <= MAX_AGENTS:
            raise SystemExit(f"--fake: 1 to {MAX_AGENTS} agents")
        asyncio.run(fake_main(args.fake, args.mode == "watch", args.ready, args.lifetime))
        return
    if not 0 < args.agents <= MAX_AGENTS:
        raise SystemExit(f"--agents: 1 to {MAX_AGENTS}")
    print(f"hub fan-in over {args.agents} fake agents (one process, loopback addresses)")
    with tempfile.TemporaryDirectory(prefix="numascope-bench-fanin-") as name:
        for mode in args.modes.split(","):
            run(args.agents, mode, args.samples, args.steady, Path(name))


if __name__ == "__main__":
    main()

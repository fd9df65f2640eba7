"""Hub refresh over 20 real agents (issue 8): how long one polling round takes when every
agent's summary changed (full bodies), when none did (304s), and how soon a change on an agent
shows in a real hub process.

Run: .venv/bin/python bench/bench_hub_refresh.py [--agents N] [--rounds N]
Starts N ``numascope serve`` agents on 127.0.0.100… sharing one port (as a headless Service
gives pod IPs; ``tests/processes.py``), each with two simulated nodes and a few pods.
Then (1) an in-process ``Hub`` polls them: first round (every body), unchanged rounds (every
agent answers 304) and rounds after a pod was admitted on every agent, median and best of
``--rounds`` (the polled path: ``hub_watch`` off); (2) a hub process (``serve --hub``,
following the agents' watch streams): from a pod's admission on
one agent to the hub's ``GET /api/v1/fleet`` showing it, median and worst. Prints figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (the repository on sys.path)
from prometheus_client import CollectorRegistry

from app.services.demo import classic_pod
from app.services.fleet.hub import Hub
from app.settings import Settings
from tests.helpers import POD_SCOPE, SMALL
from tests.processes import Server, agent_hosts, free_port, server_env, wait_for


def start(tmp: Path, count: int) -> list[Server]:
    hosts = agent_hosts(100, count)
    port = free_port(hosts)
    agents = [Server(tmp / h, host=h, port=port).launch() for h in hosts]
    for a in agents:
        a.wait_ready()
    for i, a in enumerate(agents):
        for j in range(2):
            node = f"agent{i:02d}-n{j}"
            a.create_node(node, SMALL, POD_SCOPE, "1.37")
            for k in range(3):
                a.admit(node, classic_pod(f"p{k}", "apps", "1", "1Gi"))
    return agents


async def rounds(hub: Hub, agents: list[Server], count: int) -> None:
    t0 = time.perf_counter()
    await hub.poll_once()
    cold = time.perf_counter() - t0
    bad = [a.url for a in hub.agents.values() if a.status != "ok"]
    if bad:
        raise SystemExit(f"agents not ok after the first round: {bad}")
    nodes = sum(len(a.nodes) for a in hub.agents.values())
    print(f"  first round: {cold * 1000:7.1f} ms ({len(agents)} agents, {nodes} nodes)")
    unchanged = []
    for _ in range(count):
        for a in hub.agents.values():
            a.next_poll = 0.0
        t0 = time.perf_counter()
        await hub.poll_once()
        unchanged.append(time.perf_counter() - t0)
    print(
        f"  unchanged (304s): median {statistics.median(unchanged) * 1000:7.1f} ms  "
        f"min {min(unchanged) * 1000:7.1f} ms"
    )
    changed = []
    for r in range(count):
        for i, a in enumerate(agents):
            await asyncio.to_thread(
                a.admit, f"agent{i:02d}-n0", classic_pod(f"c{r}", "b", "1", "1Gi")
            )
        for a in hub.agents.values():
            a.next_poll = 0.0
        t0 = time.perf_counter()
        await hub.poll_once()
        changed.append(time.perf_counter() - t0)
    print(
        f"  every agent changed: median {statistics.median(changed) * 1000:7.1f} ms  "
        f"min {min(changed) * 1000:7.1f} ms"
    )
    await hub.stop()


def end_to_end(tmp: Path, agents: list[Server], samples: int) -> None:
    host = "127.0.0.99"
    env = server_env(tmp / "hub", hub_poll_interval="1.0")
    urls = ",".join(a.url for a in agents)
    hub = Server(tmp / "hub", env, ["--hub", "--agents", urls], host=host).start()
    try:
        wait_for(lambda: all(a["status"] == "ok" for a in hub.json("/api/v1/fleet")["agents"]))
        delays = []
        for s in range(samples):
            agent = agents[s % len(agents)]
            node = f"agent{s % len(agents):02d}-n1"
            mine = next(n for n in agent.json("/api/v1/summary")["nodes"] if n["node"] == node)
            t0 = time.perf_counter()
            agent.admit(node, classic_pod(f"e2e{s}", "e2e", "1", "1Gi"))

            def seen(node: str = node, before: int = mine["pods"]) -> bool:
                rows = hub.json("/api/v1/fleet")["nodes"]
                return any(n["node"] == node and n["pods"] == before + 1 for n in rows)

            wait_for(seen, timeout=30, step=0.02)
            delays.append(time.perf_counter() - t0)
        print(
            f"  hub process (watch streams): admission on an agent -> in /api/v1/fleet "
            f"median {statistics.median(delays):.2f} s, worst {max(delays):.2f} s "
            f"({samples} samples)"
        )
    finally:
        hub.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="numascope-bench-hub-") as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        agents = start(tmp, args.agents)
        print(
            f"hub refresh over {args.agents} real agents (started in {time.perf_counter() - t0:.1f} s)"
        )
        try:
            settings = Settings(
                hub=True,
                hub_agents=",".join(a.url for a in agents),
                database_url=f"sqlite:///{tmp / 'hub.db'}",
                demo=False,
                observe=False,
                hub_watch=False,  # the polled path (bench_hub_fanin.py measures the streams)
            )
            asyncio.run(rounds(Hub(settings, CollectorRegistry()), agents, args.rounds))
            end_to_end(tmp, agents, 6)
        finally:
            for a in agents:
                a.close()


if __name__ == "__main__":
    main()

"""One node, one answer: the node's upgrade verdict, the fleet's upgrade readiness and the restart
rehearsal asked through their real routes, over the demo nodes plus a 1.36 and a 1.37 node, for
every release and {the node's configuration, the gate off} (issue 18 point 2; DESIGN.md §1 "One
decision per question").

``start_cluster(tmp)`` starts an agent (``numascope serve`` with the demo nodes, and the two
extra nodes created through the API) and a hub polling it; ``survey(agent, hub)`` asks the three
questions for each pair and ``Pair`` says whether they agree: a verdict that says the kubelet
starts (``compatible``, ``compatible-with-loss``) exactly when the rehearsal starts, and the
fleet's row is the node's own verdict. ``bench/bench_coherence.py`` prints the counts;
``tests/fleet/test_fleet_coherence.py`` asserts there is no disagreement.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.domain.kubelet_config import RELEASES
from app.services.demo import DEMO_NODES, bubble_pod, classic_pod
from tests.helpers import POD_SCOPE, SMALL
from tests.processes import Server, server_env, wait_for

STARTS = ("compatible", "compatible-with-loss")

#: Two nodes beside the demo's: pods of the shapes whose start-up differs between releases (a
#: pod-level pod with a shared sidecar, two exclusive containers filling the budget, one
#: exclusive container under its budget and no shared container, a classic pod).
EXTRA_NODES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "node-136",
        "1.36",
        (
            bubble_pod("db", "prod", 4, {"main": 2}, ("side",)),
            bubble_pod("pair", "prod", 4, {"left": 2, "right": 2}, ()),
            classic_pod("classic", "prod", "1", "1Gi"),
        ),
    ),
    (
        "node-137",
        "1.37",
        (
            bubble_pod("db", "prod", 4, {"main": 2}, ("side",)),
            bubble_pod("partial", "prod", 4, {"main": 2}, ()),
            classic_pod("classic", "prod", "1", "1Gi"),
        ),
    ),
)
NODES = tuple(d.name for d in DEMO_NODES) + tuple(n for n, _, _ in EXTRA_NODES)
GATES: tuple[bool | None, ...] = (None, False)  # as configured, gate off


@dataclass(frozen=True, slots=True)
class Pair:
    node: str
    release: str
    gate: bool | None
    upgrade_status: int
    verdict: str | None
    fleet_verdict: str | None
    fleet_error: str | None
    restart_status: int
    started: bool | None

    @property
    def answered(self) -> bool:
        return (
            self.upgrade_status == 200
            and self.restart_status == 200
            and self.verdict is not None
            and self.fleet_verdict is not None
            and self.started is not None
        )

    @property
    def agrees(self) -> bool:
        if not self.answered:
            return True  # counted as unanswered, not as a disagreement
        return (self.verdict in STARTS) == self.started and self.fleet_verdict == self.verdict

    def describe(self) -> str:
        gate = "as configured" if self.gate is None else "gate off"
        return (
            f"{self.node} -> {self.release} ({gate}): upgrade {self.upgrade_status} "
            f"{self.verdict}, fleet {self.fleet_verdict or self.fleet_error}, rehearsal "
            f"{self.restart_status} started={self.started}"
        )


def _names(summary: dict[str, Any]) -> set[str]:
    return {n.get("node") for n in summary.get("nodes", [])}


def _params(release: str, gate: bool | None) -> dict[str, str]:
    params = {"release": release}
    if gate is not None:
        params["podLevelResourceManagers"] = "true" if gate else "false"
    return params


@contextmanager
def start_cluster(tmp: Path) -> Iterator[tuple[Server, Server]]:
    """An agent with the demo nodes and ``EXTRA_NODES``, and a hub polling it."""
    agent = Server(tmp / "agent", server_env(tmp / "agent", demo="true"))
    hub: Server | None = None
    try:
        agent.start()
        wait_for(lambda: set(NODES[:3]) <= _names(agent.json("/api/v1/summary")), 60)
        for name, release, pods in EXTRA_NODES:
            agent.create_node(name, SMALL, POD_SCOPE, release)
            for pod in pods:
                r = agent.admit(name, pod)
                assert r.status_code == 201 and r.json()["admitted"], r.text
        hub_tmp = tmp / "hub"
        env = server_env(hub_tmp, hub_poll_interval="0.3")
        hub = Server(hub_tmp, env, ["--hub", "--agents", agent.url], host="127.0.0.11").start()
        wait_for(lambda: len(hub.json("/api/v1/fleet").get("nodes", [])) == len(NODES), 60)
        yield agent, hub
    finally:
        if hub is not None:
            hub.close()
        agent.close()


def survey(agent: Server, hub: Server) -> list[Pair]:
    """The three answers for every node × release × gate."""
    pairs: list[Pair] = []
    for release in RELEASES:
        for gate in GATES:
            params = _params(release, gate)
            fleet = hub.client.get("/api/v1/fleet/upgrade", params=params, timeout=120)
            rows: dict[str, dict[str, Any]] = {}
            if fleet.status_code == 200:
                rows = {r["node"]: r for r in fleet.json()["results"]}
            for node in NODES:
                up = agent.client.get(f"/api/v1/nodes/{node}/upgrade", params=params, timeout=120)
                rs = agent.client.post(
                    f"/api/v1/nodes/{node}/restart",
                    params={**params, "dryRun": "true"},
                    timeout=120,
                )
                row = rows.get(node, {})
                pairs.append(
                    Pair(
                        node,
                        release,
                        gate,
                        up.status_code,
                        up.json().get("verdict") if up.status_code == 200 else None,
                        row.get("verdict"),
                        row.get("error") if row else f"fleet HTTP {fleet.status_code}",
                        rs.status_code,
                        rs.json().get("started") if rs.status_code == 200 else None,
                    )
                )
    return pairs

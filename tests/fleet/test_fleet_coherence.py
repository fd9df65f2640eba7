"""One node, one answer (issue 18 point 2): over the demo nodes plus a 1.36 and a 1.37 node ×
every release × {as configured, gate off}, the node's upgrade verdict, the fleet's readiness
(a hub polling the agent) and the restart rehearsal agree, through the real routes of real
``numascope serve`` processes (``tests/coherence.py``; on the old main 17 of these 40 pairs
disagreed and 5 were a 422)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.coherence import NODES, STARTS, Pair, start_cluster, survey
from tests.processes import Server


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    with start_cluster(Path(tmp_path_factory.mktemp("coherence"))) as servers:
        yield servers


@pytest.fixture(scope="module")
def pairs(cluster: tuple[Server, Server]) -> list[Pair]:
    return survey(*cluster)


def test_every_pair_is_answered(pairs: list[Pair]) -> None:
    assert len(pairs) == 40
    assert [p.describe() for p in pairs if not p.answered] == []


def test_the_verdict_says_the_kubelet_starts_exactly_when_the_rehearsal_starts(
    pairs: list[Pair],
) -> None:
    assert [p.describe() for p in pairs if not p.agrees] == []


def test_the_survey_sees_both_answers(pairs: list[Pair]) -> None:
    """The agreement is not vacuous: some pairs start, some do not, on every node."""
    starts = {p.node for p in pairs if p.verdict in STARTS and p.started}
    fails = {p.node for p in pairs if p.verdict not in STARTS and p.started is False}
    assert starts == set(NODES)
    assert fails >= set(NODES) - {"demo-container-scope"}


def test_1_37_files_do_not_start_a_1_36_kubelet_with_pod_level_pods(pairs: list[Pair]) -> None:
    """Issue 19 point 4: the files are read, but validateState refuses them (the docs' "safely
    restores" holds for reading, not for starting)."""
    downgrades = {(p.node, p.gate): p for p in pairs if p.release == "1.36"}
    assert downgrades[("node-137", None)].verdict == "will-fail"
    assert downgrades[("node-137", None)].started is False
    assert downgrades[("node-136", None)].started is True


def test_a_refused_gate_is_an_answer_everywhere(cluster: tuple[Server, Server]) -> None:
    """Issue 18/19: 1.36 files with the gate on, a 1.35 kubelet as configured: the gate error,
    what to change, and what happens once changed, on the node's answer, the fleet row and
    the rehearsal (all 200)."""
    agent, hub = cluster
    node = agent.json("/api/v1/nodes/node-136/upgrade", release="1.35")
    row = {r["node"]: r for r in hub.json("/api/v1/fleet/upgrade", release="1.35")["results"]}
    rehearsal = agent.client.post(
        "/api/v1/nodes/node-136/restart", params={"release": "1.35", "dryRun": "true"}
    ).json()
    gate_error = "unrecognized feature gate: PodLevelResourceManagers"
    for answer in (node, row["node-136"]):
        assert answer["verdict"] == "will-fail" and answer["error"].endswith(gate_error)
        assert answer["featureGatesRefused"][0]["gate"] == "PodLevelResourceManagers"
        once = answer["onceChanged"]
        assert once["verdict"] == "will-fail" and "checkpoint is corrupted" in once["error"]
        assert any("kubectl drain node-136" in step for step in answer["recovery"])
    assert rehearsal["error"].endswith(gate_error)
    assert "checkpoint is corrupted" in rehearsal["onceChanged"]["error"]

"""The fleet upgrade check's sharing between nodes with the same inputs
(``app.services.upgrade.SharedChecks``, used by the demo fleet's workers): for demo-fleet nodes
whose machine, release, configuration, state files and pods are the same, the shared verdict
is exactly the one ``check_files`` computes for the node itself, for every release and
``PodLevelResourceManagers`` setting; a question the check refuses is refused the same way."""

from __future__ import annotations

from collections import defaultdict

import pytest

from app.domain.kubelet_config import RELEASES
from app.services.nodes.demo_fleet import DemoFleet
from app.services.upgrade import NodeFiles, SharedChecks, UpgradeInputError, check_files

#: A slice of the 5,000-node demo fleet (one shard of 10): 500 nodes.
SHARD, SHARDS = 3, 10
GROUPS = 10


def _inputs(files: NodeFiles) -> tuple[object, ...]:
    return (
        id(files.topology),
        files.release,
        files.config_text,
        tuple(sorted(files.files.items())),
        tuple(sorted(files.pods.items())),
    )


@pytest.fixture(scope="module")
def twins() -> list[NodeFiles]:
    """Nodes in groups of the same inputs (two per group), from a slice of the demo fleet."""
    fleet = DemoFleet(5000)
    fleet.build(SHARD, SHARDS)
    groups: dict[tuple[object, ...], list[NodeFiles]] = defaultdict(list)
    for node in fleet.list():
        files = node.node_files()
        groups[_inputs(files)].append(files)
    shared = [g[:2] for g in groups.values() if len(g) > 1]
    assert len(shared) >= GROUPS, "the slice has too few nodes with the same inputs"
    # the groups with pods first: their verdicts name pods (links) and lose entries
    shared.sort(key=lambda g: -len(g[0].pods))
    assert shared[0][0].pods, "no twins with pods: nothing names a pod"
    return [files for group in shared[:GROUPS] for files in group]


@pytest.mark.parametrize("gate", [None, True, False])
@pytest.mark.parametrize("release", RELEASES)
def test_shared_verdict_is_the_nodes_own(
    twins: list[NodeFiles], release: str, gate: bool | None
) -> None:
    shared = SharedChecks()
    for files in twins:
        try:
            own = check_files(files, release, gate)
        except UpgradeInputError as exc:
            with pytest.raises(UpgradeInputError) as refused:
                shared.check(files, release, gate)
            assert (refused.value.message, refused.value.field) == (exc.message, exc.field)
            continue
        assert shared.check(files, release, gate) == own
        assert own["node"] == files.name


def test_the_second_twin_is_not_checked_again(twins: list[NodeFiles]) -> None:
    shared = SharedChecks()
    first, second = twins[0], twins[1]
    assert _inputs(first) == _inputs(second) and first.name != second.name
    doc = shared.check(first, "1.38", None)
    again = shared.check(second, "1.38", None)
    assert len(shared._by_inputs) == 1
    assert again["node"] == second.name and doc["node"] == first.name
    assert first.name not in repr(again)

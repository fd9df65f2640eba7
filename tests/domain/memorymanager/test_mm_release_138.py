"""Release 1.38 (upstream master) memory manager changes: a restored pod-level allocation is
kept on re-admission (kubernetes#141077, fixes #140906) and pod hints are regenerated from the
pod blocks (kubernetes#141070); 1.37 reserves the pod a second time."""

from __future__ import annotations

import copy

import pytest

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint
from tests.domain.memorymanager.test_mm_helpers import GI, container, node, pod, started, tables


def policy(release: str) -> StaticPolicy:
    return StaticPolicy(
        [node(n) for n in range(2)],
        {n: {"memory": GI} for n in range(2)},
        pod_level_resource_managers=True,
        release=release,
    )


POD = pod(
    "p",
    container("gu", "1Gi"),
    container("shared", None),
    budget={"cpu": "2", "memory": "3Gi"},
)


def _allocated() -> tuple[object, object]:
    p = policy("1.37")
    state = started(p)
    p.allocate_pod(state, POD, TopologyHint(mask_of([1]), True))
    return p, state


def test_138_keeps_a_restored_pod_allocation() -> None:
    _, first = _allocated()
    restored = copy.deepcopy(first)
    p = policy("1.38")
    p.start(restored)
    p.allocate_pod(restored, POD, TopologyHint(mask_of([0]), True))
    assert restored.pod_entries == first.pod_entries  # type: ignore[attr-defined]
    assert restored.assignments == first.assignments  # type: ignore[attr-defined]
    assert tables(restored) == tables(first)  # type: ignore[arg-type]
    assert restored.machine_state[1].number_of_assignments == 1  # type: ignore[attr-defined]


def test_137_reserves_a_restored_pod_twice_or_rejects_it() -> None:
    small = pod(
        "s", container("gu", "1Gi"), container("shared", None), budget={"cpu": "2", "memory": "2Gi"}
    )
    p = policy("1.37")
    first = started(p)
    p.allocate_pod(first, small, TopologyHint(mask_of([1]), True))
    again = copy.deepcopy(first)
    p.start(again)
    p.allocate_pod(again, small, TopologyHint(mask_of([1]), True))
    assert tables(again)[1][0] == tables(first)[1][0] - 2  # GiB
    assert again.machine_state[1].number_of_assignments == 2
    _, full = _allocated()  # 3Gi of node 1's 5Gi: a second 3Gi does not fit there
    with pytest.raises(MemoryManagerError, match="failed to find NUMA nodes"):
        policy("1.37").allocate_pod(copy.deepcopy(full), POD, TopologyHint(mask_of([1]), True))  # type: ignore[arg-type]


def test_pod_hints_come_from_the_pod_blocks() -> None:
    _, first = _allocated()
    hints138 = policy("1.38").get_pod_topology_hints(first, POD)  # type: ignore[arg-type]
    assert hints138 == {"memory": [TopologyHint(mask_of([1]), True)]}
    # 1.37 compares the first container's blocks (1Gi) with the pod request (3Gi): no hint.
    assert policy("1.37").get_pod_topology_hints(first, POD) is None  # type: ignore[arg-type]


# -- kubernetes#138770 (1.37): a container that requests no memory is skipped ------------------


@pytest.mark.parametrize(("release", "skipped"), [("1.36", False), ("1.37", True), ("1.38", True)])
def test_container_without_memory_requests(release: str, skipped: bool) -> None:
    p = policy(release)
    state = started(p)
    shared = POD.containers[1]
    hints = p.get_topology_hints(state, POD, shared)
    if skipped:
        assert hints is None  # GetTopologyHints: nil
        p.allocate(state, POD, shared, TopologyHint(None, False))
        assert state.assignments == {}
        assert p.metrics.pinning_requests_total == 0
    else:
        assert hints == {}  # hints calculated for no resource
        with pytest.raises(MemoryManagerError, match="failed to get the default NUMA affinity"):
            p.allocate(state, POD, shared, TopologyHint(None, False))
        assert (p.metrics.pinning_requests_total, p.metrics.pinning_errors_total) == (1, 1)


# -- kubernetes#141070 (1.38): a container-level pod's hint from the container's own request ---


@pytest.mark.parametrize(("release", "restored"), [("1.37", False), ("1.38", True)])
def test_container_level_pod_hint_on_restore(release: str, restored: bool) -> None:
    two = pod("c", container("a", "1Gi"), container("b", "1Gi"))
    first = policy("1.37")
    state = started(first)
    for c in two.containers:
        first.allocate(state, two, c, TopologyHint(mask_of([0]), True))
    hints = policy(release).get_pod_topology_hints(state, two)
    if restored:
        assert hints == {"memory": [TopologyHint(mask_of([0]), True)]}
    else:
        assert hints is None  # 1Gi blocks against the pod's 2Gi: regenerateHints gives up

"""Static memory manager policy: machine state, Start, hints, Allocate, RemoveContainer."""

from __future__ import annotations

import pytest

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.hints import find_best_hint
from app.domain.memorymanager.machine import NUMANodeInfo, hugepage_resource_name
from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.memorymanager.requests import quantity_as_int64
from app.domain.memorymanager.state import Block, MemoryManagerState, MemoryTable
from app.domain.pod.model import Container, ResourceRequirements
from app.domain.quantity import Quantity
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint
from tests.domain.memorymanager.test_mm_helpers import (
    GI,
    MI,
    container,
    pod,
    policy,
    started,
    tables,
)


def h(ids: list[int] | None, preferred: bool = True) -> TopologyHint:
    return TopologyHint(None if ids is None else mask_of(ids), preferred)


# -- machine state ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "name"),
    [
        (2 * MI, "hugepages-2Mi"),
        (GI, "hugepages-1Gi"),
        (64 * 1024, "hugepages-64Ki"),
        (32 * MI, "hugepages-32Mi"),
        (16 * GI, "hugepages-16Gi"),
    ],
    ids=["2Mi", "1Gi", "64Ki", "32Mi", "16Gi"],
)
def test_hugepage_resource_name(size: int, name: str) -> None:
    assert hugepage_resource_name(size) == name


def test_default_machine_state() -> None:
    p = StaticPolicy(
        [NUMANodeInfo(0, 8 * GI, ((GI, 2), (2 * MI, 512))), NUMANodeInfo(1, 8 * GI)],
        {0: {"memory": GI, "hugepages-2Mi": 2 * MI}, 1: {"memory": 512 * MI}},
    )
    ms = p.get_default_machine_state()
    assert ms[0].cells == [0] and ms[0].number_of_assignments == 0
    assert ms[0].memory_map == {
        "hugepages-1Gi": MemoryTable(2 * GI, 0, 2 * GI, 0, 2 * GI),
        "hugepages-2Mi": MemoryTable(GI, 2 * MI, GI - 2 * MI, 0, GI - 2 * MI),
        "memory": MemoryTable(8 * GI, GI, 4 * GI, 0, 4 * GI),
    }
    assert ms[1].memory_map == {
        "memory": MemoryTable(8 * GI, 512 * MI, 8 * GI - 512 * MI, 0, 8 * GI - 512 * MI)
    }


@pytest.mark.parametrize(
    "reserved",
    [{}, {0: {"memory": 0}}, {0: {"hugepages-1Gi": GI}}],
    ids=["none", "zero", "hugepages-only"],
)
def test_static_policy_needs_reserved_memory(reserved: dict[int, dict[str, int]]) -> None:
    with pytest.raises(MemoryManagerError) as exc:
        StaticPolicy([], reserved)
    assert exc.value.message == "[memorymanager] you should specify the system reserved memory"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1Gi", GI),
        ("1.5Gi", 3 * GI // 2),
        ("0.5", None),
        ("100m", None),
        ("9223372036854775807", 2**63 - 1),
    ],
    ids=["1Gi", "1.5Gi", "half-byte", "milli", "int64-max"],
)
def test_quantity_as_int64(text: str, value: int | None) -> None:
    assert quantity_as_int64(Quantity.parse(text)) == value


# -- Start -----------------------------------------------------------------------------


def test_start_fills_an_empty_state() -> None:
    p = policy()
    state = MemoryManagerState()
    p.start(state)
    assert tables(state) == {0: (5, 0), 1: (5, 0)}
    assert tables(state, "hugepages-1Gi") == {0: (2, 0), 1: (2, 0)}


def test_start_rejects_assignments_without_machine_state() -> None:
    state = MemoryManagerState(assignments={"p": {"c": (Block((0,), "memory", GI),)}})
    with pytest.raises(MemoryManagerError) as exc:
        policy().start(state)
    assert exc.value.message == (
        "[memorymanager] machine state can not be empty when it has memory assignments"
    )


def _allocated_state() -> tuple[StaticPolicy, MemoryManagerState]:
    """A 7Gi pod spread over both nodes, then a small pod with hugepages in that group."""
    p = policy()
    state = started(p)
    big = container("c", "7Gi")
    p.allocate(state, pod("b", big), big)
    small = container("c", "2Gi", hugepages_1g="1Gi")
    p.allocate(state, pod("a", small), small)
    return p, state


def test_start_accepts_the_state_allocations_produced() -> None:
    p, state = _allocated_state()
    before = state.copy()
    policy().start(state)
    assert state.machine_state == before.machine_state
    del p


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(
            lambda s: setattr(s.machine_state[0], "number_of_assignments", 9),
            "[memorymanager] the expected machine state is different from the real one",
            id="assignment-count",
        ),
        pytest.param(
            lambda s: setattr(s.machine_state[1].memory_map["memory"], "free", 0),
            "[memorymanager] the expected machine state is different from the real one",
            id="free",
        ),
        pytest.param(
            lambda s: setattr(s.machine_state[1], "cells", [1]),
            "[memorymanager] the expected machine state is different from the real one",
            id="group",
        ),
        pytest.param(
            lambda s: s.set_memory_blocks("x", "y", [Block((7,), "memory", GI)]),
            "[memorymanager] (pod: x, container: y) the memory assignment uses the NUMA that "
            "does not exist",
            id="unknown-numa",
        ),
        pytest.param(
            lambda s: s.set_memory_blocks("x", "y", [Block((0,), "hugepages-2Mi", GI)]),
            "[memorymanager] (pod: x, container: y) the memory assignment uses memory resource "
            "that does not exist",
            id="unknown-resource",
        ),
    ],
)
def test_start_rejects_inconsistent_states(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    _, state = _allocated_state()
    mutate(state)
    with pytest.raises(MemoryManagerError) as exc:
        policy().start(state)
    assert exc.value.message == message


def test_start_uses_pod_blocks_for_pod_level_pods() -> None:
    p = policy()
    state = started(p)
    shared = container("shared", None)
    gu = container("gu", "1Gi")
    pl = pod("pl", gu, shared, budget={"cpu": "2", "memory": "3Gi"})
    p.allocate_pod(state, pl)
    policy().start(state.copy())  # pod entry counted once, not the container partitions
    with pytest.raises(MemoryManagerError):
        policy(pod_level=False).start(state.copy())


# -- hints ------------------------------------------------------------------------------


def test_calculate_hints_prefers_the_fewest_nodes() -> None:
    p = policy()
    state = started(p)
    c = container("c", "3Gi", hugepages_1g="1Gi")
    hints = p.get_topology_hints(state, pod("a", c), c)
    assert hints == {
        "memory": [h([0]), h([1]), h([0, 1], False)],
        "hugepages-1Gi": [h([0]), h([1]), h([0, 1], False)],
    }
    c = container("c", "6Gi")
    assert p.get_topology_hints(state, pod("a", c), c) == {"memory": [h([0, 1], True)]}
    c = container("c", "20Gi")
    assert p.get_topology_hints(state, pod("a", c), c) == {}


@pytest.mark.parametrize(
    "c",
    [
        container("c", "1Gi", limit_memory="2Gi"),
        container("c", None),
    ],
    ids=["burstable", "best-effort"],
)
def test_no_hints_for_non_guaranteed_pods(c: Container) -> None:
    p = policy()
    state = started(p)
    assert p.get_topology_hints(state, pod("a", c), c) is None
    assert p.get_pod_topology_hints(state, pod("a", c)) is None


def test_hints_are_regenerated_from_existing_blocks() -> None:
    p = policy()
    state = started(p)
    c = container("c", "1Gi")
    state.set_memory_blocks("a", "c", [Block((1,), "memory", GI)])
    assert p.get_topology_hints(state, pod("a", c), c) == {"memory": [h([1])]}
    other = container("c", "2Gi")
    assert p.get_topology_hints(state, pod("a", other), other) is None


def test_pod_hints_use_init_and_sidecar_peaks() -> None:
    p = policy()
    pd = pod(
        "a",
        container("app", "1Gi"),
        inits=(container("init", "4Gi"), container("side", "1Gi", restart="Always")),
    )
    assert p.get_pod_requested_resources(pd) == {"memory": 4 * GI}
    pd = pod(
        "a",
        container("app", "1Gi"),
        inits=(container("side", "1Gi", restart="Always"), container("init", "4Gi")),
    )
    assert p.get_pod_requested_resources(pd) == {"memory": 5 * GI}
    state = started(p)
    assert p.get_pod_topology_hints(state, pd) == {"memory": [h([0]), h([1]), h([0, 1], False)]}


def test_find_best_hint() -> None:
    assert find_best_hint([]) == TopologyHint(None, False)
    assert find_best_hint([h([0, 1], False), h([1]), h([0])]) == h([0])
    assert find_best_hint([h([0, 1], False), h([2], False)]) == h([2], False)


# -- Allocate ----------------------------------------------------------------------------


def test_allocate_default_hint_single_numa() -> None:
    p = policy()
    state = started(p)
    c = container("c", "2Gi", hugepages_1g="1Gi")
    p.allocate(state, pod("a", c), c)
    assert state.assignments == {
        "a": {"c": (Block((0,), "hugepages-1Gi", GI), Block((0,), "memory", 2 * GI))}
    }
    assert tables(state) == {0: (3, 2), 1: (5, 0)}
    assert tables(state, "hugepages-1Gi") == {0: (1, 1), 1: (2, 0)}
    assert state.machine_state[0].number_of_assignments == 2  # once per resource type


def test_allocate_uses_the_topology_manager_hint() -> None:
    p = policy()
    state = started(p)
    c = container("c", "2Gi")
    p.allocate(state, pod("a", c), c, h([1]))
    assert tables(state) == {0: (5, 0), 1: (3, 2)}


def test_allocate_multi_numa_group() -> None:
    p = policy()
    state = started(p)
    big = container("c", "7Gi")
    p.allocate(state, pod("big", big), big)
    assert state.assignments["big"]["c"] == (Block((0, 1), "memory", 7 * GI),)
    assert tables(state) == {0: (0, 5), 1: (3, 2)}
    assert [state.machine_state[n].cells for n in (0, 1)] == [[0, 1], [0, 1]]
    # Single-node masks of grouped nodes are gone; the group itself still takes memory.
    small = container("c", "1Gi")
    assert p.get_topology_hints(state, pod("s", small), small) == {"memory": [h([0, 1], False)]}
    p.allocate(state, pod("s", small), small)
    assert state.assignments["s"]["c"] == (Block((0, 1), "memory", GI),)
    assert [state.machine_state[n].number_of_assignments for n in (0, 1)] == [2, 2]


def test_allocate_extends_a_narrow_hint() -> None:
    p = policy()
    state = started(p)
    c = container("c", "6Gi")
    p.allocate(state, pod("a", c), c, h([1]))
    assert state.assignments["a"]["c"] == (Block((0, 1), "memory", 6 * GI),)


@pytest.mark.parametrize(
    ("setup", "request_gi", "hint", "message"),
    [
        pytest.param(
            [],
            20,
            None,
            "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
            "enough memory is available",
            id="too-big",
        ),
        pytest.param(
            [("x", 1, [0])],
            1,
            [0, 1],
            "[memorymanager] preferred hint violates NUMA node allocation",
            id="cross-numa-over-single-numa",
        ),
        pytest.param(
            [("x", 4, [0])],
            3,
            [0],
            "[memorymanager] failed to find NUMA nodes to extend the current topology hint",
            id="no-extension",
        ),
    ],
)
def test_allocate_errors(
    setup: list[tuple[str, int, list[int]]],
    request_gi: int,
    hint: list[int] | None,
    message: str,
) -> None:
    p = policy()
    state = started(p)
    for uid, gi, mask in setup:
        c = container("c", f"{gi}Gi")
        p.allocate(state, pod(uid, c), c, h(mask))
    before = state.copy()
    c = container("c", f"{request_gi}Gi")
    with pytest.raises(MemoryManagerError) as exc:
        p.allocate(state, pod("new", c), c, h(hint) if hint is not None else None)
    assert exc.value.message == message
    assert state == before


def _three_nodes_grouped() -> tuple[StaticPolicy, MemoryManagerState]:
    """Nodes 0 and 1 form a group whose node 0 is full; node 2 holds a full single-NUMA pod."""
    p = policy(3, hugepages_1g=0)
    state = started(p)
    g = container("c", "8Gi")
    p.allocate(state, pod("group", g), g, h([0, 1]))
    full = container("c", "7Gi")
    p.allocate(state, pod("full", full), full, h([2]))
    return p, state


def test_allocate_extended_preferred_hint_error() -> None:
    p, state = _three_nodes_grouped()
    c = container("c", "1Gi")
    with pytest.raises(MemoryManagerError) as exc:
        p.allocate(state, pod("new", c), c, h([0]))
    assert exc.value.message == "[memorymanager] failed to find the extended preferred hint"


def test_allocate_default_preferred_hint_error() -> None:
    p, state = _three_nodes_grouped()
    c = container("c", "1Gi")
    with pytest.raises(MemoryManagerError) as exc:
        p.allocate(state, pod("new", c), c, TopologyHint(None, True))
    assert exc.value.message == "[memorymanager] failed to find the default preferred hint"
    p.allocate(state, pod("new", c), c, TopologyHint(None, False))
    assert state.assignments["new"]["c"] == (Block((0, 1), "memory", GI),)


def test_allocate_is_idempotent_and_skips_non_guaranteed_pods() -> None:
    p = policy()
    state = started(p)
    c = container("c", "1Gi")
    p.allocate(state, pod("a", c), c)
    snapshot = state.copy()
    p.allocate(state, pod("a", c), c, h([1]))
    assert state == snapshot
    burstable = container("b", "1Gi", limit_memory="2Gi")
    p.allocate(state, pod("b", burstable), burstable)
    assert state == snapshot


def test_pod_level_pods_are_skipped_when_the_gate_is_off() -> None:
    p = policy(pod_level=False)
    state = started(p)
    c = container("c", "1Gi")
    pl = pod("pl", c, budget={"cpu": "1", "memory": "1Gi"})
    p.allocate(state, pl, c)
    assert p.get_topology_hints(state, pl, c) is None
    assert p.get_pod_topology_hints(state, pl) is None
    assert state.assignments == {}


def test_init_container_memory_is_reused() -> None:
    p = policy()
    state = started(p)
    init = container("init", "3Gi")
    side = container("side", "1Gi", restart="Always")
    app = container("app", "2Gi")
    pd = pod("a", app, inits=(init, side))
    for c in (init, side, app):
        p.allocate(state, pd, c)
    # The init container ran first: the sidecar and the app reuse its 3Gi, and its block
    # shrinks so the pod's blocks add up to what is reserved.
    assert state.assignments["a"] == {
        "init": (Block((0,), "memory", 0),),
        "side": (Block((0,), "memory", GI),),
        "app": (Block((0,), "memory", 2 * GI),),
    }
    assert tables(state) == {0: (2, 3), 1: (5, 0)}
    assert sum(b.size for bs in state.assignments["a"].values() for b in bs) == 3 * GI


# -- RemoveContainer ------------------------------------------------------------------------


def test_remove_container_releases_and_regroups() -> None:
    p = policy()
    state = started(p)
    big = container("c", "7Gi")
    p.allocate(state, pod("big", big), big)
    p.remove_container(state, "big", "c")
    assert state.assignments == {}
    assert state.machine_state == p.get_default_machine_state()
    p.remove_container(state, "big", "c")  # idempotent
    assert state.machine_state == p.get_default_machine_state()


def test_get_allocatable_memory() -> None:
    p = policy(1)
    state = started(p)
    assert p.get_allocatable_memory(state) == [
        Block((0,), "hugepages-1Gi", 2 * GI),
        Block((0,), "memory", 5 * GI),
    ]


def test_container_requested_resources_errors() -> None:
    p = policy()
    c = Container(
        "c", ResourceRequirements({"cpu": "1", "memory": "1.5"}, {"cpu": "1", "memory": "1.5"})
    )
    with pytest.raises(MemoryManagerError, match="failed to represent quantity as int64"):
        p.get_container_requested_resources(pod("a", c), c)
    state = started(p)
    assert p.get_topology_hints(state, pod("a", c), c) is None

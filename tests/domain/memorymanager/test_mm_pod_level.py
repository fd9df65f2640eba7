"""Pod-level memory (KEP-5526): budget rules, pod hints, AllocatePod, release."""

from __future__ import annotations

import pytest

from app.domain.admission import EmptyPodSharedPoolError
from app.domain.memorymanager.memory_manager import (
    MemoryManager,
    MemoryManagerConfigError,
    MemoryReservation,
    get_system_reserved_memory,
    new_memory_manager,
)
from app.domain.memorymanager.state import Block
from app.domain.pod.model import Container, Pod
from app.domain.topology.model import CPUInfo, CPUTopology, NUMANodeMemory
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.topology_manager import (
    TopologyManager,
    TopologyManagerConfig,
    new_manager,
)
from tests.domain.memorymanager.test_mm_helpers import GI, container, pod, policy, started, tables


def h(ids: list[int] | None, preferred: bool = True) -> TopologyHint:
    return TopologyHint(None if ids is None else mask_of(ids), preferred)


def blocks(mask: tuple[int, ...], **sizes: int) -> tuple[Block, ...]:
    return tuple(Block(mask, r.replace("_", "-"), v * GI) for r, v in sorted(sizes.items()))


SHARED = container("shared", None)


# -- budget rules (§5.3, memory flavour) ------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "inits", "apps", "message"),
    [
        pytest.param(
            "4Gi",
            (),
            (container("gu", "4Gi"), SHARED),
            "pod rejected, sum of exclusive container memory requests equals pod budget, "
            "leaving no memory for shared containers",
            id="exclusive-equals-budget",
        ),
        pytest.param(
            "4Gi",
            (),
            (container("gu1", "3Gi"), container("gu2", "2Gi"), SHARED),
            "pod rejected, sum of exclusive container memory requests equals pod budget, "
            "leaving no memory for shared containers",
            id="exclusive-above-budget",
        ),
        pytest.param(
            "4Gi",
            (container("side", "2Gi", restart="Always"), container("init", "3Gi")),
            (container("gu", "1Gi"),),
            f"pod rejected, largest exclusive init container requests {3 * GI} of memory, "
            f"but only {2 * GI} available",
            id="init-above-what-sidecars-leave",
        ),
        pytest.param(
            "4Gi",
            (container("side", "4Gi", restart="Always"), container("init", None)),
            (container("gu", "1Gi"),),
            "pod rejected, pod has shared init containers but no memory available for them",
            id="shared-init-without-memory",
        ),
        pytest.param("4Gi", (), (container("gu", "4Gi"),), None, id="no-shared-container-fits"),
        pytest.param("4Gi", (), (container("gu", "3Gi"), SHARED), None, id="shared-pool-left"),
    ],
)
def test_pod_scope_budget(
    budget: str,
    inits: tuple[Container, ...],
    apps: tuple[Container, ...],
    message: str | None,
) -> None:
    p = policy()
    pd = pod("p", *apps, inits=inits, budget={"cpu": "4", "memory": budget})
    err = p.pod_scope_budget_error(pd)
    assert (err.message if err else None) == message


def test_budget_reports_first_failing_resource_by_name() -> None:
    p = policy()
    gu = container("gu", "2Gi", hugepages_1g="1Gi")
    pd = pod("p", gu, SHARED, budget={"cpu": "2", "memory": "2Gi", "hugepages-1Gi": "1Gi"})
    err = p.pod_scope_budget_error(pd)
    assert err is not None
    assert err.message == (
        "pod rejected, sum of exclusive container hugepages-1Gi requests equals pod budget, "
        "leaving no memory for shared containers"
    )


# -- pod hints (§5.4) -----------------------------------------------------------------------


def test_pod_hints_for_the_whole_budget() -> None:
    p = policy()
    state = started(p)
    pd = pod("p", container("gu", "1Gi"), SHARED, budget={"cpu": "4", "memory": "3Gi"})
    assert p.get_pod_topology_hints(state, pd) == {"memory": [h([0]), h([1]), h([0, 1], False)]}


def test_pod_hints_are_empty_lists_when_the_budget_fails() -> None:
    p = policy()
    state = started(p)
    budget = {"cpu": "4", "memory": "2Gi", "hugepages-1Gi": "1Gi"}
    pd = pod("p", container("gu", "2Gi"), SHARED, budget=budget)
    assert p.get_pod_topology_hints(state, pd) == {"memory": [], "hugepages-1Gi": []}


def test_pod_hints_none_for_burstable_pod_level_pods() -> None:
    p = policy()
    state = started(p)
    pd = Pod(
        "p",
        "p",
        "default",
        (container("gu", "1Gi"),),
        resources=pod("x", SHARED, budget={"memory": "2Gi"}).resources,
    )
    assert p.get_pod_topology_hints(state, pd) is None


# -- AllocatePod (§5.5) ----------------------------------------------------------------------


def test_allocate_pod_partitions_the_budget() -> None:
    p = policy()
    state = started(p)
    half_cpu = container("half", "1Gi", cpu="500m")  # exclusive memory, shared CPUs
    pd = pod(
        "p",
        container("gu", "1Gi"),
        half_cpu,
        SHARED,
        budget={"cpu": "4", "memory": "4Gi"},
    )
    p.allocate_pod(state, pd, h([1]))
    assert state.pod_entries == {"p": blocks((1,), memory=4)}
    assert state.assignments["p"] == {
        "gu": blocks((1,), memory=1),
        "half": blocks((1,), memory=1),
        "shared": blocks((1,), memory=2),
    }
    assert tables(state) == {0: (5, 0), 1: (1, 4)}
    assert state.machine_state[1].number_of_assignments == 1  # charged once, not per container


def test_allocate_pod_with_init_containers_and_sidecars() -> None:
    p = policy()
    state = started(p)
    pd = pod(
        "p",
        container("gu-1", "1Gi"),
        container("ngu-2", None),
        inits=(
            container("ngu-init-1", None),
            container("gu-restartable", "1Gi", restart="Always"),
            container("ngu-init-3", None),
        ),
        budget={"cpu": "3", "memory": "4Gi"},
    )
    p.allocate_pod(state, pd)
    assert state.assignments["p"] == {
        "ngu-init-1": blocks((0,), memory=4),
        "gu-restartable": blocks((0,), memory=1),
        "ngu-init-3": blocks((0,), memory=3),
        "gu-1": blocks((0,), memory=1),
        "ngu-2": blocks((0,), memory=2),
    }
    assert tables(state) == {0: (1, 4), 1: (5, 0)}


def test_allocate_pod_without_shared_containers_keeps_the_rest_reserved() -> None:
    p = policy()
    state = started(p)
    pd = pod("p", container("gu", "1Gi"), budget={"cpu": "2", "memory": "3Gi"})
    p.allocate_pod(state, pd)
    assert state.assignments["p"] == {"gu": blocks((0,), memory=1)}
    assert state.pod_entries["p"] == blocks((0,), memory=3)
    assert tables(state) == {0: (2, 3), 1: (5, 0)}


def test_allocate_pod_hugepages_budget() -> None:
    p = policy()
    state = started(p)
    budget = {"cpu": "2", "memory": "2Gi", "hugepages-1Gi": "2Gi"}
    pd = pod("p", container("gu", "1Gi", hugepages_1g="1Gi"), SHARED, budget=budget)
    p.allocate_pod(state, pd)
    assert state.assignments["p"] == {
        "gu": blocks((0,), memory=1, hugepages_1Gi=1),
        "shared": blocks((0,), memory=1, hugepages_1Gi=1),
    }
    assert tables(state, "hugepages-1Gi") == {0: (0, 2), 1: (2, 0)}


def test_allocate_pod_rejects_an_empty_shared_pool() -> None:
    p = policy()
    state = started(p)
    pd = pod("p", container("gu", "2Gi"), SHARED, budget={"cpu": "2", "memory": "2Gi"})
    before = state.copy()
    with pytest.raises(EmptyPodSharedPoolError) as exc:
        p.allocate_pod(state, pd)
    assert exc.value.reason == "EmptyPodSharedPoolError"
    assert exc.value.message == (
        "pod rejected, sum of exclusive container memory requests equals pod budget, "
        "leaving no memory for shared containers"
    )
    assert state == before


def test_allocate_pod_ignores_non_guaranteed_pods() -> None:
    p = policy()
    state = started(p)
    pd = Pod(
        "p",
        "p",
        "default",
        (container("gu", "1Gi"),),
        resources=pod("x", SHARED, budget={"memory": "2Gi"}).resources,
    )
    p.allocate_pod(state, pd)
    assert state.assignments == {} and state.pod_entries == {}


def test_allocate_pod_extends_to_several_nodes() -> None:
    p = policy()
    state = started(p)
    pd = pod("p", container("gu", "1Gi"), SHARED, budget={"cpu": "2", "memory": "8Gi"})
    p.allocate_pod(state, pd, h([0], False))
    assert state.pod_entries["p"] == blocks((0, 1), memory=8)
    assert tables(state) == {0: (0, 5), 1: (2, 3)}


# -- release (§5.7) ------------------------------------------------------------------------


def test_remove_keeps_the_budget_until_the_last_container() -> None:
    p = policy()
    state = started(p)
    pd = pod("p", container("gu", "1Gi"), SHARED, budget={"cpu": "2", "memory": "3Gi"})
    p.allocate_pod(state, pd)
    p.remove_container(state, "p", "gu")
    assert tables(state) == {0: (2, 3), 1: (5, 0)}
    assert set(state.assignments["p"]) == {"shared"}
    p.remove_container(state, "p", "shared")
    assert state.assignments == {} and state.pod_entries == {}
    assert state.machine_state == p.get_default_machine_state()


# -- the memory manager as a hint provider, with the topology manager ------------------------


def _topology() -> CPUTopology:
    infos = [CPUInfo(c, c, 0, c // 2, 0) for c in range(4)]
    memory = [NUMANodeMemory(n, 8 * GI, {GI: 2}, (10, 20) if n == 0 else (20, 10)) for n in (0, 1)]
    return CPUTopology(infos, memory=memory)


def _pod_scope_managers(policy_name: str) -> tuple[TopologyManager, MemoryManager]:
    """A pod-scope topology manager with a started Static memory manager (1 GiB reserved on
    each NUMA node) as its hint provider."""
    tm = new_manager(
        _topology(), TopologyManagerConfig(policy_name, "pod"), pod_level_resource_managers=True
    )
    mm = new_memory_manager(
        "Static",
        _topology(),
        node_allocatable_reservation={"memory": 2 * GI},
        reserved_memory=[
            MemoryReservation(0, {"memory": GI}),
            MemoryReservation(1, {"memory": GI}),
        ],
        affinity=tm,
        pod_level_resource_managers=True,
    )
    mm.start()
    tm.add_hint_provider(mm)
    return tm, mm


@pytest.mark.parametrize(
    ("policy_name", "expected"),
    [
        pytest.param("restricted", "TopologyAffinityError", id="restricted-rejects-at-hints"),
        pytest.param(
            "best-effort", "EmptyPodSharedPoolError", id="best-effort-rejects-at-allocate"
        ),
    ],
)
def test_empty_shared_pool_rejection_by_policy(policy_name: str, expected: str) -> None:
    from app.domain.admission import AdmissionError

    tm, _ = _pod_scope_managers(policy_name)
    pd = pod("p", container("gu", "2Gi"), SHARED, budget={"cpu": "2", "memory": "2Gi"})
    with pytest.raises(AdmissionError) as exc:
        tm.admit(pd)
    assert exc.value.reason == expected


def test_pod_scope_admission_end_to_end() -> None:
    tm, mm = _pod_scope_managers("single-numa-node")
    first = pod("a", container("gu", "1Gi"), SHARED, budget={"cpu": "2", "memory": "4Gi"})
    assert tm.admit(first) == {"gu": h([0]), "shared": h([0])}
    second = pod("b", container("gu", "1Gi"), SHARED, budget={"cpu": "2", "memory": "4Gi"})
    assert tm.admit(second) == {"gu": h([1]), "shared": h([1])}
    assert mm.state.pod_entries == {"a": blocks((0,), memory=4), "b": blocks((1,), memory=4)}
    mm.remove_pod(first)
    assert "a" not in mm.state.pod_entries


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allocatable", "reservations", "message"),
    [
        pytest.param(
            {"memory": GI},
            [MemoryReservation(3, {"memory": GI})],
            "the reserved memory configuration references a NUMA node 3 that does not exist "
            "on this machine",
            id="unknown-node",
        ),
        pytest.param(
            {"memory": 2 * GI},
            [MemoryReservation(0, {"memory": GI})],
            'the total amount "1Gi" of type "memory" is not equal to the value "2Gi" '
            "determined by Node Allocatable feature",
            id="sum-differs",
        ),
        pytest.param(
            {"memory": GI},
            [MemoryReservation(0, {"memory": GI, "hugepages-1Gi": GI})],
            'the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0" '
            "determined by Node Allocatable feature",
            id="hugepages-not-in-allocatable",
        ),
    ],
)
def test_reserved_memory_validation(
    allocatable: dict[str, int], reservations: list[MemoryReservation], message: str
) -> None:
    with pytest.raises(MemoryManagerConfigError) as exc:
        get_system_reserved_memory([0, 1], allocatable, reservations)
    assert exc.value.message == message


def test_new_memory_manager_errors() -> None:
    with pytest.raises(MemoryManagerConfigError, match='unknown policy: "static"'):
        new_memory_manager("static", _topology())
    with pytest.raises(MemoryManagerConfigError, match="you should specify the system reserved"):
        new_memory_manager("Static", _topology())
    none = new_memory_manager("None", _topology())
    c = container("c", "1Gi")
    assert none.get_topology_hints(pod("a", c), c) is None
    none.allocate(pod("a", c), c)
    assert none.state.assignments == {}


def test_add_container_releases_finished_init_containers() -> None:
    mm = new_memory_manager(
        "Static",
        _topology(),
        node_allocatable_reservation={"memory": GI},
        reserved_memory=[MemoryReservation(0, {"memory": GI})],
    )
    mm.start()
    init = container("init", "2Gi")
    side = container("side", "1Gi", restart="Always")
    app = container("app", "1Gi")
    pd = pod("p", app, inits=(init, side))
    for c in (init, side, app):
        mm.allocate(pd, c)
    mm.add_container(pd, "app")
    assert set(mm.state.assignments["p"]) == {"side", "app"}
    assert mm.get_memory_numa_nodes(pd, app) == {0}
    assert mm.get_memory_numa_nodes(pd, init) is None

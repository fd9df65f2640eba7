"""What a kubelet's PodResources answers hold for a NodeSnapshot (app/domain/podresources.py)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.fixtures` under bare pytest

from app.domain.cpuset import CPUSet
from app.domain.podresources import (
    BuildOptions,
    ContainerMemory,
    NUMANode,
    PodNotFoundError,
    TopologyInfo,
    allocatable_memory,
    build_allocatable_response,
    build_get_response,
    build_list_response,
    build_pod_resources,
    reports_pod_level,
)
from app.domain.snapshot import ContainerAllocation, MemoryBlock, PodAllocation
from app.domain.topology.model import GIB
from tests.fixtures.podresources import snapshots as S


def _ids(text: str) -> tuple[int, ...]:
    return tuple(CPUSet.parse(text))


# -- containers -------------------------------------------------------------------------------


def test_sidecars_come_first_and_regular_init_containers_are_left_out() -> None:
    pod = PodAllocation(
        uid="u",
        name="p",
        namespace="ns",
        qos_class="Guaranteed",
        containers=(
            ContainerAllocation("init-1", "init", CPUSet.parse("2"), "container"),
            ContainerAllocation("app-1", "app", CPUSet.parse("3"), "container"),
            ContainerAllocation("side-1", "sidecar", CPUSet.parse("4"), "container"),
            ContainerAllocation("app-2", "app", CPUSet(), "host"),
            ContainerAllocation("side-2", "sidecar", CPUSet(), "host"),
        ),
    )
    pr = build_pod_resources(S.snapshot((pod,), S.config("container")), pod)
    assert [c.name for c in pr.containers] == ["side-1", "side-2", "app-1", "app-2"]
    assert pr.container("side-1").cpu_ids == (4,)
    assert pr.container("app-2").cpu_ids == ()


@pytest.mark.parametrize(
    ("release", "isolation", "expected"),
    [
        ("1.37", "container", "19,51"),
        ("1.37", "pod", ""),
        ("1.37", "host", ""),
        ("1.36", "container", "19,51"),
        ("1.36", "pod", "19,51"),  # before kubernetes#138738 the state assignment is reported
        ("1.36", "host", ""),
        ("1.35", "container", "19,51"),
    ],
    ids=lambda v: str(v),
)
def test_container_cpu_ids_by_release_and_isolation(
    release: str, isolation: str, expected: str
) -> None:
    container = ContainerAllocation("c", "app", S.DB_POOL, isolation)  # type: ignore[arg-type]
    pod = PodAllocation("u", "p", "ns", "Guaranteed", (container,))
    gate = release != "1.35"
    snap = S.snapshot((pod,), S.config("pod", release=release, gate=gate))
    assert build_pod_resources(snap, pod).containers[0].cpu_ids == (
        _ids(expected) if expected else ()
    )


def test_no_cpu_ids_and_no_allocatable_cpus_with_the_none_policy() -> None:
    snap = S.snapshot((S.db_pod(),), S.config("pod", cpuManagerPolicy="none"))
    pr = build_list_response(snap).pod_resources[0]
    assert all(c.cpu_ids == () for c in pr.containers)
    assert pr.cpu_ids == ()
    assert build_allocatable_response(snap).cpu_ids == ()


def test_no_memory_anywhere_with_the_none_memory_policy() -> None:
    snap = S.snapshot((S.db_pod(),), S.config("pod", memoryManagerPolicy="None"))
    pr = build_list_response(snap).pod_resources[0]
    assert all(c.memory == () for c in pr.containers)
    assert pr.memory == ()
    assert pr.cpu_ids == _ids("16-19,48-51")
    assert build_allocatable_response(snap).memory == ()


def test_memory_blocks_carry_type_size_and_numa_affinity() -> None:
    block = MemoryBlock((0, 1), "hugepages-1Gi", 2 * GIB)
    container = ContainerAllocation("c", "app", CPUSet.parse("2"), "container", (block,))
    pod = PodAllocation("u", "p", "ns", "Guaranteed", (container,))
    pr = build_pod_resources(S.snapshot((pod,), S.config("container")), pod)
    assert pr.containers[0].memory == (
        ContainerMemory("hugepages-1Gi", 2 * GIB, TopologyInfo((NUMANode(0), NUMANode(1)))),
    )


# -- the 1.37 pod-level rules (podresources.md §6) ---------------------------------------------


def test_pod_scope_reports_the_budget_and_only_the_exclusive_slices() -> None:
    pr = build_list_response(S.docs_pod_scope()).pod_resources[0]
    assert [c.name for c in pr.containers] == ["metrics-exporter", "backup-agent", "database"]
    assert pr.cpu_ids == _ids("16-19,48-51")
    assert pr.memory == (ContainerMemory("memory", 16 * GIB, TopologyInfo((NUMANode(1),))),)
    db = pr.container("database")
    assert db is not None and db.cpu_ids == _ids("16-18,48-50")
    assert db.memory == (ContainerMemory("memory", 12 * GIB, TopologyInfo((NUMANode(1),))),)
    for name in ("metrics-exporter", "backup-agent"):
        shared = pr.container(name)
        assert shared is not None and shared.cpu_ids == () and shared.memory == ()


def test_pod_level_cpus_are_a_superset_of_the_container_cpus() -> None:
    pr = build_list_response(S.docs_pod_scope()).pod_resources[0]
    container_ids = {i for c in pr.containers for i in c.cpu_ids}
    assert container_ids < set(pr.cpu_ids)


@pytest.mark.parametrize(
    ("release", "gate", "scope", "expected"),
    [
        ("1.37", True, "pod", True),
        ("1.37", False, "pod", False),
        ("1.37", True, "container", True),
        ("1.36", True, "pod", False),
        ("1.35", False, "pod", False),
    ],
    ids=["1.37-gate-pod", "1.37-no-gate", "1.37-container-scope", "1.36", "1.35"],
)
def test_pod_level_fields_need_1_37_and_the_gates_not_the_scope(
    release: str, gate: bool, scope: str, expected: bool
) -> None:
    snap = S.snapshot((S.db_pod(),), S.config(scope, release=release, gate=gate))
    assert reports_pod_level(snap) is expected
    pr = build_list_response(snap).pod_resources[0]
    assert bool(pr.cpu_ids) is expected
    assert bool(pr.memory) is expected


def test_scope_changed_across_restart_keeps_reporting_pod_entries() -> None:
    # Admitted under scope pod, the kubelet restarted with scope container and the state
    # kept: the pod entry is still in the state, and the providers report it.
    before = build_list_response(S.docs_pod_scope()).pod_resources[0]
    after_snap = S.snapshot((S.db_pod(),), S.config("container"))
    after = build_list_response(after_snap).pod_resources[0]
    assert after.cpu_ids == before.cpu_ids == tuple(S.DB_BUDGET)
    assert after.memory == before.memory and after.memory
    assert after.containers == before.containers
    # A pod admitted after the restart has no pod entry, so its pod-level fields stay empty.
    plain = replace(S.db_pod(name="later"), pod_cpuset=None, pod_memory=())
    later = build_list_response(S.snapshot((plain,), S.config("container"))).pod_resources[0]
    assert later.cpu_ids == () and later.memory == ()


def test_gate_off_keeps_container_fields_as_before() -> None:
    pr = build_list_response(S.docs_pod_scope(gate=False)).pod_resources[0]
    assert pr.cpu_ids == () and pr.memory == ()
    assert pr.container("database").cpu_ids == _ids("16-18,48-50")  # type: ignore[union-attr]


def test_1_36_reports_the_pod_shared_pool_on_shared_containers() -> None:
    pr = build_list_response(S.docs_pod_scope(release="1.36")).pod_resources[0]
    assert pr.cpu_ids == () and pr.memory == ()
    exporter = pr.container("metrics-exporter")
    assert exporter is not None
    assert exporter.cpu_ids == _ids("19,51")
    assert exporter.memory == (ContainerMemory("memory", 4 * GIB, TopologyInfo((NUMANode(1),))),)


def test_container_scope_reports_no_pod_level_fields() -> None:
    pr = build_list_response(S.docs_container_scope()).pod_resources[0]
    assert pr.cpu_ids == () and pr.memory == ()
    assert [c.name for c in pr.containers] == ["infrastructure-sidecar", "worker-1", "worker-2"]
    assert pr.containers[0].cpu_ids == (1, 33)
    assert pr.containers[0].memory == (
        ContainerMemory("memory", 2 * GIB, TopologyInfo((NUMANode(0),))),
    )
    assert pr.containers[1].cpu_ids == () and pr.containers[2].cpu_ids == ()


def test_budget_only_pod_reports_the_budget_and_empty_containers() -> None:
    pool = CPUSet.parse("20-21")
    block = (MemoryBlock((1,), "memory", GIB),)
    pod = PodAllocation(
        "u",
        "budget-only",
        "ns",
        "Guaranteed",
        (
            ContainerAllocation("a", "app", pool, "pod", block),
            ContainerAllocation("b", "app", pool, "pod", block),
        ),
        pod_cpuset=pool,
        pod_memory=block,
    )
    pr = build_list_response(S.snapshot((pod,))).pod_resources[0]
    assert pr.cpu_ids == (20, 21)
    assert [(c.cpu_ids, c.memory) for c in pr.containers] == [((), ()), ((), ())]


def test_equivalent_guaranteed_container_with_fractional_cpu_keeps_its_memory() -> None:
    pool = CPUSet.parse("20-21")
    own = (MemoryBlock((1,), "memory", GIB),)
    pod = PodAllocation(
        "u",
        "p",
        "ns",
        "Guaranteed",
        (
            ContainerAllocation("half-cpu", "app", pool, "pod", own, 500, 500),
            ContainerAllocation("shared", "app", pool, "pod", own, 0, 0),
        ),
        pod_cpuset=pool,
        pod_memory=(MemoryBlock((1,), "memory", 2 * GIB),),
    )
    pr = build_list_response(S.snapshot((pod,))).pod_resources[0]
    half, shared = pr.containers
    assert half.cpu_ids == () and half.memory != ()
    assert shared.memory == ()


# -- Get ------------------------------------------------------------------------------------------


def test_get_returns_the_same_element_as_list() -> None:
    snap = S.docs_pod_scope()
    got = build_get_response(snap, "default", "tightly-coupled-database").pod_resources
    assert got == build_list_response(snap).pod_resources[0]


@pytest.mark.parametrize(
    ("namespace", "name"),
    [("default", "nope"), ("other", "tightly-coupled-database"), ("", "")],
    ids=["unknown-name", "wrong-namespace", "empty"],
)
def test_get_unknown_pod_has_the_kubelet_text(namespace: str, name: str) -> None:
    with pytest.raises(PodNotFoundError) as err:
        build_get_response(S.docs_pod_scope(), namespace, name)
    assert str(err.value) == f"pod {name} in namespace {namespace} not found"
    assert (err.value.namespace, err.value.name) == (namespace, name)


# -- GetAllocatableResources ---------------------------------------------------------------------


def test_allocatable_cpus_are_all_minus_reserved_and_ignore_pods() -> None:
    empty = build_allocatable_response(S.snapshot(()))
    busy = build_allocatable_response(S.docs_pod_scope())
    assert empty.cpu_ids == busy.cpu_ids == _ids("1-31,33-63")


def test_allocatable_memory_from_the_machine_state() -> None:
    memory = build_allocatable_response(S.docs_pod_scope()).memory
    assert [(m.memory_type, m.size, m.topology.numa_ids()) for m in memory] == [  # type: ignore[union-attr]
        ("memory", 64 * GIB - 2148 * 1024**2, (0,)),
        ("memory", 60 * GIB, (1,)),
        ("hugepages-1Gi", 4 * GIB, (1,)),
    ]  # zero allocatable (hugepages-1Gi on 0, hugepages-2Mi on 1) is left out


def test_allocatable_memory_without_machine_state_uses_topology_minus_reserved() -> None:
    cfg = S.config(
        "pod",
        reservedMemory=[
            {"numaNode": 0, "limits": {"memory": "1Gi"}},
            {"numaNode": 1, "limits": {"memory": "1Gi", "hugepages-1Gi": "1Gi"}},
        ],
    )
    snap = S.snapshot((), cfg, memory=())
    got = [(m.memory_type, m.size, m.topology.numa_ids()) for m in allocatable_memory(snap)]  # type: ignore[union-attr]
    assert got == [
        ("memory", 63 * GIB, (0,)),
        ("memory", 59 * GIB, (1,)),  # 64Gi − 4Gi of hugepages − 1Gi reserved
        ("hugepages-1Gi", 3 * GIB, (1,)),
    ]


def test_allocatable_memory_orders_memory_before_hugepages_by_size() -> None:
    memory = S.machine_state(
        {1: {"hugepages-1Gi": GIB, "hugepages-2Mi": 2 * 1024**2, "memory": GIB}, 0: {"memory": GIB}}
    )
    snap = S.snapshot((), memory=memory)
    got = [(m.topology.numa_ids()[0], m.memory_type) for m in allocatable_memory(snap)]  # type: ignore[union-attr]
    assert got == [(0, "memory"), (1, "memory"), (1, "hugepages-2Mi"), (1, "hugepages-1Gi")]


# -- options ----------------------------------------------------------------------------------


def test_build_options_follow_the_configuration() -> None:
    assert BuildOptions.from_snapshot(S.docs_pod_scope()) == BuildOptions(
        cpu_static=True, memory_static=True, exclusive_only=True, pod_level=True
    )
    assert BuildOptions.from_snapshot(S.docs_pod_scope(release="1.36")) == BuildOptions(
        cpu_static=True, memory_static=True, exclusive_only=False, pod_level=False
    )


def test_list_follows_snapshot_pod_order() -> None:
    pods = (S.db_pod("b", "z"), S.db_pod("a", "y"), replace(S.mixed_pod(), namespace="c"))
    names = [p.name for p in build_list_response(S.snapshot(pods)).pod_resources]
    assert names == ["z", "y", "container-scope-mixed"]

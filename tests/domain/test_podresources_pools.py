"""Derived pools from PodResources answers (app/domain/pools.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.fixtures` under bare pytest

from app.domain.cpuset import CPUSet
from app.domain.podresources import (
    AllocatableResourcesResponse,
    ContainerMemory,
    ContainerResources,
    ListPodResourcesResponse,
    NUMANode,
    PodResources,
    TopologyInfo,
    build_allocatable_response,
    build_list_response,
)
from app.domain.pools import cpuset_view, derive_pools, pools_from_snapshot
from app.domain.snapshot import ContainerAllocation, PodAllocation
from app.domain.topology.model import GIB
from tests.fixtures.podresources import snapshots as S

CS = CPUSet.parse


def _mem(size: int, *nodes: int, memory_type: str = "memory") -> ContainerMemory:
    return ContainerMemory(memory_type, size, TopologyInfo(tuple(NUMANode(n) for n in nodes)))


def test_kep_scenario_one_arithmetic() -> None:
    """podresources.md §9: PodShared = {31, 32}; pod-shared memory on NUMA 1 = 1 GiB."""
    pod = PodResources(
        "pod",
        "default",
        (
            ContainerResources("exclusive-container", cpu_ids=(12, 23, 30), memory=(_mem(GIB, 1),)),
            ContainerResources("pod-shared-pool-container"),
        ),
        cpu_ids=(12, 23, 30, 31, 32),
        memory=(_mem(2 * GIB, 1),),
    )
    allocatable = AllocatableResourcesResponse(cpu_ids=tuple(range(2, 40)))
    pools = derive_pools(ListPodResourcesResponse((pod,)), allocatable)
    p = pools.pod("default", "pod")
    assert p is not None
    assert p.shared_cpus == CS("31-32")
    assert p.exclusive_cpus == CS("12,23,30-32")
    assert dict(p.shared_memory) == {"memory": GIB}
    assert pools.node_shared == CS("2-11,13-22,24-29,33-39")
    assert pools.reserved == CPUSet()  # unknown without a topology


def test_exclusive_is_a_union_not_a_sum() -> None:
    pod = PodResources("p", "ns", (ContainerResources("a", cpu_ids=(4, 5)),), cpu_ids=(4, 5, 6, 7))
    pools = derive_pools(
        ListPodResourcesResponse((pod,)), AllocatableResourcesResponse(cpu_ids=tuple(range(1, 9)))
    )
    assert pools.pods[0].exclusive_cpus.size() == 4
    assert pools.node_shared == CS("1-3,8")


def test_pod_without_pod_level_cpus_has_an_empty_shared_pool() -> None:
    pod = PodResources("p", "ns", (ContainerResources("a", cpu_ids=(3,)),))
    pools = derive_pools(
        ListPodResourcesResponse((pod,)), AllocatableResourcesResponse(cpu_ids=(1, 2, 3))
    )
    assert pools.pods[0].shared_cpus == CPUSet()
    assert pools.to_dict()["podShared"] == {}
    assert pools.to_dict()["exclusive"]["ns/p"]["cpus"] == "3"


def test_pools_of_the_docs_pod_scope_example() -> None:
    pools = pools_from_snapshot(S.docs_pod_scope())
    assert pools.reserved == S.RESERVED
    assert pools.node_shared == CS("1-15,20-31,33-47,52-63")
    db = pools.pod("default", "tightly-coupled-database")
    assert db is not None
    assert db.shared_cpus == S.DB_POOL
    assert db.exclusive_cpus == S.DB_BUDGET
    assert dict(db.shared_memory) == {"memory": 4 * GIB}
    numa0, numa1 = pools.per_numa
    assert (numa0.available, numa1.available) == (30, 32 - 8)
    assert numa1.exclusive == S.DB_BUDGET
    assert numa0.reserved == S.RESERVED
    memory1 = {m.memory_type: m for m in numa1.memory}
    assert memory1["memory"].used == 16 * GIB
    assert memory1["memory"].available == 60 * GIB - 16 * GIB


def test_a_1_37_client_sees_the_budget_but_ignoring_pod_fields_over_reports() -> None:
    """A pre-1.37 consumer (no fields 4/5) counts the pod shared pool as free (§7)."""
    snap = S.docs_pod_scope()
    full = pools_from_snapshot(snap)
    lst = build_list_response(snap)
    old_view = ListPodResourcesResponse(
        tuple(PodResources(p.name, p.namespace, p.containers) for p in lst.pod_resources)
    )
    old = derive_pools(old_view, build_allocatable_response(snap), snap.topology)
    assert old.node_shared - full.node_shared == S.DB_POOL


def test_container_scope_pods_run_in_the_node_shared_pool() -> None:
    pools = pools_from_snapshot(S.docs_container_scope())
    assert pools.to_dict()["podShared"] == {}
    assert pools.node_shared == CS("1-31,33-63") - S.SIDECAR_CPUS
    exclusive = pools.to_dict()["exclusive"]["default/container-scope-mixed"]
    assert exclusive["containers"] == {
        "infrastructure-sidecar": {"cpus": "1,33", "cpuIds": [1, 33]}
    }


def test_shape_of_the_pools_json() -> None:
    d = pools_from_snapshot(S.docs_pod_scope()).to_dict()
    assert {"reserved", "nodeShared", "exclusive", "podShared", "perNuma"} <= set(d)
    assert d["reserved"] == {"cpus": "0,32", "cpuIds": [0, 32]}
    assert d["podShared"]["default/tightly-coupled-database"] == {
        "cpus": "19,51",
        "cpuIds": [19, 51],
        "memory": {"memory": 4 * GIB},
    }
    assert d["exclusive"]["default/tightly-coupled-database"]["containers"] == {
        "database": {"cpus": "16-18,48-50", "cpuIds": [16, 17, 18, 48, 49, 50]}
    }
    assert d["perNuma"]["1"]["availableCpus"] == 24
    assert d["source"] == "simulation" and d["observedAt"] == 1700000000.0
    json.dumps(d)  # JSON-serialisable as is


def test_cpuset_view() -> None:
    assert cpuset_view(CS("0-2,8")) == {"cpus": "0-2,8", "cpuIds": [0, 1, 2, 8]}
    assert cpuset_view(CPUSet()) == {"cpus": "", "cpuIds": []}


def test_multi_numa_memory_block_drains_nodes_in_order() -> None:
    allocatable = AllocatableResourcesResponse(
        cpu_ids=(1,), memory=(_mem(4 * GIB, 0), _mem(4 * GIB, 1))
    )
    pod = PodResources("p", "ns", (ContainerResources("a", memory=(_mem(6 * GIB, 1, 0),)),))
    pools = derive_pools(ListPodResourcesResponse((pod,)), allocatable, S.TWO_NUMA)
    used = {n.numa_id: n.memory[0].used for n in pools.per_numa}
    assert used == {0: 4 * GIB, 1: 2 * GIB}


def test_policy_none_reports_nothing_allocatable() -> None:
    pools = pools_from_snapshot(S.snapshot((), S.config("pod", cpuManagerPolicy="none")))
    assert pools.reserved == CPUSet() and pools.node_shared == CPUSet()
    assert any("no allocatable CPUs" in n for n in pools.notes)


def test_exclusive_cpus_outside_allocatable_are_noted() -> None:
    pod = PodResources("p", "ns", (ContainerResources("a", cpu_ids=(0,)),))
    pools = derive_pools(
        ListPodResourcesResponse((pod,)), AllocatableResourcesResponse(cpu_ids=(1, 2))
    )
    assert pools.notes == ("exclusive CPUs outside the allocatable set: 0",)


# -- properties -------------------------------------------------------------------------------


@st.composite
def _node(draw: st.DrawFn) -> tuple[PodAllocation, ...]:
    free = list(range(1, 32)) + list(range(33, 64))
    free = draw(st.permutations(free))
    pods = []
    for i in range(draw(st.integers(0, 6))):
        if len(free) < 4:
            break
        budget_size = draw(st.integers(2, 4))
        budget, free = free[:budget_size], free[budget_size:]
        slice_size = draw(st.integers(0, budget_size - 1))
        exclusive = CPUSet(budget[:slice_size])
        pool = CPUSet(budget) - exclusive
        pod_level = draw(st.booleans())
        containers = [ContainerAllocation("x", "app", exclusive, "container")] if slice_size else []
        if pod_level:
            containers.append(ContainerAllocation("s", "sidecar", pool, "pod"))
        else:
            containers.append(ContainerAllocation("s", "app", CPUSet(), "host"))
            exclusive = CPUSet(budget)
            containers[0:1] = [ContainerAllocation("x", "app", exclusive, "container")]
        pods.append(
            PodAllocation(
                f"u{i}",
                f"p{i}",
                "ns",
                "Guaranteed",
                tuple(containers),
                pod_cpuset=CPUSet(budget) if pod_level else None,
            )
        )
    return tuple(pods)


@settings(max_examples=60, deadline=None)
@given(_node())
def test_pools_partition_the_machine(pods: tuple[PodAllocation, ...]) -> None:
    pools = pools_from_snapshot(S.snapshot(pods))
    parts = [pools.reserved, pools.node_shared, *(p.exclusive_cpus for p in pools.pods)]
    union = 0
    for part in parts:
        assert union & part.mask == 0  # disjoint
        union |= part.mask
    assert CPUSet.from_mask(union) == S.TWO_NUMA.all_cpus
    for p in pools.pods:
        assert p.shared_cpus.is_subset_of(p.exclusive_cpus)
    assert sum(n.available for n in pools.per_numa) == pools.node_shared.size()


@pytest.mark.parametrize("release", ["1.35", "1.36", "1.37"])
def test_pools_from_snapshot_goes_through_the_responses(release: str) -> None:
    snap = S.docs_pod_scope(release=release, gate=release != "1.35")
    direct = derive_pools(
        build_list_response(snap),
        build_allocatable_response(snap),
        snap.topology,
        source=snap.source,
        observed_at=snap.observed_at,
    )
    assert pools_from_snapshot(snap) == direct

"""Release 1.38 (upstream master) changes to the CPU manager, against the upstream tables:

* kubernetes#141041, policy_static_restore_test.go ``TestStaticPolicyRestorePodAllocation``,
  ``TestGetPodTopologyHintsWithRestoredPodCPUSet``, ``TestGetPodTopologyHintsStalePodCPUSet``,
  ``TestPodLevelResourcesReallocationAfterRestart`` (and what 1.37 does instead);
* kubernetes#140766 (spread order by topology), kubernetes#140730 (distributed-take loop).
"""

from __future__ import annotations

import pytest

from app.domain.cpumanager.cpu_assignment.common import DistributedAllocationHangError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.presets import get_preset
from app.domain.quantity import Quantity
from app.domain.topology.model import CPUInfo, CPUTopology
from tests.factories import budget_pod

P = CPUSet.parse
GATES = {"PodLevelResources": True, "PodLevelResourceManagers": True}


def topo(numa_of: list[int], name: str) -> CPUTopology:
    """One socket, one core per CPU (no SMT), NUMA node per CPU as given."""
    return CPUTopology([CPUInfo(i, i, 0, n, 0) for i, n in enumerate(numa_of)], name=name)


UNIFORM = topo([0] * 8, "topoRestoreUniformSingleSocket")
DUAL_NUMA = topo([0, 0, 0, 0, 1, 1, 1, 1], "topoRestoreDualNUMA")


def ctr(name: str, cpu: str | None = None, *, sidecar: bool = False) -> Container:
    res: dict[str, Quantity] = {}
    if cpu is not None:
        res = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse("100Mi")}
    return Container(name, ResourceRequirements(res, dict(res)), "Always" if sidecar else None)


def policy(t: CPUTopology = UNIFORM, release: str = "1.38") -> StaticPolicy:
    return StaticPolicy(t, 1, P("0"), None, feature_gates=GATES, release=release)


def state(
    default: str, pod_uid: str, pod_cpus: str, assignments: dict[str, str]
) -> CPUManagerState:
    s = CPUManagerState(P(default))
    s.set_pod_cpu_set(pod_uid, P(pod_cpus))
    for name, cset in assignments.items():
        s.set_cpu_set(pod_uid, name, P(cset))
    return s


C2 = [ctr("c1", "2"), ctr("c2", "2")]
RESTORE_CASES = [
    # id, pod, default, pod set, assignments, expected assignments, expected pod set, default
    ("complete", budget_pod("p", "4", *C2), "0,5-7", "1-4", {"c1": "1-2", "c2": "3-4"},
     {"c1": "1-2", "c2": "3-4"}, "1-4", "0,5-7"),
    ("complete-moved", budget_pod("p", "4", *C2), "0-2,7", "3-6", {"c1": "3-4", "c2": "5-6"},
     {"c1": "3-4", "c2": "5-6"}, "3-6", "0-2,7"),
    ("partial", budget_pod("p", "4", *C2), "0,5-7", "1-4", {"c1": "1-2"},
     {"c1": "1-2", "c2": "3-4"}, "1-4", "0,5-7"),
    ("none", budget_pod("p", "4", *C2), "0,5-7", "1-4", {},
     {"c1": "1-2", "c2": "3-4"}, "1-4", "0,5-7"),
    ("shared", budget_pod("p", "3", ctr("c1", "2"), ctr("c2")), "0,4-7", "1-3", {"c1": "1-2"},
     {"c1": "1-2", "c2": "3"}, "1-3", "0,4-7"),
    ("init-reuse", budget_pod("p", "2", ctr("c1", "2"), inits=(ctr("i1", "2"),)), "0,3-7", "1-2",
     {"i1": "1-2"}, {"i1": "1-2", "c1": "1-2"}, "1-2", "0,3-7"),
    ("sidecar", budget_pod("p", "4", ctr("c1", "2"), inits=(ctr("s1", "2", sidecar=True),)), "0,5-7",
     "1-4", {"s1": "1-2"}, {"s1": "1-2", "c1": "3-4"}, "1-4", "0,5-7"),
    ("two-sidecars", budget_pod("p", "6", ctr("c1", "2"), inits=(ctr("s1", "2", sidecar=True), ctr("s2", "2", sidecar=True))),
     "0,7", "1-6", {"s1": "1-2"}, {"s1": "1-2", "s2": "3-4", "c1": "5-6"}, "1-6", "0,7"),
    ("nonprefix-app", budget_pod("p", "4", *C2), "0,5-7", "1-4", {"c2": "2,4"},
     {"c1": "1-2", "c2": "3-4"}, "1-4", "0,5-7"),
    ("nonprefix-init", budget_pod("p", "2", ctr("c1", "2"), inits=(ctr("i1", "2"),)), "0,3-7", "1-2",
     {"c1": "2"}, {"i1": "1-2", "c1": "1-2"}, "1-2", "0,3-7"),
    ("stale-overlap", budget_pod("p", "2", ctr("c1", "2")), "0-7", "5-6", {},
     {"c1": "1-2"}, "1-2", "0,3-7"),
    ("ngu-sidecar", budget_pod("p", "3", ctr("c1", "2"), inits=(ctr("s1", sidecar=True),)), "0,4-7",
     "1-3", {}, {"s1": "3", "c1": "1-2"}, "1-3", "0,4-7"),
    ("ngu-init", budget_pod("p", "4", ctr("c1", "2"), inits=(ctr("s1", "2", sidecar=True), ctr("i1"))),
     "0,5-7", "1-4", {"s1": "1-2"}, {"s1": "1-2", "i1": "3-4", "c1": "3-4"}, "1-4", "0,5-7"),
    ("ngu-init-restored",
     budget_pod("p", "4", ctr("c1", "2"), inits=(ctr("s1", "2", sidecar=True), ctr("i1"))),
     "0,5-7", "1-4", {"s1": "1-2", "i1": "3"}, {"s1": "1-2", "i1": "3", "c1": "3-4"}, "1-4",
     "0,5-7"),
    ("multi-init-reuse", budget_pod("p", "2", ctr("c1", "2"), inits=(ctr("i1", "2"), ctr("i2", "2"))),
     "0,3-7", "1-2", {"i1": "1-2"}, {"i1": "1-2", "i2": "1-2", "c1": "1-2"}, "1-2", "0,3-7"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "default", "pod_cpus", "have", "want", "want_pod", "want_default"),
    [pytest.param(*c[1:], id=c[0]) for c in RESTORE_CASES],
)
def test_restore_pod_allocation(
    pod: Pod,
    default: str,
    pod_cpus: str,
    have: dict[str, str],
    want: dict[str, str],
    want_pod: str,
    want_default: str,
) -> None:
    p = policy()
    s = state(default, pod.uid, pod_cpus, have)
    p.allocate_pod(s, pod)
    assert {k: str(v) for k, v in s.assignments[pod.uid].items()} == {
        k: str(P(v)) for k, v in want.items()
    }
    assert s.get_pod_cpu_set(pod.uid) == P(want_pod)
    assert s.default_cpuset == P(want_default)
    p.allocate_pod(s, pod)  # idempotent
    assert s.get_pod_cpu_set(pod.uid) == P(want_pod)
    assert s.default_cpuset == P(want_default)


def test_failed_completion_releases_every_cpu_of_the_pod() -> None:
    pod = budget_pod("p", "4", *C2)
    s = state("0,3-7", "p", "1-2", {"c1": "1-2"})
    with pytest.raises(CPUAllocationError, match="not enough cpus available"):
        policy().allocate_pod(s, pod)
    assert s.get_pod_cpu_set("p") is None
    assert not s.assignments.get("p")
    assert s.default_cpuset == P("0-7")


def test_pod_hints_come_from_the_restored_pod_cpu_set() -> None:
    pod = budget_pod("h", "2", ctr("c1", "2"))
    p = policy(DUAL_NUMA)
    hints = p.get_pod_topology_hints(state("0-4,7", "h", "5-6", {}), pod)["cpu"]
    assert hints is not None
    preferred = [h for h in hints if h.preferred]
    assert preferred and all(h.numa_affinity == 0b10 for h in preferred)
    assert p.get_pod_topology_hints(state("0,4-7", "h", "1-3", {}), pod)["cpu"] == []


def test_pod_hints_ignore_a_stale_pod_cpu_set() -> None:
    pod = budget_pod("h", "2", ctr("c1", "2"))
    hints = policy(DUAL_NUMA).get_pod_topology_hints(state("0-7", "h", "5-6", {}), pod)["cpu"]
    assert any(h.preferred and h.numa_affinity & 0b01 for h in hints or [])


def test_pod_hints_count_the_cpus_a_stale_nonprefix_allocation_gives_back() -> None:
    pod = budget_pod("h", "4", ctr("c1", "2"), ctr("c2", "2"))
    s = state("0-3", "h", "4-7", {"c2": "6-7"})
    hints = policy(DUAL_NUMA).get_pod_topology_hints(s, pod)["cpu"]
    assert any(h.preferred and h.numa_affinity & 0b10 for h in hints or [])


@pytest.mark.parametrize(("cpus", "moved"), [(4, None), (6, "3-4")])
def test_137_allocates_a_restored_pod_anew(cpus: int, moved: str | None) -> None:
    """kubernetes#140989: 1.37.0 re-allocates (rejects on 4 CPUs, moves and leaks on 6)."""
    t = topo([0] * cpus, f"uniform-{cpus}")
    pod = budget_pod("t", "2", ctr("container1", "2"))
    first = CPUManagerState(t.all_cpus)
    policy(t, "1.37").allocate_pod(first, pod)
    assert first.get_pod_cpu_set("t") == P("1-2")
    for release in ("1.37", "1.38"):
        s = first.copy()
        p = policy(t, release)
        p.start(s)
        if release == "1.38":
            p.allocate_pod(s, pod)
            assert s.get_pod_cpu_set("t") == P("1-2")
            assert s.default_cpuset | P("1-2") == t.all_cpus
        elif moved is None:
            with pytest.raises(CPUAllocationError, match="requested=2, available=1"):
                p.allocate_pod(s, pod)
        else:
            p.allocate_pod(s, pod)
            assert s.get_pod_cpu_set("t") == P(moved)
            assert (s.default_cpuset | P(moved)) != t.all_cpus  # CPUs 1-2 leaked


# -- kubernetes#140766: distribute-cpus-across-cores by topology ------------------------------


def test_spread_by_topology_quad_socket_upstream_case() -> None:
    t = get_preset("topoQuadSocketFourWayHT")
    old = take_by_topology_numa_packed(t, P("0-287"), 12, "spread")
    new = take_by_topology_numa_packed(t, P("0-287"), 12, "spread", spread_by_topology=True)
    assert old == P("0-2,9-10,13-14,21-22,25-26,33")
    assert new == P("0,50,57-58,71-72,79-80,87-88,95-96")
    assert len(t.cores_of(new)) == 12


def test_spread_order_round_robin_over_cores_of_each_socket() -> None:
    from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator

    core_of = {0: 0, 7: 0, 2: 1, 11: 1, 5: 2, 9: 2, 1: 3, 14: 3}
    t = CPUTopology([CPUInfo(c, k, 0, 0, 0) for c, k in core_of.items()], name="interleaved")
    acc = CPUAccumulator(t, t.all_cpus, 1, "spread", spread_by_topology=True)
    assert acc.free_cpus() == [0, 2, 5, 1, 7, 11, 9, 14]
    two = CPUTopology(
        [CPUInfo(c, c // 2, c // 8, c // 8, 0) for c in range(16)], name="two-sockets"
    )
    acc = CPUAccumulator(two, two.all_cpus, 1, "spread", spread_by_topology=True)
    assert acc.free_cpus() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]


# -- kubernetes#140730: the distributed take terminates ---------------------------------------


def test_distributed_take_with_odd_leftovers() -> None:
    t = get_preset("topoDualSocketMultiNumaPerSocketHT")
    avail = P("0-4,10-14,20-24,30-34")
    assert take_by_topology_numa_distributed(t, avail, 14, 2) == P("0-3,10-13,20-23,30-31")
    with pytest.raises(DistributedAllocationHangError, match="never finishes"):
        take_by_topology_numa_distributed(t, avail, 14, 2, hang_release="1.37")

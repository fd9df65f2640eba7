"""The CPU manager's three gauges per release, pod-level pods included.

1.36/1.37 follow the delta accounting of pkg/kubelet/cm/cpumanager/policy_static.go as
kubernetes#134768 left it (``updateMetricsOnAllocate``/``updateMetricsOnRelease``,
``getTotalAssignedExclusiveCPUs`` over container assignments only). 1.38 follows
kubernetes#141261 (fixes #141262), whose scenarios are those of upstream's
pkg/kubelet/cm/cpumanager/policy_static_metrics_test.go: each case below names the upstream
test it follows and, for 1.37, the drift that PR describes.

topoDualSocketHT: NUMA 0 = 0,2,4,6,8,10, NUMA 1 = 1,3,5,7,9,11; topoSingleSocketHT: CPUs 0-7,
one NUMA node. One CPU reserved (CPU 0) on both.
"""

from __future__ import annotations

import pytest

from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.presets import get_preset
from app.domain.quantity import Quantity
from app.domain.topologymanager.hint import TopologyHint
from tests.factories import budget_pod

P = CPUSet.parse
GATES = {"PodLevelResources": True, "PodLevelResourceManagers": True}
NUMA0 = TopologyHint(0b01, True)
NUMA1 = TopologyHint(0b10, True)

Gauges = tuple[int, int, dict[int, int]]


def gauges(p: StaticPolicy) -> Gauges:
    m = p.metrics
    per_numa = dict(m.allocation_per_numa)  # a copy: the policy updates its dict in place
    return m.exclusive_cpu_allocation_count, m.shared_pool_size_millicores, per_numa


def ctr(name: str, cpu: str | None = None) -> Container:
    req = {"memory": Quantity.parse("100Mi")}
    if cpu is not None:
        req["cpu"] = Quantity.parse(cpu)
    return Container(name, ResourceRequirements(req, dict(req)))


def classic(uid: str, *containers: Container, inits: tuple[Container, ...] = ()) -> Pod:
    return Pod(uid, uid, "default", containers, inits)


def policy(release: str, topo: str = "topoDualSocketHT", gates: bool = True) -> StaticPolicy:
    return StaticPolicy(
        get_preset(topo), 1, P("0"), feature_gates=GATES if gates else {}, release=release
    )


def started(p: StaticPolicy, state: CPUManagerState | None = None) -> CPUManagerState:
    s = state if state is not None else CPUManagerState()
    p.start(s)
    return s


# -- Start (TestStaticPolicyMetricsInitialization) -------------------------------------------


@pytest.mark.parametrize(
    ("release", "want"),
    [
        # 1.37: Start counts container assignments only; the bubble's CPUs 1 and 7 (no
        # container holds them any more) are neither exclusive nor in the shared pool.
        ("1.37", (6, 3000, {0: 5, 1: 1})),
        # 1.38: the pod-level CPU set counts too, while the gate is on.
        ("1.38", (8, 3000, {0: 5, 1: 3})),
    ],
)
def test_start_with_a_partly_released_bubble(release: str, want: Gauges) -> None:
    p = policy(release)
    s = CPUManagerState(
        P("0,5,9,11"), {"podA": {"shared": P("2-4,6,8,10")}}, {"podA": P("1-4,6-8,10")}
    )
    started(p, s)
    assert gauges(p) == want


@pytest.mark.parametrize(
    ("release", "want"),
    [("1.37", (0, 11000, {})), ("1.38", (0, 11000, {0: 0, 1: 0}))],
)
def test_start_on_an_empty_state(release: str, want: Gauges) -> None:
    p = policy(release)
    started(p)
    assert gauges(p) == want


# -- container scope (TestStaticPolicyMetricsInitContainerCPUReuseCountedOnce) ---------------


@pytest.mark.parametrize(
    ("release", "steps"),
    [
        # 1.37 (#141262 scenario 1): the app container's 2 CPUs, reused from the init
        # container, are added again; removing both leaves a residue of 2 and a shared
        # pool 2 CPUs short, and the emptied NUMA node keeps its last value.
        ("1.37", [(4, 3000, {0: 4}), (6, 1000, {0: 4}), (4, 3000, {0: 2}), (2, 5000, {0: 2})]),
        ("1.38", [(4, 3000, {0: 4}), (4, 3000, {0: 4}), (2, 5000, {0: 2}), (0, 7000, {0: 0})]),
    ],
)
def test_init_container_cpus_reused_by_an_app_container(release: str, steps: list[Gauges]) -> None:
    p = policy(release, "topoSingleSocketHT")
    s = started(p)
    pod = classic("podUID", ctr("app", "2"), inits=(ctr("init", "4"),))
    seen = []
    p.allocate(s, pod, "init")
    seen.append(gauges(p))
    p.allocate(s, pod, "app")
    seen.append(gauges(p))
    p.remove_container(s, "podUID", "init")
    seen.append(gauges(p))
    p.remove_container(s, "podUID", "app")
    seen.append(gauges(p))
    assert seen == steps


# -- per NUMA node (TestStaticPolicyMetricsPerNUMA) ------------------------------------------


@pytest.mark.parametrize(
    ("release", "after_removal"),
    [("1.37", (2, 9000, {0: 2, 1: 2})), ("1.38", (2, 9000, {0: 0, 1: 2}))],
)
def test_an_emptied_numa_node(release: str, after_removal: Gauges) -> None:
    p = policy(release)
    s = started(p)
    a, b = classic("podA", ctr("c", "2")), classic("podB", ctr("c", "2"))
    p.allocate(s, a, "c", NUMA0)
    p.allocate(s, b, "c", NUMA1)
    assert gauges(p) == (4, 7000, {0: 2, 1: 2})
    p.remove_container(s, "podA", "c")
    assert gauges(p) == after_removal


# -- pod level (TestStaticPolicyMetricsPodLevelAllocationAndRelease) -------------------------


@pytest.mark.parametrize(
    ("release", "busy", "idle"),
    [
        # 1.37: AllocatePod counts the bubble before it writes the container assignments,
        # so the per-NUMA gauge never sees this pod.
        ("1.37", (4, 7000, {}), (0, 11000, {})),
        ("1.38", (4, 7000, {0: 4, 1: 0}), (0, 11000, {0: 0, 1: 0})),
    ],
)
def test_a_pod_budget_and_its_pod_shared_pool(release: str, busy: Gauges, idle: Gauges) -> None:
    p = policy(release)
    s = started(p)
    pod = budget_pod("plrm-pod", "4", ctr("gu", "2"), ctr("shared"))
    p.allocate_pod(s, pod, NUMA0)
    assert s.get_pod_cpu_set("plrm-pod") == P("2,4,8,10")
    # The exclusive container and the pod shared pool are both counted as exclusive CPUs:
    # the whole budget left the node's shared pool.
    assert gauges(p) == busy
    p.remove_container(s, "plrm-pod", "gu")  # the bubble stays until the last container goes
    assert gauges(p) == busy
    p.remove_container(s, "plrm-pod", "shared")
    assert gauges(p) == idle


@pytest.mark.parametrize(
    ("release", "after"),
    [
        # 1.37: the bubble's delta stays although the failed admission changed nothing.
        ("1.37", (3, 8000, {})),
        ("1.38", (0, 11000, {0: 0, 1: 0})),
    ],
)
def test_a_pod_budget_whose_partition_fails(release: str, after: Gauges) -> None:
    """TestStaticPolicyMetricsPodLevelAllocationRollback: 2 + 2 exclusive CPUs in a budget
    of 3 pass the budget rule (no shared container) and fail inside the bubble."""
    p = policy(release)
    s = started(p)
    pod = budget_pod("rollback-pod", "3", ctr("gu-1", "2"), ctr("gu-2", "2"))
    with pytest.raises(CPUAllocationError):
        p.allocate_pod(s, pod, NUMA0)
    assert s.default_cpuset == P("0-11")
    assert gauges(p) == after
    m = p.metrics
    assert (m.pinning_requests_total, m.pinning_errors_total) == (2, 1)
    assert m.errors("cpu", "pod") == 1 and m.allocations("cpu", "pod") == 0


@pytest.mark.parametrize("release", ["1.37", "1.38"])
def test_a_non_integral_budget_allocates_nothing(release: str) -> None:
    """TestStaticPolicyMetricsPodLevelNonIntegralCPUs."""
    p = policy(release)
    s = started(p)
    before = gauges(p)
    p.allocate_pod(s, budget_pod("shared-pod", "1500m", ctr("c")), NUMA0)
    assert gauges(p) == before
    assert s.get_pod_cpu_set("shared-pod") is None

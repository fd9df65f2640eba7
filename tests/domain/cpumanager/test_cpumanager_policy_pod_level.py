"""Static CPU policy, pod-level resource managers (KEP-5526): AllocatePod, pod hints, budget
validation, pod-level removal, metrics."""

from __future__ import annotations

import pytest

from app.domain.admission import EmptyPodSharedPoolError, SMTAlignmentError
from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.pod_scope import validate_pod_scope_resources
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.presets import get_preset
from app.domain.quantity import Quantity
from app.domain.topologymanager.hint import TopologyHint
from tests.factories import budget_pod

P = CPUSet.parse
GATES = {
    "CPUManagerPolicyAlphaOptions": True,
    "CPUManagerPolicyBetaOptions": True,
    "PodLevelResources": True,
    "PodLevelResourceManagers": True,
}


def ctr(name: str, cpu: str | None = None, *, sidecar: bool = False) -> Container:
    req: dict[str, Quantity] = {"memory": Quantity.parse("100Mi")}
    if cpu is not None:
        req["cpu"] = Quantity.parse(cpu)
    return Container(name, ResourceRequirements(req, dict(req)), "Always" if sidecar else None)


def setup(
    options: dict[str, str] | None = None, gates: dict[str, bool] | None = None
) -> tuple[StaticPolicy, CPUManagerState]:
    """topoDualSocketHT, reserved {0}, default 0-11 (the upstream AllocatePod fixture)."""
    p = StaticPolicy(
        get_preset("topoDualSocketHT"), 1, P("0"), options, feature_gates=gates or GATES
    )
    s = CPUManagerState(P("0-11"))
    p.start(s)
    return p, s


WORKED_EXAMPLES = [
    (
        budget_pod("p", "3", ctr("gu-1", "1"), ctr("gu-2", "1"), ctr("ngu")),
        "2,6,8",
        {"gu-1": "6", "gu-2": "2", "ngu": "8"},
        "0-1,3-5,7,9-11",
        (3, 2, 1),
    ),
    (
        budget_pod(
            "p",
            "3",
            ctr("gu-1", "1"),
            ctr("ngu-2"),
            inits=(ctr("ngu-init-1"), ctr("gu-restartable", "1", sidecar=True), ctr("ngu-init-3")),
        ),
        "2,6,8",
        {
            "ngu-init-1": "2,6,8",
            "gu-restartable": "6",
            "ngu-init-3": "2,8",
            "gu-1": "2",
            "ngu-2": "8",
        },
        "0-1,3-5,7,9-11",
        (5, 2, 3),
    ),
    (
        budget_pod("p", "2", ctr("container1", "1")),
        "2,8",
        {"container1": "2"},
        "0-1,3-7,9-11",
        (1, 1, 0),
    ),
]


@pytest.mark.parametrize(
    ("pod", "bubble", "assignments", "default", "metrics"),
    WORKED_EXAMPLES,
    ids=["exclusive-and-shared", "init-sidecar-app", "unused-budget"],
)
def test_allocate_pod_worked_examples(
    pod: Pod,
    bubble: str,
    assignments: dict[str, str],
    default: str,
    metrics: tuple[int, int, int],
) -> None:
    p, s = setup()
    p.allocate_pod(s, pod)
    assert s.pod_entries == {"p": P(bubble)}
    assert s.assignments == {"p": {k: P(v) for k, v in assignments.items()}}
    assert s.default_cpuset == P(default)
    m = p.metrics
    assert (
        m.allocations("cpu", "pod"),
        m.assignments("cpu", "pod_exclusive"),
        m.assignments("cpu", "pod_shared"),
    ) == metrics
    assert m.errors("cpu", "pod") == 0
    assert m.exclusive_cpu_allocation_count == P(bubble).size()
    # Start accepts the result (pod entries count towards the known CPUs).
    p.validate_state(s)


def test_allocate_pod_uses_the_first_containers_hint() -> None:
    p, s = setup()
    pod = budget_pod("p", "2", ctr("a", "1"), inits=(ctr("i", "1"),))
    p.allocate_pod(s, pod, {"i": TopologyHint(0b10, True), "a": TopologyHint(0b01, True)})
    assert s.pod_entries == {"p": P("1,7")}
    p2, s2 = setup()
    p2.allocate_pod(s2, pod, TopologyHint(0b10, False))
    assert s2.pod_entries == {"p": P("1,7")}


def test_allocate_pod_budget_rejection_leaves_state() -> None:
    p, s = setup()
    before = s.copy()
    pod = budget_pod("p", "2", ctr("gu-1", "1"), ctr("gu-2", "1"), ctr("ngu"))
    with pytest.raises(EmptyPodSharedPoolError) as err:
        p.allocate_pod(s, pod)
    assert err.value.reason == "EmptyPodSharedPoolError"
    assert err.value.message == (
        "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no "
        "cpus for shared containers"
    )
    assert s == before
    assert p.metrics.errors("cpu", "pod") == 1


def test_allocate_pod_not_guaranteed_does_nothing() -> None:
    p, s = setup()
    before = s.copy()
    p.allocate_pod(s, budget_pod("p", "2", ctr("gu-1", "1"), limit="1"))
    p.allocate_pod(s, budget_pod("q", "1500m", ctr("gu-1", "1"), ctr("x")))
    assert s == before
    assert p.metrics.errors("cpu", "pod") == 0
    assert p.metrics.allocations("cpu", "pod") == 0


def test_allocate_pod_smt_alignment() -> None:
    p, s = setup({"full-pcpus-only": "true"})
    with pytest.raises(SMTAlignmentError) as err:
        p.allocate_pod(s, budget_pod("p", "3", ctr("a", "1"), ctr("b")))
    assert (
        err.value.message == "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    )
    with pytest.raises(SMTAlignmentError) as err:
        p.allocate_pod(s, budget_pod("p", "12", ctr("a", "2"), ctr("b")))
    assert err.value.message == (
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 10, "
        "requested CPUs = 12, CPUs per core = 2"
    )


def test_allocate_pod_not_enough_cpus_rolls_back() -> None:
    p, s = setup()
    before = s.copy()
    with pytest.raises(CPUAllocationError) as err:
        p.allocate_pod(s, budget_pod("p", "12", ctr("a", "1"), ctr("b")))
    assert err.value.message == (
        "not enough cpus available to satisfy request: requested=12, available=11"
    )
    assert s == before
    assert p.metrics.pinning_errors_total == 1


def test_allocate_pod_is_not_idempotent() -> None:
    p, s = setup()
    pod = budget_pod("p", "2", ctr("a", "1"), ctr("b"))
    p.allocate_pod(s, pod)
    first = s.pod_entries["p"]
    p.allocate_pod(s, pod)  # a second bubble, as upstream (no idempotence check)
    assert s.pod_entries["p"] != first
    assert s.default_cpuset.size() == 12 - 4


# -- removal (§5.7) -------------------------------------------------------------------------


def test_pod_level_remove_releases_bubble_with_the_last_container() -> None:
    p, s = setup()
    pod = WORKED_EXAMPLES[0][0]
    p.allocate_pod(s, pod)
    default = s.default_cpuset
    p.remove_container(s, "p", "gu-1")
    assert s.default_cpuset == default
    assert s.assignments["p"] == {"gu-2": P("2"), "ngu": P("8")}
    assert s.pod_entries == {"p": P("2,6,8")}
    p.remove_container(s, "p", "ngu")
    assert s.default_cpuset == default
    p.remove_container(s, "p", "gu-2")
    assert s.default_cpuset == P("0-11")
    assert s.pod_entries == {}
    assert s.assignments == {}
    assert p.metrics.exclusive_cpu_allocation_count == 0


def test_pod_level_remove_with_gate_off_uses_node_path() -> None:
    p, s = setup()
    p.allocate_pod(s, WORKED_EXAMPLES[0][0])
    off = StaticPolicy(
        get_preset("topoDualSocketHT"),
        1,
        P("0"),
        feature_gates={**GATES, "PodLevelResourceManagers": False},
    )
    off.remove_container(s, "p", "gu-1")
    assert s.default_cpuset == P("0-1,3-7,9-11")  # 6 released at once
    assert s.pod_entries == {"p": P("2,6,8")}


# -- hints (§5.4) ------------------------------------------------------------------------


def test_pod_hints_for_pod_level_pods() -> None:
    p, s = setup()
    ok = budget_pod("p", "3", ctr("a", "1"), ctr("b"))
    assert p.get_pod_topology_hints(s, ok) == {
        "cpu": [TopologyHint(0b01, True), TopologyHint(0b10, True), TopologyHint(0b11, False)]
    }
    bad = budget_pod("p", "2", ctr("a", "1"), ctr("b", "1"), ctr("c"))
    assert p.get_pod_topology_hints(s, bad) == {"cpu": []}
    fractional = budget_pod("p", "2500m", ctr("a", "1"), ctr("b"))
    assert p.get_pod_topology_hints(s, fractional) == {"cpu": None}
    off = StaticPolicy(
        get_preset("topoDualSocketHT"),
        1,
        P("0"),
        feature_gates={**GATES, "PodLevelResources": False},
    )
    assert off.get_pod_topology_hints(s, ok) == {"cpu": None}
    assert off.get_topology_hints(s, ok, "a") == {"cpu": None}


def test_pod_hints_after_restart_see_shared_container_mismatch() -> None:
    p, s = setup()
    pod = budget_pod("p", "3", ctr("a", "1"), ctr("b"))
    p.allocate_pod(s, pod)
    assert p.get_pod_topology_hints(s, pod) == {"cpu": []}
    only_exclusive = budget_pod("q", "2", ctr("c", "1"))
    p.allocate_pod(s, only_exclusive)
    hints = p.get_pod_topology_hints(s, only_exclusive)["cpu"]
    assert hints is not None and all(h.numa_affinity is not None for h in hints)


# -- budget validation (§5.3) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (budget_pod("p", "4", ctr("c1", "2"), ctr("c2")), None),
        (budget_pod("p", "4", ctr("c1", "2"), ctr("c2", "2")), None),
        (
            budget_pod("p", "2", ctr("c1"), inits=(ctr("i1", "1"), ctr("r1", "1", sidecar=True))),
            None,
        ),
        (
            budget_pod("p", "2", ctr("c1", "1"), inits=(ctr("r1", "2", sidecar=True), ctr("i1"))),
            "pod rejected, pod has shared init containers but no cpus available for them",
        ),
        (
            budget_pod("p", "3", ctr("c1"), inits=(ctr("r1", "2", sidecar=True), ctr("i1", "2"))),
            "pod rejected, largest exclusive init container requests 2 cpus, but only 1 available",
        ),
        (
            budget_pod(
                "p",
                "2",
                ctr("c1", "1"),
                inits=(ctr("r1", "1", sidecar=True), ctr("r2", sidecar=True)),
            ),
            "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no "
            "cpus for shared containers",
        ),
        (budget_pod("p", "4", ctr("c1", "1500m"), ctr("c2", "3")), None),
    ],
    ids=[
        "exclusive-and-shared",
        "only-exclusive",
        "init-and-sidecar",
        "shared-init-no-pool",
        "init-too-large",
        "shared-sidecar-no-pool",
        "fractional-container-is-shared",
    ],
)
def test_validate_pod_scope_resources(pod: Pod, message: str | None) -> None:
    if message is None:
        validate_pod_scope_resources(pod, GATES)
        return
    with pytest.raises(PodBudgetError) as err:
        validate_pod_scope_resources(pod, GATES)
    assert err.value.message == message

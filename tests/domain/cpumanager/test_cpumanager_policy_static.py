"""Static CPU policy, classic (node-pool) path: construction, Start, Allocate, reuse, removal,
hints and isolation levels."""

from __future__ import annotations

import pytest

from app.domain.admission import SMTAlignmentError
from app.domain.cpumanager.errors import CPUAllocationError, CPUManagerStateError
from app.domain.cpumanager.policy_options import CPUManagerPolicyError, StaticPolicyOptions
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.reservation import num_reserved_cpus_from_reservation
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.presets import get_preset
from app.domain.quantity import Quantity
from app.domain.topologymanager.hint import TopologyHint
from tests.factories import budget_pod

P = CPUSet.parse
ALL_GATES = {
    "CPUManagerPolicyAlphaOptions": True,
    "CPUManagerPolicyBetaOptions": True,
    "PodLevelResources": True,
    "PodLevelResourceManagers": True,
}


def ctr(
    name: str,
    cpu: str | None = None,
    *,
    limit: str | None = None,
    mem: str | None = "1Gi",
    sidecar: bool = False,
) -> Container:
    req: dict[str, Quantity] = {}
    lim: dict[str, Quantity] = {}
    if cpu is not None:
        req["cpu"] = Quantity.parse(cpu)
        lim["cpu"] = Quantity.parse(limit or cpu)
    if mem is not None:
        req["memory"] = lim["memory"] = Quantity.parse(mem)
    return Container(name, ResourceRequirements(req, lim), "Always" if sidecar else None)


def policy(
    topo: str = "topoDualSocketHT",
    reserved: int = 1,
    explicit: str | None = None,
    options: dict[str, str] | StaticPolicyOptions | None = None,
    gates: dict[str, bool] | None = None,
    tm: str = "none",
) -> StaticPolicy:
    return StaticPolicy(
        get_preset(topo),
        reserved,
        None if explicit is None else P(explicit),
        options,
        tm,
        ALL_GATES if gates is None else gates,
    )


def started(p: StaticPolicy) -> CPUManagerState:
    s = CPUManagerState()
    p.start(s)
    return s


# -- construction ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topo", "n", "options", "reserved", "physical"),
    [
        ("topoDualSocketHT", 2, None, "0,6", "0,6"),
        ("topoDualSocketHT", 1, None, "0", "0,6"),
        ("topoSingleSocketHT", 1, None, "0", "0,4"),
        ("topoSingleSocketHT", 0, None, "", ""),
        ("topoDualSocketHT", 2, {"distribute-cpus-across-cores": "true"}, "0,2", "0,2,6,8"),
    ],
    ids=["dual-2", "dual-1", "single-1", "none", "spread-picks-other-cores"],
)
def test_reserved_cpus_picked_by_own_algorithm(
    topo: str, n: int, options: dict[str, str] | None, reserved: str, physical: str
) -> None:
    p = policy(topo, n, options=options)
    assert p.reserved_cpus == P(reserved)
    assert p.reserved_physical_cpus == P(physical)
    assert p.get_allocatable_cpus() == p.topology.all_cpus - P(reserved)
    assert p.name() == "static"


def test_reserved_take_remembered_per_machine_options_and_count() -> None:
    # The same machine object each time: the remembered take must still tell the options
    # and counts apart, in any order.
    for n, options, reserved in [
        (2, None, "0,6"),
        (2, {"distribute-cpus-across-cores": "true"}, "0,2"),
        (1, None, "0"),
        (2, None, "0,6"),
        (2, {"distribute-cpus-across-cores": "true"}, "0,2"),
    ]:
        assert policy("topoDualSocketHT", n, options=options).reserved_cpus == P(reserved)


def test_explicit_reserved_list_is_used_as_given() -> None:
    p = policy(reserved=2, explicit="5,11")
    assert p.reserved_cpus == P("5,11")
    assert p.reserved_physical_cpus == P("5,11")


@pytest.mark.parametrize(
    ("topo", "n", "explicit", "message"),
    [
        (
            "topoDualSocketHT",
            1,
            "0-1",
            "[cpumanager] unable to reserve the required amount of CPUs (size of 0-1 did not "
            "equal 1)",
        ),
        (
            "topoSingleSocketHT",
            9,
            None,
            "[cpumanager] unable to reserve the required amount of CPUs (size of  did not equal 9)",
        ),
        (
            "topoSingleSocketHT",
            1,
            "42",
            "[cpumanager] unable to build the reserved physical CPUs from the reserved set: "
            "unknown CPU ID: 42",
        ),
    ],
    ids=["explicit-size-mismatch", "too-many", "unknown-cpu"],
)
def test_construction_errors(topo: str, n: int, explicit: str | None, message: str) -> None:
    with pytest.raises(CPUManagerPolicyError) as err:
        policy(topo, n, explicit)
    assert err.value.message == message


def test_construction_validates_options_against_tm_policy() -> None:
    with pytest.raises(CPUManagerPolicyError, match="Topolgy manager single-numa-node"):
        policy(options={"align-by-socket": "true"}, tm="single-numa-node")
    with pytest.raises(CPUManagerPolicyError, match="Alpha-level"):
        policy(options={"align-by-socket": "true"}, gates={})
    p = policy(options=StaticPolicyOptions(full_physical_cpus_only=True))
    assert p.options.full_physical_cpus_only


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", 1), ("1500m", 2), ("2", 2), ("100m", 1), ("2001m", 3)],
)
def test_num_reserved_cpus_is_the_ceiling(text: str, expected: int) -> None:
    assert num_reserved_cpus_from_reservation(Quantity.parse(text)) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "[cpumanager] unable to determine reserved CPU resources for static policy"),
        (
            "0",
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to "
            "be greater than zero",
        ),
    ],
    ids=["missing", "zero"],
)
def test_num_reserved_cpus_errors(value: str | None, message: str) -> None:
    with pytest.raises(CPUManagerPolicyError) as err:
        num_reserved_cpus_from_reservation(None if value is None else Quantity.parse(value))
    assert err.value.message == message


# -- start ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "error"),
    [
        (ALL_GATES, None),
        (
            {**ALL_GATES, "PodLevelResourceManagers": False},
            'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-2,4-11"',
        ),
    ],
    ids=["gate-on-counts-pod-entries", "gate-off-ignores-pod-entries"],
)
def test_start_counts_pod_entries_only_with_the_gate(
    gates: dict[str, bool], error: str | None
) -> None:
    p = policy(reserved=1, gates=gates)
    s = CPUManagerState(P("0-1,4-11"), {"p": {"c": P("2")}}, {"p": P("2-3")})
    if error is None:
        p.start(s)
        assert s.default_cpuset == P("0-1,4-11")
        return
    with pytest.raises(CPUManagerStateError) as err:
        p.start(s)
    assert err.value.message == error


def test_start_rejects_empty_default_with_assignments() -> None:
    with pytest.raises(CPUManagerStateError, match="default cpuset cannot be empty"):
        policy().start(CPUManagerState(CPUSet(), {"p": {"c": P("1")}}))


def test_start_initialises_and_sets_gauges() -> None:
    p = policy(reserved=2, options={"strict-cpu-reservation": "true"})
    s = started(p)
    assert s.default_cpuset == P("1-5,7-11")
    assert p.metrics.shared_pool_size_millicores == 10_000
    assert p.metrics.exclusive_cpu_allocation_count == 0


def test_start_reports_first_overlap_in_sorted_order() -> None:
    s = CPUManagerState(P("0,2-11"), {"b": {"x": P("2")}, "a": {"z": P("3"), "y": P("1")}})
    with pytest.raises(CPUManagerStateError) as err:
        policy(reserved=0).start(s)
    assert (
        err.value.message
        == 'pod: a, container: z cpuset: "3" overlaps with default cpuset "0,2-11"'
    )


# -- allocate -------------------------------------------------------------------------------


def test_allocate_takes_a_whole_core_and_is_idempotent() -> None:
    p = policy("topoSingleSocketHT", 1)
    s = started(p)
    pod = budget_pod("p", None, ctr("c", "2"))
    p.allocate(s, pod, "c")
    assert s.get_cpu_set("p", "c") == P("1,5")
    assert s.default_cpuset == P("0,2-4,6-7")
    before = s.copy()
    p.allocate(s, pod, pod.containers[0])
    assert s == before
    m = p.metrics
    assert m.allocations("cpu", "node") == 1
    assert m.assignments("cpu", "node_exclusive") == 1
    assert m.pinning_requests_total == 2
    assert m.exclusive_cpu_allocation_count == 2
    assert m.allocation_per_numa == {0: 2}


@pytest.mark.parametrize(
    ("pod", "gates"),
    [
        (budget_pod("p", None, ctr("c", "2", limit="3")), ALL_GATES),
        (budget_pod("p", None, ctr("c", "1500m")), ALL_GATES),
        (budget_pod("p", None, ctr("c", mem=None)), ALL_GATES),
        (
            budget_pod("p", "2", ctr("c", "2"), memory="4Gi"),
            {**ALL_GATES, "PodLevelResourceManagers": False},
        ),
        (
            budget_pod("p", "2", ctr("c", "2"), memory="4Gi"),
            {**ALL_GATES, "PodLevelResources": False},
        ),
        (
            Pod(
                "p",
                "p",
                "default",
                (ctr("c", "2"),),
                resources=ResourceRequirements(
                    {"cpu": Quantity.parse("2"), "memory": Quantity.parse("4Gi")},
                    {"cpu": Quantity.parse("3"), "memory": Quantity.parse("4Gi")},
                ),
            ),
            ALL_GATES,
        ),
    ],
    ids=[
        "burstable",
        "non-integral",
        "best-effort",
        "pod-level-gate-off",
        "pod-level-resources-gate-off",
        "pod-level-not-guaranteed",
    ],
)
def test_allocate_skips_shared_pool_containers(pod: Pod, gates: dict[str, bool]) -> None:
    p = policy(gates=gates)
    s = started(p)
    before = s.copy()
    p.allocate(s, pod, "c")
    assert s == before
    assert p.metrics.pinning_requests_total == 0


def test_allocate_pod_level_container_scope_uses_node_pool() -> None:
    # §5.6: eligible container of a pod-level pod gets node CPUs; shared ones run on the node pool.
    p = policy()
    s = started(p)
    pod = budget_pod(
        "p",
        "4",
        ctr("worker-1", mem="1Gi"),
        ctr("worker-2", "500m"),
        inits=(ctr("infrastructure-sidecar", "2", sidecar=True),),
        memory="4Gi",
    )
    for c in pod.all_containers():
        p.allocate(s, pod, c)
    assert s.assignments == {"p": {"infrastructure-sidecar": P("2,8")}}
    assert p.get_resource_isolation_level(s, pod, "infrastructure-sidecar") == "container"
    assert p.get_resource_isolation_level(s, pod, "worker-1") == "host"


@pytest.mark.parametrize(
    ("options", "cpu", "default", "message"),
    [
        (
            {"full-pcpus-only": "true"},
            "3",
            "0-11",
            "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2",
        ),
        (
            {"full-pcpus-only": "true"},
            "6",
            "0-2,6-8",
            "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 4, "
            "requested CPUs = 6, CPUs per core = 2",
        ),
    ],
    ids=["not-multiple", "not-enough-physical"],
)
def test_allocate_smt_alignment_errors(
    options: dict[str, str], cpu: str, default: str, message: str
) -> None:
    # Reserved = {0}; its sibling 6 is unavailable too for the physical check.
    p = policy(options=options)
    s = CPUManagerState(
        P(default), {"other": {"x": P("0-11") - P(default)}} if default != "0-11" else {}
    )
    p.start(s)
    before = s.copy()
    with pytest.raises(SMTAlignmentError) as err:
        p.allocate(s, budget_pod("p", None, ctr("c", cpu)), "c")
    assert err.value.message == message
    assert err.value.reason == "SMTAlignmentError"
    assert s == before
    assert p.metrics.errors("cpu", "node") == 1
    assert p.metrics.aligned_compute_resources_failure[("container", "physical_cpu")] == 1


def test_allocate_not_enough_cpus_is_untyped() -> None:
    p = policy("topoSingleSocketHT", 1)
    s = started(p)
    before = s.copy()
    with pytest.raises(CPUAllocationError) as err:
        p.allocate(s, budget_pod("p", None, ctr("c", "8")), "c")
    assert (
        err.value.message
        == "not enough cpus available to satisfy request: requested=8, available=7"
    )
    assert s == before


def test_allocate_unknown_container_is_a_clear_error() -> None:
    p = policy()
    with pytest.raises(CPUAllocationError, match="'nope'"):
        p.allocate(started(p), budget_pod("p", None, ctr("c", "1")), "nope")


@pytest.mark.parametrize(
    ("numa", "options", "expected"),
    [
        (None, None, "2,8"),
        ([1], None, "1,7"),
        ([0], None, "2,8"),
        ([0, 1], None, "2,8"),
    ],
    ids=["no-hint", "numa-1", "numa-0", "both"],
)
def test_allocate_follows_the_hint(
    numa: list[int] | None, options: dict[str, str] | None, expected: str
) -> None:
    p = policy(options=options)
    s = started(p)
    hint = None if numa is None else TopologyHint(sum(1 << n for n in numa), True)
    p.allocate(s, budget_pod("p", None, ctr("c", "2")), "c", hint)
    assert s.get_cpu_set("p", "c") == P(expected)


@pytest.mark.parametrize(
    ("align_by_socket", "expected"),
    [(True, "2,11"), (False, "2,21")],
    ids=["socket", "numa"],
)
def test_allocate_align_by_socket_widens_the_hint(align_by_socket: bool, expected: str) -> None:
    # Mirrors upstream "Align by socket: true/false, cpu's within same socket preferred"
    # (Allocate does not run Start, so the state is taken as given).
    p = policy(
        "topoDualSocketMultiNumaPerSocketHT",
        1,
        options={"align-by-socket": "true" if align_by_socket else "false"},
    )
    s = CPUManagerState(P("2,11,21-22"))
    p.allocate(s, budget_pod("p", None, ctr("c", "2")), "c", TopologyHint(0b101, True))
    assert s.get_cpu_set("p", "c") == P(expected)
    assert s.default_cpuset == P("2,11,21-22") - P(expected)


def test_allocate_cpus_accepts_ids_and_masks() -> None:
    p = policy(reserved=0)
    s = started(p)
    assert p.allocate_cpus(s, 2, [1]) == P("1,7")
    assert p.allocate_cpus(s, 2, 0b1) == P("0,6")
    assert p.allocate_cpus(s, 1, 0b1, reusable=P("0")) == P("0")
    assert s.default_cpuset == P("2-5,8-11")


# -- reuse and removal -------------------------------------------------------------------


def test_init_cpus_are_reused_and_released_by_difference() -> None:
    # Upstream TestStaticPolicyReuseCPUs "SingleSocketHT, DeAllocOneInitContainer".
    p = policy("topoSingleSocketHT", 0)
    s = started(p)
    pod = budget_pod("p", None, ctr("app", "2"), inits=(ctr("init", "4"),))
    for c in pod.all_containers():
        p.allocate(s, pod, c)
    assert s.assignments["p"] == {"init": P("0-1,4-5"), "app": P("0,4")}
    assert s.default_cpuset == P("2-3,6-7")
    assert p.cpus_to_reuse == {"p": P("1,5")}
    p.remove_container(s, "p", "init")
    assert s.default_cpuset == P("1-3,5-7")
    p.remove_container(s, "p", "app")
    assert s.default_cpuset == P("0-7")
    assert s.assignments == {}
    p.remove_container(s, "p", "app")  # already gone: no-op
    assert s.default_cpuset == P("0-7")


def test_sidecar_cpus_are_never_reused() -> None:
    p = policy("topoSingleSocketHT", 0)
    s = started(p)
    pod = budget_pod(
        "p", None, ctr("app", "2"), inits=(ctr("init", "2"), ctr("side", "2", sidecar=True))
    )
    for c in pod.all_containers():
        p.allocate(s, pod, c)
    a = s.assignments["p"]
    assert a["init"] == P("0,4")
    assert a["side"] == P("0,4")  # took the init container's CPUs
    assert a["app"] == P("1,5")  # not the sidecar's
    assert p.cpus_to_reuse == {"p": CPUSet()}


def test_cpus_to_reuse_keeps_one_pod() -> None:
    p = policy("topoSingleSocketHT", 0)
    s = started(p)
    a = budget_pod("a", None, ctr("app", "2"), inits=(ctr("init", "2"),))
    p.allocate(s, a, "init")
    assert set(p.cpus_to_reuse) == {"a"}
    p.allocate(s, budget_pod("b", None, ctr("x", "2")), "x")
    assert set(p.cpus_to_reuse) == {"b"}


def test_remove_stale_state_drops_inactive_containers() -> None:
    p = policy("topoSingleSocketHT", 0)
    s = started(p)
    keep = budget_pod("keep", None, ctr("c", "2"))
    gone = budget_pod("gone", None, ctr("c", "2"))
    p.allocate(s, keep, "c")
    p.allocate(s, gone, "c")
    p.remove_stale_state(s, [keep])
    assert set(s.assignments) == {"keep"}
    assert s.default_cpuset == P("0-7") - s.assignments["keep"]["c"]


# -- hints ------------------------------------------------------------------------------


def h(*masks: tuple[int, bool]) -> list[TopologyHint]:
    return [TopologyHint(m, pref) for m, pref in masks]


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [
        ("2", h((0b01, True), (0b10, True), (0b11, False))),
        ("6", h((0b10, True), (0b11, False))),
        ("7", h((0b11, True))),
        ("12", []),
    ],
    ids=["fits-one-node", "fits-only-free-node", "needs-both", "too-big"],
)
def test_container_hints(cpu: str, expected: list[TopologyHint]) -> None:
    p = policy()
    s = started(p)
    assert p.get_topology_hints(s, budget_pod("p", None, ctr("c", cpu)), "c") == {"cpu": expected}


def test_container_hints_no_preference_and_restart() -> None:
    p = policy()
    s = started(p)
    assert p.get_topology_hints(s, budget_pod("p", None, ctr("c", "500m")), "c") == {"cpu": None}
    pod = budget_pod("p", None, ctr("c", "2"))
    p.allocate(s, pod, "c", TopologyHint(0b10, True))
    assert p.get_topology_hints(s, pod, "c") == {"cpu": h((0b10, True), (0b11, False))}
    bigger = budget_pod("p", None, ctr("c", "4"))
    assert p.get_topology_hints(s, bigger, "c") == {"cpu": []}


def test_container_hints_count_reusable_init_cpus() -> None:
    p = policy("topoDualSocketHT", 0)
    s = CPUManagerState(P("0,2,4,6,8,10"), {"other": {"x": P("1,3,5,7,9,11")}})
    p.start(s)
    pod = budget_pod("p", None, ctr("app", "6"), inits=(ctr("init", "6"),))
    p.allocate(s, pod, "init")
    assert s.default_cpuset == CPUSet()
    # The init container's CPUs (NUMA 0) are reusable, so only masks holding NUMA 0 qualify.
    assert p.get_topology_hints(s, pod, "app") == {"cpu": h((0b01, True), (0b11, False))}


def test_align_by_socket_prefers_socket_aligned_masks() -> None:
    p = policy("topoDualSocketMultiNumaPerSocketHT", 0, options={"align-by-socket": "true"})
    s = started(p)
    hints = p.get_topology_hints(s, budget_pod("p", None, ctr("c", "2")), "c")["cpu"]
    assert hints is not None
    preferred = {hint.numa_affinity: hint.preferred for hint in hints}
    assert preferred[0b0001] and preferred[0b0011] and preferred[0b1100]
    assert not preferred[0b0101] and not preferred[0b1111]
    plain = policy("topoDualSocketMultiNumaPerSocketHT", 0)
    hints = plain.get_topology_hints(started(plain), budget_pod("p", None, ctr("c", "2")), "c")[
        "cpu"
    ]
    assert hints is not None
    assert [x.numa_affinity for x in hints if x.preferred] == [1, 2, 4, 8]


def test_classic_pod_hints() -> None:
    p = policy()
    s = started(p)
    pod = budget_pod("p", None, ctr("a", "2"), ctr("b", "2"), inits=(ctr("i", "6"),))
    assert p.pod_guaranteed_cpus(pod) == 6
    assert p.get_pod_topology_hints(s, pod) == {"cpu": h((0b10, True), (0b11, False))}
    assert p.get_pod_topology_hints(s, budget_pod("q", None, ctr("a", "1", limit="2"))) == {
        "cpu": None
    }


@pytest.mark.parametrize(
    ("inits", "apps", "expected"),
    [
        ((), (ctr("a", "2"), ctr("b", "3")), 5),
        ((ctr("i", "6"),), (ctr("a", "2"),), 6),
        ((ctr("s", "2", sidecar=True), ctr("i", "3")), (ctr("a", "2"),), 5),
        ((ctr("i", "3"), ctr("s", "2", sidecar=True)), (ctr("a", "2"),), 4),
        ((ctr("i", mem=None),), (ctr("a", "2"),), 2),
    ],
    ids=["apps", "init-max", "sidecar-before-init", "sidecar-after-init", "init-no-cpu"],
)
def test_pod_guaranteed_cpus_classic(
    inits: tuple[Container, ...], apps: tuple[Container, ...], expected: int
) -> None:
    # status.qosClass pins the class, so a container without cpu still leaves the pod Guaranteed.
    pod = Pod("p", "p", "default", apps, inits, qos_class="Guaranteed")
    assert policy().pod_guaranteed_cpus(pod) == expected


# -- isolation ----------------------------------------------------------------------------


def test_isolation_levels() -> None:
    p = policy()
    s = started(p)
    classic = budget_pod("c", None, ctr("x", "2"), ctr("y", "500m"))
    for c in classic.all_containers():
        p.allocate(s, classic, c)
    assert p.get_resource_isolation_level(s, classic, "x") == "container"
    assert p.get_resource_isolation_level(s, classic, "y") == "host"

    pl = budget_pod(
        "pl", "3", ctr("excl", "1"), ctr("frac", "500m"), ctr("shared", mem="1Gi"), memory="4Gi"
    )
    p.allocate_pod(s, pl)
    assert p.get_resource_isolation_level(s, pl, "excl") == "container"
    assert p.get_resource_isolation_level(s, pl, "frac") == "pod"
    assert p.get_resource_isolation_level(s, pl, "shared") == "pod"

    off = policy(gates={**ALL_GATES, "PodLevelResourceManagers": False})
    assert off.get_resource_isolation_level(s, pl, "shared") == "container"

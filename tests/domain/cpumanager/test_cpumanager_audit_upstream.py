"""Audit of the CPU manager against the upstream Go code, one table per upstream function.

Each case names the function of pkg/kubelet/cm/cpumanager (v1.37) whose behaviour it pins, in
its id. The expectations are worked out by hand from the Go code (or taken from upstream unit
tests where named), so they hold independently of the engine.
"""

from __future__ import annotations

import pytest

from app.domain.admission import SMTAlignmentError
from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpumanager.errors import CPUManagerStateError
from app.domain.cpumanager.hints import generate_cpu_topology_hints
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.manifest import pod_from_conformance
from app.domain.presets import get_preset
from app.domain.topology.model import CPUInfo, CPUTopology
from app.domain.topologymanager.hint import TopologyHint

GATES = {
    "CPUManagerPolicyAlphaOptions": True,
    "CPUManagerPolicyBetaOptions": True,
    "PodLevelResources": True,
    "PodLevelResourceManagers": True,
}
P = CPUSet.parse


def _hint(numa: list[int], preferred: bool) -> TopologyHint:
    return TopologyHint(sum(1 << n for n in numa), preferred)


def _gu(name: str, cpus: int, sidecar: bool = False) -> dict:
    res = {"cpu": str(cpus), "memory": "1Gi"}
    d = {"name": name, "requests": res, "limits": dict(res)}
    if sidecar:
        d["restart_policy"] = "Always"
    return d


# -- generateCPUTopologyHints: CPUs unknown to the topology -----------------------------------
# Go reads p.topology.CPUDetails[c].NUMANodeID; for an unknown CPU that is the zero CPUInfo,
# i.e. NUMA node 0. topoDualSocketHT: NUMA 0 = even CPUs 0-10, NUMA 1 = odd CPUs 1-11.

NO_NUMA_ZERO = CPUTopology([CPUInfo(c, c, 0, 1 + c // 2, 0) for c in range(4)], name="numa-1-and-2")


@pytest.mark.parametrize(
    ("topo", "available", "reusable", "wanted", "expected"),
    [
        pytest.param(
            get_preset("topoDualSocketHT"),
            "1,3,5,12-13",
            "",
            4,
            [_hint([0, 1], False)],
            id="generateCPUTopologyHints-unknown-available-cpus-count-for-numa-0",
        ),
        pytest.param(
            get_preset("topoDualSocketHT"),
            "12-13",
            "",
            2,
            [_hint([0], True), _hint([0, 1], False)],
            id="generateCPUTopologyHints-unknown-cpus-alone-satisfy-numa-0",
        ),
        pytest.param(
            get_preset("topoDualSocketHT"),
            "1,3,5,7,9,11",
            "12",
            2,
            [_hint([0, 1], False)],
            id="generateCPUTopologyHints-unknown-reusable-cpu-lies-on-numa-0",
        ),
        pytest.param(
            NO_NUMA_ZERO,
            "0-3,12",
            "",
            4,
            [_hint([1, 2], True)],
            id="generateCPUTopologyHints-no-numa-0-unknown-available-ignored",
        ),
        pytest.param(
            NO_NUMA_ZERO,
            "0-3",
            "12",
            1,
            [],
            id="generateCPUTopologyHints-no-numa-0-unknown-reusable-rules-out-every-mask",
        ),
    ],
)
def test_hints_with_cpus_unknown_to_the_topology(
    topo: CPUTopology, available: str, reusable: str, wanted: int, expected: list
) -> None:
    assert generate_cpu_topology_hints(topo, P(available), P(reusable), wanted) == expected


# -- takeByTopology dispatch (policy_static.go) ------------------------------------------------


@pytest.mark.parametrize(
    ("topo", "options", "available", "n", "expected"),
    [
        pytest.param(
            "topoDualSocketHT",
            {"distribute-cpus-across-cores": "true"},
            "0-11",
            2,
            # spread order: socket by socket, CPUs ascending; no whole-core step
            "0,2",
            id="takeByTopology-distribute-cpus-across-cores-is-the-spread-strategy",
        ),
        pytest.param(
            "topoDualSocketHT",
            {},
            "0-11",
            2,
            "0,6",
            id="takeByTopology-default-is-numa-packed",
        ),
        pytest.param(
            "topoDualSocketMultiNumaPerSocketHT",
            {"distribute-cpus-across-numa": "true"},
            "0-79",
            26,
            # TestTakeByTopologyNUMADistributed, cpuGroupSize 1
            "0-6,10-16,40-45,50-55",
            id="takeByTopology-distributed-group-size-1-without-full-pcpus-only",
        ),
        pytest.param(
            "topoDualSocketMultiNumaPerSocketHT",
            {"distribute-cpus-across-numa": "true", "full-pcpus-only": "true"},
            "0-79",
            26,
            # same case with cpuGroupSize 2 = CPUsPerCore
            "0-6,10-15,40-46,50-55",
            id="takeByTopology-distributed-group-size-is-cpus-per-core-with-full-pcpus-only",
        ),
        pytest.param(
            "topoUncoreSingleSocketNoSMT",
            {"prefer-align-cpus-by-uncorecache": "true"},
            "1-15",
            10,
            # TestTakeByTopologyNUMAPacked: two whole caches, then a partial one
            "1-2,4-11",
            id="takeByTopology-uncore-option-reaches-numa-packed",
        ),
    ],
)
def test_take_by_topology_dispatch(
    topo: str, options: dict[str, str], available: str, n: int, expected: str
) -> None:
    policy = StaticPolicy(get_preset(topo), 0, None, options, feature_gates=GATES)
    assert policy.take_by_topology(P(available), n) == P(expected)


@pytest.mark.parametrize("release", ["1.35", "1.36", "1.37", "1.38"])
def test_take_by_topology_hands_align_by_socket_to_distributed_from_1_38(release: str) -> None:
    """Up to 1.37 policy_static.go calls takeByTopologyNUMADistributed without the
    align-by-socket flag; kubernetes#139778 (1.38 = master) passes it. (This test asserted
    "never passed" while 1.38 followed the 1.37 line; changed deliberately for #139778.)

    NUMA 0 has 10 CPUs (socket 0), NUMA 1-3 have 20. With the flag the search keeps the pair
    inside socket 0 (NUMA 0+1, distribution capped at 10); without it NUMA 1+2 win on balance.
    """
    topo = get_preset("topoDualSocketMultiNumaPerSocketHT")
    available = P("0-4,10-19,20-29,40-44,50-59,60-69")
    with_flag = take_by_topology_numa_distributed(topo, available, 24, 1, "packed", True)
    without = take_by_topology_numa_distributed(topo, available, 24, 1, "packed", False)
    assert with_flag == P("0-4,10-16,40-44,50-56")
    assert without == P("10-15,20-25,50-55,60-65")
    policy = StaticPolicy(
        topo,
        0,
        None,
        {"distribute-cpus-across-numa": "true", "align-by-socket": "true"},
        feature_gates=GATES,
        release=release,
    )
    assert policy.take_by_topology(available, 24) == (with_flag if release == "1.38" else without)


# -- NewStaticPolicy: reserved CPUs picked by the policy's own algorithm -------------------------


@pytest.mark.parametrize(
    ("topo", "options", "n", "expected"),
    [
        pytest.param("topoDualSocketHT", {}, 2, "0,6", id="NewStaticPolicy-packed-whole-core"),
        pytest.param(
            "topoDualSocketHT",
            {"distribute-cpus-across-cores": "true"},
            2,
            "0,2",
            id="NewStaticPolicy-spread-reserves-one-thread-per-core",
        ),
        pytest.param(
            "topoDualSocketMultiNumaPerSocketHT",
            {"distribute-cpus-across-numa": "true"},
            40,
            # 40 CPUs over the fewest NUMA nodes, evenly: NUMA 0 and 1 whole
            "0-19,40-59",
            id="NewStaticPolicy-distributed",
        ),
    ],
)
def test_reserved_cpus_follow_the_policys_algorithm(
    topo: str, options: dict[str, str], n: int, expected: str
) -> None:
    policy = StaticPolicy(get_preset(topo), n, None, options, feature_gates=GATES)
    assert policy.reserved_cpus == P(expected)


# -- enforceSMTAlignment: reusable init CPUs are not counted --------------------------------------


def test_smt_alignment_counts_default_minus_reserved_cores_not_reusable_cpus() -> None:
    """Allocate runs enforceSMTAlignment before allocateCPUs, on the default set minus the
    whole cores of the reserved CPUs; the init container's reusable CPUs do not count."""
    topo = get_preset("topoDualSocketHT")
    policy = StaticPolicy(topo, 1, None, {"full-pcpus-only": "true"}, feature_gates=GATES)
    assert policy.reserved_cpus == P("0")
    assert policy.reserved_physical_cpus == P("0,6")
    state = CPUManagerState(P("0-11"))
    pod = pod_from_conformance(
        {"uid": "p", "init_containers": [_gu("init", 8)], "containers": [_gu("app", 4)]}
    )
    policy.allocate(state, pod, "init", None)
    init = state.get_cpu_set("p", "init")
    assert init is not None and init.size() == 8
    left_physical = (state.default_cpuset - P("0,6")).size()
    assert left_physical < 4 <= (policy.cpus_to_reuse["p"] | state.default_cpuset).size()
    with pytest.raises(SMTAlignmentError) as err:
        policy.allocate(state, pod, "app", None)
    assert err.value.message == (
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
        f"{left_physical}, requested CPUs = 4, CPUs per core = 2"
    )


# -- validateState: order of the checks ----------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "default", "assignments", "message"),
    [
        pytest.param(
            {"strict-cpu-reservation": "true"},
            "0-1,3-11",
            {"pod": {"c": "1-2"}},
            'some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-1,3-11"',
            id="validateState-strict-reserved-check-before-overlap",
        ),
        pytest.param(
            {},
            "1-11",
            {"pod": {"c": "1-2"}},
            'not all reserved cpus: "0" are present in defaultCpuSet: "1-11"',
            id="validateState-reserved-check-before-overlap",
        ),
        pytest.param(
            {},
            "0-1,3-11",
            {"pod": {"c": "1-2"}},
            'pod: pod, container: c cpuset: "1-2" overlaps with default cpuset "0-1,3-11"',
            id="validateState-overlap-before-union",
        ),
        pytest.param(
            {"strict-cpu-reservation": "true"},
            "1-10",
            {},
            'current set of available CPUs "1-11" doesn\'t match with CPUs in state "1-10"',
            id="validateState-strict-all-cpus-exclude-reserved",
        ),
    ],
)
def test_validate_state_order(
    options: dict[str, str], default: str, assignments: dict, message: str
) -> None:
    policy = StaticPolicy(get_preset("topoDualSocketHT"), 1, None, options, feature_gates=GATES)
    state = CPUManagerState(
        P(default), {p: {c: P(s) for c, s in cs.items()} for p, cs in assignments.items()}
    )
    with pytest.raises(CPUManagerStateError) as err:
        policy.start(state)
    assert err.value.message == message


# -- cpuAccumulator helpers that conformance kinds do not reach ---------------------------------


@pytest.mark.parametrize(
    ("topo", "available", "expected"),
    [
        pytest.param(
            "topoUncoreSingleSocketMultiNuma",
            "3,4-8,12",
            # NUMA 1 (8,12: 2 CPUs) sorts before NUMA 0 (3-7: 5 CPUs); caches within each by
            # available CPUs: UC2 (8) / UC3 (12) have 1 each; UC0 (3) 1, UC1 (4-7) 4
            [2, 3, 0, 1],
            id="sortAvailableUncoreCaches-per-numa-in-numa-order",
        ),
        pytest.param(
            "topoUncoreSingleSocketSMT",
            "2-3,10-11,4-7,12-15",
            [0, 1],
            id="sortAvailableUncoreCaches-by-available-count",
        ),
    ],
)
def test_uncore_order(topo: str, available: str, expected: list[int]) -> None:
    acc = CPUAccumulator(get_preset(topo), P(available), 0)
    assert acc.sort_available_uncore_caches() == expected


@pytest.mark.parametrize(
    ("available", "n", "expected"),
    [
        pytest.param(
            "2-3,10-11,4-7,12-15",
            6,
            # TestTakeByTopologyNUMAPacked "best available UncoreCache group ... SMT enabled"
            "4-6,12-14",
            id="takePartialUncore-even-request-whole-cores",
        ),
        pytest.param(
            "0-15",
            3,
            # ceil(3/2) = 2 cores (0 and 1 -> 0,1,8,9); odd request drops the highest: 0,1,8
            "0-1,8",
            id="takePartialUncore-odd-request-drops-highest-cpu",
        ),
        pytest.param(
            "3,5,7,11-15",
            5,
            # kubernetes#137315 (open upstream): UC1's lowest cores 4,5,6 hold only
            # 5,12,13,14 (4 CPUs) -> no partial take; whole cores 3 and 5, then CPU 12
            "3,5,11-13",
            id="takePartialUncore-cores-by-id-not-by-free-threads",
        ),
    ],
)
def test_partial_uncore(available: str, n: int, expected: str) -> None:
    topo = get_preset("topoUncoreSingleSocketSMT")
    assert take_by_topology_numa_packed(topo, P(available), n, "packed", True) == P(expected)

"""Differential audit: the engine against a naive second reading of the upstream Go code.

``cpumanager_audit_go_reference`` re-reads pkg/kubelet/cm/cpumanager/cpu_assignment.go,
topology/topology.go and policy_static.go (v1.37) with plain sets and no caching. Every
property here says "the engine and that reading agree" on the upstream fixtures, on irregular
machines (split cores, NUMA nodes spanning sockets, odd ids, counters that disagree with the
CPU list) and for whole static-policy scenarios (Allocate, a pod's container sequence with
removals, AllocatePod). A failure prints the smallest disagreeing input.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain.admission import AdmissionError
from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.common import TakeByTopologyError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.pod_scope import (
    guaranteed_cpus,
    pod_guaranteed_cpus,
    skipped_pod_level_pod,
    validate_pod_scope_resources,
)
from app.domain.cpumanager.policy_options import CPUManagerPolicyError
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.manifest import pod_from_conformance
from app.domain.pod.model import Pod
from app.domain.presets import get_preset
from app.domain.topology.model import CPUInfo, CPUTopology, TopologyError
from app.domain.topologymanager.hint import TopologyHint
from tests.domain.cpumanager import cpumanager_audit_go_reference as ref

SMALL = (
    "topoSingleSocketHT",
    "topoDualSocketHT",
    "topoTripleSocketHT",
    "topoDualSocketNoHT",
    "topoDualSocketMultiNumaPerSocketHT",
    "fakeTopoMultiSocketDualSocketPerNumaHT",
    "topoUncoreSingleSocketNoSMT",
    "topoUncoreDualSocketNoSMT",
    "topoUncoreSingleSocketMultiNuma",
    "topoUncoreSingleSocketSMT",
)
LARGE = ("topoDualSocketMultiNumaPerSocketHTLarge", "topoQuadSocketFourWayHT")
GATES = {
    "CPUManagerPolicyAlphaOptions": True,
    "CPUManagerPolicyBetaOptions": True,
    "PodLevelResources": True,
    "PodLevelResourceManagers": True,
}
FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def _outcome(run):
    try:
        return "", sorted(run())
    except (TakeByTopologyError, ref.NotEnoughError) as exc:
        return str(exc), None


@st.composite
def irregular_topologies(draw: st.DrawFn) -> CPUTopology:
    """Up to 10 cores of 1-3 threads with arbitrary ids; a thread may sit in another NUMA node
    or socket than its siblings; core ids need not be the lowest thread; counters may be given
    and disagree with the CPU list (as conformance fixtures may)."""
    rnd = draw(st.randoms(use_true_random=False))
    cores, threads = rnd.randint(1, 10), rnd.randint(1, 3)
    sockets, numas, uncores = rnd.randint(1, 3), rnd.randint(1, 4), rnd.randint(1, 3)
    ids = rnd.sample(range(48), cores * threads)
    infos = []
    for c in range(cores):
        cpus = ids[c * threads : (c + 1) * threads]
        s, n, u = rnd.randrange(sockets), rnd.randrange(numas), rnd.randrange(uncores)
        core_id = min(cpus) if rnd.random() < 0.7 else rnd.randint(0, 60)
        for cpu in cpus:
            s_cpu = s if rnd.random() < 0.9 else rnd.randrange(sockets)
            n_cpu = n if rnd.random() < 0.9 else rnd.randrange(numas)
            infos.append(CPUInfo(cpu, core_id, s_cpu, n_cpu, u))
    counts = {}
    if rnd.random() < 0.3:
        counts = {
            "num_cpus": len(infos) + rnd.randint(0, 2),
            "num_cores": max(1, min(len(infos), cores + rnd.randint(-1, 1))),
            "num_sockets": max(1, sockets + rnd.randint(-1, 1)),
            "num_numa_nodes": max(1, numas + rnd.randint(-1, 1)),
            "num_uncore_cache": max(1, uncores + rnd.randint(-1, 1)),
        }
    try:
        return CPUTopology(infos, **counts)
    except TopologyError:  # pragma: no cover - ids are unique by construction
        raise AssertionError("bad topology strategy") from None


@st.composite
def take_inputs(draw: st.DrawFn, topologies: st.SearchStrategy[CPUTopology]):
    topo = draw(topologies)
    cpus = sorted(topo.cpu_details)
    p = draw(st.sampled_from([0.3, 0.6, 0.85, 1.0]))
    rnd = draw(st.randoms(use_true_random=False))
    available = {c for c in cpus if rnd.random() < p}
    if draw(st.booleans()) and draw(st.booleans()):
        available |= {200, 201}  # CPUs the topology does not know
    num_cpus = draw(st.integers(0, len(available) + 1))
    return topo, available, num_cpus


presets = st.sampled_from(SMALL).map(get_preset)
presets_all = st.sampled_from(SMALL + LARGE).map(get_preset)


def _cpus_per_core_known(topo: CPUTopology) -> bool:
    return topo.cpus_per_core() > 0


@FAST
@given(take_inputs(presets_all), st.sampled_from(["packed", "spread"]), st.booleans())
def test_packed_matches_reference_on_upstream_fixtures(inputs, sorting: str, uncore: bool) -> None:
    topo, available, n = inputs
    engine = _outcome(
        lambda: take_by_topology_numa_packed(topo, CPUSet(available), n, sorting, uncore)
    )
    assert engine == _outcome(lambda: ref.packed(topo, available, n, sorting, uncore))


@FAST
@given(
    take_inputs(presets_all),
    st.sampled_from(["packed", "spread"]),
    st.sampled_from([1, 2]),
    st.booleans(),
)
def test_distributed_matches_reference_on_upstream_fixtures(
    inputs, sorting: str, group: int, align_by_socket: bool
) -> None:
    topo, available, n = inputs
    engine = _outcome(
        lambda: take_by_topology_numa_distributed(
            topo, CPUSet(available), n, group, sorting, align_by_socket
        )
    )
    reference = _outcome(
        lambda: ref.distributed(topo, available, n, group, sorting, align_by_socket)
    )
    assert engine == reference


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    take_inputs(irregular_topologies().filter(_cpus_per_core_known)),
    st.sampled_from(["packed", "spread"]),
    st.booleans(),
    st.sampled_from([1, 2, 3]),
    st.booleans(),
)
def test_both_algorithms_match_reference_on_irregular_machines(
    inputs, sorting: str, uncore: bool, group: int, align_by_socket: bool
) -> None:
    topo, available, n = inputs
    cpus = CPUSet(available)
    assert _outcome(
        lambda: take_by_topology_numa_packed(topo, cpus, n, sorting, uncore)
    ) == _outcome(lambda: ref.packed(topo, available, n, sorting, uncore))
    assert _outcome(
        lambda: take_by_topology_numa_distributed(topo, cpus, n, group, sorting, align_by_socket)
    ) == _outcome(lambda: ref.distributed(topo, available, n, group, sorting, align_by_socket))


@settings(max_examples=120, deadline=None, derandomize=True)
@given(take_inputs(presets | irregular_topologies()))
def test_accumulator_orderings_match_reference(inputs) -> None:
    """sortAvailable* and the free* filters (NUMA-first vs socket-first, per-parent lists that
    may repeat an element, free = whole-topology NUMA/uncore size, CPUsPerSocket/CPUsPerCore)."""
    topo, available, _ = inputs
    for sorting in ("packed", "spread"):
        acc = CPUAccumulator(topo, CPUSet(available), 0, sorting)
        r = ref.Acc(topo, available, 0, sorting)
        assert acc.sort_available_numa_nodes() == r.sort_numa()
        assert acc.sort_available_sockets() == r.sort_sockets()
        assert acc.sort_available_cores() == r.sort_cores()
        assert acc.sort_available_uncore_caches() == r.sort_uncore()
        assert acc.free_numa_nodes() == r.free_numa()
        assert acc.free_sockets() == r.free_sockets()
        assert acc.free_cores() == r.free_cores()
        assert acc.free_uncore_caches() == r.free_uncore()
        assert acc.free_cpus() == r.sort_cpus()


# -- whole static-policy scenarios ---------------------------------------------------------------

OPTIONS = (
    "full-pcpus-only",
    "distribute-cpus-across-numa",
    "align-by-socket",
    "distribute-cpus-across-cores",
    "strict-cpu-reservation",
    "prefer-align-cpus-by-uncorecache",
)
INCOMPATIBLE = (
    ("full-pcpus-only", "distribute-cpus-across-cores"),
    ("distribute-cpus-across-numa", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"),
)


def _options(rnd: random.Random, topo: CPUTopology) -> set[str]:
    while True:
        opts = {o for o in OPTIONS if rnd.random() < 0.3}
        if any(a in opts and b in opts for a, b in INCOMPATIBLE):
            continue
        if "align-by-socket" in opts and topo.num_sockets > topo.num_numa_nodes:
            continue
        return opts


def _container(rnd: random.Random, name: str, sidecar: bool) -> dict:
    r = rnd.random()
    if r < 0.15:
        req: dict = {}
        lim: dict = {}
    elif r < 0.25:
        req = {"cpu": f"{rnd.randint(1, 3000)}m", "memory": "1Gi"}
        lim = {"cpu": f"{rnd.randint(3000, 4000)}m", "memory": "1Gi"}
    elif r < 0.35:
        req = {"cpu": f"{rnd.randint(1, 9) * 100 + rnd.choice([0, 50])}m", "memory": "1Gi"}
        lim = dict(req)
    else:
        n = rnd.randint(1, 6)
        req = {"cpu": rnd.choice([str(n), f"{n * 1000}m"]), "memory": "1Gi"}
        lim = dict(req)
    d = {"name": name, "requests": req, "limits": lim}
    if sidecar:
        d["restart_policy"] = "Always"
    return d


def _pod(rnd: random.Random, pod_level: bool) -> Pod:
    inits = [
        _container(rnd, f"init-{i}", rnd.random() < 0.4) for i in range(rnd.choice([0, 0, 1, 2]))
    ]
    apps = [_container(rnd, f"app-{i}", False) for i in range(rnd.randint(1, 3))]
    resources = None
    if pod_level:
        b = rnd.randint(1, 12)
        q = rnd.choice([str(b), f"{b * 1000}m", f"{b * 1000 + 500}m"])
        resources = {
            "requests": {"cpu": q, "memory": "8Gi"},
            "limits": {"cpu": q, "memory": "8Gi"},
        }
    return pod_from_conformance(
        {"uid": "pod", "resources": resources, "init_containers": inits, "containers": apps}
    )


def _budget_message(pod: Pod) -> str | None:
    try:
        validate_pod_scope_resources(pod, GATES)
    except PodBudgetError as exc:
        return exc.message
    return None


def _engine_snapshot(state: CPUManagerState) -> tuple:
    return (
        frozenset(state.default_cpuset),
        {p: {c: frozenset(s) for c, s in cs.items()} for p, cs in state.assignments.items() if cs},
        {p: frozenset(s) for p, s in state.pod_entries.items()},
    )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    st.sampled_from(SMALL),
    st.sampled_from(["allocate", "sequence", "pod"]),
    st.integers(0, 2**32).map(random.Random),
)
def test_static_policy_matches_reference(name: str, op: str, rnd: random.Random) -> None:
    topo = get_preset(name)
    opts = _options(rnd, topo)
    all_cpus = sorted(topo.cpu_details)
    num_reserved = rnd.randint(0, 3)
    explicit = (
        set(rnd.sample(all_cpus, num_reserved)) if num_reserved and rnd.random() < 0.3 else None
    )
    try:
        policy = StaticPolicy(
            topo,
            num_reserved,
            None if explicit is None else CPUSet(explicit),
            {o: "true" for o in opts},
            feature_gates=GATES,
        )
    except CPUManagerPolicyError:
        policy = None
    try:
        model = ref.RefPolicy(
            topo,
            num_reserved,
            explicit,
            dict.fromkeys(opts, True),
            lambda p, c: guaranteed_cpus(p, c, GATES),
            lambda p: pod_guaranteed_cpus(p, GATES),
            _budget_message,
            lambda p: skipped_pod_level_pod(p, GATES),
        )
    except ValueError:
        model = None
    assert (policy is None) == (model is None)
    if policy is None or model is None:
        return
    assert set(policy.reserved_cpus) == model.reserved

    share = rnd.random() * 0.6
    held = {c for c in all_cpus if c not in model.reserved and rnd.random() < share}
    default = set(all_cpus) - held
    if "strict-cpu-reservation" in opts:
        default -= model.reserved
    others = {"other": {"x": held}} if held else {}
    state = CPUManagerState(
        CPUSet(default), {p: {c: CPUSet(s) for c, s in cs.items()} for p, cs in others.items()}
    )
    model_state = ref.RefState(default, others)
    pod = _pod(rnd, op == "pod" or rnd.random() < 0.2)
    containers = [*pod.init_containers, *pod.containers]
    target = rnd.choice(containers)
    removed = [c.name for c in containers if rnd.random() < 0.5]
    numa = None
    if rnd.random() < 0.5:
        ids = topo.numa_node_ids()
        numa = sorted(rnd.sample(ids, rnd.randint(1, len(ids))))
    hint = None if numa is None else TopologyHint(sum(1 << n for n in numa), True)

    engine_error: tuple[str, str] = ("", "")
    try:
        if op == "allocate":
            policy.allocate(state, pod, target, hint)
        elif op == "sequence":
            for c in containers:
                policy.allocate(state, pod, c, None)
            for c in removed:
                policy.remove_container(state, pod.uid, c)
        else:
            policy.allocate_pod(state, pod, hint)
    except AdmissionError as exc:
        engine_error = (exc.reason, exc.message)
    except CPUAllocationError as exc:
        engine_error = ("", exc.message)

    before = ref.RefState(
        model_state.default,
        {p: dict(cs) for p, cs in model_state.assignments.items()},
        dict(model_state.pod_entries),
    )
    model_error: tuple[str, str] = ("", "")
    try:
        if op == "allocate":
            model.allocate(model_state, pod, target, numa)
        elif op == "sequence":
            for c in containers:
                model.allocate(model_state, pod, c, None)
            for c in removed:
                model.remove_container(model_state, pod.uid, c, True)
        else:
            model.allocate_pod(model_state, pod, numa)
    except ref.RefAllocationError as exc:
        model_error = (exc.kind, exc.message)
        if op == "pod":
            model_state = before  # a failed AllocatePod leaves the state as it was
    assert engine_error == model_error
    expected = model_state.snapshot()
    expected = (expected[0], {p: cs for p, cs in expected[1].items() if cs}, expected[2])
    assert _engine_snapshot(state) == expected


@pytest.mark.parametrize("name", SMALL + LARGE)
def test_reserved_selection_matches_reference_for_every_option_set(name: str) -> None:
    """NewStaticPolicy picks the reserved CPUs with the policy's own takeByTopology."""
    topo = get_preset(name)
    for opts in (
        set(),
        {"distribute-cpus-across-cores"},
        {"distribute-cpus-across-numa"},
        {"distribute-cpus-across-numa", "full-pcpus-only"},
        {"prefer-align-cpus-by-uncorecache"},
    ):
        for n in (1, 2, 3, 5):
            policy = StaticPolicy(topo, n, None, {o: "true" for o in opts}, feature_gates=GATES)
            model = ref.RefPolicy(
                topo,
                n,
                None,
                dict.fromkeys(opts, True),
                lambda p, c: 0,
                lambda p: 0,
                lambda p: None,
                lambda p: False,
            )
            assert set(policy.reserved_cpus) == model.reserved, (opts, n)

"""Properties of the static policy under random admit/remove sequences.

After any sequence: pods' CPU holdings (container assignments plus pod entries) are disjoint
from each other and from the default set, and together with the default set they cover every
CPU the policy manages; Start accepts the state; and removing everything restores the start.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.domain.admission import AdmissionError
from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.presets import get_preset
from app.domain.quantity import Quantity
from app.domain.topologymanager.hint import TopologyHint

GATES = {
    "CPUManagerPolicyAlphaOptions": True,
    "CPUManagerPolicyBetaOptions": True,
    "PodLevelResources": True,
    "PodLevelResourceManagers": True,
}
TOPOLOGIES = ["topoSingleSocketHT", "topoDualSocketHT", "topoUncoreSingleSocketSMT"]
OPTIONS = [
    {},
    {"full-pcpus-only": "true"},
    {"strict-cpu-reservation": "true"},
    {"distribute-cpus-across-numa": "true"},
    {"distribute-cpus-across-cores": "true"},
    {"prefer-align-cpus-by-uncorecache": "true", "strict-cpu-reservation": "true"},
]


@dataclass(frozen=True)
class CSpec:
    cpu: int  # 0 = shared
    kind: str  # "app" | "init" | "sidecar"


@dataclass(frozen=True)
class PodSpec:
    containers: tuple[CSpec, ...]
    budget: int | None  # pod-level cpu budget, None = classic pod


def _container(i: int, spec: CSpec) -> Container:
    req = {"memory": Quantity.parse("64Mi")}
    if spec.cpu:
        req["cpu"] = Quantity.parse(str(spec.cpu))
    elif i % 2:
        req["cpu"] = Quantity.parse("500m")
    return Container(
        f"{spec.kind}-{i}",
        ResourceRequirements(req, dict(req)),
        "Always" if spec.kind == "sidecar" else None,
    )


def _pod(uid: str, spec: PodSpec) -> Pod:
    containers = [_container(i, c) for i, c in enumerate(spec.containers)]
    apps = tuple(c for c, s in zip(containers, spec.containers, strict=True) if s.kind == "app")
    inits = tuple(c for c, s in zip(containers, spec.containers, strict=True) if s.kind != "app")
    if not apps:
        apps = (_container(99, CSpec(0, "app")),)
    resources = None
    if spec.budget is not None:
        b = {"cpu": Quantity.parse(str(spec.budget)), "memory": Quantity.parse("1Gi")}
        resources = ResourceRequirements(b, b)
    return Pod(uid, uid, "default", apps, inits, resources)


cspecs = st.builds(CSpec, st.integers(0, 4), st.sampled_from(["app", "app", "init", "sidecar"]))
pod_specs = st.builds(
    PodSpec,
    st.lists(cspecs, min_size=1, max_size=4).map(tuple),
    st.one_of(st.none(), st.integers(1, 8)),
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("admit"), pod_specs, st.one_of(st.none(), st.integers(0, 3))),
        st.tuples(st.just("remove"), st.integers(0, 50), st.none()),
    ),
    max_size=12,
)


def _check(policy: StaticPolicy, state: CPUManagerState) -> None:
    managed = policy.topology.all_cpus
    if policy.options.strict_cpu_reservation:
        managed = managed - policy.reserved_cpus
        assert not state.default_cpuset & policy.reserved_cpus
    else:
        assert policy.reserved_cpus.is_subset_of(state.default_cpuset)
    seen = state.default_cpuset
    for uid in set(state.assignments) | set(state.pod_entries):
        held = CPUSet().union(*state.assignments.get(uid, {}).values())
        bubble = state.pod_entries.get(uid)
        if bubble is not None:
            assert held.is_subset_of(bubble)
            held = held | bubble
        assert not held & seen, f"pod {uid} overlaps"
        seen = seen | held
    assert seen == managed
    if state.default_cpuset:  # an empty default with assignments is invalid for Start by design
        policy.validate_state(state.copy())


@settings(max_examples=60, deadline=None)
@given(
    topo=st.sampled_from(TOPOLOGIES),
    options=st.sampled_from(OPTIONS),
    reserved=st.integers(0, 2),
    steps=ops,
)
@example(  # init CPUs reused by the app container, then the app container removed first
    topo="topoSingleSocketHT",
    options={},
    reserved=0,
    steps=[
        ("admit", PodSpec((CSpec(4, "init"), CSpec(2, "app")), None), None),
        ("remove", 0, None),
    ],
)
@example(  # a pod-level pod with init, sidecar and app containers, removed piece by piece
    topo="topoDualSocketHT",
    options={},
    reserved=1,
    steps=[
        (
            "admit",
            PodSpec((CSpec(0, "init"), CSpec(1, "sidecar"), CSpec(1, "app"), CSpec(0, "app")), 4),
            1,
        ),
        ("remove", 0, None),
        ("remove", 1, None),
    ],
)
def test_admit_remove_sequences_keep_the_partition(
    topo: str, options: dict[str, str], reserved: int, steps: list[tuple[str, object, object]]
) -> None:
    policy = StaticPolicy(get_preset(topo), reserved, None, options, feature_gates=GATES)
    state = CPUManagerState()
    policy.start(state)
    initial = state.copy()
    pods: dict[str, Pod] = {}
    for n, (verb, arg, numa) in enumerate(steps):
        if verb == "admit":
            assert isinstance(arg, PodSpec)
            pod = _pod(f"pod-{n}", arg)
            hint = None
            if isinstance(numa, int) and numa < policy.topology.num_numa_nodes:
                hint = TopologyHint(1 << numa, True)
            work = state.copy()
            try:
                if arg.budget is not None:
                    policy.allocate_pod(work, pod, hint)
                else:
                    for c in pod.all_containers():
                        policy.allocate(work, pod, c, hint)
            except (AdmissionError, CPUAllocationError):
                continue
            state.restore(work)
            pods[pod.uid] = pod
        else:
            held = list(state.iter_assignments())
            if held:
                assert isinstance(arg, int)
                uid, name, _ = held[arg % len(held)]
                policy.remove_container(state, uid, name)
        _check(policy, state)

    for uid, name, _ in list(state.iter_assignments()):
        policy.remove_container(state, uid, name)
    assert state == initial

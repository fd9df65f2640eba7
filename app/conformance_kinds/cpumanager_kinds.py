"""Conformance kinds of the static CPU policy (conformance README §3.3).

``static_policy_new``, ``static_policy_start``, ``static_policy_allocate``,
``static_policy_allocate_cpus``, ``static_policy_pod_sequence``, ``static_policy_remove``,
``static_policy_allocate_pod``, ``validate_pod_scope_resources``, ``smt_alignment_error_text``.

Every handler runs the engine (``StaticPolicy``) and compares; nothing is special-cased. As in
the upstream tests the cases come from, both option-maturity gates are on, and the pod-level
gates default to on where a case does not set them. ``inputs.release`` picks the release the
policy runs as (``app.domain.releases``; README §2.6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.conformance_kinds.common import (
    POD_LEVEL_GATES,
    Case,
    cpuset_of,
    expect_cpuset,
    expect_equal,
    expect_fields,
    feature_gates,
    release_of,
    topology_hint,
    topology_of,
)
from app.domain import releases
from app.domain.admission import AdmissionError, SMTAlignmentError, UnexpectedAdmissionError
from app.domain.cpumanager.errors import CPUAllocationError, CPUManagerStateError
from app.domain.cpumanager.metrics import (
    ASSIGNMENT_POD_EXCLUSIVE,
    ASSIGNMENT_POD_SHARED,
    RESOURCE_CPU,
    SOURCE_POD,
)
from app.domain.cpumanager.pod_scope import validate_pod_scope_resources
from app.domain.cpumanager.policy_options import CPUManagerPolicyError
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.manifest import pod_from_conformance
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.quantity import Quantity
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint

# As in the upstream tests: both option-maturity gates on, the pod-level gates on by default.
_GATES = {
    "CPUManagerPolicyAlphaOptions": True,
    "CPUManagerPolicyBetaOptions": True,
    **POD_LEVEL_GATES,
}


def _gates(case: Case) -> dict[str, bool]:
    return feature_gates(case.inputs, _GATES, release_of(case))


def _policy(case: Case, *, options: bool = True) -> StaticPolicy:
    """The case's policy; ``reserved_cpus`` null or absent lets the policy pick its own."""
    i = case.inputs
    reserved = i.get("reserved_cpus")
    return StaticPolicy(
        topology_of(case),
        int(i.get("num_reserved_cpus", 0)),
        None if reserved is None else cpuset_of(reserved),
        (i.get("options") or {}) if options else {},
        feature_gates=_gates(case),
        release=release_of(case).name,
    )


def _state(inputs: Mapping[str, Any]) -> CPUManagerState:
    assignments = {
        pod: {name: cpuset_of(text) for name, text in containers.items()}
        for pod, containers in (inputs.get("state_assignments") or {}).items()
    }
    return CPUManagerState(cpuset_of(inputs.get("state_default_cpuset")), assignments)


def _pod_case(case: Case) -> tuple[StaticPolicy, CPUManagerState, Pod]:
    """The policy, the starting state and the pod of a case that allocates a pod."""
    return _policy(case), _state(case.inputs), pod_from_conformance(case.inputs["pod"])


def _hint(value: Any) -> TopologyHint | None:
    return None if value is None else topology_hint(value)


def _attempt(allocate: Callable[[], object]) -> BaseException | None:
    """Run an allocation; the admission or allocation error it raised, if any."""
    try:
        allocate()
    except (AdmissionError, CPUAllocationError) as exc:
        return exc
    return None


def _error_value(exc: BaseException | None) -> Any:
    """The README §2.3 form of an outcome."""
    if exc is None:
        return ""
    if isinstance(exc, AdmissionError) and not isinstance(exc, UnexpectedAdmissionError):
        return {"type": exc.reason, "message": exc.message}
    if isinstance(exc, CPUAllocationError | UnexpectedAdmissionError):
        return exc.message
    raise exc


def _assignments_text(state: CPUManagerState) -> dict[str, dict[str, str]]:
    return {
        pod: {name: str(cset) for name, cset in containers.items()}
        for pod, containers in state.assignments.items()
        if containers
    }


def _expect_assignments(
    problems: list[str], what: str, expected: Mapping[str, Any], actual: Mapping[str, Any]
) -> None:
    """Compare ``{pod: {container: cpuset}}`` with sets compared as sets."""
    exp = {p: {c: cpuset_of(s) for c, s in cs.items()} for p, cs in expected.items()}
    act = {p: {c: cpuset_of(s) for c, s in cs.items()} for p, cs in actual.items()}
    if exp != act:
        problems.append(f"{what}: expected {dict(expected)!r}, got {dict(actual)!r}")


# -- handlers ------------------------------------------------------------------------------


def static_policy_new(case: Case) -> list[str]:
    problems: list[str] = []
    try:
        _policy(case)
        error = ""
    except CPUManagerPolicyError as exc:
        error = exc.message
    expect_equal(problems, "error", case.expected["error"], error)
    return problems


def static_policy_start(case: Case) -> list[str]:
    problems: list[str] = []
    state = _state(case.inputs)
    after: CPUSet | None = None
    try:
        _policy(case).start(state)
        error = ""
        after = state.default_cpuset
    except (CPUManagerPolicyError, CPUManagerStateError) as exc:
        error = exc.message
    expect_equal(problems, "error", case.expected["error"], error)
    expect_fields(problems, case.expected, {"default_cpuset_after": after}, cpusets=True)
    return problems


def static_policy_allocate(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    policy, state, pod = _pod_case(case)
    outcome = _attempt(
        lambda: policy.allocate(state, pod, i["container"], _hint(i.get("topology_hint")))
    )
    expect_equal(problems, "error", case.expected["error"], _error_value(outcome))
    cset = state.get_cpu_set(pod.uid, i["container"])
    expect_fields(problems, case.expected, {"allocated": cset is not None})
    expect_fields(problems, case.expected, {"cpuset": cset}, cpusets=True)
    return problems


def static_policy_allocate_cpus(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    policy = _policy(case, options=False)
    state = CPUManagerState(cpuset_of(i.get("state_default_cpuset")))
    policy.start(state)
    numa = i.get("numa_affinity")
    cset = policy.allocate_cpus(
        state, int(i["num_cpus"]), None if numa is None else mask_of(numa), cpuset_of(i["reusable"])
    )
    expect_cpuset(problems, "cpuset", case.expected["cpuset"], cset)
    return problems


def static_policy_pod_sequence(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    policy, state, pod = _pod_case(case)
    steps = list(i.get("steps") or [])

    def allocate_all() -> None:  # like the kubelet, stop at the first container that fails
        for c in (*pod.init_containers, *pod.containers):
            policy.allocate(state, pod, c, None)

    outcome = _attempt(allocate_all)
    if "error" in case.expected:
        expect_equal(problems, "error", case.expected["error"], _error_value(outcome))
    elif outcome is not None:
        problems.append(f"allocation failed: {outcome}")
    e = case.expected
    expect_cpuset(
        problems, "default_after_allocate", e["default_after_allocate"], state.default_cpuset
    )
    if "assignments_after_allocate" in e:
        _expect_assignments(
            problems,
            "assignments_after_allocate",
            {pod.uid: e["assignments_after_allocate"]},
            {pod.uid: dict(state.assignments.get(pod.uid, {}))},
        )
    for step in steps[1:]:
        verb, _, name = str(step).partition(" ")
        if verb != "remove" or not name:
            problems.append(f"unknown step {step!r}")
            continue
        policy.remove_container(state, pod.uid, name)
    expect_fields(problems, e, {"default_after_remove": state.default_cpuset}, cpusets=True)
    return problems


def static_policy_remove(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    policy = _policy(case)
    state = _state(i)
    policy.remove_container(state, i["pod_uid"], i["container"])
    e = case.expected
    expect_cpuset(problems, "default_cpuset_after", e["default_cpuset_after"], state.default_cpuset)
    removed = state.get_cpu_set(i["pod_uid"], i["container"]) is None
    expect_fields(problems, e, {"container_removed_from_state": removed})
    return problems


def static_policy_allocate_pod(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    policy, state, pod = _pod_case(case)
    outcome = _attempt(lambda: policy.allocate_pod(state, pod, _hint(i.get("topology_hint"))))
    e = case.expected
    expect_equal(problems, "error", e["error"], _error_value(outcome))
    if "container_assignments" in e:
        _expect_assignments(
            problems, "container_assignments", e["container_assignments"], _assignments_text(state)
        )
    expect_fields(problems, e, {"default_cpuset_after": state.default_cpuset}, cpusets=True)
    metrics = e.get("metrics")
    if metrics:
        m = policy.metrics
        actual = {
            "allocs": m.allocations(RESOURCE_CPU, SOURCE_POD),
            "exclusive": m.assignments(RESOURCE_CPU, ASSIGNMENT_POD_EXCLUSIVE),
            "shared": m.assignments(RESOURCE_CPU, ASSIGNMENT_POD_SHARED),
            "errors": m.errors(RESOURCE_CPU, SOURCE_POD),
        }
        for key, value in metrics.items():
            expect_equal(problems, f"metrics.{key}", value, actual.get(key))
    return problems


def _short_container(d: Mapping[str, Any]) -> Container:
    if d.get("cpu_request") is None:
        resources = ResourceRequirements()
    else:
        requests = {"cpu": Quantity.parse(d["cpu_request"]), "memory": Quantity.parse("1Gi")}
        limits = {"memory": Quantity.parse("1Gi")}
        if d.get("cpu_limit") is not None:
            limits["cpu"] = Quantity.parse(d["cpu_limit"])
        resources = ResourceRequirements(requests, limits)
    return Container(str(d["name"]), resources, d.get("restart_policy"))


def validate_pod_scope_resources_case(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    budget = {"cpu": Quantity.parse(i["pod_level_cpu"]), "memory": Quantity.parse("4Gi")}
    pod = Pod(
        uid="pod",
        name="pod",
        namespace="default",
        containers=tuple(_short_container(c) for c in i.get("containers") or []),
        init_containers=tuple(_short_container(c) for c in i.get("init_containers") or []),
        resources=ResourceRequirements(budget, budget),
    )
    message: str | None = None
    try:
        init_check = not release_of(case).has(releases.POD_BUDGET_WITHOUT_INIT_CHECK)
        validate_pod_scope_resources(pod, _gates(case), init_check=init_check)
    except PodBudgetError as exc:
        message = exc.message
    expect_equal(problems, "error", case.expected["error"], message is not None)
    if "message" in case.expected:
        expect_equal(problems, "message", case.expected["message"], message)
    return problems


def smt_alignment_error_text(case: Case) -> list[str]:
    problems: list[str] = []
    i = case.inputs
    err = SMTAlignmentError(
        int(i["RequestedCPUs"]),
        int(i["CpusPerCore"]),
        int(i.get("AvailablePhysicalCPUs", 0)),
        bool(i.get("CausedByPhysicalCPUs", False)),
    )
    expect_equal(problems, "message", case.expected["message"], err.message)
    return problems


HANDLERS = {
    "static_policy_new": static_policy_new,
    "static_policy_start": static_policy_start,
    "static_policy_allocate": static_policy_allocate,
    "static_policy_allocate_cpus": static_policy_allocate_cpus,
    "static_policy_pod_sequence": static_policy_pod_sequence,
    "static_policy_remove": static_policy_remove,
    "static_policy_allocate_pod": static_policy_allocate_pod,
    "validate_pod_scope_resources": validate_pod_scope_resources_case,
    "smt_alignment_error_text": smt_alignment_error_text,
}

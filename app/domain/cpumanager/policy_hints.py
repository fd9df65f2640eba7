"""The static CPU policy's topology hints (``GetTopologyHints``, ``GetPodTopologyHints``, §2.11
and §5.4; follows pkg/kubelet/cm/cpumanager/policy_static.go, v1.37, and master as 1.38 with the
pod-level restore of kubernetes#141041).

``{"cpu": None}`` means no preference, ``{"cpu": []}`` no possible placement. A container or pod
already holding CPUs gets the hints of what it holds (none when the size is not the request);
otherwise hints are generated over the available CPUs plus what it may reuse
(``app.domain.cpumanager.hints``). Pod-level pods (KEP-5526) whose budget leaves a shared pool
empty get no placement; a 1.38 pod whose pod-level set is in the state gets the hints of that
set, or, when the set is stale, fresh hints over the available CPUs plus what its release
would give back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.domain.cpumanager.hints import generate_cpu_topology_hints
from app.domain.cpumanager.metrics import RESOURCE_CPU
from app.domain.cpumanager.pod_restore import restorable_pod_cpus
from app.domain.cpumanager.pod_scope import (
    guaranteed_cpus,
    pod_guaranteed_cpus,
    skipped_pod_level_pod,
    uses_pod_level_managers,
    validate_pod_scope_resources,
)
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.model import Container, Pod
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.hint import ProviderHints, TopologyHint

__all__ = ["container_topology_hints", "pod_topology_hints"]

EMPTY = CPUSet()


def container_topology_hints(
    state: CPUManagerState,
    pod: Pod,
    c: Container,
    *,
    topology: CPUTopology,
    align_by_socket: bool,
    feature_gates: Mapping[str, bool],
    reserved_cpus: CPUSet,
    reusable: CPUSet,
) -> ProviderHints:
    """``GetTopologyHints`` for container ``c``; ``reusable`` = the pod's init-container CPUs."""
    requested = guaranteed_cpus(pod, c, feature_gates)
    if requested == 0 or skipped_pod_level_pod(pod, feature_gates):
        return {RESOURCE_CPU: None}
    allocated = state.get_cpu_set(pod.uid, c.name)
    if allocated is not None:
        if allocated.size() != requested:
            return {RESOURCE_CPU: []}
        hints = generate_cpu_topology_hints(topology, allocated, EMPTY, requested, align_by_socket)
        return {RESOURCE_CPU: hints}
    available = state.default_cpuset - reserved_cpus
    hints = generate_cpu_topology_hints(topology, available, reusable, requested, align_by_socket)
    return {RESOURCE_CPU: hints}


def pod_topology_hints(
    state: CPUManagerState,
    pod: Pod,
    *,
    topology: CPUTopology,
    align_by_socket: bool,
    feature_gates: Mapping[str, bool],
    reserved_cpus: CPUSet,
    reusable: CPUSet,
    restores_pods: bool,
    budget_init_check: bool = True,
) -> ProviderHints:
    """``GetPodTopologyHints`` (pod scope; sized for the bubble with pod-level resources)."""

    def generate(available: CPUSet, reuse: CPUSet, request: int) -> list[TopologyHint]:
        return generate_cpu_topology_hints(topology, available, reuse, request, align_by_socket)

    requested = pod_guaranteed_cpus(pod, feature_gates)
    if requested == 0 or skipped_pod_level_pod(pod, feature_gates):
        return {RESOURCE_CPU: None}
    if uses_pod_level_managers(pod, feature_gates):
        try:
            validate_pod_scope_resources(pod, feature_gates, init_check=budget_init_check)
        except PodBudgetError:
            return {RESOURCE_CPU: []}
        if restores_pods and state.get_pod_cpu_set(pod.uid) is not None:
            return {
                RESOURCE_CPU: _restored_pod_hints(state, pod, requested, reserved_cpus, generate)
            }
    assigned = _pod_assigned_cpus(state, pod, feature_gates)
    if assigned is None:
        return {RESOURCE_CPU: []}
    if assigned.size() == requested:
        return {RESOURCE_CPU: generate(assigned, EMPTY, requested)}
    available = state.default_cpuset - reserved_cpus
    return {RESOURCE_CPU: generate(available, reusable | assigned, requested)}


def _pod_assigned_cpus(
    state: CPUManagerState, pod: Pod, feature_gates: Mapping[str, bool]
) -> CPUSet | None:
    """The CPUs the state already assigns to the pod's containers; ``None`` when one of them
    holds a number of CPUs other than its request (no hint can be given)."""
    assigned = EMPTY
    for c in (*pod.init_containers, *pod.containers):
        allocated = state.get_cpu_set(pod.uid, c.name)
        if allocated is None:
            continue
        if allocated.size() != guaranteed_cpus(pod, c, feature_gates):
            return None
        assigned = assigned | allocated
    return assigned


def _restored_pod_hints(
    state: CPUManagerState,
    pod: Pod,
    requested: int,
    reserved_cpus: CPUSet,
    generate: Callable[[CPUSet, CPUSet, int], list[TopologyHint]],
) -> list[TopologyHint]:
    """1.38 (kubernetes#141041): hints of a pod whose pod-level CPU set is in the state.

    A restorable set gives its own hints (none when its size is not the request); a stale
    one (overlapping the default set, or container entries with a hole) gives fresh hints
    over the available CPUs plus the CPUs its release would give back.
    """
    restorable = restorable_pod_cpus(state, pod)
    if restorable is not None:
        if restorable.size() != requested:
            return []
        return generate(restorable, EMPTY, requested)
    pod_cpus = state.get_pod_cpu_set(pod.uid) or EMPTY
    available = ((state.default_cpuset - reserved_cpus) | pod_cpus) - reserved_cpus
    return generate(available, EMPTY, requested)

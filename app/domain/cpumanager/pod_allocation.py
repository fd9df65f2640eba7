"""The static policy's pod-level path (KEP-5526 ``AllocatePod``, §5.5; follows
pkg/kubelet/cm/cpumanager/policy_static.go, v1.37, and master as 1.38 with the pod-level
restore of kubernetes#141041, ``pod_restore``).

``allocate_pod`` takes one bubble (the pod's CPUs) for the whole pod on the first container's
hint, after the pod budget check (§5.3) and the SMT check; on error the state is left as it was.
A 1.38 pod whose pod-level set is already in the state keeps it (what is missing is completed),
unless the set is stale, which goes back to the default set first.

Once the bubble is taken: init containers with a Guaranteed integer request get
their own CPUs from the bubble minus the sidecars' CPUs so far; a regular init container without
one shares that; app containers with a request take theirs from the pool left after the
sidecars; every other container shares what is left. Each step is counted as upstream counts it
(``app.domain.cpumanager.metrics``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from app.domain.admission import EmptyPodSharedPoolError
from app.domain.cpumanager.gauges import CPUGauges
from app.domain.cpumanager.metrics import (
    ASSIGNMENT_POD_EXCLUSIVE,
    ASSIGNMENT_POD_SHARED,
    RESOURCE_CPU,
    SOURCE_POD,
    CPUManagerMetrics,
)
from app.domain.cpumanager.pod_restore import (
    drop_stale_pod_allocation,
    partition_pod_cpus,
    restorable_pod_cpus,
    restore_pod,
)
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.model import Container, Pod
from app.domain.topologymanager.hint import TopologyHint

__all__ = ["PodAllocationPolicy", "allocate_pod", "partition_bubble"]

Hints = TopologyHint | Mapping[str, TopologyHint | None] | None


class PodAllocationPolicy(Protocol):
    """What the pod-level path uses of the static policy (``StaticPolicy`` has all of it)."""

    metrics: CPUManagerMetrics
    gauges: CPUGauges
    restores_pods: bool

    def guaranteed_cpus(self, pod: Pod, container: Container) -> int: ...

    def pod_guaranteed_cpus(self, pod: Pod) -> int: ...

    def validate_pod_scope_resources(self, pod: Pod) -> None: ...

    def enforce_smt_alignment(self, state: CPUManagerState, num_cpus: int) -> None: ...

    def take_by_topology(self, available: CPUSet, num_cpus: int) -> CPUSet: ...

    def allocate_cpus_with_alignment(
        self, state: CPUManagerState, num_cpus: int, mask: int | None, reusable: CPUSet
    ) -> tuple[CPUSet, bool]: ...


def allocate_pod(
    policy: PodAllocationPolicy, state: CPUManagerState, pod: Pod, hints: Hints
) -> None:
    """``AllocatePod``: one bubble for the pod, partitioned among its containers.

    ``hints`` is the TM affinity stored for the pod's containers (a mapping by container
    name) or one hint for all of them; the first container's (init first) is used. On
    error the state is left as it was.
    """
    total = policy.pod_guaranteed_cpus(pod)
    if total == 0:
        return
    try:
        _allocate_or_restore_pod(policy, state, pod, total, hints)
    finally:
        policy.gauges.refresh(state)


def _allocate_or_restore_pod(
    policy: PodAllocationPolicy, state: CPUManagerState, pod: Pod, total: int, hints: Hints
) -> None:
    m = policy.metrics
    if policy.restores_pods and state.get_pod_cpu_set(pod.uid) is not None:
        restorable = restorable_pod_cpus(state, pod)
        if restorable is not None:
            _restore_pod(policy, state, pod, restorable)
            return
        # A stale allocation (an interrupted release or cleanup) goes back to the
        # default set; the pod is then allocated from scratch.
        drop_stale_pod_allocation(state, pod)
    snapshot = state.copy()
    try:
        _allocate_pod(policy, state, pod, total, hints)
    except Exception:
        state.restore(snapshot)
        m.failed(RESOURCE_CPU, SOURCE_POD)
        raise


def _restore_pod(
    policy: PodAllocationPolicy, state: CPUManagerState, pod: Pod, pod_cpus: CPUSet
) -> None:
    """1.38: keep the restored pod-level allocation, complete what is missing."""
    m = policy.metrics
    try:
        computed = restore_pod(
            state, pod, pod_cpus, policy.guaranteed_cpus, policy.take_by_topology
        )
    except Exception:
        m.failed(RESOURCE_CPU, SOURCE_POD)
        raise
    m.allocations_total[(RESOURCE_CPU, SOURCE_POD)] += len(computed)


def _allocate_pod(
    policy: PodAllocationPolicy, state: CPUManagerState, pod: Pod, total: int, hints: Hints
) -> None:
    m = policy.metrics
    try:
        policy.validate_pod_scope_resources(pod)
    except PodBudgetError as exc:
        raise EmptyPodSharedPoolError(exc.message) from exc
    policy.enforce_smt_alignment(state, total)

    containers = (*pod.init_containers, *pod.containers)
    hint: TopologyHint | None
    if hints is None or isinstance(hints, TopologyHint):
        hint = hints
    else:
        hint = hints.get(containers[0].name) if containers else None
    mask = hint.numa_affinity if hint is not None else None
    bubble, uncore_aligned = policy.allocate_cpus_with_alignment(state, total, mask, CPUSet())
    policy.gauges.on_allocate(state, bubble, uncore_aligned)
    state.set_pod_cpu_set(pod.uid, bubble)
    partition_bubble(state, pod, bubble, m, policy.guaranteed_cpus, policy.take_by_topology)


def partition_bubble(
    state: CPUManagerState,
    pod: Pod,
    bubble: CPUSet,
    m: CPUManagerMetrics,
    guaranteed_cpus: Callable[[Pod, Container], int],
    take_by_topology: Callable[[CPUSet, int], CPUSet],
) -> None:
    """Record every container's CPUs out of ``bubble`` (already the pod's set in ``state``)."""
    exclusive = 0

    def take_counted(available: CPUSet, num_cpus: int) -> CPUSet:
        nonlocal exclusive
        m.pinning_requests_total += 1
        cset = take_by_topology(available, num_cpus)
        m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_EXCLUSIVE)] += 1
        exclusive += 1
        return cset

    computed = partition_pod_cpus(pod, bubble, {}, guaranteed_cpus, take_counted)
    for name, cset in computed.items():
        state.set_cpu_set(pod.uid, name, cset)
    if len(computed) > exclusive:  # a Counter key appears as a sample, even at 0
        m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_SHARED)] += len(computed) - exclusive
    m.allocations_total[(RESOURCE_CPU, SOURCE_POD)] += len(computed)

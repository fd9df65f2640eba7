"""The pod-level CPU bubble partitioned among a pod's containers (KEP-5526 ``AllocatePod``,
§5.5; follows pkg/kubelet/cm/cpumanager/policy_static.go, v1.37 and master as 1.38).

Once the bubble (the pod's CPUs) is taken: init containers with a Guaranteed integer request get
their own CPUs from the bubble minus the sidecars' CPUs so far; a regular init container without
one shares that; app containers with a request take theirs from the pool left after the
sidecars; every other container shares what is left. Each step is counted as upstream counts it
(``app.domain.cpumanager.metrics``).
"""

from __future__ import annotations

from collections.abc import Callable

from app.domain.cpumanager.metrics import (
    ASSIGNMENT_POD_EXCLUSIVE,
    ASSIGNMENT_POD_SHARED,
    RESOURCE_CPU,
    SOURCE_POD,
    CPUManagerMetrics,
)
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod import Container, Pod

__all__ = ["partition_bubble"]


def partition_bubble(
    state: CPUManagerState,
    pod: Pod,
    bubble: CPUSet,
    m: CPUManagerMetrics,
    guaranteed_cpus: Callable[[Pod, Container], int],
    take_by_topology: Callable[[CPUSet, int], CPUSet],
) -> None:
    """Record every container's CPUs out of ``bubble`` (already the pod's set in ``state``)."""
    containers = (*pod.init_containers, *pod.containers)
    recorded: dict[str, CPUSet] = {}
    sidecar_cpus = CPUSet()
    for c in pod.init_containers:
        n = guaranteed_cpus(pod, c)
        if n > 0:
            m.pinning_requests_total += 1
            cset = take_by_topology(bubble - sidecar_cpus, n)
            m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_EXCLUSIVE)] += 1
            recorded[c.name] = cset
            if c.is_sidecar:
                sidecar_cpus = sidecar_cpus | cset
        elif not c.is_sidecar:
            m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_SHARED)] += 1
            recorded[c.name] = bubble - sidecar_cpus

    pool = bubble - sidecar_cpus
    for c in pod.containers:
        n = guaranteed_cpus(pod, c)
        if n > 0:
            m.pinning_requests_total += 1
            cset = take_by_topology(pool, n)
            m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_EXCLUSIVE)] += 1
            recorded[c.name] = cset
            pool = pool - cset

    for c in containers:
        cset_or_none = recorded.get(c.name)
        if cset_or_none is not None:
            state.set_cpu_set(pod.uid, c.name, cset_or_none)
        else:
            state.set_cpu_set(pod.uid, c.name, pool)
            m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_SHARED)] += 1
        m.allocations_total[(RESOURCE_CPU, SOURCE_POD)] += 1

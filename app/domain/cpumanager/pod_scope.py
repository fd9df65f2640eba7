"""Exclusive CPU counts and the pod budget check of the static policy.

Follows ``guaranteedCPUs``, ``podGuaranteedCPUs``, ``validatePodScopeResources`` and
``GetResourceIsolationLevel`` (§5.8) of pkg/kubelet/cm/cpumanager/policy_static.go, and
``resourcesQualifyForExclusiveCPUs`` of cpu_manager.go (v1.37). They only read the pod and the feature gates, so they are plain
functions here; ``StaticPolicy`` calls them with its own gates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from app.domain.cpumanager.policy_options import (
    GATE_POD_LEVEL_RESOURCE_MANAGERS,
    GATE_POD_LEVEL_RESOURCES,
    gate_enabled,
)
from app.domain.cpumanager.state import CPUManagerState
from app.domain.pod.budget import (
    BudgetContainer,
    PodBudgetError,
    check_pod_budget,
    cpu_budget_message,
)
from app.domain.pod.model import Container, Pod
from app.domain.pod.qos import (
    is_container_equivalent_qos_guaranteed,
    is_pod_level_resources_set,
    pod_qos_class,
)
from app.domain.quantity import Quantity, is_integral_cpu

RESOURCE_CPU = "cpu"
QOS_GUARANTEED = "Guaranteed"

Gates = Mapping[str, bool] | None


def pod_level_managers_on(gates: Gates) -> bool:
    """Both ``PodLevelResources`` and ``PodLevelResourceManagers`` are on."""
    return gate_enabled(gates, GATE_POD_LEVEL_RESOURCE_MANAGERS) and gate_enabled(
        gates, GATE_POD_LEVEL_RESOURCES
    )


def skipped_pod_level_pod(pod: Pod, gates: Gates) -> bool:
    """A pod with pod-level resources while a pod-level gate is off: managers skip it."""
    return not pod_level_managers_on(gates) and is_pod_level_resources_set(pod)


def uses_pod_level_managers(pod: Pod, gates: Gates) -> bool:
    """``PodLevelResourceManagers`` on and the pod sets pod-level resources."""
    return gate_enabled(gates, GATE_POD_LEVEL_RESOURCE_MANAGERS) and is_pod_level_resources_set(pod)


def _qos(pod: Pod, gates: Gates) -> str:
    return pod_qos_class(pod, gate_enabled(gates, GATE_POD_LEVEL_RESOURCES))


def _cpu_count(q: Quantity | None) -> int:
    """Whole CPUs of an integral quantity, else 0 (a missing quantity is Go's zero value)."""
    if q is None or not is_integral_cpu(q):
        return 0
    return q.value()


def guaranteed_cpus(pod: Pod, container: Container, gates: Gates = None) -> int:
    """``guaranteedCPUs``: exclusive CPUs for a container, 0 = shared pool."""
    if _qos(pod, gates) != QOS_GUARANTEED:
        return 0
    if uses_pod_level_managers(pod, gates) and not is_container_equivalent_qos_guaranteed(
        container
    ):
        return 0
    return _cpu_count(container.resources.requests.get(RESOURCE_CPU))


def pod_guaranteed_cpus(pod: Pod, gates: Gates = None) -> int:
    """``podGuaranteedCPUs``: CPUs for the whole pod (pod-scope hints, the pod bubble)."""
    if uses_pod_level_managers(pod, gates):
        if _qos(pod, gates) != QOS_GUARANTEED or pod.resources is None:
            return 0
        return _cpu_count(pod.resources.requests.get(RESOURCE_CPU))

    init_max = 0
    restartable_sum = 0
    for c in pod.init_containers:
        if RESOURCE_CPU not in c.resources.requests:
            continue
        n = guaranteed_cpus(pod, c, gates)
        if c.is_sidecar:
            restartable_sum += n
        elif restartable_sum + n > init_max:
            init_max = restartable_sum + n
    app_sum = sum(
        guaranteed_cpus(pod, c, gates)
        for c in pod.containers
        if RESOURCE_CPU in c.resources.requests
    )
    return max(init_max, app_sum + restartable_sum)


def resources_qualify_for_exclusive_cpus(container: Container) -> bool:
    """``resourcesQualifyForExclusiveCPUs``: equivalent Guaranteed and an integral cpu limit."""
    if not is_container_equivalent_qos_guaranteed(container):
        return False
    limit = container.resources.limits.get(RESOURCE_CPU)
    return limit is None or is_integral_cpu(limit)


def _budget_container(pod: Pod, c: Container, gates: Gates) -> BudgetContainer:
    n = guaranteed_cpus(pod, c, gates)
    return BudgetContainer(c.name, {RESOURCE_CPU: n} if n > 0 else {}, c.is_sidecar)


def validate_pod_scope_resources(pod: Pod, gates: Gates = None, *, init_check: bool = True) -> None:
    """``validatePodScopeResources`` (CPU): raise ``PodBudgetError`` with the kubelet's text.
    ``init_check=False``: the master (1.38) rules, without the exclusive init container check
    (``app.domain.pod.budget``)."""
    violation = check_pod_budget(
        {RESOURCE_CPU: pod_guaranteed_cpus(pod, gates)},
        [_budget_container(pod, c, gates) for c in pod.init_containers],
        [_budget_container(pod, c, gates) for c in pod.containers],
        init_check=init_check,
    )
    if violation is not None:
        raise PodBudgetError(violation, cpu_budget_message(violation))


IsolationLevel = Literal["container", "pod", "host"]
ISOLATION_HOST: IsolationLevel = "host"
ISOLATION_POD: IsolationLevel = "pod"
ISOLATION_CONTAINER: IsolationLevel = "container"


def resource_isolation_level(
    state: CPUManagerState, pod: Pod, c: Container, gates: Mapping[str, bool]
) -> IsolationLevel:
    """``GetResourceIsolationLevel``: ``host``, ``pod`` or ``container``."""
    if state.get_cpu_set(pod.uid, c.name) is None:
        return ISOLATION_HOST
    if uses_pod_level_managers(pod, gates) and not resources_qualify_for_exclusive_cpus(c):
        return ISOLATION_POD
    return ISOLATION_CONTAINER

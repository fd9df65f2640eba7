"""Pod QoS and the pod-level resource checks (follows pkg/apis/core/v1/helper/qos/qos.go and
staging/src/k8s.io/component-helpers/resource/helpers.go, v1.37).

* ``pod_qos_class`` (``GetPodQOS``: ``status.qosClass`` if known, else computed; with the
  ``PodLevelResources`` gate on and ``spec.resources`` non-nil the pod-level block alone
  decides), ``compute_pod_qos`` and ``resource_qos``;
* ``is_pod_level_resources_set`` (``cpu``, ``memory`` and ``hugepages-*`` count, as in the newest
  helpers), ``is_pod_level_requests_set`` / ``is_pod_level_limits_set``;
* ``is_container_equivalent_qos_guaranteed``.

Answers are memoised on the (immutable) pod objects.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.pod.model import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    UNSET,
    Container,
    Pod,
    ResourceRequirements,
    is_supported_pod_level_resource,
    memo_get,
    memo_set,
)

QOS_GUARANTEED = "Guaranteed"
QOS_BURSTABLE = "Burstable"
QOS_BEST_EFFORT = "BestEffort"
QOS_CLASSES = (QOS_GUARANTEED, QOS_BURSTABLE, QOS_BEST_EFFORT)

# Resources GetPodQOS looks at, in the order resourceQOS walks them (a set upstream; the
# answer does not depend on the order).
_QOS_COMPUTE_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)


def resource_qos(resources: ResourceRequirements) -> str:
    """``resourceQOS``: the class of one requests/limits block (cpu and memory only)."""
    qos = memo_get(resources, "_memo_qos")
    if qos is UNSET:
        qos = _resource_qos(resources)
        memo_set(resources, "_memo_qos", qos)
    return qos


def _resource_qos(resources: ResourceRequirements) -> str:
    if not resources.requests and not resources.limits:
        return QOS_BEST_EFFORT
    qos: str | None = None
    for name in _QOS_COMPUTE_RESOURCES:
        req, lim = resources.request(name), resources.limit(name)
        if req != lim:
            return QOS_BURSTABLE
        best_effort = req.is_zero()
        if qos is None:
            qos = QOS_BEST_EFFORT if best_effort else QOS_GUARANTEED
        elif best_effort != (qos == QOS_BEST_EFFORT):
            return QOS_BURSTABLE
    assert qos is not None
    return qos


def compute_pod_qos(pod: Pod, pod_level_resources_enabled: bool = True) -> str:
    """``ComputePodQOS``: from ``spec.resources`` alone (gate on, non-nil), else from every
    init and app container: any Burstable, or BestEffort mixed with Guaranteed -> Burstable."""
    if pod_level_resources_enabled and pod.resources is not None:
        return resource_qos(pod.resources)
    slot = "_memo_qos" if pod_level_resources_enabled else "_memo_qos_gate_off"
    qos = memo_get(pod, slot)
    if qos is UNSET:
        qos = _containers_qos(pod)
        memo_set(pod, slot, qos)
    return qos


def _containers_qos(pod: Pod) -> str:
    pod_qos: str | None = None
    for container in pod.all_containers():
        qos = resource_qos(container.resources)
        if qos == QOS_BURSTABLE:
            return qos
        if pod_qos is None:
            pod_qos = qos
        elif pod_qos != qos:
            return QOS_BURSTABLE
    return pod_qos or QOS_BEST_EFFORT


def pod_qos_class(pod: Pod, pod_level_resources_enabled: bool = True) -> str:
    """``GetPodQOS``: ``status.qosClass`` when known, else ``compute_pod_qos``."""
    if pod.qos_class:
        return pod.qos_class
    return compute_pod_qos(pod, pod_level_resources_enabled)


def is_pod_level_requests_set(pod: Pod) -> bool:
    """``IsPodLevelRequestsSet``."""
    res = pod.resources
    return res is not None and _names_supported(res, res.requests, "_memo_pod_level_requests")


def is_pod_level_limits_set(pod: Pod) -> bool:
    """``IsPodLevelLimitsSet``."""
    res = pod.resources
    return res is not None and _names_supported(res, res.limits, "_memo_pod_level_limits")


def _names_supported(res: ResourceRequirements, names: Iterable[str], memo: str) -> bool:
    """Whether ``names`` (requests or limits of ``res``) hold a pod-level resource, memoised
    on ``res`` under ``memo``."""
    answer = memo_get(res, memo)
    if answer is UNSET:
        answer = any(is_supported_pod_level_resource(n) for n in names)
        memo_set(res, memo, answer)
    return bool(answer)


def is_pod_level_resources_set(pod: Pod) -> bool:
    """``IsPodLevelResourcesSet``: ``spec.resources`` names cpu, memory or hugepages-*."""
    return is_pod_level_requests_set(pod) or is_pod_level_limits_set(pod)


def is_container_equivalent_qos_guaranteed(container: Container) -> bool:
    """``IsContainerEquivalentQOSGuaranteed``: cpu and memory requests non-zero and equal to
    their limits (no integral-CPU or hugepage check)."""
    res = container.resources
    answer = memo_get(res, "_memo_equivalent_guaranteed")
    if answer is UNSET:
        answer = True
        for name in (RESOURCE_CPU, RESOURCE_MEMORY):
            req = res.request(name)
            if req.is_zero() or req != res.limit(name):
                answer = False
                break
        memo_set(res, "_memo_equivalent_guaranteed", answer)
    return answer

"""Pod request arithmetic (follows ``AggregateContainerRequests``/``AggregateContainerLimits``
and ``PodRequests`` of staging/src/k8s.io/component-helpers/resource/helpers.go, v1.37).

The sidecar-aware formula: app containers and restartable (sidecar) init containers add up;
each regular init container needs its own request plus the sidecars started before it; the pod
needs the larger of the two. With the ``PodLevelResources`` gate on, a pod-level request wins
for the resources it names.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.domain.pod.model import Pod, ResourceList, is_supported_pod_level_resource
from app.domain.pod.qos import is_pod_level_requests_set
from app.domain.quantity import Quantity


def _add_into(acc: dict[str, Quantity], items: Mapping[str, Quantity]) -> None:
    for name, q in items.items():
        acc[name] = acc[name] + q if name in acc else q


def _max_into(acc: dict[str, Quantity], items: Mapping[str, Quantity]) -> None:
    for name, q in items.items():
        if name not in acc or q > acc[name]:
            acc[name] = q


def _aggregate(pod: Pod, which: str) -> ResourceList:
    result: dict[str, Quantity] = {}
    for c in pod.containers:
        _add_into(result, getattr(c.resources, which))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for c in pod.init_containers:
        own: Mapping[str, Quantity] = getattr(c.resources, which)
        if c.is_sidecar:
            _add_into(result, own)
            _add_into(sidecars, own)
            _max_into(init_peak, sidecars)
        else:
            running = dict(own)
            _add_into(running, sidecars)
            _max_into(init_peak, running)
    _max_into(result, init_peak)
    return ResourceList(result)


def aggregate_container_requests(pod: Pod) -> ResourceList:
    """``AggregateContainerRequests``: app containers and sidecars summed, then the max with
    each init container's peak (its own requests plus the sidecars started before it)."""
    return _aggregate(pod, "requests")


def aggregate_container_limits(pod: Pod) -> ResourceList:
    """``AggregateContainerLimits``: the same formula over limits."""
    return _aggregate(pod, "limits")


def pod_requests(pod: Pod, pod_level_resources_enabled: bool = True) -> ResourceList:
    """``PodRequests`` without overhead: aggregated container requests, overridden by the
    pod-level requests of supported resources when those are set."""
    reqs = dict(aggregate_container_requests(pod))
    if pod_level_resources_enabled and is_pod_level_requests_set(pod):
        assert pod.resources is not None
        for name, q in pod.resources.requests.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = q
    return ResourceList(reqs)

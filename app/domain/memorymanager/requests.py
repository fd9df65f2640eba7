"""What a container or a pod asks of the memory manager (``getContainerRequestedResources``,
``getPodRequestedResources``; follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38).

``memory`` and ``hugepages-*`` requests in bytes. ``pod_level`` is true when the gate
``PodLevelResourceManagers`` is on and the pod sets pod-level resources (KEP-5526): the pod's
own requests are then the budget, and a container that is not equivalent Guaranteed requests
nothing. Otherwise the pod asks for ``max(init peak, apps + sidecars)`` per resource its app
containers request.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.pod.model import RESOURCE_MEMORY, Container, Pod, is_hugepage_resource_name
from app.domain.pod.qos import is_container_equivalent_qos_guaranteed
from app.domain.quantity import Quantity

__all__ = ["container_requested_resources", "pod_requested_resources", "quantity_as_int64"]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def quantity_as_int64(q: Quantity) -> int | None:
    """``Quantity.AsInt64``: the exact integer value, or ``None`` when it has none."""
    amount = q.amount
    if amount.denominator != 1 or not _INT64_MIN <= amount.numerator <= _INT64_MAX:
        return None
    return amount.numerator


def container_requested_resources(
    pod: Pod, container: Container, pod_level: bool
) -> dict[str, int]:
    """``getContainerRequestedResources``: ``memory`` and ``hugepages-*`` requests in bytes;
    empty for a pod-level pod's container that is not equivalent Guaranteed."""
    if pod_level and not is_container_equivalent_qos_guaranteed(container):
        return {}
    return dict(_memory_requests(container.resources.requests))


def _memory_requests(requests: Mapping[str, Quantity]) -> Iterator[tuple[str, int]]:
    """The ``memory`` and ``hugepages-*`` entries of ``requests`` in bytes (``AsInt64``)."""
    for name, q in requests.items():
        if name != RESOURCE_MEMORY and not is_hugepage_resource_name(name):
            continue
        value = quantity_as_int64(q)
        if value is None:
            raise MemoryManagerError("[memorymanager] failed to represent quantity as int64")
        yield name, value


def pod_requested_resources(pod: Pod, pod_level: bool) -> dict[str, int]:
    """``getPodRequestedResources``: pod-level requests (values > 0), or the classic
    ``max(init peak, apps + sidecars)`` for resources app containers request."""
    if pod_level:
        assert pod.resources is not None
        return {n: v for n, v in _memory_requests(pod.resources.requests) if v > 0}
    by_init: dict[str, int] = {}
    by_sidecars: dict[str, int] = {}
    for c in pod.init_containers:
        for name, size in container_requested_resources(pod, c, pod_level).items():
            by_init.setdefault(name, 0)
            if c.is_sidecar:
                by_sidecars[name] = by_sidecars.get(name, 0) + size
            elif by_sidecars.get(name, 0) + size > by_init[name]:
                by_init[name] = by_sidecars.get(name, 0) + size
    by_apps: dict[str, int] = {}
    for c in pod.containers:
        for name, size in container_requested_resources(pod, c, pod_level).items():
            by_apps[name] = by_apps.get(name, 0) + size
    return {
        name: max(by_apps[name] + by_sidecars.get(name, 0), by_init.get(name, 0))
        for name in by_apps
    }

"""Pods as the resource managers see them: the model (follows
staging/src/k8s.io/api/core/v1/types.go and the resource-name helpers of
pkg/apis/core/v1/helper/helpers.go, v1.37).

What is here: ``ResourceList`` (an immutable, hashable ``Mapping[str, Quantity]`` iterated by
resource name), ``ResourceRequirements``, ``Container``, ``Pod``, the resource names and their
helpers (``is_hugepage_resource_name``, ``hugepage_size_bytes``, ...). The values are immutable;
answers derived from them (QoS, pod-level checks) are memoised on the objects through
``memo_get``/``memo_set`` (``UNSET`` until set). ``PodManifestError`` names a bad field.

Elsewhere: QoS and the pod-level resource checks in ``app.domain.pod.qos``, the sidecar-aware
request arithmetic in ``app.domain.pod.requests``, building pods from conformance cases and
manifests in ``app.domain.pod.manifest``.

Only init containers' ``restartPolicy`` is kept from a manifest: ``Always`` there makes a
sidecar. (A regular container may carry a ``restartPolicy`` under ContainerRestartRules; it
does not make it a sidecar, so it is dropped to keep ``Container.is_sidecar`` honest.)
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.domain.quantity import ZERO, Quantity, QuantityError

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_HUGEPAGES_PREFIX = "hugepages-"

CONTAINER_RESTART_POLICY_ALWAYS = "Always"


class PodManifestError(ValueError):
    """A pod description is malformed. ``field`` is the path of the bad value
    (``"spec.containers[1].resources.limits.cpu"``); ``detail`` says what is wrong;
    ``document`` is the 1-based document number when the pod came from a multi-document
    text."""

    def __init__(self, field: str, detail: str, *, document: int | None = None) -> None:
        text = f"{field}: {detail}" if field else detail
        if document is not None:
            text = f"document {document}: {text}"
        super().__init__(text)
        self.field = field
        self.detail = detail
        self.document = document


# -- resource names -------------------------------------------------------------------


def is_hugepage_resource_name(name: str) -> bool:
    """``IsHugePageResourceName``."""
    return name.startswith(RESOURCE_HUGEPAGES_PREFIX)


def hugepage_size_bytes(name: str) -> int:
    """Page size of a ``hugepages-<size>`` resource in bytes (``hugepages-2Mi`` -> 2097152)."""
    if not is_hugepage_resource_name(name):
        raise PodManifestError("", f"resource name: {name} is an invalid hugepage name")
    try:
        size = Quantity.parse(name[len(RESOURCE_HUGEPAGES_PREFIX) :])
    except QuantityError as err:
        raise PodManifestError("", f"resource name: {name} is an invalid hugepage name") from err
    return size.value()


def is_native_resource(name: str) -> bool:
    """``IsNativeResource``: unprefixed or in the ``kubernetes.io/`` namespace."""
    return "/" not in name or "kubernetes.io/" in name


def is_overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed``: native and not hugepages."""
    return is_native_resource(name) and not is_hugepage_resource_name(name)


def is_supported_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages-*."""
    return name in (RESOURCE_CPU, RESOURCE_MEMORY) or is_hugepage_resource_name(name)


# -- values ---------------------------------------------------------------------------


class ResourceList(Mapping[str, Quantity]):
    """An immutable ``v1.ResourceList``: resource name -> Quantity, iterated by name.

    Built from any mapping whose values are ``Quantity``, quantity text or ints. Equality is
    that of mappings (so it compares equal to a plain dict of the same quantities); it is
    hashable.
    """

    __slots__ = ("_items",)

    _items: dict[str, Quantity]

    def __init__(self, items: Mapping[str, Quantity | str | int] | None = None) -> None:
        source = dict(items or {})
        for name in source:
            if not isinstance(name, str):
                raise PodManifestError("", f"resource names are strings, got {name!r}")
        built: dict[str, Quantity] = {}
        for name in sorted(source):
            value = source[name]
            built[name] = value if isinstance(value, Quantity) else Quantity.parse(value)
        object.__setattr__(self, "_items", built)

    def __getitem__(self, name: str) -> Quantity:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # Straight to the dict (the Mapping mixins would go through __getitem__ per key).
    def __contains__(self, name: object) -> bool:
        return name in self._items

    def get(self, name: str, default: Any = None) -> Any:
        return self._items.get(name, default)

    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def items(self) -> ItemsView[str, Quantity]:
        return self._items.items()

    def values(self) -> ValuesView[Quantity]:
        return self._items.values()

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResourceList):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ResourceList is immutable")

    def __reduce__(self) -> tuple[type[ResourceList], tuple[dict[str, Quantity]]]:
        # Rebuild through __init__ (copy, deepcopy and pickle cannot set attributes).
        return (ResourceList, (dict(self._items),))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {str(v)!r}" for k, v in self._items.items())
        return f"ResourceList({{{inner}}})"

    def quantity(self, name: str) -> Quantity:
        """The quantity for ``name``, or zero when absent (Go's map lookup)."""
        return self._items.get(name, ZERO)

    def to_text(self) -> dict[str, str]:
        """``{name: canonical quantity text}``, for JSON."""
        return {k: str(v) for k, v in self._items.items()}


EMPTY_RESOURCE_LIST = ResourceList()


class _Memo:
    """Private slots for answers derived from an immutable value, filled on first use.

    They are not dataclass fields, so equality, hashing, ``repr``, ``dataclasses.fields`` and
    copies ignore them (a copy or an unpickled value simply computes them again).
    """

    __slots__ = (
        "_memo_equivalent_guaranteed",
        "_memo_pod_level_limits",
        "_memo_pod_level_requests",
        "_memo_qos",
        "_memo_qos_gate_off",
    )


def memo_get(obj: object, slot: str) -> Any:
    """The memoised value in ``slot``, or ``UNSET``."""
    return getattr(obj, slot, UNSET)


def memo_set(obj: object, slot: str, value: Any) -> None:
    if isinstance(obj, _Memo):
        object.__setattr__(obj, slot, value)


UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class ResourceRequirements(_Memo):
    """``v1.ResourceRequirements``: requests and limits (dicts are converted to ResourceList)."""

    requests: Mapping[str, Quantity] = EMPTY_RESOURCE_LIST
    limits: Mapping[str, Quantity] = EMPTY_RESOURCE_LIST

    def __post_init__(self) -> None:
        for name in ("requests", "limits"):
            value = getattr(self, name)
            if not isinstance(value, ResourceList):
                object.__setattr__(self, name, ResourceList(value))

    def request(self, name: str) -> Quantity:
        """Request for ``name``, zero when absent."""
        return self.requests.get(name, ZERO)

    def limit(self, name: str) -> Quantity:
        """Limit for ``name``, zero when absent."""
        return self.limits.get(name, ZERO)

    def is_empty(self) -> bool:
        return not self.requests and not self.limits


@dataclass(frozen=True, slots=True)
class Container:
    """A container's name, resources and (init containers only) restart policy."""

    name: str
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        """Restartable init container (``restartPolicy: Always``)."""
        return self.restart_policy == CONTAINER_RESTART_POLICY_ALWAYS

    def requests_for(self, resource: str) -> Quantity:
        """Request for ``resource`` (zero when absent)."""
        return self.resources.request(resource)

    def limits_for(self, resource: str) -> Quantity:
        """Limit for ``resource`` (zero when absent)."""
        return self.resources.limit(resource)

    def cpu_request_milli(self) -> int:
        """CPU request in millicores (``Requests.Cpu().MilliValue()``)."""
        return self.resources.request(RESOURCE_CPU).milli_value()

    def cpu_limit_milli(self) -> int:
        return self.resources.limit(RESOURCE_CPU).milli_value()

    def memory_request_bytes(self) -> int:
        """Memory request in bytes (``Requests.Memory().Value()``)."""
        return self.resources.request(RESOURCE_MEMORY).value()

    def hugepage_requests(self) -> dict[str, int]:
        """``{hugepages-<size>: bytes}`` for every hugepage resource requested."""
        return {
            name: q.value()
            for name, q in self.resources.requests.items()
            if is_hugepage_resource_name(name)
        }


@dataclass(frozen=True, slots=True)
class Pod(_Memo):
    """A pod: identity, init and app containers, pod-level ``spec.resources`` and, when
    known, ``status.qosClass``."""

    uid: str
    name: str
    namespace: str
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    resources: ResourceRequirements | None = None
    qos_class: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.containers, tuple):
            object.__setattr__(self, "containers", tuple(self.containers))
        if not isinstance(self.init_containers, tuple):
            object.__setattr__(self, "init_containers", tuple(self.init_containers))

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def all_containers(self) -> tuple[Container, ...]:
        """Init containers then app containers (``ContainerIter`` order)."""
        return self.init_containers + self.containers

    def sidecars(self) -> tuple[Container, ...]:
        return tuple(c for c in self.init_containers if c.is_sidecar)

    def find_container(self, name: str) -> Container | None:
        for c in self.init_containers:
            if c.name == name:
                return c
        for c in self.containers:
            if c.name == name:
                return c
        return None

    def is_init_container(self, name: str) -> bool:
        return any(c.name == name for c in self.init_containers)

    def is_regular_init_container(self, name: str) -> bool:
        """An init container that is not a sidecar."""
        return any(c.name == name and not c.is_sidecar for c in self.init_containers)


_Entry = TypeVar("_Entry")


def drop_container_entry(
    entries: dict[str, dict[str, _Entry]], pod_uid: str, container_name: str
) -> None:
    """Forget one container in a map by pod UID and container name (the managers' state
    ``Delete``, the topology manager's ``RemoveContainer``); a pod left empty disappears."""
    containers = entries.get(pod_uid)
    if containers is None:
        return
    containers.pop(container_name, None)
    if not containers:
        del entries[pod_uid]

"""Pods as the resource managers see them: containers, requests/limits, pod-level resources,
QoS (follows pkg/apis/core/v1/helper/qos/qos.go,
staging/src/k8s.io/component-helpers/resource/helpers.go and pkg/apis/core/v1/defaults.go,
v1.37).

What is here:

* ``ResourceList`` (an immutable, hashable ``Mapping[str, Quantity]`` iterated by resource
  name), ``ResourceRequirements``, ``Container``, ``Pod``;
* ``pod_qos_class`` (``GetPodQOS``: ``status.qosClass`` if known, else computed; with the
  ``PodLevelResources`` gate on and ``spec.resources`` non-nil the pod-level block alone decides),
  ``resource_qos``, ``is_pod_level_resources_set`` (``cpu``, ``memory`` and ``hugepages-*``
  count, as in the newest helpers), ``is_container_equivalent_qos_guaranteed``;
* ``aggregate_container_requests`` / ``aggregate_container_limits`` (the sidecar-aware
  formula of ``AggregateContainerRequests``) and ``pod_requests``;
* ``pod_from_conformance`` (conformance README §2.4, taken as given: no defaulting, like the
  pods upstream unit tests build) and ``pod_from_manifest`` (a decoded v1 Pod: API-server
  defaulting of requests from limits, container and pod level, then a little validation:
  names as the API server checks them, see ``app.domain.k8s_names``).

Manifest defaulting follows ``SetDefaults_Pod``: a container's missing request defaults to its
limit; with ``PodLevelResources`` on, ``defaultHugePagePodLimits`` then ``defaultPodRequests``.
The pod-level *limit* defaulting of kubernetes#137616 is still an open pull request and is not
applied. Validation keeps two rules of ``ValidateResourceRequirements`` that make QoS
well-defined: no negative quantities, and no request above its limit.

Only init containers' ``restartPolicy`` is kept from a manifest: ``Always`` there makes a
sidecar. (A regular container may carry a ``restartPolicy`` under ContainerRestartRules; it
does not make it a sidecar, so it is dropped to keep ``Container.is_sidecar`` honest.)
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field
from typing import Any

from app.domain import k8s_names
from app.domain.quantity import ZERO, Quantity, QuantityError, go_quote

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_HUGEPAGES_PREFIX = "hugepages-"

QOS_GUARANTEED = "Guaranteed"
QOS_BURSTABLE = "Burstable"
QOS_BEST_EFFORT = "BestEffort"
QOS_CLASSES = (QOS_GUARANTEED, QOS_BURSTABLE, QOS_BEST_EFFORT)

CONTAINER_RESTART_POLICY_ALWAYS = "Always"
MAX_GENERATED_PREFIX = 63 - 5  # maxNameLength - randomLength of the API server's generator

# Resources GetPodQOS looks at, in the order resourceQOS walks them (a set upstream; the
# answer does not depend on the order).
_QOS_COMPUTE_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)


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


def _memo_get(obj: object, slot: str) -> Any:
    """The memoised value in ``slot``, or ``_UNSET``."""
    return getattr(obj, slot, _UNSET)


def _memo_set(obj: object, slot: str, value: Any) -> None:
    if isinstance(obj, _Memo):
        object.__setattr__(obj, slot, value)


_UNSET: Any = object()


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


# -- QoS ------------------------------------------------------------------------------


def resource_qos(resources: ResourceRequirements) -> str:
    """``resourceQOS``: the class of one requests/limits block (cpu and memory only)."""
    qos = _memo_get(resources, "_memo_qos")
    if qos is _UNSET:
        qos = _resource_qos(resources)
        _memo_set(resources, "_memo_qos", qos)
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
    qos = _memo_get(pod, slot)
    if qos is _UNSET:
        qos = _containers_qos(pod)
        _memo_set(pod, slot, qos)
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
    if res is None:
        return False
    answer = _memo_get(res, "_memo_pod_level_requests")
    if answer is _UNSET:
        answer = any(is_supported_pod_level_resource(n) for n in res.requests)
        _memo_set(res, "_memo_pod_level_requests", answer)
    return answer


def is_pod_level_limits_set(pod: Pod) -> bool:
    """``IsPodLevelLimitsSet``."""
    res = pod.resources
    if res is None:
        return False
    answer = _memo_get(res, "_memo_pod_level_limits")
    if answer is _UNSET:
        answer = any(is_supported_pod_level_resource(n) for n in res.limits)
        _memo_set(res, "_memo_pod_level_limits", answer)
    return answer


def is_pod_level_resources_set(pod: Pod) -> bool:
    """``IsPodLevelResourcesSet``: ``spec.resources`` names cpu, memory or hugepages-*."""
    return is_pod_level_requests_set(pod) or is_pod_level_limits_set(pod)


def is_container_equivalent_qos_guaranteed(container: Container) -> bool:
    """``IsContainerEquivalentQOSGuaranteed``: cpu and memory requests non-zero and equal to
    their limits (no integral-CPU or hugepage check)."""
    res = container.resources
    answer = _memo_get(res, "_memo_equivalent_guaranteed")
    if answer is _UNSET:
        answer = True
        for name in (RESOURCE_CPU, RESOURCE_MEMORY):
            req = res.request(name)
            if req.is_zero() or req != res.limit(name):
                answer = False
                break
        _memo_set(res, "_memo_equivalent_guaranteed", answer)
    return answer


# -- aggregation ----------------------------------------------------------------------


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


# -- building pods --------------------------------------------------------------------


def _expect_mapping(value: Any, path: str, *, optional: bool = True) -> Mapping[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise PodManifestError(path, f"expected a mapping, got {_type_name(value)}")
    return value


def _expect_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise PodManifestError(path, f"expected a list, got {_type_name(value)}")
    return list(value)


def _expect_str(value: Any, path: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise PodManifestError(path, f"expected a string, got {_type_name(value)}")
    if not value and not allow_empty:
        raise PodManifestError(path, "Required value")
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({go_quote(value)})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _quantity(value: Any, path: str, *, trim: bool) -> Quantity:
    """A quantity from decoded JSON/YAML: text, an int or a float (JSON numbers)."""
    if isinstance(value, bool) or value is None:
        raise PodManifestError(
            path, f"invalid quantity: expected text or a number, got {_type_name(value)}"
        )
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise PodManifestError(path, f"invalid quantity {value!r}")
        value = repr(value)
    elif not isinstance(value, str | int):
        raise PodManifestError(
            path, f"invalid quantity: expected text or a number, got {_type_name(value)}"
        )
    if isinstance(value, str) and trim:
        value = value.strip()  # Quantity.UnmarshalJSON trims spaces
    try:
        return Quantity.parse(value)
    except QuantityError as err:
        raise PodManifestError(path, str(err)) from err


def _resource_list(value: Any, path: str, *, trim: bool) -> ResourceList:
    items = _expect_mapping(value, path)
    out: dict[str, Quantity] = {}
    for name, q in items.items():
        if not isinstance(name, str) or not name:
            raise PodManifestError(path, f"resource names are non-empty strings, got {name!r}")
        out[name] = _quantity(q, f"{path}.{name}", trim=trim)
    return ResourceList(out)


def _requirements(value: Any, path: str, *, trim: bool) -> ResourceRequirements:
    block = _expect_mapping(value, path)
    return ResourceRequirements(
        requests=_resource_list(block.get("requests"), f"{path}.requests", trim=trim),
        limits=_resource_list(block.get("limits"), f"{path}.limits", trim=trim),
    )


def _check_unique(containers: Iterable[tuple[str, Container]]) -> None:
    seen: set[str] = set()
    for path, c in containers:
        if c.name in seen:
            raise PodManifestError(f"{path}.name", f"Duplicate value: {go_quote(c.name)}")
        seen.add(c.name)


def pod_from_conformance(d: Mapping[str, Any]) -> Pod:
    """A pod in the conformance form (README §2.4): ``{uid, resources|null, init_containers,
    containers}``, containers ``{name, requests, limits, restart_policy?}``. ``name`` defaults to
    the uid, ``namespace`` to ``"default"``. Taken as given (no defaulting)."""
    d = _expect_mapping(d, "", optional=False)
    uid = _expect_str(d.get("uid"), "uid")
    name = _expect_str(d.get("name", uid), "name")
    namespace = _expect_str(d.get("namespace", "default"), "namespace")

    def container(raw: Any, path: str) -> Container:
        c = _expect_mapping(raw, path, optional=False)
        policy = c.get("restart_policy")
        if policy is not None:
            policy = _expect_str(policy, f"{path}.restart_policy")
        return Container(
            name=_expect_str(c.get("name"), f"{path}.name"),
            resources=ResourceRequirements(
                requests=_resource_list(c.get("requests"), f"{path}.requests", trim=False),
                limits=_resource_list(c.get("limits"), f"{path}.limits", trim=False),
            ),
            restart_policy=policy,
        )

    raw_containers = _expect_list(d.get("containers"), "containers")
    if not raw_containers:
        raise PodManifestError("containers", "Required value")
    containers = tuple(container(c, f"containers[{i}]") for i, c in enumerate(raw_containers))
    inits = tuple(
        container(c, f"init_containers[{i}]")
        for i, c in enumerate(_expect_list(d.get("init_containers"), "init_containers"))
    )
    _check_unique(
        [(f"init_containers[{i}]", c) for i, c in enumerate(inits)]
        + [(f"containers[{i}]", c) for i, c in enumerate(containers)]
    )
    raw_res = d.get("resources")
    resources = None if raw_res is None else _requirements(raw_res, "resources", trim=False)
    qos = d.get("qos_class")
    if qos is not None and qos not in QOS_CLASSES:
        raise PodManifestError("qos_class", f"unknown QoS class {qos!r}")
    return Pod(
        uid=uid,
        name=name,
        namespace=namespace,
        containers=containers,
        init_containers=inits,
        resources=resources,
        qos_class=qos,
    )


def synthetic_uid(namespace: str, name: str) -> str:
    """A stable uuid4-shaped uid for a pod manifest that has none (same name, same uid)."""
    digest = bytearray(hashlib.sha256(f"numascope/{namespace}/{name}".encode()).digest()[:16])
    return str(uuid.UUID(bytes=bytes(digest), version=4))


def _default_container_requests(c: Container) -> Container:
    res = c.resources
    missing = {k: v for k, v in res.limits.items() if k not in res.requests}
    if not missing:
        return c
    requests = dict(res.requests)
    requests.update(missing)
    return Container(c.name, ResourceRequirements(requests, res.limits), c.restart_policy)


def _default_pod_level(pod: Pod) -> ResourceRequirements | None:
    """``defaultHugePagePodLimits`` then ``defaultPodRequests``."""
    res = pod.resources
    if res is None or (not res.requests and not res.limits):
        return res
    limits = dict(res.limits)
    for name, q in aggregate_container_limits(pod).items():
        if not is_hugepage_resource_name(name) or name in res.requests:
            continue
        limits.setdefault(name, q)
    if not limits:
        return res
    requests = dict(res.requests)
    for name, q in aggregate_container_requests(pod).items():
        supported = is_supported_pod_level_resource(name) and is_overcommit_allowed(name)
        if supported and name not in requests:
            requests[name] = q
    for name, q in limits.items():
        if name not in requests and is_supported_pod_level_resource(name):
            requests[name] = q
    return ResourceRequirements(requests, limits)


def _validate_requirements(res: ResourceRequirements, path: str) -> None:
    for kind, items in (("requests", res.requests), ("limits", res.limits)):
        for name, q in items.items():
            if q.sign() < 0:
                raise PodManifestError(
                    f"{path}.{kind}.{name}", "must be greater than or equal to 0"
                )
    for name, req in res.requests.items():
        lim = res.limits.get(name)
        if lim is not None and req > lim:
            raise PodManifestError(
                f"{path}.requests.{name}",
                f"Invalid value: {go_quote(str(req))}: must be less than or equal to {name} limit of {lim}",
            )


def _names(check: Callable[..., None], *args: str) -> None:
    """Run a ``k8s_names`` check; its error as a ``PodManifestError`` of the same field."""
    try:
        check(*args)
    except k8s_names.InvalidNameError as err:
        raise PodManifestError(err.field, err.detail) from None


def pod_from_manifest(obj: Mapping[str, Any], *, pod_level_resources_enabled: bool = True) -> Pod:
    """A ``Pod`` from a decoded Kubernetes v1 Pod object (API-server defaulting applied).

    ``kind``/``apiVersion`` must be ``Pod``/``v1`` when given. Unknown fields are ignored.
    A missing ``metadata.uid`` gets ``synthetic_uid(namespace, name)``; a missing name uses
    ``metadata.generateName`` (its first 58 characters, as the API server's generator keeps)
    plus the start of that uid. Names are checked as the API server
    checks them (``app.domain.k8s_names``: the pod name a DNS-1123 subdomain, the namespace
    and every container name a DNS-1123 label, the uid a safe path segment), with its messages.
    """
    obj = _expect_mapping(obj, "", optional=False)
    kind = obj.get("kind")
    if kind is not None and kind != "Pod":
        raise PodManifestError("kind", f"expected {go_quote('Pod')}, got {_type_name(kind)}")
    api_version = obj.get("apiVersion")
    if api_version is not None and api_version != "v1":
        raise PodManifestError(
            "apiVersion", f"expected {go_quote('v1')}, got {_type_name(api_version)}"
        )

    meta = _expect_mapping(obj.get("metadata"), "metadata")
    namespace = meta.get("namespace")
    namespace = (
        "default" if namespace in (None, "") else _expect_str(namespace, "metadata.namespace")
    )
    name = meta.get("name")
    uid = meta.get("uid")
    raw_generate = meta.get("generateName")
    generate = (
        ""
        if raw_generate is None
        else _expect_str(raw_generate, "metadata.generateName", allow_empty=True)
    )
    if generate:
        _names(k8s_names.check_generate_name, generate)
    if name in (None, ""):
        if not generate:
            _names(k8s_names.check_pod_name, "")
        if uid in (None, ""):
            uid = synthetic_uid(namespace, generate)
        # SimpleNameGenerator (apiserver/pkg/storage/names/generate.go): at most 58
        # characters of the prefix, then 5 more (random upstream; from the uid here).
        suffix = _expect_str(uid, "metadata.uid").replace("-", "")[:5]
        name = generate[:MAX_GENERATED_PREFIX] + suffix
    name = _expect_str(name, "metadata.name")
    _names(k8s_names.check_pod_name, name)
    _names(k8s_names.check_namespace, namespace)
    uid = synthetic_uid(namespace, name) if uid in (None, "") else _expect_str(uid, "metadata.uid")
    _names(k8s_names.check_uid, uid)

    spec = _expect_mapping(obj.get("spec"), "spec", optional=False)
    raw_containers = _expect_list(spec.get("containers"), "spec.containers")
    if not raw_containers:
        raise PodManifestError("spec.containers", "Required value")

    def container(raw: Any, path: str, *, init: bool) -> Container:
        c = _expect_mapping(raw, path, optional=False)
        policy = None
        if init and c.get("restartPolicy") is not None:
            policy = _expect_str(c.get("restartPolicy"), f"{path}.restartPolicy")
        cname = c.get("name")
        cname = "" if cname is None else _expect_str(cname, f"{path}.name", allow_empty=True)
        _names(k8s_names.check_container_name, cname, f"{path}.name")
        built = Container(
            name=cname,
            resources=_requirements(c.get("resources"), f"{path}.resources", trim=True),
            restart_policy=policy,
        )
        return _default_container_requests(built)

    containers = tuple(
        container(c, f"spec.containers[{i}]", init=False) for i, c in enumerate(raw_containers)
    )
    inits = tuple(
        container(c, f"spec.initContainers[{i}]", init=True)
        for i, c in enumerate(_expect_list(spec.get("initContainers"), "spec.initContainers"))
    )
    paths = [(f"spec.initContainers[{i}]", c) for i, c in enumerate(inits)]
    paths += [(f"spec.containers[{i}]", c) for i, c in enumerate(containers)]
    _check_unique(paths)

    raw_res = spec.get("resources")
    resources = None if raw_res is None else _requirements(raw_res, "spec.resources", trim=True)

    status = _expect_mapping(obj.get("status"), "status")
    qos = status.get("qosClass")
    if qos in (None, ""):
        qos = None
    elif qos not in QOS_CLASSES:
        raise PodManifestError("status.qosClass", f"unknown QoS class {_type_name(qos)}")

    pod = Pod(uid, name, namespace, containers, inits, resources, qos)
    if pod_level_resources_enabled and resources is not None:
        pod = Pod(uid, name, namespace, containers, inits, _default_pod_level(pod), qos)
    for path, c in paths:
        _validate_requirements(c.resources, f"{path}.resources")
    if pod.resources is not None:
        _validate_requirements(pod.resources, "spec.resources")
    return pod

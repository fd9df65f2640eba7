"""Building pods: from conformance cases and from Kubernetes v1 Pod manifests (follows
pkg/apis/core/v1/defaults.go and the resource rules of pkg/apis/core/validation, v1.37).

* ``pod_from_conformance`` (conformance README §2.4, taken as given: no defaulting, like the
  pods upstream unit tests build);
* ``pod_from_manifest`` (a decoded v1 Pod: API-server defaulting of requests from limits,
  container and pod level, then a little validation: names as the API server checks them, see
  ``app.domain.k8s_names``), with ``PodManifestError`` naming the bad field.

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
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from app.domain import k8s_names
from app.domain.golang.strconv import go_quote
from app.domain.pod.model import (
    Container,
    Pod,
    PodManifestError,
    ResourceList,
    ResourceRequirements,
    is_hugepage_resource_name,
    is_overcommit_allowed,
    is_supported_pod_level_resource,
)
from app.domain.pod.qos import QOS_CLASSES
from app.domain.pod.requests import aggregate_container_limits, aggregate_container_requests
from app.domain.quantity import Quantity, QuantityError

MAX_GENERATED_PREFIX = 63 - 5  # maxNameLength - randomLength of the API server's generator


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


#: How a container is read from its decoded form: (raw, field path, is an init container).
ContainerReader = Callable[[Any, str, bool], Container]


def _containers(
    block: Mapping[str, Any], prefix: str, keys: tuple[str, str], read: ContainerReader
) -> tuple[tuple[Container, ...], tuple[Container, ...], list[tuple[str, Container]]]:
    """A pod's containers (at least one: "Required value") and init containers under ``keys``
    of ``block``, each read by ``read``; names unique across both lists, as validation checks
    them. Also each container with its field path, init containers first."""
    key, init_key = keys
    raw = _expect_list(block.get(key), prefix + key)
    if not raw:
        raise PodManifestError(prefix + key, "Required value")
    containers = tuple(read(c, f"{prefix}{key}[{i}]", False) for i, c in enumerate(raw))
    raw_inits = _expect_list(block.get(init_key), prefix + init_key)
    inits = tuple(read(c, f"{prefix}{init_key}[{i}]", True) for i, c in enumerate(raw_inits))
    paths = [(f"{prefix}{init_key}[{i}]", c) for i, c in enumerate(inits)]
    paths += [(f"{prefix}{key}[{i}]", c) for i, c in enumerate(containers)]
    _check_unique(paths)
    return containers, inits, paths


def _conformance_container(raw: Any, path: str, init: bool) -> Container:
    """``{name, requests, limits, restart_policy?}``, taken as given."""
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


def pod_from_conformance(d: Mapping[str, Any]) -> Pod:
    """A pod in the conformance form (README §2.4): ``{uid, resources|null, init_containers,
    containers}``, containers ``{name, requests, limits, restart_policy?}``. ``name`` defaults to
    the uid, ``namespace`` to ``"default"``. Taken as given (no defaulting)."""
    d = _expect_mapping(d, "", optional=False)
    uid = _expect_str(d.get("uid"), "uid")
    name = _expect_str(d.get("name", uid), "name")
    namespace = _expect_str(d.get("namespace", "default"), "namespace")
    keys = ("containers", "init_containers")
    containers, inits, _ = _containers(d, "", keys, _conformance_container)
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


def _check_type_meta(obj: Mapping[str, Any]) -> None:
    """``kind``/``apiVersion``, when given, must be ``Pod``/``v1``."""
    kind = obj.get("kind")
    if kind is not None and kind != "Pod":
        raise PodManifestError("kind", f"expected {go_quote('Pod')}, got {_type_name(kind)}")
    api_version = obj.get("apiVersion")
    if api_version is not None and api_version != "v1":
        raise PodManifestError(
            "apiVersion", f"expected {go_quote('v1')}, got {_type_name(api_version)}"
        )


def _object_meta(meta: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(namespace, name, uid)`` of a pod's metadata, checked as the API server checks them:
    the namespace defaults to ``default``, a missing name is generated from ``generateName``,
    a missing uid is ``synthetic_uid``."""
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
    return namespace, name, uid


def _manifest_container(raw: Any, path: str, init: bool) -> Container:
    """A v1 Container: its name checked, requests defaulted from limits; ``restartPolicy``
    kept for an init container only (``Always`` makes it a sidecar)."""
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


def _status_qos(obj: Mapping[str, Any]) -> str | None:
    """``status.qosClass``: one of the QoS classes, or ``None`` when not set."""
    qos = _expect_mapping(obj.get("status"), "status").get("qosClass")
    if qos in (None, ""):
        return None
    if qos not in QOS_CLASSES:
        raise PodManifestError("status.qosClass", f"unknown QoS class {_type_name(qos)}")
    return str(qos)


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
    _check_type_meta(obj)
    namespace, name, uid = _object_meta(_expect_mapping(obj.get("metadata"), "metadata"))
    spec = _expect_mapping(obj.get("spec"), "spec", optional=False)
    keys = ("containers", "initContainers")
    containers, inits, paths = _containers(spec, "spec.", keys, _manifest_container)
    raw_res = spec.get("resources")
    resources = None if raw_res is None else _requirements(raw_res, "spec.resources", trim=True)
    qos = _status_qos(obj)
    pod = Pod(uid, name, namespace, containers, inits, resources, qos)
    if pod_level_resources_enabled and resources is not None:
        pod = Pod(uid, name, namespace, containers, inits, _default_pod_level(pod), qos)
    for path, c in paths:
        _validate_requirements(c.resources, f"{path}.resources")
    if pod.resources is not None:
        _validate_requirements(pod.resources, "spec.resources")
    return pod

"""The pods kept beside a simulated node's state files (``pods.json``): normalised v1 Pod
manifests in admission order, with the machine's topology and the kubelet configuration, so
that a later run knows what it is looking at (the kubelet's own files hold pod UIDs and
container names only). Manifests are read back with ``app.domain.pod.manifest``, which follows
pkg/apis/core/v1/defaults.go (v1.37), so a written pod reads back equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.domain.node.model import Node
from app.domain.node.state_files import PODS_FILE_NAME, PODS_FORMAT, NodeStateError
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Container, Pod, PodManifestError
from app.domain.topology.record import topology_to_record

__all__ = ["pod_to_manifest", "pods_document", "pods_from_document"]


def _resources(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = {k: str(v) for k, v in requests.items()}
    if limits:
        out["limits"] = {k: str(v) for k, v in limits.items()}
    return out


def _container_manifest(c: Container, init: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name}
    if init and c.restart_policy is not None:
        out["restartPolicy"] = c.restart_policy
    res = _resources(c.resources.requests, c.resources.limits)
    if res:
        out["resources"] = res
    return out


def pod_to_manifest(pod: Pod) -> dict[str, Any]:
    """A v1 Pod manifest that ``pod_from_manifest`` reads back into an equal ``Pod``
    (requests and limits after API defaulting, canonical quantity text)."""
    spec: dict[str, Any] = {}
    if pod.resources is not None:
        spec["resources"] = _resources(pod.resources.requests, pod.resources.limits)
    if pod.init_containers:
        spec["initContainers"] = [_container_manifest(c, True) for c in pod.init_containers]
    spec["containers"] = [_container_manifest(c, False) for c in pod.containers]
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "spec": spec,
    }
    if pod.qos_class is not None:
        manifest["status"] = {"qosClass": pod.qos_class}
    return manifest


def pods_document(node: Node) -> dict[str, Any]:
    """The node's admitted pods in admission order, as stored in ``pods.json``."""
    return {
        "format": PODS_FORMAT,
        "node": node.name,
        "release": node.config.release,
        # The machine and the configuration, so that a later kubelet (``numascope restart``)
        # can start on these files; readers of older records ignore them.
        "topology": topology_to_record(node.topology),
        "kubeletConfig": node.config.to_dict(),
        "pods": [
            {"admittedAt": node.admitted_at.get(uid, 0.0), "manifest": pod_to_manifest(pod)}
            for uid, pod in node.pods.items()
        ],
    }


def pods_from_document(
    doc: Any, *, pod_level_resources_enabled: bool = True
) -> list[tuple[Pod, float]]:
    """Read ``pods_document`` output back; raises ``NodeStateError`` naming the bad entry."""
    if not isinstance(doc, Mapping):
        raise NodeStateError(f"{PODS_FILE_NAME}: expected a JSON object", "pods")
    if doc.get("format") != PODS_FORMAT:
        raise NodeStateError(
            f"{PODS_FILE_NAME}: format must be {PODS_FORMAT!r}, got {doc.get('format')!r}", "pods"
        )
    items = doc.get("pods")
    if not isinstance(items, list):
        raise NodeStateError(f"{PODS_FILE_NAME}: pods must be a list", "pods")
    out: list[tuple[Pod, float]] = []
    for i, item in enumerate(items):
        where = f"{PODS_FILE_NAME}: pods[{i}]"
        if not isinstance(item, Mapping):
            raise NodeStateError(f"{where}: expected an object", "pods")
        admitted_at = item.get("admittedAt", 0.0)
        if isinstance(admitted_at, bool) or not isinstance(admitted_at, int | float):
            raise NodeStateError(f"{where}.admittedAt: expected a number", "pods")
        manifest = item.get("manifest")
        if not isinstance(manifest, Mapping):
            raise NodeStateError(f"{where}.manifest: expected a Pod object", "pods")
        try:
            pod = pod_from_manifest(
                manifest, pod_level_resources_enabled=pod_level_resources_enabled
            )
        except PodManifestError as err:
            raise NodeStateError(f"{where}.manifest: {err}", "pods") from None
        out.append((pod, float(admitted_at)))
    return out

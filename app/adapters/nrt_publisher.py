"""Publish a ``NodeResourceTopology`` through the Kubernetes API: the cluster-scoped
``topology.node.k8s.io/v1alpha2`` ``noderesourcetopologies``, the resource the
noderesourcetopology-api CRD serves (k8stopologyawareschedwg/noderesourcetopology-api
``pkg/apis/topology/v1alpha2``) and node-feature-discovery's topology-updater writes. The
requests go through ``app.adapters.kube_api`` (httpx; in-cluster configuration or kubeconfig).

One publish: get the object; create it when it does not exist; leave it when it already says
the same; otherwise replace it carrying the ``resourceVersion`` just read (the API server's
optimistic concurrency). A 409 on the
replace (someone changed the object in between) or on the create (someone created it in
between) reads it again and retries, at most ``MAX_CONFLICTS`` times. Every write names the
field manager ``numascope`` and every call has a timeout, so a hung API server cannot stall the
loop. RBAC for exactly these verbs (get, create, update) is in ``deploy/rbac.yaml``.

Tests run the client against an HTTP server they control (``tests/fake_kube_api.py``; no API
server can run here).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from app.adapters.kube_api import (
    SERVICE_ACCOUNT_DIR,
    ApiError,
    KubeClient,
    KubeConfigError,
)
from app.adapters.kube_api import cluster_client as kube_client

log = logging.getLogger(__name__)

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha2"
PLURAL = "noderesourcetopologies"
KIND = "NodeResourceTopology"
COLLECTION = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
MAX_CONFLICTS = 5
FIELD_MANAGER = "numascope"


class PublishError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def cluster_client(
    environ: Mapping[str, str] | None = None,
    service_account: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> KubeClient:
    """The API client from the pod's service account, else ``$KUBECONFIG``
    (``PublishError`` when neither is usable)."""
    try:
        return kube_client(environ, service_account)
    except KubeConfigError as err:
        raise PublishError(str(err)) from None


def _failed(verb: str, name: str, exc: ApiError) -> PublishError:
    what = f"{verb} {PLURAL}.{GROUP}/{name}"
    if exc.status == 403:
        return PublishError(
            f"{what}: {exc} (the agent's service account needs get, create and "
            f"update on {PLURAL}.{GROUP}: deploy/rbac.yaml)"
        )
    if exc.status == 404 and verb == "create":
        return PublishError(
            f"{what}: {exc} (is the NodeResourceTopology CRD, "
            f"{GROUP}/{VERSION}, installed in the cluster?)"
        )
    return PublishError(f"{what}: {exc}")


#: What the publisher owns in the object; the rest (uid, managedFields…) is the server's.
CONTENT = ("topologyPolicies", "zones", "attributes")


def same_content(current: dict[str, Any], obj: dict[str, Any]) -> bool:
    """Whether the stored object already says what ``obj`` says (no write needed)."""
    have, want = current.get("metadata", {}), obj.get("metadata", {})
    labels = have.get("labels") or {}
    owners = want.get("ownerReferences")
    return (
        all(current.get(k) == obj.get(k) for k in CONTENT)
        and all(labels.get(k) == v for k, v in (want.get("labels") or {}).items())
        and (owners is None or have.get("ownerReferences") == owners)
    )


def pod_namespace(
    environ: Mapping[str, str] | None = None,
    service_account: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> str | None:
    """The agent's namespace: ``POD_NAMESPACE`` (downward API), else the service account's
    ``namespace`` file; ``None`` outside a cluster."""
    env = os.environ if environ is None else environ
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        return (Path(service_account) / "namespace").read_text().strip() or None
    except OSError:
        return None


class NRTPublisher:
    """Publishes NodeResourceTopology objects. With ``owner_namespace`` every object is owned
    by that Namespace (``metadata.ownerReferences``, as node-feature-discovery does), so
    deleting the installation's namespace garbage-collects them instead of leaving frozen
    numbers for the scheduler; the Namespace's uid is read once (RBAC: ``get`` on it)."""

    def __init__(self, client: KubeClient, owner_namespace: str | None = None) -> None:
        self.client = client
        self.owner_namespace = owner_namespace
        self._owner: dict[str, Any] | None = None

    def owner(self) -> dict[str, Any] | None:
        """The ownerReference to the Namespace, ``None`` without one or when it cannot be
        read (logged; the object is published without it and the read is tried again)."""
        if self.owner_namespace is None or self._owner is not None:
            return self._owner
        ns = self.owner_namespace
        try:
            found = self.client.request("GET", f"/api/v1/namespaces/{ns}")
        except ApiError as exc:
            log.warning("namespace %s not read (%s): publishing without an owner", ns, exc.status)
            return None
        except (httpx.HTTPError, OSError, ValueError) as exc:  # the publish will report them
            log.warning("namespace %s not read (%s): publishing without an owner", ns, exc)
            return None
        meta = found.get("metadata") if isinstance(found, dict) else None
        uid = meta.get("uid") if isinstance(meta, dict) else None
        if not uid:
            log.warning("namespace %s has no uid: publishing without an owner", ns)
            return None
        self._owner = {"apiVersion": "v1", "kind": "Namespace", "name": ns, "uid": uid}
        return self._owner

    def owned(self, obj: dict[str, Any]) -> dict[str, Any]:
        owner = self.owner()
        if owner is None:
            return obj
        body = copy.deepcopy(obj)
        body["metadata"]["ownerReferences"] = [owner]
        return body

    def _call(self, verb: str, name: str, method: str, path: str, body: Any = None) -> Any:
        """One request; ``ApiError`` passes, anything else becomes a ``PublishError``."""
        params = {"fieldManager": FIELD_MANAGER} if body is not None else None
        try:
            return self.client.request(method, path, body, params)
        except ApiError:
            raise
        except (httpx.HTTPError, OSError, ValueError) as exc:  # refused, TLS, timeouts, token file
            raise PublishError(f"{verb} {PLURAL}.{GROUP}/{name}: {exc}") from None

    def publish(self, obj: dict[str, Any]) -> str:
        """Create or update ``obj``; returns ``created``, ``updated`` or ``unchanged`` (the
        stored object already has this content: nothing written)."""
        obj = self.owned(obj)
        name = obj["metadata"]["name"]
        path = f"{COLLECTION}/{name}"
        for _ in range(MAX_CONFLICTS):
            try:
                current = self._call("get", name, "GET", path)
            except ApiError as exc:
                if exc.status != 404:
                    raise _failed("get", name, exc) from None
                try:
                    self._call("create", name, "POST", COLLECTION, obj)
                    return "created"
                except ApiError as exc2:
                    if exc2.status == 409:  # created by someone else meanwhile: update it
                        log.info("%s/%s was created meanwhile; updating it", PLURAL, name)
                        continue
                    raise _failed("create", name, exc2) from None
            meta = current.get("metadata", {}) if isinstance(current, dict) else {}
            if isinstance(current, dict) and same_content(current, obj):
                return "unchanged"
            body = copy.deepcopy(obj)
            body["metadata"]["resourceVersion"] = meta.get("resourceVersion")
            try:
                self._call("update", name, "PUT", path, body)
                return "updated"
            except ApiError as exc:
                if exc.status == 409:
                    log.info("%s/%s changed meanwhile; reading it again", PLURAL, name)
                    continue
                raise _failed("update", name, exc) from None
        raise PublishError(
            f"{PLURAL}.{GROUP}/{name}: still conflicting after {MAX_CONFLICTS} tries"
        )

"""Publish a ``NodeResourceTopology`` through the Kubernetes API with the official
``kubernetes`` client (``CustomObjectsApi`` on the cluster-scoped
``topology.node.k8s.io/v1alpha2`` ``noderesourcetopologies``, the resource the
noderesourcetopology-api CRD serves and node-feature-discovery's topology-updater writes).

One publish: get the object; create it when it does not exist; leave it when it already says
the same; otherwise replace it carrying the ``resourceVersion`` just read (the API server's
optimistic concurrency). A 409 on the
replace (someone changed the object in between) or on the create (someone created it in
between) reads it again and retries, at most ``MAX_CONFLICTS`` times. Every call names the
field manager ``numascope`` and has a timeout, so a hung API server cannot stall the loop.
RBAC for exactly these verbs (get, create, update) is in ``deploy/rbac.yaml``.

The client's configuration is the pod's service account (in-cluster), else the kubeconfig
named by ``KUBECONFIG`` (the kubectl convention, for running an agent outside the cluster).
Tests run the client's real classes against an HTTP server they control
(``tests/fake_kube_api.py``; no API server can run here).
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader

from app.services.nrt import GROUP, PLURAL, VERSION

log = logging.getLogger(__name__)
MAX_CONFLICTS = 5
FIELD_MANAGER = "numascope"
REQUEST_TIMEOUT = 10.0
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The generated client names no body type for custom objects; say JSON rather than rely on
# the API server's default.
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class PublishError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def cluster_client(
    environ: Mapping[str, str] | None = None,
    service_account: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> k8s.ApiClient:
    """An API client from the pod's service account (``KUBERNETES_SERVICE_HOST``/``_PORT``,
    the token and CA bundle in ``service_account``), else from ``$KUBECONFIG``
    (``PublishError`` when neither is there)."""
    env = os.environ if environ is None else environ
    configuration = k8s.Configuration()
    account = Path(service_account)
    try:
        InClusterConfigLoader(
            token_filename=str(account / "token"),
            cert_filename=str(account / "ca.crt"),
            environ=dict(env),
        ).load_and_set(configuration)
        return k8s.ApiClient(configuration)
    except k8s_config.ConfigException as exc:
        in_cluster = str(exc)
    path = env.get("KUBECONFIG", "")
    if not path:
        raise PublishError(
            f"no Kubernetes API configuration: not in a cluster ({in_cluster}) and KUBECONFIG "
            "is not set"
        )
    try:
        k8s_config.load_kube_config(
            config_file=path, client_configuration=configuration, persist_config=False
        )
    except (k8s_config.ConfigException, OSError, ValueError) as exc:
        raise PublishError(f"KUBECONFIG {path}: {exc}") from None
    return k8s.ApiClient(configuration)


def _api_message(exc: ApiException) -> str:
    """The API server's Status message, else the HTTP reason."""
    try:
        doc = json.loads(exc.body) if exc.body else {}
    except (TypeError, ValueError):
        doc = {}
    message = doc.get("message") if isinstance(doc, dict) else None
    return f"{exc.status} {message or exc.reason}"


def _failed(verb: str, name: str, exc: ApiException) -> PublishError:
    what = f"{verb} {PLURAL}.{GROUP}/{name}"
    if exc.status == 403:
        return PublishError(
            f"{what}: {_api_message(exc)} (the agent's service account needs get, create and "
            f"update on {PLURAL}.{GROUP}: deploy/rbac.yaml)"
        )
    if exc.status == 404 and verb == "create":
        return PublishError(
            f"{what}: {_api_message(exc)} (is the NodeResourceTopology CRD, "
            f"{GROUP}/{VERSION}, installed in the cluster?)"
        )
    return PublishError(f"{what}: {_api_message(exc)}")


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

    def __init__(self, api_client: k8s.ApiClient, owner_namespace: str | None = None) -> None:
        self.api = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)
        self.owner_namespace = owner_namespace
        self._owner: dict[str, Any] | None = None

    def owner(self) -> dict[str, Any] | None:
        """The ownerReference to the Namespace, ``None`` without one or when it cannot be
        read (logged; the object is published without it and the read is tried again)."""
        if self.owner_namespace is None or self._owner is not None:
            return self._owner
        ns = self.owner_namespace
        try:
            found = self.core.read_namespace(
                ns, _request_timeout=REQUEST_TIMEOUT, _headers={"Accept": "application/json"}
            )
        except ApiException as exc:
            log.warning("namespace %s not read (%s): publishing without an owner", ns, exc.status)
            return None
        except Exception as exc:  # connection errors: the publish itself will report them
            log.warning("namespace %s not read (%s): publishing without an owner", ns, exc)
            return None
        uid = found.metadata.uid if found.metadata is not None else None
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

    def _call(self, verb: str, name: str, fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            return fn(
                GROUP,
                VERSION,
                PLURAL,
                *args,
                _request_timeout=REQUEST_TIMEOUT,
                _headers=dict(JSON_HEADERS),
                **kw,
            )
        except ApiException:
            raise
        except Exception as exc:  # connection refused, TLS, timeouts (urllib3's errors)
            raise PublishError(f"{verb} {PLURAL}.{GROUP}/{name}: {exc}") from None

    def publish(self, obj: dict[str, Any]) -> str:
        """Create or update ``obj``; returns ``created``, ``updated`` or ``unchanged`` (the
        stored object already has this content: nothing written)."""
        obj = self.owned(obj)
        name = obj["metadata"]["name"]
        for _ in range(MAX_CONFLICTS):
            try:
                current = self._call("get", name, self.api.get_cluster_custom_object, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise _failed("get", name, exc) from None
                try:
                    self._call(
                        "create",
                        name,
                        self.api.create_cluster_custom_object,
                        obj,
                        field_manager=FIELD_MANAGER,
                    )
                    return "created"
                except ApiException as exc2:
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
                self._call(
                    "update",
                    name,
                    self.api.replace_cluster_custom_object,
                    name,
                    body,
                    field_manager=FIELD_MANAGER,
                )
                return "updated"
            except ApiException as exc:
                if exc.status == 409:
                    log.info("%s/%s changed meanwhile; reading it again", PLURAL, name)
                    continue
                raise _failed("update", name, exc) from None
        raise PublishError(
            f"{PLURAL}.{GROUP}/{name}: still conflicting after {MAX_CONFLICTS} tries"
        )

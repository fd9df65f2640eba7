"""Publish a ``NodeResourceTopology`` through the Kubernetes API with the official
``kubernetes`` client (``CustomObjectsApi``, in-cluster configuration from the pod's service
account): get the object; create it when it does not exist; otherwise replace it carrying the
``resourceVersion`` read, and on a 409 conflict (someone changed it in between) read it again
and retry, a few times. RBAC for it is in ``deploy/rbac.yaml``.

Tests run the client's real classes against an HTTP server they control (no API server can run
here); ``api_client`` is injectable for that.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from app.services.nrt import GROUP, PLURAL, VERSION

log = logging.getLogger(__name__)
MAX_CONFLICTS = 5


class PublishError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def in_cluster_client() -> k8s.ApiClient:
    """An API client from the pod's service account (``PublishError`` outside a cluster)."""
    try:
        k8s_config.load_incluster_config()
    except k8s_config.ConfigException as exc:
        raise PublishError(f"no in-cluster Kubernetes configuration: {exc}") from None
    return k8s.ApiClient()


class NRTPublisher:
    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api = k8s.CustomObjectsApi(api_client)

    def publish(self, obj: dict[str, Any]) -> str:
        """Create or update ``obj``; returns ``created`` or ``updated``."""
        name = obj["metadata"]["name"]
        for _ in range(MAX_CONFLICTS):
            try:
                current = self.api.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise PublishError(f"get {PLURAL}/{name}: {exc.status} {exc.reason}") from None
                try:
                    self.api.create_cluster_custom_object(GROUP, VERSION, PLURAL, obj)
                    return "created"
                except ApiException as exc2:
                    if exc2.status == 409:  # created by someone else meanwhile: update it
                        continue
                    raise PublishError(
                        f"create {PLURAL}/{name}: {exc2.status} {exc2.reason}"
                    ) from None
            body = copy.deepcopy(obj)
            meta = current.get("metadata", {}) if isinstance(current, dict) else {}
            body["metadata"]["resourceVersion"] = meta.get("resourceVersion")
            try:
                self.api.replace_cluster_custom_object(GROUP, VERSION, PLURAL, name, body)
                return "updated"
            except ApiException as exc:
                if exc.status == 409:
                    log.info("%s/%s changed meanwhile; reading it again", PLURAL, name)
                    continue
                raise PublishError(f"replace {PLURAL}/{name}: {exc.status} {exc.reason}") from None
        raise PublishError(f"{PLURAL}/{name}: still conflicting after {MAX_CONFLICTS} tries")

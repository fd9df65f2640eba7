"""What the node pages render besides their view: the sample texts of the create and admit
forms, the nodes page with its create form, and the node page's context. The nodes routers,
the forms and the restart panel all render these, so they live here rather than in one of them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.batch_verdicts import batch_context
from app.services.node_views import NodeIndexView, NodeView
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.service import NodeService
from app.services.pod_find import pods_page
from app.services.undo import last_undoable
from app.web.rendering import render

SAMPLE_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0"
kubeReserved:
  memory: 1Gi
systemReserved:
  memory: 1Gi
reservedMemory:
  - numaNode: 0
    limits:
      memory: 2148Mi
featureGates:
  PodLevelResources: true
  PodLevelResourceManagers: true
"""

SAMPLE_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: my-pod
  namespace: default
spec:
  resources:
    requests: {cpu: "4", memory: 4Gi}
    limits: {cpu: "4", memory: 4Gi}
  initContainers:
  - name: sidecar
    image: sidecar:1
    restartPolicy: Always
  containers:
  - name: app
    image: app:1
    resources:
      requests: {cpu: "2", memory: 2Gi}
      limits: {cpu: "2", memory: 2Gi}
"""


def render_nodes_page(
    request: Request,
    view: NodeIndexView,
    *,
    form: dict[str, Any] | None = None,
    error: NodeServiceError | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """The nodes page with its create form (the sample configuration, or what was sent)."""
    context = {
        "form": form or {"release": DEFAULT_RELEASE, "kubelet_config": SAMPLE_CONFIG},
        "form_error": error,
    }
    return render(
        request,
        "pages/nodes.html",
        view,
        fragment="fragments/_nodes_table.html",
        status_code=status_code,
        context=context,
    )


def node_page_context(service: NodeService, view: NodeView) -> dict[str, Any]:
    """What the node page needs beside its view (the restart panel's route renders it too)."""
    return {
        "form_text": SAMPLE_POD,
        "pods_page": pods_page(view.pods, view.summary),
        "undo": last_undoable(service, view.summary.name),
        **batch_context(
            service, view.summary.name, view.last_batch[0].batch if view.last_batch else None
        ),
    }

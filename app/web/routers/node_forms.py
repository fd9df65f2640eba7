"""The forms of the node pages: create a node (nodes page), admit or dry-run pods and remove
a pod (node page), delete a node; their sample texts and what the pages render them with
(``render_nodes_page``, ``node_page_context``). The pages themselves are
``app.web.routers.nodes``, which mounts these routes on its router.

Forms work without JavaScript: POST, then 303 to the page (an admission redirects with
``?batch=<id>`` so the page shows that submission's verdicts). With htmx the admission form
swaps itself and the CPU map, pools and pods table follow out of band (``hx-swap-oob``), so an
admitted pod's CPUs appear at once. Bad input comes back inline in the form (422 without
htmx; 200 for htmx, which swaps only 2xx answers by default). Destructive forms act only when
confirmed (``confirm=yes`` from the confirmation page of ``app.web.routers.workflow``).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.batch_verdicts import batch_context
from app.services.node_views import NodeIndexView, NodeView, node_url, pod_url
from app.services.nodes import (
    AdmissionBatch,
    NodeInputError,
    NodeService,
    NodeServiceError,
    PodConflictError,
    ReadOnlyNodeError,
)
from app.services.pod_find import pods_page
from app.services.undo import last_undoable
from app.web.deps import Namespace, NodeName, NodeServiceDep, PodName
from app.web.offload import budgeted
from app.web.rendering import render, see_other, wants_fragment

forms = APIRouter(tags=["nodes"])

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


# -- the nodes page -------------------------------------------------------------------------


@forms.post("/nodes", name="create_node_form", include_in_schema=False)
def create_node_form(
    request: Request,
    service: NodeServiceDep,
    name: Annotated[str, Form()] = "",
    topology: Annotated[str, Form()] = "",
    kubelet_config: Annotated[str, Form()] = "",
    release: Annotated[str, Form()] = DEFAULT_RELEASE,
) -> Response:
    form = {
        "name": name,
        "topology": topology,
        "kubelet_config": kubelet_config,
        "release": release,
    }
    try:
        service.create(name.strip(), topology, kubelet_config, release)
    except NodeServiceError as err:
        status = 422 if isinstance(err, NodeInputError) else 409
        return render_nodes_page(request, service.index(), form=form, error=err, status_code=status)
    return see_other(request, node_url(name.strip()))


# -- one node ---------------------------------------------------------------------------------


def _check_changeable(service: NodeService, node: str, action: str) -> None:
    """Unknown nodes are 404 and observed ones 409 before any confirmation step."""
    observer = service.observer
    if observer is not None and observer.name == node:
        raise ReadOnlyNodeError(node, action)
    service.definition(node)


# Destructive forms act only when confirmed; an unconfirmed POST is sent to the confirmation
# page and changes nothing.
Confirm = Annotated[str, Form()]


@forms.post("/nodes/{node}/delete", name="delete_node_form", include_in_schema=False)
def delete_node_form(
    request: Request, service: NodeServiceDep, node: NodeName, confirm: Confirm = ""
) -> Response:
    if confirm != "yes":
        _check_changeable(service, node, "delete it")
        return see_other(request, f"{node_url(node)}/delete")
    service.delete(node)
    return see_other(request, "/nodes")


def _admit_answer(
    request: Request,
    service: NodeServiceDep,
    node: str,
    *,
    form_text: str,
    batch: AdmissionBatch | None = None,
    error: NodeServiceError | None = None,
    removed: str | None = None,
) -> HTMLResponse:
    """The admission form with its result; for htmx also the map, pools and pods (OOB)."""
    view = service.node_view(node, batch=batch.batch if batch else None)
    htmx = wants_fragment(request)
    context = {
        "form_text": form_text,
        "form_error": error,
        "removed": removed,
        "oob": htmx,
        "pods_page": pods_page(view.pods, view.summary),
        "dry_run": batch.dry_run if batch else False,
        **batch_context(service, node, batch.batch if batch else None),
        "undo": last_undoable(service, node),
    }
    if htmx:
        return render(request, "fragments/_admit_form.html", view, context=context)
    return render(
        request,
        "pages/node.html",
        view,
        status_code=422 if isinstance(error, NodeInputError) else 409,
        context=context,
    )


@forms.post("/nodes/{node}/admissions", name="admit_form", include_in_schema=False)
def admit_form(
    request: Request,
    service: NodeServiceDep,
    node: NodeName,
    manifest: Annotated[str, Form()] = "",
    action: Annotated[str, Form()] = "admit",
) -> Response:
    dry_run = action == "dry-run"
    try:
        with budgeted(request, "the dry run" if dry_run else "the admission"):
            batch = service.admit(node, manifest, dry_run=dry_run)
    except (NodeInputError, PodConflictError) as err:
        return _admit_answer(request, service, node, form_text=manifest, error=err)
    if wants_fragment(request):
        return _admit_answer(request, service, node, form_text=manifest, batch=batch)
    return see_other(request, f"{node_url(node)}?batch={quote(batch.batch)}#admit")


@forms.post(
    "/nodes/{node}/pods/{namespace}/{name}/remove", name="remove_pod_form", include_in_schema=False
)
def remove_pod_form(
    request: Request,
    service: NodeServiceDep,
    node: NodeName,
    namespace: Namespace,
    name: PodName,
    confirm: Confirm = "",
) -> Response:
    if confirm != "yes":
        _check_changeable(service, node, "remove its pods")
        return see_other(request, f"{pod_url(node, namespace, name)}/remove")
    service.remove_pod(node, namespace, name)
    if wants_fragment(request):
        return _admit_answer(
            request, service, node, form_text=SAMPLE_POD, removed=f"{namespace}/{name}"
        )
    return see_other(request, f"{node_url(node)}#pods")


__all__ = ["SAMPLE_CONFIG", "SAMPLE_POD", "forms", "node_page_context", "render_nodes_page"]

"""Simulated node pages: the nodes list, a node's CPU map, memory, pools, pods and admission
form, a pod's budget breakdown — each with its JSON twin (same path + ``.json``).

One loader per page (``NodeService.index``/``node_view``/``pod_view``), three faces (page,
htmx fragment, JSON). Forms work without JavaScript: POST, then 303 to the page (an admission
redirects with ``?batch=<id>`` so the page shows that submission's verdicts). With htmx the
admission form swaps itself and the CPU map, pools and pods table follow out of band
(``hx-swap-oob``), so an admitted pod's CPUs appear at once. Bad input comes back inline in
the form (422 without htmx; 200 for htmx, which swaps only 2xx answers by default).

``/`` shows the nodes page when there are simulated nodes (the one node's page when there is
exactly one) and the topology index otherwise; ``/topologies`` always lists topologies.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Path, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.node_views import NodeIndexView, NodeView, PodView, node_url, pod_url
from app.services.nodes import (
    AdmissionBatch,
    NodeInputError,
    NodeService,
    NodeServiceError,
    PodConflictError,
    ReadOnlyNodeError,
    UnknownPodError,
)
from app.services.placements import placements
from app.services.pod_find import pods_page
from app.services.rejections import latest_rejection
from app.services.undo import last_removal
from app.services.watch import WatchState, watch_state
from app.web.conditional import encoded_response
from app.web.deps import TopologyIndexViewDep
from app.web.offload import budgeted
from app.web.rendering import render, wants_fragment

pages = APIRouter(tags=["nodes"])

NodeName = Annotated[str, Path(description="Name of a simulated node")]
Namespace = Annotated[str, Path(description="Pod namespace")]
PodName = Annotated[str, Path(description="Pod name")]

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


async def get_node_service(request: Request) -> NodeService:
    # async: a sync dependency would cost every request a hop to the thread pool.
    service: NodeService = request.app.state.nodes
    return service


NodeServiceDep = Annotated[NodeService, Depends(get_node_service)]


def node_index_view(service: NodeServiceDep) -> NodeIndexView:
    return service.index()


def node_view(
    service: NodeServiceDep,
    node: NodeName,
    batch: Annotated[
        str | None, Query(description="Show this submission's verdicts (after a form POST)")
    ] = None,
) -> NodeView:
    return service.node_view(node, batch=batch)


def node_watch_state(service: NodeServiceDep, node: NodeName) -> WatchState:
    # A dependency of the node page listed before its view: read first, the token can only be
    # older than what the page shows, so a change in between costs one extra refresh, never
    # a missed one.
    return watch_state(service, node)


NodeIndexViewDep = Annotated[NodeIndexView, Depends(node_index_view)]
WatchStateDep = Annotated[WatchState, Depends(node_watch_state)]
NodeViewDep = Annotated[NodeView, Depends(node_view)]


def _see_other(request: Request, path: str) -> RedirectResponse:
    root = request.scope.get("root_path", "").rstrip("/")
    return RedirectResponse(root + path, status_code=303)


# -- lists ----------------------------------------------------------------------------------


@pages.get("/", name="home", include_in_schema=False)
def home(request: Request, service: NodeServiceDep, topologies: TopologyIndexViewDep) -> Response:
    names = service.names()
    if len(names) == 1 and not wants_fragment(request):
        return _see_other(request, node_url(names[0]))
    if names:
        return _nodes_page(request, service.index())
    return render(
        request, "pages/index.html", topologies, fragment="fragments/_topology_table.html"
    )


def _nodes_page(
    request: Request,
    view: NodeIndexView,
    *,
    form: dict[str, Any] | None = None,
    error: NodeServiceError | None = None,
    status_code: int = 200,
) -> HTMLResponse:
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


@pages.get("/nodes", name="nodes", include_in_schema=False)
def nodes_page(request: Request, view: NodeIndexViewDep) -> HTMLResponse:
    return _nodes_page(request, view)


# JSON twins: bytes encoded once per node version, strong ETag, 304 (app.web.conditional).
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not modified (If-None-Match)"}
}


@pages.get(
    "/nodes.json",
    name="nodes_json",
    summary="All simulated nodes (JSON twin)",
    response_model=NodeIndexView,
    responses=NOT_MODIFIED,
)
def nodes_json(request: Request, service: NodeServiceDep) -> Response:
    return encoded_response(request, service.index_json())


@pages.post("/nodes", name="create_node_form", include_in_schema=False)
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
        return _nodes_page(request, service.index(), form=form, error=err, status_code=status)
    return _see_other(request, node_url(name.strip()))


# -- one node ---------------------------------------------------------------------------------


# Declared before /nodes/{node}, which would otherwise match "x.json".
@pages.get(
    "/nodes/{node}.json",
    name="node_json",
    summary="One simulated node (JSON twin)",
    response_model=NodeView,
    responses=NOT_MODIFIED,
)
def node_json(
    request: Request,
    service: NodeServiceDep,
    node: NodeName,
    batch: Annotated[
        str | None, Query(description="Show this submission's verdicts (after a form POST)")
    ] = None,
) -> Response:
    return encoded_response(request, service.node_view_json(node, batch=batch))


NOT_FOUND_NODE: dict[int | str, dict[str, Any]] = {404: {"description": "No such node"}}


def node_page_context(service: NodeService, view: NodeView) -> dict[str, Any]:
    """What the node page needs beside its view (the restart panel's route renders it too)."""
    return {
        "form_text": SAMPLE_POD,
        "pods_page": pods_page(view.pods, view.summary),
        "undo": last_removal(service, view.summary.name),
        "placements": placements(service, view.summary.name, view.last_batch),
    }


@pages.get("/nodes/{node}", name="node", include_in_schema=False)
def node_page(
    request: Request, service: NodeServiceDep, watch: WatchStateDep, view: NodeViewDep
) -> HTMLResponse:
    return render(
        request,
        "pages/node.html",
        view,
        fragment="fragments/_cpu_map.html",
        context={
            **node_page_context(service, view),
            "watch": watch,
            "watch_interval": request.app.state.settings.watch_interval,
        },
    )


def _check_changeable(service: NodeService, node: str, action: str) -> None:
    """Unknown nodes are 404 and observed ones 409 before any confirmation step."""
    observer = service.observer
    if observer is not None and observer.name == node:
        raise ReadOnlyNodeError(node, action)
    service.definition(node)


# Destructive forms act only when confirmed (``confirm=yes`` from the confirmation page of
# app.web.routers.workflow); an unconfirmed POST is sent to that page and changes nothing.
Confirm = Annotated[str, Form()]


@pages.post("/nodes/{node}/delete", name="delete_node_form", include_in_schema=False)
def delete_node_form(
    request: Request, service: NodeServiceDep, node: NodeName, confirm: Confirm = ""
) -> Response:
    if confirm != "yes":
        _check_changeable(service, node, "delete it")
        return _see_other(request, f"{node_url(node)}/delete")
    service.delete(node)
    return _see_other(request, "/nodes")


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
        "placements": placements(service, node, view.last_batch),
        "undo": last_removal(service, node),
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


@pages.post("/nodes/{node}/admissions", name="admit_form", include_in_schema=False)
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
    return _see_other(request, f"{node_url(node)}?batch={quote(batch.batch)}#admit")


@pages.post(
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
        return _see_other(request, f"{pod_url(node, namespace, name)}/remove")
    service.remove_pod(node, namespace, name)
    if wants_fragment(request):
        return _admit_answer(
            request, service, node, form_text=SAMPLE_POD, removed=f"{namespace}/{name}"
        )
    return _see_other(request, f"{node_url(node)}#pods")


# -- one pod ------------------------------------------------------------------------------------


@pages.get(
    "/nodes/{node}/pods/{namespace}/{name}.json",
    name="pod_json",
    summary="A pod's budget breakdown on a simulated node (JSON twin)",
    response_model=PodView,
    responses=NOT_MODIFIED,
)
def pod_json(
    request: Request, service: NodeServiceDep, node: NodeName, namespace: Namespace, name: PodName
) -> Response:
    return encoded_response(request, service.pod_view_json(node, namespace, name))


@pages.get("/nodes/{node}/pods/{namespace}/{name}", name="pod", include_in_schema=False)
def pod_page(
    request: Request, service: NodeServiceDep, node: NodeName, namespace: Namespace, name: PodName
) -> Response:
    watch = watch_state(service, node)  # before the view: see node_watch_state
    try:
        view = service.pod_view(node, namespace, name)
    except UnknownPodError:
        # A pod the kubelet rejected has no page of its own: its last attempt explains why.
        entry = latest_rejection(service, node, namespace, name)
        if entry is None:
            raise
        return _see_other(request, f"{node_url(node)}/admissions/{entry}")
    return render(
        request,
        "pages/pod.html",
        view,
        fragment="fragments/_cpu_map.html",
        context={"watch": watch, "watch_interval": request.app.state.settings.watch_interval},
    )


__all__ = ["Namespace", "NodeName", "NodeServiceDep", "PodName", "get_node_service", "pages"]

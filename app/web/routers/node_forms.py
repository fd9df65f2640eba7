"""The forms of the node pages: create a node (nodes page), admit or dry-run pods and remove
a pod (node page), delete a node. Their sample texts and the page helpers they render with
live in ``app.web.node_pages``; the pages themselves are ``app.web.routers.nodes``.

Forms work without JavaScript: POST, then 303 to the page (an admission redirects with
``?batch=<id>`` so the page shows that submission's verdicts). With htmx the admission form
swaps itself and the CPU map, pools and pods table follow out of band (``hx-swap-oob``), so an
admitted pod's CPUs appear at once. Bad input comes back inline in the form (422 without
htmx; 200 for htmx, which swaps only 2xx answers by default). Destructive forms act only when
confirmed (``confirm=yes`` from the confirmation page of ``app.web.routers.workflow``).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.batch_verdicts import batch_context
from app.services.node_views import node_url, pod_url
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.errors import (
    NodeInputError,
    NodeServiceError,
    PodConflictError,
)
from app.services.nodes.inputs import AdmissionBatch
from app.services.pod_find import pods_page
from app.services.undo import last_undoable
from app.web.deps import CatalogDep, Namespace, NodeName, PodName
from app.web.node_pages import SAMPLE_POD, render_nodes_page
from app.web.offload import budgeted
from app.web.rendering import render, see_other, wants_fragment

forms = APIRouter(tags=["nodes"])

# -- the nodes page -------------------------------------------------------------------------


@forms.post("/nodes", name="create_node_form", include_in_schema=False)
def create_node_form(
    request: Request,
    catalog: CatalogDep,
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
        catalog.service.create(name.strip(), topology, kubelet_config, release)
    except NodeServiceError as err:
        status = 422 if isinstance(err, NodeInputError) else 409
        return render_nodes_page(request, catalog.index(), form=form, error=err, status_code=status)
    return see_other(request, node_url(name.strip()))


# -- one node ---------------------------------------------------------------------------------


def _check_changeable(catalog: NodeCatalog, node: str, action: str) -> None:
    """Unknown nodes are 404 and read-only ones 409 before any confirmation step."""
    catalog.writable(node, action)
    catalog.service.registry.definition(node)


# Destructive forms act only when confirmed; an unconfirmed POST is sent to the confirmation
# page and changes nothing.
Confirm = Annotated[str, Form()]


@forms.post("/nodes/{node}/delete", name="delete_node_form", include_in_schema=False)
def delete_node_form(
    request: Request, catalog: CatalogDep, node: NodeName, confirm: Confirm = ""
) -> Response:
    if confirm != "yes":
        _check_changeable(catalog, node, "delete it")
        return see_other(request, f"{node_url(node)}/delete")
    catalog.writable(node, "delete it").delete()
    return see_other(request, "/nodes")


def _admit_answer(
    request: Request,
    catalog: NodeCatalog,
    node: str,
    *,
    form_text: str,
    batch: AdmissionBatch | None = None,
    error: NodeServiceError | None = None,
    removed: str | None = None,
) -> HTMLResponse:
    """The admission form with its result; for htmx also the map, pools and pods (OOB)."""
    service = catalog.service
    view = catalog.get(node).node_view(batch=batch.batch if batch else None)
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
    catalog: CatalogDep,
    node: NodeName,
    manifest: Annotated[str, Form()] = "",
    action: Annotated[str, Form()] = "admit",
) -> Response:
    dry_run = action == "dry-run"
    try:
        with budgeted(request, "the dry run" if dry_run else "the admission"):
            if dry_run:
                batch = catalog.get(node).dry_run(manifest)
            else:
                batch = catalog.writable(node, "admit pods on it").admit(manifest)
    except (NodeInputError, PodConflictError) as err:
        return _admit_answer(request, catalog, node, form_text=manifest, error=err)
    if wants_fragment(request):
        return _admit_answer(request, catalog, node, form_text=manifest, batch=batch)
    return see_other(request, f"{node_url(node)}?batch={quote(batch.batch)}#admit")


@forms.post(
    "/nodes/{node}/pods/{namespace}/{name}/remove", name="remove_pod_form", include_in_schema=False
)
def remove_pod_form(
    request: Request,
    catalog: CatalogDep,
    node: NodeName,
    namespace: Namespace,
    name: PodName,
    confirm: Confirm = "",
) -> Response:
    if confirm != "yes":
        _check_changeable(catalog, node, "remove its pods")
        return see_other(request, f"{pod_url(node, namespace, name)}/remove")
    catalog.writable(node, "remove its pods").remove_pod(namespace, name)
    if wants_fragment(request):
        return _admit_answer(
            request, catalog, node, form_text=SAMPLE_POD, removed=f"{namespace}/{name}"
        )
    return see_other(request, f"{node_url(node)}#pods")


__all__ = ["forms"]

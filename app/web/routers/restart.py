"""Kubelet restart rehearsals on the dashboard: ``POST /api/v1/nodes/{node}/restart`` and the
node page's panel (``POST /nodes/{node}/restart``), both answered by the node's source
(``rehearse``, or ``restart`` where the node can be changed: ``app.services.nodes.source``).

The API answers the rehearsal as JSON (the document of ``numascope restart --json`` plus
``node``, ``dryRun``, ``applied``, ``observed`` and ``note``), 200 whatever the kubelet did:
a kubelet that does not start or a rejected pod is the answer, not an HTTP error. A bad
release or gate is 422 naming the parameter; applying on an observed node is 409.

The panel's form works without JavaScript (the node page comes back with the rehearsal in
it); with htmx only the panel is swapped, and after an applied restart the page's map, pools
and pods table follow out of band. "Restart the kubelet" acts only when confirmed
(``confirm=yes``); an unconfirmed apply is sent to the confirmation page of
``app.web.routers.kubelet_restarts`` and changes nothing.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query
from starlette.requests import Request
from starlette.responses import Response

from app.contracts.restart import RestartReport
from app.domain.kubelet_config import RELEASES
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.errors import NodeInputError
from app.services.nodes.restart import Rehearsal
from app.services.pod_find import pods_page
from app.web.deps import CatalogDep, NodeName, NodeServiceDep
from app.web.inputs import NOT_FOUND_NODE, gate_choice
from app.web.node_pages import node_page_context
from app.web.offload import budgeted
from app.web.rendering import render, see_other, wants_fragment

api = APIRouter(prefix="/api/v1", tags=["nodes"])
pages = APIRouter(tags=["nodes"])


@api.post(
    "/nodes/{node}/restart",
    name="api_restart",
    summary="Rehearse (or apply) a kubelet restart under another release",
    responses={
        200: {"description": "What the restarted kubelet does", "model": RestartReport},
        **NOT_FOUND_NODE,
        409: {"description": "Applying a restart on an observed node (dry runs only)"},
        422: {"description": "Unknown release, or a configuration the release refuses"},
    },
)
def api_restart(
    request: Request,
    node: NodeName,
    catalog: CatalogDep,
    release: Annotated[str, Query(description=f"Kubelet release: {', '.join(RELEASES)}")],
    dry_run: Annotated[
        bool, Query(alias="dryRun", description="Rehearse only: the node keeps its release")
    ] = False,
    gate: Annotated[
        bool | None,
        Query(
            alias="podLevelResourceManagers",
            description="The PodLevelResourceManagers gate of the restarted kubelet (default: "
            "the node's configuration)",
        ),
    ] = None,
) -> dict[str, Any]:
    # A sync route: already in a worker thread; the re-admissions' hint searches get the budget.
    with budgeted(request, "the restart"):
        return _restart(catalog, node, release, dry_run, gate).to_dict()


def _restart(
    catalog: NodeCatalog, node: str, release: str, dry_run: bool, gate: bool | None
) -> Rehearsal:
    if dry_run:
        return catalog.get(node).rehearse(release, gate)
    writable = catalog.writable(node, "restart its kubelet (rehearse with dryRun=true)")
    return writable.restart(release, gate)


def _to_confirmation(request: Request, node: str, release: str, gate: str) -> Response:
    """An apply not yet confirmed goes to the confirmation page (htmx: the whole page)."""
    query = urlencode({"release": release, "gate": gate})
    target = str(request.app.url_path_for("confirm_restart", node=node)) + "?" + query
    if wants_fragment(request):
        root = request.scope.get("root_path", "").rstrip("/")
        return Response(status_code=204, headers={"HX-Redirect": root + target})
    return see_other(request, target)


@pages.post("/nodes/{node}/restart", name="restart_form", include_in_schema=False)
def restart_form(
    request: Request,
    service: NodeServiceDep,
    catalog: CatalogDep,
    node: NodeName,
    release: Annotated[str, Form()] = "",
    gate: Annotated[str, Form()] = "keep",
    action: Annotated[str, Form()] = "rehearse",
    confirm: Annotated[str, Form()] = "",
) -> Response:
    if action == "apply" and confirm != "yes":
        return _to_confirmation(request, node, release, gate)
    rehearsal: Rehearsal | None = None
    error: NodeInputError | None = None
    try:
        with budgeted(request, "the restart"):
            rehearsal = _restart(catalog, node, release, action != "apply", gate_choice(gate))
    except NodeInputError as err:
        error = err
    view = catalog.get(node).node_view()
    applied = rehearsal is not None and rehearsal.applied
    context = {
        "rehearsal": rehearsal,
        "restart_error": error,
        "restart_release": release,
        "restart_gate": gate,
        "oob": applied and wants_fragment(request),  # a whole page has its own map
        # the pods table follows out of band after an apply, a page at a time
        "pods_page": pods_page(view.pods, view.summary),
    }
    if wants_fragment(request):
        return render(request, "fragments/_restart_panel.html", view, context=context)
    context.update(node_page_context(service, view))
    return render(
        request,
        "pages/node.html",
        view,
        status_code=422 if error is not None else 200,
        context=context,
    )

"""Around an applied kubelet restart (issue 21 point 4): its confirmation and its undo.

* ``GET /nodes/{node}/restart?release=R&gate=on|off|keep`` — the confirmation page of "Restart
  the kubelet", like Remove and Delete: what a kubelet of release R would do on the node's
  files (rehearsed, nothing kept), and a form that applies it (``confirm=yes``). The panel's
  form (``app.web.routers.restart``) sends an unconfirmed apply here.
* ``POST /nodes/{node}/undo-restart`` (and ``/api/v1/nodes/{node}/undo-restart``) — start the
  kubelet that ran before the node's last restart again, where the files allow it
  (``app.services.undo.undo_last_restart``): 303 to the node page, or the restart as JSON.

The restart itself, and its log row in the node's history, are ``NodeService.restart``'s.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.domain import releases
from app.domain.restart import RestartResult
from app.services import undo
from app.services.node_views import node_url
from app.services.nodes.errors import NodeInputError
from app.web.deps import CatalogDep, NodeName, NodeServiceDep
from app.web.inputs import gate_choice
from app.web.offload import budgeted
from app.web.rendering import render, see_other

api = APIRouter(prefix="/api/v1", tags=["nodes"])
pages = APIRouter(tags=["nodes"])

CONFIRM = "yes"


@pages.get("/nodes/{node}/restart", name="confirm_restart", include_in_schema=False)
def confirm_restart(
    request: Request,
    catalog: CatalogDep,
    node: NodeName,
    release: Annotated[str, Query()] = "",
    gate: Annotated[str, Query()] = "keep",
) -> HTMLResponse:
    source = catalog.writable(node, "restart its kubelet (rehearse it instead)")
    problem = releases.complaint(release)
    if problem is not None:
        raise NodeInputError(f"release: {problem}", "release")
    with budgeted(request, "the restart"):
        rehearsal = source.rehearse(release, gate_choice(gate))
    r = rehearsal.result
    consequences = _consequences(r, release, source.summary().release)
    context = {
        "title": f"Restart the kubelet of {node}?",
        "question": f"Restart the kubelet of node {node} as {release}?",
        "consequences": consequences,
        "action": str(request.app.url_path_for("restart_form", node=node)),
        "button": f"Restart the kubelet as {release}",
        "back": node_url(node) + "#restart",
        "confirm_value": CONFIRM,
        "fields": (("release", release), ("gate", gate or "keep"), ("action", "apply")),
        "can_act": r.started,
    }
    return render(request, "pages/confirm.html", None, context=context)


def _consequences(r: RestartResult, release: str, now: str) -> str:
    """What the confirmation page says a restart as ``release`` would do, from its rehearsal."""
    if not r.started:
        return (
            f"A {release} kubelet does not start on this node's files ({r.error}); "
            "the restart would change nothing. Rehearse it in the restart panel for the "
            "recovery steps."
        )
    counts = ", ".join(f"{n} {k}" for k, n in r.counts().items() if n) or "no pods"
    return (
        f"The node runs kubelet {now} now. A {release} kubelet starts on its files "
        f"(rehearsed: {counts}); its state files are rewritten in {release}'s formats"
        + ("; pods it rejects are removed" if r.counts().get("rejected") else "")
        + (f"; its reader loses {len(r.lost)} field(s)" if r.lost else "")
        + ". The restart is recorded in the node's history, and can be undone from the node "
        "page while nothing else is logged there (where the files allow it)."
    )


@pages.post("/nodes/{node}/undo-restart", name="undo_restart_form", include_in_schema=False)
def undo_restart_form(request: Request, service: NodeServiceDep, node: NodeName) -> Response:
    with budgeted(request, "the restart"):
        undo.undo_last_restart(service, node)
    return see_other(request, node_url(node) + "#restart")


@api.post(
    "/nodes/{node}/undo-restart",
    name="api_undo_restart",
    summary="Take back the node's last kubelet restart (start the previous release again)",
    responses={
        409: {
            "description": "The newest log entry is not a restart, or the previous release "
            "would not start or keep every pod on the node's files"
        }
    },
)
def api_undo_restart(request: Request, service: NodeServiceDep, node: NodeName) -> dict[str, Any]:
    with budgeted(request, "the restart"):
        return undo.undo_last_restart(service, node).to_dict()

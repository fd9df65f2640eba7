"""The SRE's workflow around a node: explain, go back in time, take away, undo, reset, words.

Pages (each with its JSON twin, same path + ``.json``, from one loader):

* ``/nodes/{node}/rejections/{entry}`` — a rejected attempt explained (``services.rejections``),
  ``entry`` its number in the node's log; the old ``/admissions/{global id}`` redirects;
* ``/nodes/{node}/history`` — the node's timeline; ``/nodes/{node}/history/{entry}`` — its CPU
  map right after an entry (0: as created); ``/nodes/{node}/diff?from=A&to=B`` — what moved;
* ``/nodes/{node}/state-files.zip``, ``/pods.yaml``, ``/pools.csv`` — downloads;
* ``/nodes/{node}/delete`` and ``/nodes/{node}/pods/{ns}/{name}/remove`` (GET) — the
  confirmation step of the destructive forms: their POSTs act only with ``confirm=yes``, so one
  click never changes anything, with or without JavaScript;
* ``POST /nodes/{node}/undo`` — take back the last removal; ``/demo/restore`` (GET confirm,
  POST act) — put the demo nodes back; API twins under ``/api/v1``;
* ``/glossary`` — the words of the legends; ``/favicon.ico`` — the SVG icon.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Form, Path, Query
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from app.services import downloads, undo
from app.services.history import rejections
from app.services.history import views as history_views
from app.services.history.rejections import RejectionView
from app.services.history.views import DiffView, HistoryPointView, HistoryView
from app.services.node_views import node_url, pod_url
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.service import NodeService
from app.web.deps import CatalogDep, Namespace, NodeName, NodeServiceDep, NodeSourceDep, PodName
from app.web.rendering import STATIC_DIR, render, see_other

pages = APIRouter(tags=["workflow"])
api = APIRouter(prefix="/api/v1", tags=["workflow"])

Entry = Annotated[
    int,
    Path(description="Entry number in the node's own log, 1, 2, 3… (0: the node as created)", ge=0),
]
CONFIRM = "yes"


# -- words and icon ------------------------------------------------------------------------


@pages.get("/glossary", name="glossary", include_in_schema=False)
def glossary(request: Request) -> HTMLResponse:
    return render(request, "pages/glossary.html", None)


@pages.get("/favicon.ico", name="favicon", include_in_schema=False)
def favicon() -> FileResponse:
    return FileResponse(
        STATIC_DIR / "favicon.svg",
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )


# -- explain -------------------------------------------------------------------------------


def _entry_page(
    path: str,
    name: str,
    summary: str,
    template: str,
    load: Callable[[NodeService, str, int], BaseModel],
    model: type[BaseModel],
) -> None:
    """A page about one entry of a node's log, ``/nodes/{node}/<path>/{entry}``, and its JSON
    twin (same path + ``.json``, declared first), both from ``load``."""

    def twin(service: NodeServiceDep, node: NodeName, entry: Entry) -> BaseModel:
        return load(service, node, entry)

    def page(
        request: Request, service: NodeServiceDep, node: NodeName, entry: Entry
    ) -> HTMLResponse:
        return render(request, template, load(service, node, entry))

    base = f"/nodes/{{node}}/{path}/{{entry}}"
    pages.get(f"{base}.json", name=f"{name}_json", summary=summary, response_model=model)(twin)
    pages.get(base, name=name, include_in_schema=False)(page)


_entry_page(
    "rejections",
    "rejection",
    "A rejected admission attempt explained (JSON twin)",
    "pages/rejection.html",
    rejections.explain_entry,
    RejectionView,
)


RowId = Annotated[int, Path(description="The log row's global id (an old link)", ge=0)]


@pages.get("/nodes/{node}/admissions/{row_id}", include_in_schema=False)
@pages.get("/nodes/{node}/admissions/{row_id}.json", include_in_schema=False)  # matched first
def old_rejection_address(
    request: Request, service: NodeServiceDep, node: NodeName, row_id: RowId
) -> RedirectResponse:
    """A rejection page's address before it was the node's own number: a permanent redirect."""
    entry = rejections.entry_of_id(service, node, row_id)
    root = request.scope.get("root_path", "").rstrip("/")
    suffix = ".json" if request.url.path.endswith(".json") else ""
    return RedirectResponse(f"{root}{node_url(node)}/rejections/{entry}{suffix}", status_code=308)


# -- history -------------------------------------------------------------------------------


@pages.get("/nodes/{node}/history.json", name="history_json", summary="A node's timeline")
def history_json(service: NodeServiceDep, node: NodeName) -> HistoryView:
    return history_views.timeline(service, node)


@pages.get("/nodes/{node}/history", name="history", include_in_schema=False)
def history_page(request: Request, service: NodeServiceDep, node: NodeName) -> HTMLResponse:
    return render(request, "pages/history.html", history_views.timeline(service, node))


_entry_page(
    "history",
    "history_point",
    "A node's CPU map right after a log entry (replayed)",
    "pages/history_point.html",
    history_views.map_at,
    HistoryPointView,
)


FromEntry = Annotated[
    int, Query(alias="from", ge=0, description="Earlier entry number of the node (0: as created)")
]
ToEntry = Annotated[int, Query(alias="to", ge=0, description="Later entry number of the node")]


@pages.get("/nodes/{node}/diff.json", name="diff_json", summary="What changed between entries")
def diff_json(service: NodeServiceDep, node: NodeName, a: FromEntry, b: ToEntry) -> DiffView:
    return history_views.diff(service, node, a, b)


@pages.get("/nodes/{node}/diff", name="diff", include_in_schema=False)
def diff_page(
    request: Request,
    service: NodeServiceDep,
    node: NodeName,
    a: Annotated[int | None, Query(alias="from", ge=0)] = None,
    b: Annotated[int | None, Query(alias="to", ge=0)] = None,
) -> HTMLResponse:
    # A bare /diff (a link, a typed URL) compares the node as created with its latest change.
    a, b = history_views.default_range(service, node, a, b)
    return render(request, "pages/diff.html", history_views.diff(service, node, a, b))


# -- downloads -----------------------------------------------------------------------------


# Each download: the name after ``/nodes/{node}/`` (and after ``<node>-`` in the saved file's
# name), its route's name, its media type, what it holds, and the service that builds it.
_DOWNLOADS: tuple[tuple[str, str, str, str, Callable[[NodeCatalog, str], bytes | str]], ...] = (
    (
        "state-files.zip",
        "download_state_files",
        "application/zip",
        "The node's state directory as its kubelet would have written it (zip)",
        downloads.state_files_zip,
    ),
    (
        "pods.yaml",
        "download_pods",
        "application/yaml; charset=utf-8",
        "The node's pods as v1 Pod manifests (multi-document YAML)",
        downloads.pods_yaml,
    ),
    (
        "pools.csv",
        "download_pools",
        "text/csv; charset=utf-8",
        "The node's CPU pools per NUMA node (CSV)",
        downloads.pools_csv,
    ),
)


def _download(
    file: str, media_type: str, build: Callable[[NodeCatalog, str], bytes | str]
) -> Callable[[NodeCatalog, str], Response]:
    def download(catalog: CatalogDep, node: NodeName) -> Response:
        return Response(
            build(catalog, node),
            media_type=media_type,
            headers={"Content-Disposition": f'attachment; filename="{node}-{file}"'},
        )

    return download


for _file, _name, _media_type, _summary, _build in _DOWNLOADS:
    pages.get(f"/nodes/{{node}}/{_file}", name=_name, summary=_summary, response_class=Response)(
        _download(_file, _media_type, _build)
    )


# -- confirmations -------------------------------------------------------------------------


def _confirm(
    request: Request,
    *,
    title: str,
    question: str,
    consequences: str,
    action: str,
    button: str,
    back: str,
) -> HTMLResponse:
    context = {
        "title": title,
        "question": question,
        "consequences": consequences,
        "action": action,
        "button": button,
        "back": back,
        "confirm_value": CONFIRM,
    }
    return render(request, "pages/confirm.html", None, context=context)


@pages.get("/nodes/{node}/delete", name="confirm_delete_node", include_in_schema=False)
def confirm_delete_node(request: Request, source: NodeSourceDep, node: NodeName) -> HTMLResponse:
    summary = source.summary()
    return _confirm(
        request,
        title=f"Delete node {node}?",
        question=f"Delete the simulated node {node}?",
        consequences=(
            f"Its definition, its admission log and its state files go, with its "
            f"{summary.pods} pod{'' if summary.pods == 1 else 's'}. This cannot be undone"
            + ("; a demo node comes back with “Restore the demo nodes”." if summary.demo else ".")
        ),
        action=str(request.app.url_path_for("delete_node_form", node=node)),
        button=f"Delete node {node}",
        back=node_url(node),
    )


@pages.get(
    "/nodes/{node}/pods/{namespace}/{name}/remove",
    name="confirm_remove_pod",
    include_in_schema=False,
)
def confirm_remove_pod(
    request: Request, source: NodeSourceDep, node: NodeName, namespace: Namespace, name: PodName
) -> HTMLResponse:
    source.pod_view(namespace, name)  # 404 for a pod that is not there
    return _confirm(
        request,
        title=f"Remove pod {namespace}/{name}?",
        question=f"Remove pod {namespace}/{name} from node {node}?",
        consequences=(
            "All its containers go and their CPUs and memory return to the node. You can undo "
            "this from the node page until something else is logged there."
        ),
        action=str(
            request.app.url_path_for("remove_pod_form", node=node, namespace=namespace, name=name)
        ),
        button=f"Remove pod {namespace}/{name}",
        back=pod_url(node, namespace, name),
    )


# -- undo and reset ------------------------------------------------------------------------


@pages.post("/nodes/{node}/undo", name="undo_form", include_in_schema=False)
def undo_form(request: Request, service: NodeServiceDep, node: NodeName) -> Response:
    batch = undo.undo_last_removal(service, node)
    return see_other(request, f"{node_url(node)}?batch={batch.batch}#admit")


@api.post(
    "/nodes/{node}/undo",
    name="api_undo",
    summary="Take back the node's last pod removal (admit that pod again)",
    responses={409: {"description": "The newest log entry is not a removal"}},
)
def api_undo(service: NodeServiceDep, node: NodeName) -> dict[str, Any]:
    return undo.undo_last_removal(service, node).to_dict()


@pages.get("/demo/restore", name="confirm_restore_demo", include_in_schema=False)
def confirm_restore_demo(request: Request) -> HTMLResponse:
    return _confirm(
        request,
        title="Restore the demo nodes?",
        question="Restore the demo nodes as shipped?",
        consequences=(
            "Every demo node is deleted if it exists, whatever was admitted or removed there, "
            "and created again with its demo pods. Your own nodes are not touched."
        ),
        action=str(request.app.url_path_for("restore_demo_form")),
        button="Restore the demo nodes",
        back="/nodes",
    )


@pages.post("/demo/restore", name="restore_demo_form", include_in_schema=False)
def restore_demo_form(
    request: Request, service: NodeServiceDep, confirm: Annotated[str, Form()] = ""
) -> Response:
    if confirm != CONFIRM:
        return see_other(request, "/demo/restore")
    undo.restore_demo_nodes(service)
    return see_other(request, "/nodes")


@api.post(
    "/demo/restore",
    name="api_restore_demo",
    summary="Delete and re-create the demo nodes with their pods",
)
def api_restore_demo(service: NodeServiceDep) -> dict[str, Any]:
    return {"restored": undo.restore_demo_nodes(service)}


__all__ = ["CONFIRM", "api", "pages"]

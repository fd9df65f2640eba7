"""A node's pods a page at a time, and Find (``/nodes/{node}/pods``, issue 10 pt 2 and issue 11).

One loader (``pods_page`` over the node's cached pod rows), three faces: the page (the pods
table alone, the whole list one click away for clients without JavaScript), its htmx fragment
(``fragments/_pods_list.html``, which the node page's Find box and paging links swap) and the
JSON twin. A malformed query is a 422 naming ``q`` (inline in the page; for htmx a 200 with
the message in the fragment, since htmx swaps only 2xx answers by default).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from app.services.pod_find import MAX_QUERY_CHARS, PodQueryError, PodsPage, pods_page
from app.web.deps import NodeName, NodeSourceDep
from app.web.rendering import render, wants_fragment

pages = APIRouter(tags=["nodes"])

Q = Annotated[
    str,
    Query(
        max_length=MAX_QUERY_CHARS,
        description="Words that must all match: part of namespace/name, a QoS class, a CPU "
        "id, or name:…, ns:…, qos:…, numa:<ids>, cpu:<cpuset>",
    ),
]
PageNo = Annotated[int, Query(ge=1, le=100_000, description="Page (from 1)")]
ShowAll = Annotated[bool, Query(alias="all", description="Every matching pod on one page")]


def _load(
    source: NodeSourceDep, q: str, page: int, show_all: bool
) -> tuple[PodsPage, PodQueryError | None]:
    views = source.views()
    summary = source.summary()
    try:
        return pods_page(views.pods, summary, query=q, page=page, show_all=show_all), None
    except PodQueryError as err:
        found = pods_page(views.pods, summary, page=page, show_all=show_all)
        return found.model_copy(update={"typed": q.strip(), "error": err.message}), err


@pages.get(
    "/nodes/{node}/pods.json",
    name="node_pods_json",
    summary="A node's pods that match a query, a page at a time (JSON twin)",
    response_model=PodsPage,
    responses={422: {"description": "The query cannot be read (field q)"}},
)
def node_pods_json(
    source: NodeSourceDep, node: NodeName, q: Q = "", page: PageNo = 1, show_all: ShowAll = False
) -> Response:
    found, err = _load(source, q, page, show_all)
    if err is not None:
        body = {"error": {"reason": "Invalid", "message": err.message, "field": err.field}}
        return JSONResponse(body, status_code=422)
    return JSONResponse(found.model_dump(mode="json"))


@pages.get("/nodes/{node}/pods", name="node_pods", include_in_schema=False)
def node_pods(
    request: Request,
    source: NodeSourceDep,
    node: NodeName,
    q: Q = "",
    page: PageNo = 1,
    show_all: ShowAll = False,
) -> HTMLResponse:
    found, err = _load(source, q, page, show_all)
    status = 422 if err is not None and not wants_fragment(request) else 200
    return render(
        request,
        "pages/node_pods.html",
        found,
        fragment="fragments/_pods_list.html",
        status_code=status,
        context={"pods_page": found, "pp": found, "node_name": node},
    )

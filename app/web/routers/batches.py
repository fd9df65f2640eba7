"""The verdicts of one submission on a node, a page at a time (issue 21 point 5):
``/nodes/{node}/batches/{batch}`` (htmx gets the fragment the node page's admission form shows,
so its pager swaps in place) and ``/nodes/{node}/batches/{batch}.json``. Answered by
``app.services.batch_verdicts``; an unknown node is 404, a bad page or page size 422.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse

from app.services.batch_verdicts import MAX_PAGE_SIZE, PAGE_SIZE, BatchVerdicts, batch_verdicts
from app.services.placements import placements
from app.web.deps import NodeName, NodeServiceDep
from app.web.rendering import render

pages = APIRouter(tags=["nodes"])

Batch = Annotated[str, Path(max_length=36, description="the submission's batch id")]
Page = Annotated[int, Query(ge=1, le=1_000_000, description="1-based page")]
PageSize = Annotated[
    int, Query(alias="pageSize", ge=1, le=MAX_PAGE_SIZE, description="verdicts a page")
]


def _load(
    service: NodeServiceDep,
    node: NodeName,
    batch: Batch,
    page: Page = 1,
    page_size: PageSize = PAGE_SIZE,
) -> BatchVerdicts:
    """The page of verdicts the request asks for: the loader of the page and its JSON twin."""
    service.registry.definition(
        node
    )  # 404 for an unknown node (and 409-free: observed nodes log none)
    return batch_verdicts(service, node, batch, page, page_size)


BatchVerdictsDep = Annotated[BatchVerdicts, Depends(_load)]


@pages.get(
    "/nodes/{node}/batches/{batch}.json",
    name="batch_json",
    summary="One submission's verdicts: totals by reason, then a page of them",
)
def batch_json(verdicts: BatchVerdictsDep) -> BatchVerdicts:
    return verdicts


@pages.get("/nodes/{node}/batches/{batch}", name="batch", include_in_schema=False)
def batch_page(
    request: Request, service: NodeServiceDep, node: NodeName, verdicts: BatchVerdictsDep
) -> HTMLResponse:
    context = {
        "batch_verdicts": verdicts,
        "placements": placements(service, node, verdicts.entries),
        "node_name": node,
    }
    return render(
        request,
        "pages/batch.html",
        verdicts,
        fragment="fragments/_batch_verdicts.html",
        context=context,
    )

"""``/search`` (and ``/search.json``): the one search box of the dashboard, answered by
``app.services.search``; static/js/global-search.js opens it with ``/`` on every page. A bad
``cpu:`` word is 422 naming ``q``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse

from app.services.search import SearchView, search
from app.web.deps import CatalogDep
from app.web.rendering import render

pages = APIRouter(tags=["search"])

Q = Annotated[str, Query(max_length=1000, description="words, or cpu:<id>")]


@pages.get("/search.json", name="search_json", summary="Nodes, pods, a CPU's owner, pages")
def search_json(request: Request, catalog: CatalogDep, q: Q = "") -> SearchView:
    return search(catalog, q, hub=request.app.state.hub is not None)


@pages.get("/search", name="search", include_in_schema=False)
def search_page(request: Request, catalog: CatalogDep, q: Q = "") -> HTMLResponse:
    view = search(catalog, q, hub=request.app.state.hub is not None)
    return render(request, "pages/search.html", view)

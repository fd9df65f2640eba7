"""Topology pages, their JSON twins and /api/v1/topologies: one loader, three faces."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse

from app.services.topologies import TopologyIndexView, TopologyView
from app.web.deps import TopologyIndexViewDep, TopologyViewDep
from app.web.rendering import render

pages = APIRouter(tags=["topologies"])
api = APIRouter(prefix="/api/v1", tags=["topologies"])


# The JSON twins and the API answer the same view: one function each, under both paths.


@pages.get("/", name="index", include_in_schema=False)
@pages.get("/topologies", name="topologies", include_in_schema=False)
def topologies_page(request: Request, view: TopologyIndexViewDep) -> HTMLResponse:
    return render(request, "pages/index.html", view, fragment="fragments/_topology_table.html")


@pages.get("/topologies.json", name="topologies_json", summary="All topologies (JSON twin)")
@api.get("/topologies", name="api_topologies", summary="The host and every preset topology")
def topologies_json(view: TopologyIndexViewDep) -> TopologyIndexView:
    return view


# Declared before /topologies/{name}, which would otherwise match "x.json".
@pages.get("/topologies/{name}.json", name="topology_json", summary="One topology (JSON twin)")
@api.get(
    "/topologies/{name}",
    name="api_topology",
    summary="One topology: 'host' (discovered from sysfs) or a preset",
    responses={404: {"description": "No topology has this name"}},
)
def topology_json(view: TopologyViewDep) -> TopologyView:
    return view


@pages.get("/topologies/{name}", name="topology", include_in_schema=False)
def topology_page(request: Request, view: TopologyViewDep) -> HTMLResponse:
    return render(request, "pages/topology.html", view, fragment="fragments/_topology_map.html")

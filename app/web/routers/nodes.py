"""Simulated node pages: the nodes list, a node's CPU map, memory, pools, pods and admission
form, a pod's budget breakdown — each with its JSON twin (same path + ``.json``).

One loader per page (the catalog's ``index``, the node's ``node_view``/``pod_view``: any node
of ``app.services.nodes.catalog``, simulated, observed or of the hub's fleet), three faces (page,
htmx fragment, JSON). The forms of these pages (create, admit, remove, delete) are
``app.web.routers.node_forms``, mounted on this router.

``/`` shows the nodes page when there are simulated nodes (the one node's page when there is
exactly one) and the topology index otherwise; ``/topologies`` always lists topologies.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.services.history.rejections import latest_rejection
from app.services.node_views import NodeIndexView, NodeView, PodView, node_url
from app.services.nodes.errors import UnknownPodError
from app.services.watch import WatchState, watch_state
from app.web.conditional import NOT_MODIFIED, encoded_response
from app.web.deps import (
    CatalogDep,
    Namespace,
    NodeName,
    NodeServiceDep,
    NodeSourceDep,
    PodName,
    TopologyIndexViewDep,
)
from app.web.node_pages import node_page_context, render_nodes_page
from app.web.rendering import render, see_other, wants_fragment

pages = APIRouter(tags=["nodes"])


def node_index_view(catalog: CatalogDep) -> NodeIndexView:
    return catalog.index()


def node_view(
    source: NodeSourceDep,
    batch: Annotated[
        str | None, Query(description="Show this submission's verdicts (after a form POST)")
    ] = None,
) -> NodeView:
    return source.node_view(batch=batch)


def node_watch_state(source: NodeSourceDep) -> WatchState:
    # A dependency of the node page listed before its view: read first, the token can only be
    # older than what the page shows, so a change in between costs one extra refresh, never
    # a missed one.
    return watch_state(source)


NodeIndexViewDep = Annotated[NodeIndexView, Depends(node_index_view)]
WatchStateDep = Annotated[WatchState, Depends(node_watch_state)]
NodeViewDep = Annotated[NodeView, Depends(node_view)]


# -- lists ----------------------------------------------------------------------------------


@pages.get("/", name="home", include_in_schema=False)
def home(request: Request, catalog: CatalogDep, topologies: TopologyIndexViewDep) -> Response:
    names = catalog.names()
    if len(names) == 1 and not wants_fragment(request):
        return see_other(request, node_url(names[0]))
    if names:
        return render_nodes_page(request, catalog.index())
    return render(
        request, "pages/index.html", topologies, fragment="fragments/_topology_table.html"
    )


@pages.get("/nodes", name="nodes", include_in_schema=False)
def nodes_page(request: Request, view: NodeIndexViewDep) -> HTMLResponse:
    return render_nodes_page(request, view)


# JSON twins: bytes encoded once per node version, strong ETag, 304 (app.web.conditional).
@pages.get(
    "/nodes.json",
    name="nodes_json",
    summary="All simulated nodes (JSON twin)",
    response_model=NodeIndexView,
    responses=NOT_MODIFIED,
)
def nodes_json(request: Request, catalog: CatalogDep) -> Response:
    return encoded_response(request, catalog.index_json())


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
    source: NodeSourceDep,
    node: NodeName,
    batch: Annotated[
        str | None, Query(description="Show this submission's verdicts (after a form POST)")
    ] = None,
) -> Response:
    return encoded_response(request, source.node_view_json(batch=batch))


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


# -- one pod ------------------------------------------------------------------------------------


@pages.get(
    "/nodes/{node}/pods/{namespace}/{name}.json",
    name="pod_json",
    summary="A pod's budget breakdown on a simulated node (JSON twin)",
    response_model=PodView,
    responses=NOT_MODIFIED,
)
def pod_json(
    request: Request, source: NodeSourceDep, node: NodeName, namespace: Namespace, name: PodName
) -> Response:
    return encoded_response(request, source.pod_view_json(namespace, name))


@pages.get("/nodes/{node}/pods/{namespace}/{name}", name="pod", include_in_schema=False)
def pod_page(
    request: Request,
    service: NodeServiceDep,
    source: NodeSourceDep,
    node: NodeName,
    namespace: Namespace,
    name: PodName,
) -> Response:
    watch = watch_state(source)  # before the view: see node_watch_state
    try:
        view = source.pod_view(namespace, name)
    except UnknownPodError:
        # A pod the kubelet rejected has no page of its own: its last attempt explains why.
        entry = latest_rejection(service, node, namespace, name)
        if entry is None:
            raise
        return see_other(request, f"{node_url(node)}/rejections/{entry}")
    return render(
        request,
        "pages/pod.html",
        view,
        fragment="fragments/_cpu_map.html",
        context={"watch": watch, "watch_interval": request.app.state.settings.watch_interval},
    )


__all__ = ["pages"]

"""FastAPI dependencies: the app's settings, services, the views routes return, and the path
parameters the node routes share (``NodeName``, ``Namespace``, ``PodName``). A route about one
node takes ``NodeSourceDep``: the node of the ``node`` path parameter, whatever its kind, from
the catalog (``app.services.nodes.catalog``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Path
from starlette.requests import Request

from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.source import NodeSource
from app.services.topologies import TopologyIndexView, TopologyService, TopologyView
from app.settings import Settings

if TYPE_CHECKING:
    # Only named: the routes that take it import it, a node agent never (issue 20 pt 7).
    from app.services.nodes.service import NodeService


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_topology_service(request: Request) -> TopologyService:
    service: TopologyService = request.app.state.topologies
    return service


async def get_node_service(request: Request) -> NodeService:
    # async: a sync dependency would cost every request a hop to the thread pool.
    service: NodeService = request.app.state.nodes
    return service


async def get_catalog(request: Request) -> NodeCatalog:
    catalog: NodeCatalog = request.app.state.catalog
    return catalog


SettingsDep = Annotated[Settings, Depends(get_settings)]
TopologyServiceDep = Annotated[TopologyService, Depends(get_topology_service)]
NodeServiceDep = Annotated["NodeService", Depends(get_node_service)]
CatalogDep = Annotated[NodeCatalog, Depends(get_catalog)]

NodeName = Annotated[str, Path(description="Name of a simulated node")]


async def get_node_source(catalog: CatalogDep, node: NodeName) -> NodeSource:
    return catalog.get(node)


NodeSourceDep = Annotated[NodeSource, Depends(get_node_source)]
Namespace = Annotated[str, Path(description="Pod namespace")]
PodName = Annotated[str, Path(description="Pod name")]


def topology_view(
    service: TopologyServiceDep,
    name: Annotated[str, Path(description="'host' or a preset name")],
) -> TopologyView:
    return service.load(name)


def topology_index_view(service: TopologyServiceDep) -> TopologyIndexView:
    return service.index()


TopologyViewDep = Annotated[TopologyView, Depends(topology_view)]
TopologyIndexViewDep = Annotated[TopologyIndexView, Depends(topology_index_view)]

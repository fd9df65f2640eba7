"""The agent contract (every ``numascope serve``): compact node summaries a hub polls with
strong ETags, a node's upgrade readiness, and the node as a ``NodeResourceTopology``.

``GET /api/v1/summary`` (every node) and ``GET /api/v1/nodes/{node}/summary`` answer the
cached bytes of ``app.services.fleet.agent_summary`` (the contract ``app.contracts.summary``) with an
``ETag``; ``If-None-Match`` with that tag gives a 304 without a body. ``GET /api/v1/summary/
watch`` streams the summaries' changes (``SummaryFeed``: newline-delimited
``SummaryWatchEventV1``, a Kubernetes-style watch with versions, bookmarks and resume), which
is how a hub follows this agent; one feed per process, started by its first watcher. ``GET /api/v1/nodes/{node}/upgrade`` is the checkpoint inspector's
verdict for a kubelet of ``release`` starting on the node's state files
(``app.services.upgrade``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app import __version__
from app.contracts.summary import (
    AgentInfo,
    NodeSummaryV1,
    ResourceVersion,
    SummaryDocumentV1,
    SummaryWatchEventV1,
)
from app.domain.kubelet_config import RELEASES
from app.services.fleet.agent_summary import (
    SummaryCache,
    SummaryFeed,
    build_summary,
    encode,
)
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.source import NodeSource
from app.services.observe.observer import ObservedNodeUnavailableError
from app.web.conditional import model_responses, tagged_response
from app.web.deps import CatalogDep, NodeName, NodeSourceDep, SettingsDep
from app.web.inputs import GateQuery, ReleaseQuery, check_release, parse_gate

api = APIRouter(prefix="/api/v1", tags=["agent"])

JSON_OBJECT: dict[str, Any] = {
    "description": "The document (or 304 Not Modified for a matching If-None-Match)",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


def _summary_of(source: NodeSource) -> NodeSummaryV1:
    summary = source.summary()
    try:
        views = source.views()
    except ObservedNodeUnavailableError:
        views = None
    return build_summary(summary, views)


def _cache(request: Request) -> SummaryCache:
    cache: SummaryCache | None = getattr(request.app.state, "summaries", None)
    if cache is None:
        cache = request.app.state.summaries = SummaryCache()
    return cache


def cached_json(request: Request, doc: Any) -> Response:
    """``doc`` as JSON with a strong ETag; 304 when the client has it already."""
    encoded = encode(doc)
    return tagged_response(request, encoded.body, encoded.etag)


@api.get(
    "/summary",
    name="api_summary",
    summary="Compact summaries of every node (the agent contract; ETag / If-None-Match)",
    responses=model_responses(SummaryDocumentV1, "numascope.summary/v1", tagged=True),
)
def api_summary(request: Request, catalog: CatalogDep) -> Response:
    settings = request.app.state.settings
    agent = AgentInfo(version=__version__, observe=bool(settings.observe), releases=list(RELEASES))
    doc = _cache(request).document(catalog.names(), lambda n: _summary_of(catalog.get(n)), agent)
    return cached_json(request, doc)


@api.get(
    "/nodes/{node}/summary",
    name="api_node_summary",
    summary="The compact summary of one node (ETag / If-None-Match)",
    responses=model_responses(
        NodeSummaryV1, "One node of numascope.summary/v1", (404, ""), tagged=True
    ),
)
def api_node_summary(request: Request, node: NodeName, source: NodeSourceDep) -> Response:
    return cached_json(request, _cache(request).versioned(_summary_of(source)))


def _changes(catalog: NodeCatalog, cache: SummaryCache) -> SummaryFeed:
    """A feed whose reads rebuild only the summaries of nodes whose change token moved."""
    held: dict[str, tuple[str, NodeSummaryV1]] = {}

    def refresh() -> list[NodeSummaryV1]:
        out = []
        names = catalog.names()
        for name in names:
            try:
                source = catalog.get(name)
            except NodeServiceError:  # deleted meanwhile
                continue
            try:
                token = source.watch_token()[1]
            except NodeServiceError:  # an observed node that cannot be observed: rebuild
                token = ""
            seen = held.get(name)
            if token and seen is not None and seen[0] == token:
                out.append(seen[1])
                continue
            try:
                summary = cache.versioned(_summary_of(source))
            except NodeServiceError:  # deleted meanwhile
                continue
            held[name] = (token, summary)
            out.append(summary)
        for gone in set(held) - set(names):
            del held[gone]
        return out

    return SummaryFeed(refresh)


def _feed(request: Request, catalog: NodeCatalog) -> SummaryFeed:
    feed: SummaryFeed | None = getattr(request.app.state, "summary_feed", None)
    if feed is None:
        feed = request.app.state.summary_feed = _changes(catalog, _cache(request))
    return feed


@api.get(
    "/summary/watch",
    name="api_summary_watch",
    summary="The summaries' changes as a stream (watch semantics: resourceVersion, bookmarks)",
    responses={
        200: {
            "description": "Newline-delimited SummaryWatchEventV1 events",
            "content": {
                "application/x-ndjson": {"schema": SummaryWatchEventV1.model_json_schema()}
            },
        },
        422: {"description": "A malformed resourceVersion or bookmarkSeconds"},
    },
)
async def api_summary_watch(
    request: Request,
    catalog: CatalogDep,
    resource_version: Annotated[
        ResourceVersion,
        Query(
            alias="resourceVersion",
            description="Stream the changes after this version (empty: every node as ADDED, "
            "then a BOOKMARK with initialEventsEnd)",
        ),
    ] = "",
    bookmark_seconds: Annotated[
        float,
        Query(alias="bookmarkSeconds", ge=0.1, le=300.0, description="Seconds between BOOKMARKs"),
    ] = 10.0,
) -> StreamingResponse:
    feed = _feed(request, catalog)
    return StreamingResponse(
        feed.watch(resource_version, bookmark_seconds),
        media_type="application/x-ndjson",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@api.get(
    "/nodes/{node}/upgrade",
    name="api_node_upgrade",
    summary="What a kubelet of another release does with the node's state files at start-up",
    responses={404: {}, 422: {"description": "Unknown release or bad gate value"}},
)
def api_node_upgrade(
    source: NodeSourceDep, release: ReleaseQuery, gate: GateQuery = None
) -> JSONResponse:
    parsed = parse_gate(gate)
    return JSONResponse(source.upgrade(check_release(release), parsed))


@api.get(
    "/nodes/{node}/noderesourcetopology",
    name="api_node_nrt",
    summary="The node as a topology.node.k8s.io/v1alpha2 NodeResourceTopology",
    responses={404: {}, 200: JSON_OBJECT},
)
def api_node_nrt(source: NodeSourceDep, settings: SettingsDep) -> JSONResponse:
    return JSONResponse(source.nrt(settings.nrt_fingerprint_method))

"""The agent contract (every ``numascope serve``): compact node summaries a hub polls with
strong ETags, a node's upgrade readiness, and the node as a ``NodeResourceTopology``.

``GET /api/v1/summary`` (every node) and ``GET /api/v1/nodes/{node}/summary`` answer the
cached bytes of ``app.services.agent_summary`` (the contract ``app.contracts.summary``) with an
``ETag``; ``If-None-Match`` with that tag gives a 304 without a body. ``GET /api/v1/summary/
watch`` streams the summaries' changes (``SummaryFeed``: newline-delimited
``SummaryWatchEventV1``, a Kubernetes-style watch with versions, bookmarks and resume), which
is how a hub follows this agent; one feed per process, started by its first watcher. ``GET /api/v1/nodes/{node}/upgrade`` is the checkpoint inspector's
verdict for a kubelet of ``release`` starting on the node's state files
(``app.services.upgrade``).
"""

from __future__ import annotations

from pathlib import Path
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
from app.services.agent_summary import (
    SummaryCache,
    SummaryFeed,
    build_summary,
    encode,
    etag_matches,
)
from app.services.node_errors import NodeServiceError
from app.services.nodes import NodeInputError, NodeService
from app.services.nrt import build_nrt
from app.services.observer import ObservedNodeUnavailableError
from app.services.upgrade import NodeFiles, UpgradeInputError, check_files, check_observed
from app.services.watch import watch_state
from app.web.deps import NodeName, NodeServiceDep, SettingsDep

api = APIRouter(prefix="/api/v1", tags=["agent"])

JSON_OBJECT: dict[str, Any] = {
    "description": "The document (or 304 Not Modified for a matching If-None-Match)",
    "content": {"application/json": {"schema": {"type": "object"}}},
}
STATE_NAMES = ("cpu_manager_state", "memory_manager_state")


def _summary_of(service: NodeService, name: str) -> NodeSummaryV1:
    summary = service.summary(name)
    try:
        views = service.views(name)
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
    headers = {"ETag": encoded.etag, "Cache-Control": "no-cache"}
    if etag_matches(request.headers.get("if-none-match"), encoded.etag):
        return Response(status_code=304, headers=headers)
    return Response(encoded.body, media_type="application/json", headers=headers)


@api.get(
    "/summary",
    name="api_summary",
    summary="Compact summaries of every node (the agent contract; ETag / If-None-Match)",
    responses={
        200: {"model": SummaryDocumentV1, "description": "numascope.summary/v1"},
        304: {"description": "Not modified"},
    },
)
def api_summary(request: Request, service: NodeServiceDep) -> Response:
    settings = request.app.state.settings
    agent = AgentInfo(version=__version__, observe=bool(settings.observe), releases=list(RELEASES))
    doc = _cache(request).document(service.names(), lambda n: _summary_of(service, n), agent)
    return cached_json(request, doc)


@api.get(
    "/nodes/{node}/summary",
    name="api_node_summary",
    summary="The compact summary of one node (ETag / If-None-Match)",
    responses={
        200: {"model": NodeSummaryV1, "description": "One node of numascope.summary/v1"},
        304: {"description": "Not modified"},
        404: {},
    },
)
def api_node_summary(request: Request, node: NodeName, service: NodeServiceDep) -> Response:
    return cached_json(request, _cache(request).versioned(_summary_of(service, node)))


def _changes(service: NodeService, cache: SummaryCache) -> SummaryFeed:
    """A feed whose reads rebuild only the summaries of nodes whose change token moved."""
    held: dict[str, tuple[str, NodeSummaryV1]] = {}

    def refresh() -> list[NodeSummaryV1]:
        out = []
        names = service.names()
        for name in names:
            try:
                token = watch_state(service, name).token
            except NodeServiceError:  # an observed node that cannot be observed: rebuild
                token = ""
            seen = held.get(name)
            if token and seen is not None and seen[0] == token:
                out.append(seen[1])
                continue
            try:
                summary = cache.versioned(_summary_of(service, name))
            except NodeServiceError:  # deleted meanwhile
                continue
            held[name] = (token, summary)
            out.append(summary)
        for gone in set(held) - set(names):
            del held[gone]
        return out

    return SummaryFeed(refresh)


def _feed(request: Request, service: NodeService) -> SummaryFeed:
    feed: SummaryFeed | None = getattr(request.app.state, "summary_feed", None)
    if feed is None:
        feed = request.app.state.summary_feed = _changes(service, _cache(request))
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
    service: NodeServiceDep,
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
    feed = _feed(request, service)
    return StreamingResponse(
        feed.watch(resource_version, bookmark_seconds),
        media_type="application/x-ndjson",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def parse_gate(value: str | None) -> bool | None:
    if value is None or value == "":
        return None
    lowered = value.strip().lower()
    if lowered in ("true", "1", "on", "yes"):
        return True
    if lowered in ("false", "0", "off", "no"):
        return False
    raise NodeInputError(
        f"podLevelResourceManagers: Invalid value: {value!r}: use true or false",
        "podLevelResourceManagers",
    )


def check_release(release: str) -> str:
    if release not in RELEASES:
        raise NodeInputError(
            f"release: Unsupported value: {release!r}: supported values: "
            + ", ".join(f'"{r}"' for r in RELEASES),
            "release",
        )
    return release


def node_upgrade(
    service: NodeService, name: str, release: str, gate: bool | None
) -> dict[str, Any]:
    """The inspector's verdict for a kubelet of ``release`` on node ``name``."""
    try:
        obs = service.observer
        if obs is not None and obs.name == name:
            s = obs.settings
            try:  # the rehearsal's start-up on a copy of its files judges, as for any node
                rehearsal = service.restart(
                    name, release, dry_run=True, pod_level_resource_managers=gate
                )
                start = rehearsal.result
            except ObservedNodeUnavailableError:
                start = None
            return check_observed(name, s.kubelet_root, s.kubelet_config_file, release, gate, start)
        definition = service.definition(name)
        directory = service.node_dir(name)
        files: dict[str, bytes | None] = {}
        for file in STATE_NAMES:
            path = Path(directory) / file if directory is not None else None
            files[file] = path.read_bytes() if path is not None and path.is_file() else None
        snapshot = service.snapshot(name)
        pods = {p.uid: f"{p.namespace}/{p.name}" for p in snapshot.pods if "/" not in p.uid}
        node = NodeFiles(
            name, snapshot.topology, definition.release, definition.kubelet_config, files, pods
        )
        return check_files(node, release, gate)
    except UpgradeInputError as exc:
        raise NodeInputError(exc.message, exc.field) from None


@api.get(
    "/nodes/{node}/upgrade",
    name="api_node_upgrade",
    summary="What a kubelet of another release does with the node's state files at start-up",
    responses={404: {}, 422: {"description": "Unknown release or bad gate value"}},
)
def api_node_upgrade(
    node: NodeName,
    service: NodeServiceDep,
    release: Annotated[str, Query(description="Kubelet release: " + ", ".join(RELEASES))],
    pod_level_resource_managers: Annotated[
        str | None,
        Query(alias="podLevelResourceManagers", description="The gate: true or false"),
    ] = None,
) -> JSONResponse:
    gate = parse_gate(pod_level_resource_managers)
    return JSONResponse(node_upgrade(service, node, check_release(release), gate))


@api.get(
    "/nodes/{node}/noderesourcetopology",
    name="api_node_nrt",
    summary="The node as a topology.node.k8s.io/v1alpha2 NodeResourceTopology",
    responses={404: {}, 200: JSON_OBJECT},
)
def api_node_nrt(node: NodeName, service: NodeServiceDep, settings: SettingsDep) -> JSONResponse:
    return JSONResponse(build_nrt(service.views(node), settings.nrt_fingerprint_method))

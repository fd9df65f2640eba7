"""``/api/v1/nodes``: every node of the catalog (simulated, observed, the hub's fleet), its pods
and admissions, and PodResources as JSON; creating, admitting and removing on simulated nodes.

PodResources is gRPC over a unix socket only (the kubelet has no HTTP endpoint for it); the
routes under ``/podresources`` and ``/allocatable`` are the project's translation of ``List``,
``Get`` and ``GetAllocatableResources`` into the canonical proto3 JSON mapping
(``app.adapters.podresources_json``): lowerCamelCase, int64 as strings, defaults omitted.

Admitting pods: the body is a manifest — YAML or JSON text (one or many documents, ``List``
objects), or a JSON Pod — or ``{"manifest": "<text>"}``. A rejected pod is not an HTTP
error: the answer is 201 when a pod was admitted (200 for a dry run or when every pod was
rejected) with ``admitted``, and for a rejection the kubelet's ``reason`` and ``message``.
Errors are ``{"error": {"reason", "message", "field"?}}`` (``app.web.errors``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.contracts.admission import AdmissionAnswer
from app.domain import releases
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.encoded_json import EncodedJSON
from app.services.node_views import AdmissionLogEntry, NodeDetail, NodeIndexView, node_url
from app.services.nodes.service import NodeService
from app.services.nodes.source import NodeSource
from app.web.conditional import NOT_MODIFIED, encoded_response
from app.web.deps import CatalogDep, Namespace, NodeName, NodeServiceDep, NodeSourceDep, PodName
from app.web.inputs import manifest_text
from app.web.offload import offload

api = APIRouter(prefix="/api/v1", tags=["nodes"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such node (or pod)"}}
PODRESOURCES_JSON: dict[str, Any] = {
    "description": "The message in the canonical proto3 JSON mapping",
    "content": {"application/json": {"schema": {"type": "object"}}},
}
#: The answers of the PodResources routes (a message, or no such node or pod).
PODRESOURCES_ANSWER: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    **NOT_MODIFIED,
    200: PODRESOURCES_JSON,
}


class NodeCreate(BaseModel):
    """A simulated node to create."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    name: str = Field(description="Node name (a lowercase RFC 1123 subdomain)")
    topology: str = Field(
        description="A preset name (see /api/v1/topologies) or a topology spec such as "
        "'sockets=2,cores_per_numa=8,threads_per_core=2'"
    )
    kubelet_config: str | dict[str, Any] = Field(
        default="",
        description="KubeletConfiguration as YAML/JSON text or as a JSON object",
    )
    release: str = Field(
        default=DEFAULT_RELEASE,
        description=(
            f"Kubelet release: {', '.join(releases.RELEASES)} ({releases.NEWEST} = upstream master)"
        ),
    )


class AdmissionLog(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    node: str
    admissions: list[AdmissionLogEntry]


# The GET answers below are bytes encoded once per node version, with a strong ETag: a
# request naming it in If-None-Match gets 304 (app.web.conditional). The hottest ones answer
# on the event loop when the bytes are at hand (NodeService.peek_json) and take the thread
# pool only to load, build or encode.


async def _cached(
    request: Request,
    service: NodeService,
    node: str,
    key: tuple[str, ...],
    build: Callable[[], EncodedJSON],
) -> Response:
    """The answer ``key`` of ``node``: on the event loop when its bytes are at hand
    (``NodeService.peek_json``), else built by the node's source in the thread pool."""
    cached = service.reads.peek_json(node, *key)
    if cached is None:
        cached = await run_in_threadpool(build)
    return encoded_response(request, cached)


def _cached_get(
    path: str,
    name: str,
    summary: str,
    key: str,
    answer: Callable[[NodeSource], EncodedJSON],
    **doc: Any,
) -> None:
    """``GET path``: the node's answer ``key`` (``_cached``), built by ``answer`` of its source."""

    async def route(
        request: Request, node: NodeName, service: NodeServiceDep, source: NodeSourceDep
    ) -> Response:
        return await _cached(request, service, node, (key,), functools.partial(answer, source))

    api.get(path, name=name, summary=summary, **doc)(route)


@api.get(
    "/nodes",
    name="api_nodes",
    summary="Every simulated node",
    response_model=NodeIndexView,
    responses=NOT_MODIFIED,
)
def api_nodes(request: Request, catalog: CatalogDep) -> Response:
    return encoded_response(request, catalog.index_json())


@api.post(
    "/nodes",
    name="api_create_node",
    summary="Create a simulated node",
    status_code=201,
    responses={
        409: {"description": "A node with this name exists"},
        422: {"description": "Bad input"},
    },
)
def api_create_node(body: NodeCreate, catalog: CatalogDep) -> JSONResponse:
    config = body.kubelet_config
    text = json.dumps(config, indent=2) if isinstance(config, dict) else config
    catalog.service.create(body.name, body.topology, text, body.release)
    detail = catalog.get(body.name).node_detail()
    return JSONResponse(
        detail.model_dump(mode="json"),
        status_code=201,
        headers={"Location": f"/api/v1{node_url(body.name)}"},
    )


_cached_get(
    "/nodes/{node}",
    "api_node",
    "One simulated node",
    "detail",
    lambda source: source.node_detail_json(),
    response_model=NodeDetail,
    responses={**NOT_FOUND, **NOT_MODIFIED},
)


@api.delete(
    "/nodes/{node}",
    name="api_delete_node",
    summary="Delete a simulated node, its log and its state files",
    status_code=204,
    responses=NOT_FOUND,
)
def api_delete_node(node: NodeName, catalog: CatalogDep) -> Response:
    catalog.writable(node, "delete it").delete()
    return Response(status_code=204)


@api.post(
    "/nodes/{node}/pods",
    name="api_admit",
    summary="Admit pods (or judge them with dryRun=true)",
    responses={
        200: {
            "description": "Dry run, or every pod rejected (admitted: false, reason, message)",
            "model": AdmissionAnswer,
        },
        201: {"description": "At least one pod admitted", "model": AdmissionAnswer},
        404: {"description": "No such node"},
        409: {"description": "The pod is already on the node"},
        422: {"description": "The manifest is malformed; field names the bad value"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/yaml": {"schema": {"type": "string"}},
                "text/plain": {"schema": {"type": "string"}},
                "application/json": {
                    "schema": {
                        "oneOf": [
                            {"type": "object", "description": "A v1 Pod or List"},
                            {
                                "type": "object",
                                "properties": {"manifest": {"type": "string"}},
                                "required": ["manifest"],
                            },
                        ]
                    }
                },
            },
        }
    },
)
async def api_admit(
    request: Request,
    node: NodeName,
    catalog: CatalogDep,
    dry_run: Annotated[bool, Query(alias="dryRun", description="Judge only, keep nothing")] = False,
) -> JSONResponse:
    text = await manifest_text(request)
    what = "the dry run" if dry_run else "the admission"
    if dry_run:
        batch = await offload(request, catalog.get(node).dry_run, text, what=what)
    else:
        source = catalog.writable(node, "admit pods on it")
        batch = await offload(request, source.admit, text, what=what)
    status = 201 if batch.admitted and not dry_run else 200
    return JSONResponse(batch.to_dict(), status_code=status)


@api.delete(
    "/nodes/{node}/pods/{namespace}/{name}",
    name="api_remove_pod",
    summary="Remove a pod from a simulated node",
    responses=NOT_FOUND,
)
def api_remove_pod(
    node: NodeName, namespace: Namespace, name: PodName, catalog: CatalogDep
) -> dict[str, Any]:
    entry = catalog.writable(node, "remove its pods").remove_pod(namespace, name)
    return {"removed": entry.model_dump(mode="json")}


@api.get(
    "/nodes/{node}/admissions",
    name="api_admissions",
    summary="The node's admission log, newest first",
    responses=NOT_FOUND,
)
def api_admissions(
    node: NodeName,
    source: NodeSourceDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    batch: Annotated[str | None, Query(description="Only this submission, in order")] = None,
) -> AdmissionLog:
    return AdmissionLog(node=node, admissions=source.admissions(limit=limit, batch=batch))


_cached_get(
    "/nodes/{node}/podresources",
    "api_podresources_list",
    "PodResources List (canonical proto3 JSON)",
    "podresources",
    lambda source: source.podresources_list_json(),
    responses=PODRESOURCES_ANSWER,
)


@api.get(
    "/nodes/{node}/podresources/{namespace}/{name}",
    name="api_podresources_get",
    summary="PodResources Get (canonical proto3 JSON)",
    responses=PODRESOURCES_ANSWER,
)
async def api_podresources_get(
    request: Request,
    node: NodeName,
    namespace: Namespace,
    name: PodName,
    service: NodeServiceDep,
    source: NodeSourceDep,
) -> Response:
    build = functools.partial(source.podresources_get_json, namespace, name)
    return await _cached(request, service, node, ("podresources", namespace, name), build)


_cached_get(
    "/nodes/{node}/allocatable",
    "api_allocatable",
    "PodResources GetAllocatableResources (canonical proto3 JSON)",
    "allocatable",
    lambda source: source.allocatable_json(),
    responses=PODRESOURCES_ANSWER,
)

"""The checkpoint inspector: ``GET /checkpoints`` (page), ``POST /checkpoints`` (upload form),
``GET /checkpoints.json`` (the page's JSON twin) and ``POST /api/v1/checkpoints/inspect``.

Faces of one loader (``app.services.checkpoints``):

* ``GET /checkpoints`` shows the upload form and the state files of the server's kubelet root
  dir (``Settings.kubelet_root``, read-only). ``?file=NAME`` (one of those files; ``policy``
  and ``target`` optional) adds its report; htmx requests get only the report fragment.
  ``GET /checkpoints.json`` takes the same parameters and returns
  ``{"kubeletRoot": {...}, "report": {...} | null}``.
* ``POST /checkpoints`` (multipart form: ``file``, ``manager``, ``policy``, ``target``) renders
  the page with the report (works without JavaScript), or the fragment for htmx. Nothing is
  stored: the upload is parsed in memory and the response is the only place the report lives.
* ``POST /api/v1/checkpoints/inspect`` takes a multipart upload (field ``file``) or the raw
  file as the body; ``manager``, ``policy`` and ``target`` come from form fields or the query
  string. It returns the ``InspectionReport`` dict (``app.domain.checkpoint``) plus ``source``,
  ``configuredPolicy``, ``targets``, ``ok`` and ``problems``; consistency findings are merged
  into ``issues``.

Inspection is CPU work on untrusted bytes: the upload routes run it, and the rendering of its
answer, in a worker thread (``anyio.to_thread``, at most two at a time), so the event loop
keeps answering other requests (``/healthz`` within a second while a 560 KB hostile file is
inspected, tested against a real server); the ``GET`` routes are synchronous and run in the
thread pool anyway. The findings are linear in the file (CPUs held by several pods grouped per
CPU, the list capped with a count), so the answer stays small.

Uploads are read as a stream into memory and never reach the disk (``app.web.uploads``).
Reading stops one byte past 16 MiB: 413 with a clear message; so does a file of more than
25,000 JSON object members (``MAX_INSPECT_MEMBERS``, counted before any decoding; a server's
own kubelet file gets a ``too-many-members`` report instead). No file, or an empty one: 422. A file that is not a checkpoint is not an error of the
request: its report says so (``readable: false``, will-fail verdicts).

Errors of the API are ``{"error": {"reason", "message", "field"?}}`` (``app.web.errors``).
The page shows them inline above the result, with the same status code, except for htmx
requests, which get the inline error with status 200 because htmx 2 does not swap 4xx
responses (its default ``responseHandling``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from app.contracts.checkpoint import CheckpointReport
from app.domain import releases
from app.domain.checkpoint import TARGETS
from app.services.checkpoints import (
    TOO_MANY_MEMBERS,
    CheckpointFileError,
    CheckpointServiceError,
    CheckpointUsageError,
    EmptyUploadError,
    InspectionView,
    KubeletFilesView,
    UploadTooLargeError,
    UploadTooManyMembersError,
    inspect_content,
    inspect_kubelet_file,
    kubelet_files,
    parse_manager,
    parse_policy,
    parse_targets,
)
from app.web.deps import SettingsDep
from app.web.errors import ErrorInfo, error_response
from app.web.rendering import render, wants_fragment
from app.web.uploads import BadUploadError, Upload, read_upload

FORM_FIELDS = ("manager", "policy", "target")

T = TypeVar("T")

pages = APIRouter(tags=["checkpoints"])
api = APIRouter(prefix="/api/v1", tags=["checkpoints"])


# -- inspecting an upload ------------------------------------------------------------------------


def _inspect_upload(upload: Upload, query: dict[str, str | None]) -> InspectionView:
    def arg(name: str) -> str | None:
        value = upload.fields.get(name)
        return value if value not in (None, "") else query.get(name)

    manager = parse_manager(arg("manager"))
    policy = parse_policy(arg("policy"))
    targets = parse_targets(arg("target"))
    if upload.content is None or not upload.content:
        raise EmptyUploadError()
    view = inspect_content(
        upload.content,
        source=upload.filename or "uploaded file",
        manager=manager,
        policy=policy,
        targets=targets,
    )
    if view.report.issues and view.report.issues[0].code == TOO_MANY_MEMBERS:
        raise UploadTooManyMembersError(view.report.issues[0].message)
    return view


# Inspections share two worker threads: many concurrent uploads queue here instead of taking
# every thread of the pool that the synchronous routes run on.
_INSPECTIONS = anyio.CapacityLimiter(2)


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in an inspection worker thread: the event loop keeps answering other
    requests (``/healthz``) while a large file is inspected and its answer rendered."""
    return await anyio.to_thread.run_sync(fn, *args, limiter=_INSPECTIONS)


def _api_answer(upload: Upload, query: dict[str, str | None]) -> JSONResponse:
    view = _inspect_upload(upload, query)
    return JSONResponse(view.to_dict(), headers={"Cache-Control": "no-store"})


def _error_info(exc: CheckpointServiceError) -> ErrorInfo:
    if isinstance(exc, UploadTooLargeError | UploadTooManyMembersError):
        return ErrorInfo(413, "RequestEntityTooLarge", exc.message, exc.field)
    if isinstance(exc, CheckpointFileError):
        return ErrorInfo(404, "NotFound", exc.message, exc.field)
    if isinstance(exc, BadUploadError):
        return ErrorInfo(400, "BadRequest", exc.message, exc.field)
    return ErrorInfo(422, "Invalid", exc.message, exc.field)


# -- the page ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InspectorPage:
    """The inspector page: the server's kubelet files, the form's values, and either a report
    or an error to show inline."""

    kubelet: KubeletFilesView
    result: InspectionView | None = None
    error: ErrorInfo | None = None
    form: dict[str, str] = field(default_factory=dict)
    targets: tuple[Any, ...] = TARGETS

    def to_dict(self) -> dict[str, Any]:
        return {
            "kubeletRoot": self.kubelet.to_dict(),
            "report": self.result.to_dict() if self.result is not None else None,
        }


def _render_page(request: Request, page: InspectorPage) -> HTMLResponse:
    status = 200
    if page.error is not None and not wants_fragment(request):
        status = page.error.status
    response = render(
        request,
        "pages/checkpoints.html",
        page,
        fragment="fragments/_checkpoint_report.html",
        status_code=status,
        context={"active": "checkpoints"},
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _server_file(
    settings: Any, name: str | None, policy: str | None, target: str | None
) -> InspectionView | None:
    if not name:
        return None
    return inspect_kubelet_file(
        settings.kubelet_root, name, policy=parse_policy(policy), targets=parse_targets(target)
    )


@pages.get("/checkpoints", name="checkpoints", include_in_schema=False)
def checkpoints_page(
    request: Request,
    settings: SettingsDep,
    file: str | None = Query(default=None),
    policy: str | None = Query(default=None),
    target: str | None = Query(default=None),
) -> HTMLResponse:
    kubelet = kubelet_files(settings.kubelet_root)
    form = {"file": file or "", "policy": policy or "", "target": target or ""}
    try:
        result = _server_file(settings, file, policy, target)
    except CheckpointServiceError as exc:
        return _render_page(request, InspectorPage(kubelet, None, _error_info(exc), form))
    return _render_page(request, InspectorPage(kubelet, result, None, form))


# The inspector's options, as the page's JSON twin and the upload API take them.
PolicyQuery = Annotated[str | None, Query(description="configured policy to compare with")]
TargetQuery = Annotated[
    str | None,
    Query(
        description=(
            f"comma-separated releases ({releases.OLDEST}, {releases.GATE_SINCE}-gate-on...); "
            "default all"
        ),
    ),
]


@pages.get(
    "/checkpoints.json",
    name="checkpoints_json",
    summary="The inspector's JSON twin: the server's kubelet state files, and one's report",
)
def checkpoints_json(
    request: Request,
    settings: SettingsDep,
    file: str | None = Query(
        default=None, description="a state file of the kubelet root dir to inspect"
    ),
    policy: PolicyQuery = None,
    target: TargetQuery = None,
) -> Response:
    kubelet = kubelet_files(settings.kubelet_root)
    try:
        result = _server_file(settings, file, policy, target)
    except CheckpointServiceError as exc:
        return error_response(request, _error_info(exc))
    return JSONResponse(InspectorPage(kubelet, result).to_dict())


@pages.post("/checkpoints", name="checkpoints_upload", include_in_schema=False)
async def checkpoints_upload(request: Request, settings: SettingsDep) -> HTMLResponse:
    kubelet = kubelet_files(settings.kubelet_root)
    form: dict[str, str] = {}
    try:
        upload = await read_upload(request)
        form = {k: upload.fields.get(k, "") for k in FORM_FIELDS}
        result = await off_loop(_inspect_upload, upload, {})
    except CheckpointServiceError as exc:
        return _render_page(request, InspectorPage(kubelet, None, _error_info(exc), form))
    return await off_loop(_render_page, request, InspectorPage(kubelet, result, None, form))


_UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "manager": {"type": "string", "enum": ["auto", "cpu", "memory"]},
                    "policy": {"type": "string"},
                    "target": {"type": "string"},
                },
            }
        },
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "application/json": {"schema": {"type": "object"}},
    },
}


@api.post(
    "/checkpoints/inspect",
    name="api_checkpoints_inspect",
    summary="Inspect an uploaded cpu_manager_state / memory_manager_state (in memory only)",
    description="Multipart upload (field `file`) or the raw file as the body, at most 16 MiB. "
    "Returns the detected version and release family, every checksum "
    "`{field, stored, computed, status}`, a verdict per kubelet release "
    "(`compatible | compatible-with-loss | will-fail | policy-mismatch`) with what is lost and "
    "the kubelet's error text, the content, and issues. Nothing is written anywhere.",
    openapi_extra={"requestBody": _UPLOAD_BODY},
    responses={
        200: {"description": "The file's report", "model": CheckpointReport},
        413: {"description": "The file is larger than 16 MiB or has more than 25,000 members"},
        422: {"description": "No file or an empty one; unknown manager or target"},
    },
)
async def api_checkpoints_inspect(
    request: Request,
    manager: str | None = Query(default=None, description="cpu, memory or auto (default)"),
    policy: PolicyQuery = None,
    target: TargetQuery = None,
) -> Response:
    try:
        upload = await read_upload(request)
        query = {"manager": manager, "policy": policy, "target": target}
        return await off_loop(_api_answer, upload, query)
    except CheckpointServiceError as exc:
        return error_response(request, _error_info(exc))


__all__ = [
    "CheckpointUsageError",
    "InspectorPage",
    "api",
    "pages",
]

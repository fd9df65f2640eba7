"""The one place where exceptions become HTTP responses: JSON for the API, HTML for pages.

JSON bodies are ``{"error": {"reason", "message", "field"?}}`` with a 4xx status (5xx only
for bugs and unavailable sources). A request gets JSON when its path is under ``/api/`` or
ends in ``.json``, or when it accepts JSON but not HTML; otherwise the HTML error page (only
its fragment for htmx requests).

To map a new exception, add it to ``ERROR_STATUS`` (status, reason). An exception's
``message`` and ``field`` attributes are used when present; ``AdmissionError`` keeps the
kubelet's own reason. A 5xx is a bug (logged, its text hidden) unless the exception is in
``UNAVAILABLE``: a source that could not be read, said as it is.

A database that cannot be reached (``app.adapters.db.outage``: PostgreSQL stopped or
restarting, a SQLite file locked, read-only or unopenable), raised as the driver's error or as
the cause of a 5xx service error, is a 503 ``ServiceUnavailable`` with ``Retry-After``: its
message names the kind of failure in fixed words (never the driver's text, which carries host
names, paths and SQL), nothing is logged per request, and the process logs one warning per
outage. Handlers are registered for the drivers' classes themselves so that Starlette's
outermost middleware never sees them (it would log a traceback for each).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from app.domain.admission import AdmissionError
from app.domain.deadline import DeadlineExceededError
from app.domain.podresources import PodNotFoundError
from app.services.nodes.errors import (
    AgentUnreachableError,
    HintSearchTooLargeError,
    NodeExistsError,
    NodeInputError,
    NodeServiceError,
    NodeUnavailableError,
    NoSimulatedNodesError,
    PodConflictError,
    ReadOnlyNodeError,
    RemoteNotFoundError,
    StorageFullError,
    UnknownNodeError,
    UnknownPodError,
)
from app.services.observe.observer import ObservedNodeUnavailableError
from app.services.topologies import HostDiscoveryError, UnknownTopologyError
from app.web.rendering import render, wants_fragment

if TYPE_CHECKING:
    from types import ModuleType

log = logging.getLogger(__name__)

# exception class -> (HTTP status, reason); the first match in MRO order wins.
ERROR_STATUS: dict[type[Exception], tuple[int, str]] = {
    UnknownTopologyError: (404, "NotFound"),
    HostDiscoveryError: (503, "HostDiscoveryFailed"),
    AdmissionError: (422, "UnexpectedAdmissionError"),
    UnknownNodeError: (404, "NotFound"),
    UnknownPodError: (404, "NotFound"),
    RemoteNotFoundError: (404, "NotFound"),
    PodNotFoundError: (404, "NotFound"),
    NodeExistsError: (409, "AlreadyExists"),
    PodConflictError: (409, "AlreadyExists"),
    HintSearchTooLargeError: (422, "HintSearchTooLarge"),
    NodeInputError: (422, "Invalid"),
    ReadOnlyNodeError: (409, "Conflict"),
    ObservedNodeUnavailableError: (503, "ServiceUnavailable"),
    # A remote node's agent failed the hub: its answer, not a fault of the hub's (never 5xx).
    AgentUnreachableError: (424, "AgentUnreachable"),
    # A change that could not be made durable (rolled back): full disk, read-only, database.
    StorageFullError: (507, "InsufficientStorage"),
    NodeUnavailableError: (503, "ServiceUnavailable"),
    NoSimulatedNodesError: (409, "Conflict"),
    # CPU-heavy work stopped at the time budget (app.web.offload); nothing of it was kept.
    DeadlineExceededError: (503, "Timeout"),
}

# The same for exceptions of modules a process may never load (the node agent loads no
# history, undo or hub, issue 20 pt 7), by "module.QualName": naming them here must not import
# them. A handler is registered for each that is loaded when the app is built and for its
# base (``NodeServiceError``), so one loaded later is still answered by ``on_app_error``.
ERROR_STATUS_BY_NAME: dict[str, tuple[int, str]] = {
    "app.services.history.replay.UnknownEntryError": (404, "NotFound"),
    "app.services.undo.NothingToUndoError": (409, "Conflict"),
    "app.services.undo.UndoRefusedError": (409, "Conflict"),
    "app.services.nodes.observed.ObservedCopyError": (503, "ServiceUnavailable"),
    "app.services.fleet.hub.HubDisabledError": (404, "NotFound"),
}

# 5xx exceptions that are not bugs: a source (the host's sysfs, the observed node's kubelet)
# could not be read. Their message is shown and no traceback is logged.
UNAVAILABLE: tuple[type[Exception], ...] = (
    HostDiscoveryError,
    ObservedNodeUnavailableError,
    NodeUnavailableError,
    DeadlineExceededError,
)
UNAVAILABLE_BY_NAME = frozenset({"app.services.nodes.observed.ObservedCopyError"})

# Kubernetes-style reasons (metav1.StatusReason) for plain HTTP errors.
HTTP_REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    424: "FailedDependency",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
    507: "InsufficientStorage",
}


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    status: int
    reason: str
    message: str
    field: str | None = None
    links: tuple[tuple[str, str], ...] = ()
    # What the HTML page says instead of ``message`` (when the links already list choices).
    html_message: str | None = None
    # Seconds for the ``Retry-After`` header (a 503 that will pass).
    retry_after: int | None = None

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"reason": self.reason, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


def wants_json(request: Request) -> bool:
    path = request.url.path
    if path.startswith("/api/") or path.endswith(".json"):
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def error_response(request: Request, info: ErrorInfo) -> Response:
    headers = {"Cache-Control": "no-store"}
    if info.retry_after is not None:
        headers["Retry-After"] = str(info.retry_after)
    if info.status == 405:
        allow = getattr(request.state, "allow", None)
        if allow:
            headers["Allow"] = allow
    if wants_json(request):
        return JSONResponse(info.body(), status_code=info.status, headers=headers)
    template = "errors/_error.html" if wants_fragment(request) else "errors/error.html"
    return render(
        request,
        template,
        info,
        status_code=info.status,
        context={"error": info},
        headers=headers,
    )


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _lookup(exc: BaseException) -> tuple[int, str] | None:
    for cls in type(exc).__mro__:
        if cls in ERROR_STATUS:
            return ERROR_STATUS[cls]
        if (by_name := ERROR_STATUS_BY_NAME.get(_qualified(cls))) is not None:
            return by_name
    return None


def _unavailable(exc: BaseException) -> bool:
    """A source that could not be read (``UNAVAILABLE``): said as it is, not logged."""
    return isinstance(exc, UNAVAILABLE) or any(
        _qualified(cls) in UNAVAILABLE_BY_NAME for cls in type(exc).__mro__
    )


def _loaded_by_name() -> list[type[Exception]]:
    """The classes of ``ERROR_STATUS_BY_NAME`` whose modules are loaded now."""
    found = []
    for name in ERROR_STATUS_BY_NAME:
        module_name, _, cls_name = name.rpartition(".")
        module: ModuleType | None = sys.modules.get(module_name)
        if module is not None:
            found.append(getattr(module, cls_name))
    return found


def _outage() -> ModuleType | None:
    """``app.adapters.db.outage`` once a database driver is loaded (without one no exception
    can be a database outage, and a process without a database never imports SQLAlchemy)."""
    if "sqlalchemy" not in sys.modules and "psycopg" not in sys.modules:
        return None
    from app.adapters.db import outage

    return outage


def database_outage(exc: BaseException) -> ErrorInfo | None:
    """The 503 for a request the database could not serve now, or None (see the docstring):
    only for exceptions that are not mapped below 500 (a value the database refused stays a
    422, a full disk a 507)."""
    mapped = _lookup(exc)
    if mapped is not None and mapped[0] != 503:
        return None
    outage = _outage()
    if outage is None:
        return None
    said = outage.reason(exc)
    if said is None:
        return None
    wait = outage.RETRY_AFTER_SECONDS
    message = (
        f"the database is unavailable: {said}; nothing this request asked for was confirmed, "
        f"try again in {wait} seconds"
    )
    return ErrorInfo(503, "ServiceUnavailable", message, retry_after=wait)


def describe(exc: BaseException) -> ErrorInfo:
    """Status, reason, message and field of an application exception."""
    unavailable = database_outage(exc)
    if unavailable is not None:
        return unavailable
    mapped = _lookup(exc)
    status, reason = mapped if mapped is not None else (500, "InternalError")
    if isinstance(exc, AdmissionError):
        reason = exc.reason
    message = str(getattr(exc, "message", "") or exc)
    field = getattr(exc, "field", None)
    links: tuple[tuple[str, str], ...] = ()
    html_message = None
    if isinstance(exc, UnknownTopologyError):
        links = tuple((name, f"/topologies/{name}") for name in exc.known)
        html_message = (
            f"There is no topology called {exc.name!r}. "
            "Pick 'host' for this machine or one of the presets:"
        )
    elif isinstance(exc, HostDiscoveryError):
        links = (("all topologies", "/"),)
    elif isinstance(exc, UnknownNodeError):
        links = (("all nodes", "/nodes"), *((n, f"/nodes/{n}") for n in exc.known))
        html_message = f"There is no simulated node called {exc.name!r}."
    elif isinstance(exc, UnknownPodError):
        links = ((f"node {exc.node}", f"/nodes/{exc.node}"),)
    elif status >= 500 and not _unavailable(exc):
        message = "internal error; the server log has the details"
    return ErrorInfo(status, reason, message, field, links, html_message)


def _validation_info(exc: RequestValidationError) -> ErrorInfo:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        first = next(e for e in errors if e.get("type") == "json_invalid")
        return ErrorInfo(400, "BadRequest", f"request body is not valid JSON: {first.get('msg')}")
    if not errors:
        return ErrorInfo(422, "Invalid", "invalid request")
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header", "cookie", "form"):
        loc = loc[1:]
    field = ".".join(loc) if loc else None
    parts = []
    for e in errors:
        where = ".".join(str(p) for p in e.get("loc", ())[1:]) or "request"
        parts.append(f"{where}: {e.get('msg')}")
    return ErrorInfo(422, "Invalid", "; ".join(parts), field)


_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def serves(request: Request, method: str) -> bool:
    """Whether some route serves ``method`` on this request's path (asked of the router)."""
    probe = {**request.scope, "method": method}
    return any(route.matches(probe)[0] == Match.FULL for route in request.app.router.routes)


def allowed_methods(request: Request) -> str:
    """Every method some route serves on this path (asked of the router, method by method).
    Starlette's own 405 names only the first route that matched the path, so a path with a
    GET page and a POST form said ``GET``."""
    return ", ".join(method for method in _METHOD_ORDER if serves(request, method))


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on ``app``; called once by ``create_app``."""

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        status = exc.status_code
        reason = HTTP_REASONS.get(status, "BadRequest" if status < 500 else "InternalError")
        if status == 404 and exc.detail in (None, "Not Found"):
            message = f"nothing here: {request.url.path} is not a page or resource of Numascope"
            links: tuple[tuple[str, str], ...] = (("all topologies", "/"), ("API docs", "/docs"))
        elif status == 405:
            message = f"method {request.method} is not allowed on {request.url.path}"
            links = ()
        else:
            message = str(exc.detail)
            links = ()
        if status == 405:
            request.state.allow = allowed_methods(request) or (exc.headers or {}).get("Allow")
        return error_response(request, ErrorInfo(status, reason, message, None, links))

    async def on_validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(request, _validation_info(exc))

    async def on_app_error(request: Request, exc: Exception) -> Response:
        info = describe(exc)
        outage = _outage()
        if info.retry_after is not None and outage is not None:
            outage.OUTAGE.noticed(exc)
        elif info.status >= 500 and not _unavailable(exc):
            log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(request, info)

    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    outage = _outage()
    drivers = outage.candidates() if outage is not None else ()
    for cls in (*ERROR_STATUS, NodeServiceError, *_loaded_by_name(), *drivers):
        app.add_exception_handler(cls, on_app_error)
    app.add_exception_handler(Exception, on_app_error)

"""The hottest cached JSON GETs answered before FastAPI's routing (issue 10 point 1).

PodResources List, Get and GetAllocatableResources and the API node are what scripts and
agents poll. Once their bytes are encoded (``app.services.encoded_json``) the answer itself
costs a few microseconds, while FastAPI's route matching and dependency solving cost several
times that on every request. ``CachedJSONFastPath`` sits inside the guard, the compression and
the metrics middleware, so every request still gets the Host check, the security headers,
gzip and its metrics, and answers only when all of these hold:

* a ``GET`` without a query string of one of those routes, matched by the route's own path
  regex (the same match the router makes; no other route shares these path shapes);
* ``NodeService.peek_json`` has the bytes at hand (the node is held at the database's version
  and its views are built) — it never loads or builds anything, so the event loop is not held.

The answer is the route's own (``app.web.conditional.encoded_response``: ETag, 304, gzip), and
``scope["route"]`` is the route, so the metrics label it as the router would. Everything else
(bytes not at hand, an unknown or observed node, HEAD, a query string, any other path) goes on
to the router, whose route answers it and documents it in OpenAPI.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from app.web.conditional import encoded_response

PREFIX = "/api/v1/nodes/"


@dataclass(frozen=True, slots=True)
class FastRoute:
    """One route the fast path answers: the router's route and the cache key of a match
    (``peek_json``'s ``*key`` after the node name, from the path parameters)."""

    route: Any  # the APIRoute: its path_regex, and the scope's "route" for the metrics
    key: Callable[[dict[str, str]], tuple[str, ...]]


#: Route name -> the cache key of its answer (as the route itself asks ``peek_json``).
KEYS: dict[str, Callable[[dict[str, str]], tuple[str, ...]]] = {
    "api_podresources_list": lambda p: ("podresources",),
    "api_podresources_get": lambda p: ("podresources", p["namespace"], p["name"]),
    "api_allocatable": lambda p: ("allocatable",),
    "api_node": lambda p: ("detail",),
}


def fast_routes(routes: Iterable[BaseRoute]) -> list[FastRoute]:
    """The routes of ``KEYS`` among ``routes`` (the API router's), each with its key."""
    found = [
        FastRoute(route, KEYS[name])
        for route in routes
        if (name := getattr(route, "name", None)) in KEYS and "GET" in getattr(route, "methods", ())
    ]
    missing = set(KEYS) - {getattr(f.route, "name", "") for f in found}
    if missing:
        raise LookupError(f"the fast path's routes are not in the router: {sorted(missing)}")
    return found


class CachedJSONFastPath:
    """The middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self.routes = fast_routes(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and not scope.get("query_string")
            and scope["path"].startswith(PREFIX)
        ):
            answer = self._cached(scope)
            if answer is not None:
                request, encoded = answer
                await encoded_response(request, encoded)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _cached(self, scope: Scope) -> tuple[Request, Any] | None:
        path = scope["path"]
        for fast in self.routes:
            match = fast.route.path_regex.match(path)
            if match is None:
                continue
            params = match.groupdict()
            service = getattr(scope["app"].state, "nodes", None)
            if service is None:
                return None
            encoded = service.reads.peek_json(params["node"], *fast.key(params))
            if encoded is None:
                return None
            scope["route"] = fast.route
            scope["path_params"] = params
            return Request(scope), encoded
        return None

"""Routers included on first use: the node agent (``serve --no-simulated``) starts with the few
routes it is polled on and loads its pages, forms and the rest of the API when a request first
asks for a path none of those serves (issue 20 pt 7: the agent idles on a fraction of the
dashboard's memory and starts on a fraction of its CPU).

``LazyRoutes`` is the router's ``default`` (what Starlette's ``Router`` calls when no route
matched): the first time, it imports the routers in a worker thread (the event loop keeps
answering ``/healthz`` meanwhile), includes them after the eager ones and routes the request
again; from then on the app is the full app and ``default`` is the router's own 404. The
OpenAPI document loads them first (``load``), so it always lists every route.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence

from fastapi import APIRouter, FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send


class LazyRoutes:
    """The routers ``("module", "attribute")`` of ``routers``, in order, included into ``app``
    on first use (see the module docstring)."""

    def __init__(self, app: FastAPI, routers: Sequence[tuple[str, str]]) -> None:
        self.app = app
        self.routers = tuple(routers)
        self.loaded = False
        self._not_found: ASGIApp = app.router.default
        self._lock = threading.Lock()
        app.router.default = self

    def load(self) -> None:
        """Include the routers now (once; any thread)."""
        with self._lock:
            if self.loaded:
                return
            for module, attribute in self.routers:
                router: APIRouter = getattr(importlib.import_module(module), attribute)
                self.app.include_router(router)
            self.loaded = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.loaded or scope["type"] not in ("http", "websocket"):
            await self._not_found(scope, receive, send)
            return
        await run_in_threadpool(self.load)  # in a worker thread: the loop keeps answering
        await self.app.router.app(scope, receive, send)

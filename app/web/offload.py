"""CPU-heavy request work off the event loop, under a time budget (issue 13: ``/healthz``
answers within a second whatever else runs).

``await offload(request, func, *args, what="the dry run")`` runs ``func`` in a worker thread
and sets a cooperative deadline (``app.domain.deadline``) of ``settings.cpu_time_budget``
seconds in it: the loops that can run long check it and stop with ``DeadlineExceededError``,
which ``app.web.errors`` answers with 503 ``Timeout`` (the node engine has undone what the
request had begun). Heavy jobs share a few threads of their own (``HEAVY_THREADS``), so they
cannot take every thread of the pool that runs the plain ``def`` routes.

Sync routes already run in a worker thread; they only need the deadline: ``with
budgeted(request, "the admission"): ...``.

Any router may use these (the checkpoint inspector, fleet fan-out, restarts).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.requests import Request

from app.domain import deadline

T = TypeVar("T")

HEAVY_THREADS = 4
# One limiter per event loop (test clients run apps on loops of their own).
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def _limiter() -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(HEAVY_THREADS)
    return limiter


def request_budget(request: Request) -> float | None:
    """The time budget of one request: ``settings.cpu_time_budget`` seconds."""
    settings = getattr(request.app.state, "settings", None)
    return None if settings is None else float(settings.cpu_time_budget)


def _run_within(
    budget: float | None, what: str, func: Callable[..., T], args: tuple[Any, ...], kw: Any
) -> T:
    with deadline.within(budget, what):
        return func(*args, **kw)


async def offload(
    request: Request, func: Callable[..., T], /, *args: Any, what: str, **kwargs: Any
) -> T:
    """``func(*args, **kwargs)`` in a worker thread under the request's time budget."""
    call = functools.partial(_run_within, request_budget(request), what, func, args, kwargs)
    return await anyio.to_thread.run_sync(call, limiter=_limiter())


@contextlib.contextmanager
def budgeted(request: Request, what: str) -> Iterator[None]:
    """The request's time budget around work a sync route does in its worker thread."""
    with deadline.within(request_budget(request), what):
        yield

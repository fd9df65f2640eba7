"""A cooperative time budget for CPU-heavy work (the server's answer to issue 13's "no request
stalls the server").

Python cannot stop a thread from outside, so long loops ask instead: whoever starts heavy work
sets a deadline with ``within(seconds)`` (the web layer's ``app.web.offload`` does, in the
worker thread that runs the request), and the loops that can run long (the topology manager's
hint merge, the hint tables of wide machines) call ``check()`` every so often. Past the
deadline ``check`` raises ``DeadlineExceededError``; the node engine undoes the admission it was
in, so nothing of the request is kept. Without a deadline ``check`` costs one context-variable
read and never raises (the CLI and the tests run unbounded).

The deadline lives in a ``contextvars.ContextVar``: each thread or task sees only its own.
A budget counts the CPU time of the thread that set it (``time.thread_time``), not wall time
(issue 20): on a busy machine work is not stopped for waiting its turn, so ``within`` is set in
the thread that does the work.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


class DeadlineExceededError(Exception):
    """The work ran past its time budget and was stopped (nothing of it was kept)."""

    def __init__(self, budget: float, what: str) -> None:
        self.budget = budget
        self.what = what
        self.message = (
            f"{what} was stopped after {budget:g} s, this server's time budget for one "
            "request; nothing of it was kept"
        )
        super().__init__(self.message)


@dataclass(frozen=True, slots=True)
class _Deadline:
    at: float  # a time.thread_time() value: budgets count this thread's CPU time
    budget: float
    what: str


_current: ContextVar[_Deadline | None] = ContextVar("numascope_deadline", default=None)


@contextlib.contextmanager
def within(seconds: float | None, what: str = "the request") -> Iterator[None]:
    """Run the body under a budget of ``seconds`` (``None``: no budget). A tighter deadline
    already set outside stays in force."""
    if seconds is None:
        yield
        return
    outer = _current.get()
    at = time.thread_time() + seconds
    if outer is not None and outer.at <= at:
        yield
        return
    token = _current.set(_Deadline(at, seconds, what))
    try:
        yield
    finally:
        _current.reset(token)


def check() -> None:
    """Raise ``DeadlineExceededError`` when the current deadline has passed."""
    d = _current.get()
    if d is not None and time.thread_time() >= d.at:
        raise DeadlineExceededError(d.budget, d.what)


def remaining() -> float | None:
    """Seconds left of the current budget (``None`` without one)."""
    d = _current.get()
    return None if d is None else d.at - time.thread_time()

"""When the database cannot be reached: which errors say so, and one log line per outage.

A PostgreSQL server that stops, restarts or drops connections, and a SQLite file that stays
locked past the busy timeout, turned read-only or cannot be opened, are not bugs of a request:
the request could not be served *now* and may be retried. ``unavailable(exc)`` recognises
them, anywhere in an exception's cause/context chain (a service may wrap the driver's error):

* SQLAlchemy's ``OperationalError``, ``InterfaceError``, ``DisconnectionError`` (the pool's
  ``InvalidatePoolError`` included) and pool ``TimeoutError``, and any ``DBAPIError`` whose
  connection was invalidated — on every backend but SQLite, where ``OperationalError`` also
  means a bug (``no such table``): there only the texts below count;
* the drivers' own errors that SQLAlchemy lets through while it reconnects or rolls back:
  ``psycopg.OperationalError`` / ``InterfaceError``, and ``sqlite3.OperationalError`` with one
  of the texts ``database is locked``, ``database table is locked``, ``readonly database``,
  ``unable to open database file``, ``disk I/O error``.

``reason(exc)`` names the kind of failure in a few words without the driver's text (which
carries host names, ports, file paths and, in SQLAlchemy's rendering, SQL).

``OUTAGE`` is the process's record of an outage: ``noticed(exc)`` logs one warning the first
time (kind, driver's first line); later failures stay quiet while they keep coming. The outage
is over once ``QUIET_SECONDS`` pass without a failure: a new connection is no proof (while
PostgreSQL stops, a reconnection can still succeed a moment before the next failure, and a
SQLite lock clears without any new connection). Each worker process logs its own line.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable

from sqlalchemy import exc as sa_exc

log = logging.getLogger(__name__)

#: What a 503 for an unreachable database tells clients to wait (``Retry-After``, seconds).
RETRY_AFTER_SECONDS = 2
#: A failure this long after the previous one starts a new outage (and a new log line).
QUIET_SECONDS = 10.0

_SQLITE_TEXTS = {
    "database is locked": "the database is locked by another writer",
    "database table is locked": "the database is locked by another writer",
    "readonly database": "the database is read-only",
    "unable to open database file": "the database file cannot be opened",
    "disk i/o error": "the database's disk failed (I/O error)",
}
_SA_UNAVAILABLE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,
)


def driver_types() -> tuple[type[Exception], ...]:
    """psycopg's connection errors, once psycopg is loaded. SQLAlchemy loads it when it makes a
    PostgreSQL engine, so a process on SQLite (the node agent) neither meets these errors nor
    pays for the import (a tenth of a second and a MiB, issue 20 pt 7)."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return ()
    return (psycopg.OperationalError, psycopg.InterfaceError)


def candidates() -> tuple[type[Exception], ...]:
    """The exception classes a web layer registers a handler for (each checked by
    ``unavailable``); asked after the engine is made, so psycopg's are in when it is used."""
    return (*_SA_UNAVAILABLE, sqlite3.OperationalError, *driver_types())


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 16 and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _sqlite_text(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    text = str(exc).lower()
    return next((said for key, said in _SQLITE_TEXTS.items() if key in text), None)


def _one(exc: BaseException) -> str | None:
    """The reason for this one exception (not its chain), or None."""
    if isinstance(exc, sa_exc.DBAPIError):
        said = _sqlite_text(exc.orig)
        if said is not None or isinstance(exc.orig, sqlite3.Error):
            return said
    if isinstance(exc, sqlite3.OperationalError):
        return _sqlite_text(exc)
    if isinstance(exc, sa_exc.TimeoutError):
        return "no database connection was free in time"
    if isinstance(exc, (sa_exc.DisconnectionError, *driver_types())):
        return "the connection to the database was refused or lost"
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return "the connection to the database was refused or lost"
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return "the database did not answer (it is stopping, restarting or unreachable)"
    return None


def reason(exc: BaseException) -> str | None:
    """Why the database could not serve this request (a few words), or None when ``exc`` is
    not an outage of the database."""
    for link in _chain(exc):
        said = _one(link)
        if said is not None:
            return said
    return None


def unavailable(exc: BaseException) -> bool:
    return reason(exc) is not None


def _first_line(exc: BaseException) -> str:
    for link in _chain(exc):
        if _one(link) is not None:
            inner = getattr(link, "orig", None) or link
            lines = str(inner).strip().splitlines()
            return f"{type(inner).__name__}: {lines[0] if lines else ''}"
    return type(exc).__name__


class Outage:
    """One process's current database outage, if any (see the module docstring)."""

    def __init__(
        self, quiet: float = QUIET_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._lock = threading.Lock()
        self._quiet = quiet
        self._clock = clock
        self._last: float | None = None  # when the last failure was noticed
        self.count = 0  # outages logged by this process

    @property
    def open(self) -> bool:
        last = self._last
        return last is not None and self._clock() - last <= self._quiet

    def noticed(self, exc: BaseException) -> None:
        """A request failed because of the database: log it if it starts an outage."""
        now = self._clock()
        with self._lock:
            starts = self._last is None or now - self._last > self._quiet
            self._last = now
            if starts:
                self.count += 1
        if starts:
            log.warning(
                "database unavailable (%s); answering 503 with Retry-After: %d until it is "
                "back, and logging nothing more about it until then",
                _first_line(exc),
                RETRY_AFTER_SECONDS,
            )


OUTAGE = Outage()

"""Whether anything was committed to a SQLite file database since the last look, in microseconds.

Every request compares the nodes it holds with the database's versions
(``node_repo.versions``). On SQLite the query itself is quick, but a pooled connection's
check-out, the statement and the rollback cost about 50 µs, which is most of what a cached
JSON answer costs. SQLite keeps a counter for exactly this question: ``PRAGMA data_version``
answers a different value on a connection whenever *another* connection — of this process or
any other — has committed a change since that connection last asked
(https://www.sqlite.org/pragma.html#pragma_data_version). ``ChangeProbe`` holds one private,
read-only connection to the database file for it, so its value changes on every commit by
anyone: workers, replicas, the CLI.

In-memory databases (one connection for the whole process) have no second connection to ask;
``probe_for`` gives ``None`` there and callers query every time.

When the value did change, ``read`` runs the caller's query on that same connection, after
reading the value: a pooled connection's check-out and rollback are most of a small query's
cost, and a SELECT outside a transaction sees one committed state.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from app.adapters.db import engine as engine_module
from app.adapters.db.engine import is_sqlite_memory


class ChangeProbe:
    """``stamp()`` is a value that differs from every earlier one after any commit."""

    def __init__(self, path: str) -> None:
        # Never writes and never opens a transaction, so it holds no lock a writer waits
        # for; mode=rw: an existing database only (ro would need the WAL's -shm file to exist).
        self._conn = sqlite3.connect(
            f"{Path(path).absolute().as_uri()}?mode=rw",
            uri=True,
            check_same_thread=False,
            isolation_level=None,
        )
        # A reader waits for a lock as the pooled connections do (WAL recovery, a checkpoint).
        self._conn.execute(f"PRAGMA busy_timeout={engine_module.SQLITE_BUSY_TIMEOUT_MS}")
        self._lock = threading.Lock()

    def stamp(self) -> int:
        with self._lock:
            return self._stamp()

    def _stamp(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def read(self, sql: str, last: int | None) -> tuple[int, list[Any] | None]:
        """The stamp, and the rows of ``sql`` (a statement without parameters) unless the
        stamp is ``last``: read after the stamp, so that a commit in between changes the next
        one."""
        with self._lock:
            stamp = self._stamp()
            if stamp == last:
                return stamp, None
            return stamp, self._conn.execute(sql).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_PROBES: weakref.WeakKeyDictionary[Engine, ChangeProbe | None] = weakref.WeakKeyDictionary()
_PROBES_LOCK = threading.Lock()


def probe_for(engine: Engine) -> ChangeProbe | None:
    """The probe of ``engine``'s database, made on first use; ``None`` when it cannot have one
    (not SQLite, in memory, or the file cannot be opened)."""
    try:
        return _PROBES[engine]
    except KeyError:
        pass
    with _PROBES_LOCK:
        if engine in _PROBES:
            return _PROBES[engine]
        probe: ChangeProbe | None = None
        url = engine.url
        if (
            url.get_backend_name() == "sqlite"
            and not is_sqlite_memory(url)
            and url.database
            and "uri" not in url.query  # a URI filename (shared memory, options): ask each time
        ):
            try:
                probe = ChangeProbe(url.database)
                probe.stamp()
            except sqlite3.Error:
                probe = None
        _PROBES[engine] = probe
        if probe is not None:
            weakref.finalize(engine, probe.close)
        return probe

"""Database engine and sessions built from a URL (SQLite by default, Postgres by URL).

SQLite connections get ``journal_mode=WAL`` (file databases), ``foreign_keys=ON`` and a busy
timeout; the folder of a SQLite file is created on demand. SQLAlchemy (not pysqlite) begins
SQLite transactions, so that a writer can ask for ``BEGIN IMMEDIATE`` — the database's write lock
taken at the start, which serialises changes across processes (``immediate_engine``). Postgres needs the optional
``postgres`` extra (psycopg); a missing driver is reported as ``DatabaseConfigError``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from app.adapters.db.direct import DirectStatement

SQLITE_BUSY_TIMEOUT_MS = 5000
IMMEDIATE = "numascope_immediate"


class DatabaseConfigError(ValueError):
    """The database URL is malformed or names a driver that is not installed."""


def parse_url(url: str | URL) -> URL:
    try:
        return make_url(url)
    except ArgumentError as err:
        raise DatabaseConfigError(f"database_url {str(url)!r} is not a valid URL: {err}") from None


def is_sqlite_memory(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def ensure_sqlite_folder(url: URL) -> None:
    """Create the folder of a SQLite database file (``sqlite:///./var/x.db`` -> ``./var``).
    A folder (or file) this process cannot write is a ``DatabaseConfigError`` naming it and the
    UID, not SQLite's "unable to open database file" (WAL needs the folder writable too: the
    ``-wal`` and ``-shm`` files are created beside the database)."""
    if url.get_backend_name() != "sqlite" or is_sqlite_memory(url):
        return
    database = url.database or ""
    if database.startswith("file:"):  # URI filenames: leave them to SQLite
        return
    path = Path(database).expanduser()
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DatabaseConfigError(
            _unusable("folder", folder, f"cannot be created ({err.strerror})")
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DatabaseConfigError(_unusable("folder", folder, "is not writable"))
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise DatabaseConfigError(_unusable("file", path, "is not readable and writable"))


def _unusable(kind: str, path: Path, what: str) -> str:
    return (
        f"the database {kind} {path.absolute()} {what} by UID {os.getuid()} "
        f"(GID {os.getgid()}): give that user the "
        "directory (for a container, a volume owned by it, e.g. chown 10001:10001) or point "
        "NUMASCOPE_DATABASE_URL elsewhere"
    )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, wal: bool) -> None:
    # pysqlite's own transaction handling defers BEGIN; take it over (see _sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        if wal:
            cursor.execute("PRAGMA journal_mode=WAL")
    finally:
        cursor.close()


def make_engine(url: str | URL, *, echo: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets its pragmas and folder, ``sqlite://`` one shared
    in-memory connection."""
    parsed = parse_url(url)
    kwargs: dict[str, Any] = {"echo": echo}
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite:
        ensure_sqlite_folder(parsed)
        kwargs["connect_args"] = {"check_same_thread": False}
        if is_sqlite_memory(parsed):
            kwargs["poolclass"] = StaticPool
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(parsed, **kwargs)
    except NoSuchModuleError as err:
        raise DatabaseConfigError(
            f"database_url uses an unknown dialect or driver ({err}); "
            "for Postgres install the 'postgres' extra: pip install 'numascope[postgres]'"
        ) from None
    except ModuleNotFoundError as err:
        raise DatabaseConfigError(
            f"the database driver for {parsed.drivername!r} is not installed ({err.name}); "
            "for Postgres install the 'postgres' extra: pip install 'numascope[postgres]'"
        ) from None
    if sqlite:
        wal = not is_sqlite_memory(parsed)
        event.listen(
            engine,
            "connect",
            lambda conn, record: _sqlite_pragmas(conn, record, wal=wal),
        )
        event.listen(engine, "begin", _sqlite_begin)
    return engine


_BEGIN = DirectStatement(text("BEGIN"))
_BEGIN_IMMEDIATE = DirectStatement(text("BEGIN IMMEDIATE"))


def _sqlite_begin(conn: Any) -> None:
    immediate = conn.get_execution_options().get(IMMEDIATE, False)
    (_BEGIN_IMMEDIATE if immediate else _BEGIN).rows(conn, {})


def immediate_engine(engine: Engine) -> Engine:
    """``engine`` whose transactions take the write lock when they begin (SQLite's
    ``BEGIN IMMEDIATE``; other databases lock rows with ``SELECT … FOR UPDATE`` instead)."""
    return engine.execution_options(**{IMMEDIATE: True})


def immediate_connection(engine: Engine) -> Connection:
    """A connection of ``engine`` whose transactions take the write lock when they begin, as
    ``immediate_engine``'s do (the option set on the connection: no engine copy each time)."""
    return engine.connect().execution_options(**{IMMEDIATE: True})


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits when the block ends and rolls back if it raises."""
    session = Session(engine)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()

"""Core statements run straight on a transaction's DBAPI connection (issue 20 pt 8).

``Connection.execute`` of a cached Core statement spends about 17 µs of Python (events, the
execution context, the result object) around the 1 µs the driver takes; a node's write
transaction runs several per admission. A ``DirectStatement`` is compiled once per dialect —
the SQL text, the parameter order and the types' bind processors, what SQLAlchemy itself sends
— and run by the dialect's ``do_execute`` on the connection's DBAPI connection, inside the
transaction the ``Connection`` began and later commits or rolls back.

Errors come out as ``Connection.execute`` raises them: a driver error as its SQLAlchemy class
(``DBAPIError.instance``: ``IntegrityError``, ``OperationalError``…), a connection found lost
invalidated first (``connection_invalidated``), a value a bind processor refuses as a
``StatementError``. Not for statements whose results need the types' result processing: rows
come back as the driver gives them.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    #: Parameter names in the order of a positional paramstyle (``None``: named).
    order: tuple[str, ...] | None
    processors: tuple[tuple[str, Callable[[Any], Any]], ...]


class DirectStatement:
    """A Core statement (``column_keys``: the columns an INSERT sets) run on the DBAPI
    connection of an open ``Connection``."""

    def __init__(self, statement: ClauseElement, column_keys: Sequence[str] | None = None):
        self.statement = statement
        self.column_keys = None if column_keys is None else list(column_keys)
        self._by_dialect: weakref.WeakKeyDictionary[Dialect, _Compiled] = (
            weakref.WeakKeyDictionary()
        )

    def _compiled(self, dialect: Dialect) -> _Compiled:
        found = self._by_dialect.get(dialect)
        if found is None:
            compiled = self.statement.compile(dialect=dialect, column_keys=self.column_keys)
            assert isinstance(compiled, SQLCompiler)
            processors = []
            for key, bind in compiled.binds.items():
                process = bind.type.dialect_impl(dialect).bind_processor(dialect)
                if process is not None:
                    processors.append((key, process))
            order = tuple(compiled.positiontup or ()) if compiled.positional else None
            found = _Compiled(compiled.string, order, tuple(processors))
            self._by_dialect[dialect] = found
        return found

    def sql(self, dialect: Dialect) -> str:
        """The statement's SQL text for ``dialect``."""
        return self._compiled(dialect).sql

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """Run the statement with ``params`` in ``conn``'s transaction; the rows it returns
        (none for a statement without a result)."""
        dialect = conn.dialect
        compiled = self._compiled(dialect)
        try:
            values = dict(params)
            for key, process in compiled.processors:
                values[key] = process(values[key])
            bound: Any = (
                values if compiled.order is None else tuple(values[k] for k in compiled.order)
            )
        except Exception as err:  # what SQLAlchemy raises for a value it cannot bind
            raise _wrapped(conn, compiled.sql, dict(params), err, invalidated=False) from err
        dbapi_connection = conn.connection.dbapi_connection
        assert dbapi_connection is not None  # an open connection in a transaction
        cursor = None
        try:
            cursor = dbapi_connection.cursor()
            dialect.do_execute(cursor, compiled.sql, bound)
            return list(cursor.fetchall()) if cursor.description is not None else []
        except dialect.loaded_dbapi.Error as err:
            lost = dialect.is_disconnect(err, dbapi_connection, cursor)
            wrapped = _wrapped(conn, compiled.sql, bound, err, invalidated=lost)
            if lost:
                conn.invalidate(err)
            raise wrapped from err
        finally:
            if cursor is not None:
                with contextlib.suppress(dialect.loaded_dbapi.Error):  # its connection was lost
                    cursor.close()


def _wrapped(
    conn: Connection, sql: str, params: Any, err: Exception, *, invalidated: bool
) -> StatementError:
    """``err`` as ``Connection.execute`` raises it (``params``: as it shows them)."""
    return DBAPIError.instance(
        sql,
        params,
        err,
        conn.dialect.loaded_dbapi.Error,
        hide_parameters=conn.engine.hide_parameters,
        connection_invalidated=invalidated,
        dialect=conn.dialect,
    )

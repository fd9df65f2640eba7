"""Repository of the simulated nodes' tables: definitions, versions and the admission log.

Reads are plain sessions. A change goes through ``write(engine, node_id)``: one transaction that
first takes the node's write lock — ``BEGIN IMMEDIATE`` on SQLite (the whole database, across
processes), ``SELECT … FOR UPDATE`` of the node's row on PostgreSQL — so that changes of one node
through different workers or replicas are serialised, and reads the node's committed
``version``. The caller appends log rows, bumps the version, writes its state files and then
``commit``s; leaving the block without a commit rolls everything back.

Each row carries ``seq``, its number in the node's own log (1, 2, 3… in log order), the entry
number every page, link and export shows; ``id`` is global to all nodes. The newest row of a
node is never trimmed, so a number is never given twice.

Dry runs are logged like admissions but only the newest ``DRY_RUN_RETENTION`` of a node are
kept (trimmed in the transaction that adds one), so they cannot grow the log without bound;
the newest dry-run submission is kept whole, however long, so that all its verdicts can be
paged through (``batch_totals``, ``log_rows(batch=…, offset=…)``).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from app.adapters.db.change_probe import probe_for
from app.adapters.db.direct import DirectStatement
from app.adapters.db.engine import immediate_connection
from app.adapters.db.tables import (
    ACTION_ADMIT,
    ACTION_DRY_RUN,
    ACTION_REMOVE,
    AdmissionRecord,
    NewLogRow,
    NodeRecord,
    as_utc,
)

#: Dry-run rows kept per node (older ones are deleted when a new one is logged).
DRY_RUN_RETENTION = 200


@dataclass(frozen=True, slots=True)
class NodeVersion:
    id: int
    name: str
    version: int


@dataclass(frozen=True, slots=True)
class LogEvent:
    """An admission or removal of the log, for replays and reconciliation."""

    action: str
    admitted: bool
    uid: str
    key: str
    manifest: str
    at: datetime


_NODES = NodeRecord.__table__  # type: ignore[attr-defined]
_LOG = AdmissionRecord.__table__  # type: ignore[attr-defined]
#: The columns of a log row as written (all but ``id``), and as built (``NewLogRow``).
_LOG_COLUMNS = tuple(c.name for c in _LOG.columns if c.name != "id")
_ROW_COLUMNS = tuple(name for name in _LOG_COLUMNS if name != "seq")
# The statements of a change, built once and run on the transaction's DBAPI connection
# (``direct``), without the ORM's unit of work or Core's execution overhead (issue 20 pt 8).
_VERSION_OF = sa_select(_NODES.c.version).where(_NODES.c.id == bindparam("node_id"))
_LOCKED_VERSION_OF = DirectStatement(_VERSION_OF.with_for_update())  # not SQLite
_UNLOCKED_VERSION_OF = DirectStatement(_VERSION_OF)  # SQLite: BEGIN IMMEDIATE locked it
_LAST_SEQ = DirectStatement(
    sa_select(func.max(_LOG.c.seq)).where(_LOG.c.node_id == bindparam("node_id"))
)
_SET_VERSION = DirectStatement(
    update(_NODES).where(_NODES.c.id == bindparam("node_id")).values(version=bindparam("version"))
)
_INSERT_ROW = DirectStatement(insert(_LOG).returning(_LOG.c.id), _LOG_COLUMNS)
# Several rows at once: one multi-row INSERT (SQLAlchemy's "insertmanyvalues"), not one
# round trip each.
_INSERT_ROWS = insert(_LOG).returning(_LOG.c.id, sort_by_parameter_order=True)


class NodeWrite:
    """The open write transaction of one node (``write``): its committed ``version`` as read
    under the lock, the changes made in it, ``commit``. Its statements run on ``connection``;
    an ORM ``session`` joins the transaction only where one is asked for (a restart, a
    deletion, trimming dry runs)."""

    def __init__(self, connection: Connection, node_id: int, version: int) -> None:
        self.connection = connection
        self.node_id = node_id
        self.version = version
        self.committed = False
        self._session: Session | None = None

    @property
    def session(self) -> Session:
        """An ORM session in this transaction (it flushes into it; ``commit`` commits)."""
        if self._session is None:
            self._session = Session(
                bind=self.connection,
                expire_on_commit=False,
                join_transaction_mode="rollback_only",
            )
        return self._session

    @property
    def record(self) -> NodeRecord:
        """The node's row as the transaction sees it (read on first use: only a restart
        needs its definition)."""
        record = self.session.get(NodeRecord, self.node_id)
        assert record is not None  # the row is locked by this transaction
        return record

    def add(self, records: Sequence[AdmissionRecord]) -> None:
        """Append the rows of ``records`` (``add_rows``) and set their ``seq`` and ``id``."""
        rows = [cast(NewLogRow, {name: getattr(r, name) for name in _ROW_COLUMNS}) for r in records]
        for r, (row_id, seq) in zip(records, self.add_rows(rows), strict=True):
            r.id, r.seq = row_id, seq

    def add_rows(self, rows: Sequence[NewLogRow]) -> list[tuple[int, int]]:
        """Append log rows, numbering them after the node's newest entry (``seq``); their
        ``(id, seq)``. The write lock makes the read and the insert one step: no other
        transaction can number a row of this node in between, whatever the worker or
        replica. The database refuses bad values here, before any file is written."""
        if not rows:
            return []
        conn = self.connection
        ((last,),) = _LAST_SEQ.rows(conn, {"node_id": self.node_id})
        first = int(last or 0) + 1
        values = [{**row, "seq": first + n} for n, row in enumerate(rows)]
        if len(values) == 1:
            ((row_id,),) = _INSERT_ROW.rows(conn, values[0])
            ids = [row_id]
        else:
            ids = list(conn.execute(_INSERT_ROWS, values).scalars().all())
        return [(int(row_id), first + n) for n, row_id in enumerate(ids)]

    def bump(self) -> int:
        """Increment the node's version (written in this transaction); the new version."""
        self.version += 1
        params = {"node_id": self.node_id, "version": self.version}
        _SET_VERSION.rows(self.connection, params)
        return self.version

    def redefine(self, *, release: str, kubelet_config: str) -> None:
        """Change the node's release and configuration (a kubelet restarted under another
        release), in this transaction."""
        record = self.record
        record.release = release
        record.kubelet_config = kubelet_config
        self.session.add(record)
        self.session.flush()

    def trim_dry_runs(self, keep_batch: str = "") -> None:
        """Delete the node's dry-run rows beyond ``DRY_RUN_RETENTION``, except those of
        ``keep_batch`` (the submission just logged)."""
        node_id = self.node_id
        keep = self.connection.execute(
            sa_select(_LOG.c.id)
            .where(_LOG.c.node_id == node_id)
            .where(_LOG.c.action == ACTION_DRY_RUN)
            .order_by(_LOG.c.id.desc())
            .offset(DRY_RUN_RETENTION)
            .limit(1)
        ).scalar()
        if keep is not None:
            self.connection.execute(
                delete(_LOG)
                .where(_LOG.c.node_id == node_id)
                .where(_LOG.c.action == ACTION_DRY_RUN)
                .where(_LOG.c.id <= keep)
                .where(_LOG.c.batch != keep_batch)
            )

    def commit(self) -> None:
        if self._session is not None:
            self._session.flush()
        self.connection.commit()
        self.committed = True

    def close(self) -> None:
        """Roll back what is not committed and let the session go."""
        if self._session is not None:
            self._session.close()
        if not self.committed:
            self.connection.rollback()


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    """A write-locking connection of ``engine`` in a transaction; rolled back
    unless committed (``NodeWrite.commit``), returned to the pool always."""
    with immediate_connection(engine) as conn:
        conn.begin()
        yield conn


@contextmanager
def write(engine: Engine, node_id: int) -> Iterator[NodeWrite | None]:
    """The node's write transaction (``None`` when the node no longer exists)."""
    with _transaction(engine) as conn:
        query = _UNLOCKED_VERSION_OF if engine.dialect.name == "sqlite" else _LOCKED_VERSION_OF
        found = query.rows(conn, {"node_id": node_id})
        version = found[0][0] if found else None
        if version is None:
            yield None
            return
        tx = NodeWrite(conn, node_id, int(version))
        try:
            yield tx
        finally:
            tx.close()


@contextmanager
def create(engine: Engine, record: NodeRecord) -> Iterator[NodeWrite]:
    """Insert a node's definition in a write transaction the caller commits."""
    with _transaction(engine) as conn:
        tx = NodeWrite(conn, 0, 0)
        try:
            tx.session.add(record)
            tx.session.flush()
            assert record.id is not None
            tx.node_id, tx.version = record.id, int(record.version)
            yield tx
        finally:
            tx.close()


_VERSIONS = DirectStatement(sa_select(_NODES.c.id, _NODES.c.name, _NODES.c.version))
_LAST_VERSIONS: weakref.WeakKeyDictionary[Engine, tuple[int, dict[str, NodeVersion]]] = (
    weakref.WeakKeyDictionary()
)


def versions(engine: Engine) -> dict[str, NodeVersion]:
    """Every node's id and committed version by name (one small query). Every request asks
    it, so it runs as one plain statement: a tenth of what an ORM session costs. A single
    SELECT sees one committed state on both databases. On a SQLite file it runs on the change
    probe's connection (``change_probe``), and not at all while the database's change counter
    stays where it was at the last query: the answer is that query's."""
    sql = _VERSIONS.sql(engine.dialect)
    probe = probe_for(engine)
    if probe is None:
        return _found(_pooled_rows(engine, sql))
    seen = _LAST_VERSIONS.get(engine)
    stamp, rows = probe.read(sql, None if seen is None else seen[0])
    if rows is None:
        assert seen is not None
        return dict(seen[1])
    found = _found(rows)
    _LAST_VERSIONS[engine] = (stamp, found)
    return dict(found)


def _found(rows: Sequence[Any]) -> dict[str, NodeVersion]:
    return {name: NodeVersion(int(i), name, int(v)) for i, name, v in rows if i is not None}


def _pooled_rows(engine: Engine, sql: str) -> list[Any]:
    """The rows of ``sql`` on a pooled DBAPI connection."""
    conn = engine.raw_connection()
    try:
        cursor = conn.cursor()
        try:
            cursor.execute(sql)
            rows = cursor.fetchall()
        finally:
            cursor.close()
        conn.rollback()  # PostgreSQL opened a transaction for the SELECT; end it
    except engine.dialect.loaded_dbapi.Error as err:
        # A plain DBAPI statement bypasses SQLAlchemy's disconnect handling: drop the
        # connection here, or the pool's rollback on return fails on a lost server and logs
        # a traceback for what the outage handler already answers as a 503.
        conn.invalidate(err)
        raise
    finally:
        conn.close()
    return list(rows)


def node_version(engine: Engine, node_id: int) -> int | None:
    with Session(engine) as session:
        v = session.exec(select(NodeRecord.version).where(col(NodeRecord.id) == node_id)).first()
    return None if v is None else int(v)


def definitions(engine: Engine, names: Sequence[str] | None = None) -> list[NodeRecord]:
    """Node rows (all, or those named), oldest first."""
    query = select(NodeRecord).order_by(col(NodeRecord.id))
    if names is not None:
        query = query.where(col(NodeRecord.name).in_(list(names)))
    with Session(engine, expire_on_commit=False) as session:
        rows = list(session.exec(query))
        for r in rows:
            session.expunge(r)
        return rows


def rejected_count(engine: Engine, node_id: int) -> int:
    with Session(engine) as session:
        n = session.exec(
            select(func.count())
            .select_from(AdmissionRecord)
            .where(col(AdmissionRecord.node_id) == node_id)
            .where(col(AdmissionRecord.action) == ACTION_ADMIT)
            .where(col(AdmissionRecord.admitted).is_(False))
        ).one()
    return int(n)


def events(engine: Engine, node_id: int) -> list[LogEvent]:
    """The node's admissions and removals, oldest first."""
    with Session(engine) as session:
        rows = session.exec(
            select(AdmissionRecord)
            .where(col(AdmissionRecord.node_id) == node_id)
            .where(col(AdmissionRecord.action).in_((ACTION_ADMIT, ACTION_REMOVE)))
            .order_by(col(AdmissionRecord.id))
        ).all()
        return [
            LogEvent(
                r.action,
                r.admitted,
                r.uid,
                f"{r.namespace}/{r.name}",
                r.manifest,
                as_utc(r.created_at),
            )
            for r in rows
        ]


def history(engine: Engine, node_id: int) -> list[AdmissionRecord]:
    """Every row of the node's log (dry runs included), oldest first."""
    query = (
        select(AdmissionRecord)
        .where(col(AdmissionRecord.node_id) == node_id)
        .order_by(col(AdmissionRecord.id))
    )
    with Session(engine, expire_on_commit=False) as session:
        return list(session.exec(query))


def acknowledged(log: Sequence[LogEvent]) -> dict[str, LogEvent]:
    """The pods the log says are on the node (admitted and not removed since), by uid, in
    admission order."""
    on_node: dict[str, LogEvent] = {}
    for e in log:
        if e.action == ACTION_REMOVE:
            on_node.pop(e.uid, None)
        elif e.admitted:
            on_node[e.uid] = e
    return on_node


def log_rows(
    engine: Engine,
    node_id: int,
    *,
    limit: int,
    batch: str | None = None,
    offset: int = 0,
    dry_runs: bool = True,
) -> list[AdmissionRecord]:
    """The node's log, newest first (or one submission's rows, in order, from ``offset``);
    ``dry_runs=False`` leaves dry runs out."""
    query = select(AdmissionRecord).where(col(AdmissionRecord.node_id) == node_id)
    if not dry_runs:
        query = query.where(col(AdmissionRecord.action) != ACTION_DRY_RUN)
    if batch is not None:
        query = query.where(col(AdmissionRecord.batch) == batch).order_by(col(AdmissionRecord.id))
    else:
        query = query.order_by(col(AdmissionRecord.id).desc())
    query = query.offset(max(0, offset)).limit(max(1, min(limit, 1000)))
    with Session(engine, expire_on_commit=False) as session:
        rows = list(session.exec(query))
        for r in rows:
            session.expunge(r)
        return rows


def batch_totals(engine: Engine, node_id: int, batch: str) -> list[tuple[bool, str, int]]:
    """How many rows of one submission were admitted or rejected, by reason:
    ``(admitted, reason, count)``, most first."""
    count = func.count(col(AdmissionRecord.id))
    query = (
        sa_select(col(AdmissionRecord.admitted), col(AdmissionRecord.reason), count)
        .where(col(AdmissionRecord.node_id) == node_id)
        .where(col(AdmissionRecord.batch) == batch)
        .group_by(col(AdmissionRecord.admitted), col(AdmissionRecord.reason))
        .order_by(count.desc(), col(AdmissionRecord.reason))
    )
    with Session(engine) as session:
        return [(bool(a), str(r), int(n)) for a, r, n in session.execute(query).all()]


def delete_node(engine: Engine, node_id: int) -> bool:
    """Delete a node and its log in one write transaction; ``False`` if it was gone."""
    with write(engine, node_id) as tx:
        if tx is None:
            return False
        tx.connection.execute(delete(_LOG).where(_LOG.c.node_id == node_id))
        tx.connection.execute(delete(_NODES).where(_NODES.c.id == node_id))
        tx.commit()
    return True

"""``DirectStatement`` writes what ``Connection.execute`` writes and raises what it raises
(SQLite here; PostgreSQL too when ``NUMASCOPE_TEST_POSTGRES_URL`` names a server)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import Engine, bindparam, insert, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError, StatementError

from app.adapters.db.direct import DirectStatement
from app.adapters.db.engine import make_engine
from app.adapters.db.migrate import upgrade_head
from app.adapters.db.tables import AdmissionRecord, NodeRecord
from tests.fixtures.log_rows import log_row_values
from tests.helpers import postgres_database

_LOG = AdmissionRecord.__table__  # type: ignore[attr-defined]
_NODES = NodeRecord.__table__  # type: ignore[attr-defined]
_COLUMNS = [c.name for c in _LOG.columns if c.name != "id"]
_INSERT = DirectStatement(insert(_LOG).returning(_LOG.c.id), _COLUMNS)


@pytest.fixture(params=["sqlite", "postgresql"], scope="module")
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('direct') / 'direct.db'}"
        yield from _migrated(url)
        return
    with postgres_database("numascope_test") as url:
        yield from _migrated(url)


def _migrated(url: Any) -> Iterator[Engine]:
    engine = make_engine(url)
    upgrade_head(engine)
    with engine.begin() as conn:
        conn.execute(
            insert(_NODES).values(
                name="n",
                topology="t",
                topology_kind="preset",
                kubelet_config="",
                release="1.35",
                created_at=datetime.now(UTC),
            )
        )
    yield engine
    engine.dispose()


def _raw_row(engine: Engine, row_id: int) -> tuple[Any, ...]:
    """The row as the driver reads it back, no type processing (the stored values)."""
    names = ", ".join(_COLUMNS)
    conn = engine.raw_connection()
    try:
        cursor = conn.cursor()
        placeholder = "?" if engine.dialect.name == "sqlite" else "%s"
        cursor.execute(f"SELECT {names} FROM admissions WHERE id = {placeholder}", (row_id,))
        row = cursor.fetchone()
        cursor.close()
        conn.rollback()
    finally:
        conn.close()
    assert row is not None
    return tuple(row)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(row=log_row_values)
def test_a_direct_insert_stores_what_core_stores(engine: Engine, row: dict[str, Any]) -> None:
    seq = uuid.uuid4().int % 2**30
    with engine.connect() as conn, conn.begin():
        core_id = conn.execute(
            insert(_LOG).returning(_LOG.c.id), {**row, "node_id": 1, "seq": seq}
        ).scalar_one()
        ((direct_id,),) = _INSERT.rows(conn, {**row, "node_id": 1, "seq": seq + 1})
    assert direct_id == core_id + 1
    core, direct = _raw_row(engine, core_id), _raw_row(engine, direct_id)
    at = _COLUMNS.index("seq")
    assert direct[:at] + direct[at + 1 :] == core[:at] + core[at + 1 :]


def test_a_direct_select_returns_the_driver_rows(engine: Engine) -> None:
    query = DirectStatement(
        select(_NODES.c.id, _NODES.c.name).where(_NODES.c.name == bindparam("n"))
    )
    with engine.connect() as conn, conn.begin():
        assert query.rows(conn, {"n": "n"}) == [(1, "n")]
        assert query.rows(conn, {"n": "none"}) == []


def test_a_refused_row_raises_what_core_raises(engine: Engine) -> None:
    row = {
        "node_id": 1, "seq": 7, "batch": "b", "action": "admit", "namespace": "x", "name": "p",
        "uid": "u", "admitted": True, "reason": "", "message": "", "manifest": "",
        "created_at": datetime.now(UTC),
    }  # fmt: skip
    with engine.connect() as conn:
        conn.begin()
        _INSERT.rows(conn, row)
        with pytest.raises(IntegrityError) as direct:
            _INSERT.rows(conn, row)
        conn.rollback()
        conn.begin()
        conn.execute(insert(_LOG), row)
        with pytest.raises(IntegrityError) as core:
            conn.execute(insert(_LOG), row)
        conn.rollback()
    assert type(direct.value.orig) is type(core.value.orig)
    assert direct.value.connection_invalidated is False


def test_a_value_the_type_refuses_is_a_statement_error(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("only SQLite's DATETIME has a bind processor that checks the value")
    row = {
        "node_id": 1, "seq": 8, "batch": "b", "action": "admit", "namespace": "x", "name": "p",
        "uid": "u", "admitted": True, "reason": "", "message": "", "manifest": "",
        "created_at": "not a datetime",
    }  # fmt: skip
    with engine.connect() as conn, conn.begin():
        with pytest.raises(StatementError) as direct:
            _INSERT.rows(conn, row)
        with pytest.raises(StatementError) as core:
            conn.execute(insert(_LOG), row)
    assert type(direct.value.orig) is type(core.value.orig)


def test_a_lost_connection_is_invalidated(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'lost.db'}")
    query = select(text("1"))
    raised: list[DBAPIError] = []
    for run in (DirectStatement(query).rows, lambda conn, params: conn.execute(query, params)):
        with engine.connect() as conn:
            dbapi_connection = conn.connection.dbapi_connection
            assert dbapi_connection is not None
            dbapi_connection.close()  # what a lost server looks like to the driver
            with pytest.raises(DBAPIError) as lost:
                run(conn, {})
            assert lost.value.connection_invalidated and conn.invalidated
            raised.append(lost.value)
    direct, core = raised
    assert type(direct) is type(core) and type(direct.orig) is type(core.orig)
    engine.dispose()

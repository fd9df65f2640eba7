"""Log rows a change builds as plain dicts (``NewLogRow``, ``NodeWrite.add_rows``) are stored as
the ORM rows of ``NodeWrite.add`` are: same columns, same values, same numbering."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, get_type_hints

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from app.adapters.db import node_repo
from app.adapters.db.tables import AdmissionRecord, NewLogRow, NodeRecord
from tests.fixtures.log_rows import log_row_values
from tests.helpers import migrated_engine

_LOG = AdmissionRecord.__table__  # type: ignore[attr-defined]


def test_a_log_row_has_every_column_but_id_and_seq() -> None:
    columns = [c.name for c in _LOG.columns]
    assert list(get_type_hints(NewLogRow)) == [c for c in columns if c not in ("id", "seq")]


def _node(engine: Engine, name: str) -> int:
    record = NodeRecord(
        name=name, topology="t", topology_kind="preset", kubelet_config="", release="1.35"
    )
    with node_repo.create(engine, record) as tx:
        tx.commit()
    assert record.id is not None
    return record.id


def _stored(engine: Engine, node_id: int) -> list[tuple[Any, ...]]:
    """The node's rows as the driver reads them back (the stored values), ``id`` last."""
    names = ", ".join(c.name for c in _LOG.columns if c.name not in ("id", "node_id"))
    conn = engine.raw_connection()
    try:
        cursor = conn.cursor()
        cursor.execute(
            f"SELECT {names}, id FROM admissions WHERE node_id = ? ORDER BY id", (node_id,)
        )
        return [tuple(r) for r in cursor.fetchall()]
    finally:
        conn.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(log_row_values, min_size=1, max_size=3))
def test_dict_rows_are_stored_as_orm_rows(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    with migrated_engine(f"sqlite:///{tmp_path / uuid.uuid4().hex}.db") as engine:
        orm_id, dict_id = _node(engine, "orm"), _node(engine, "dict")
        with node_repo.write(engine, orm_id) as tx:
            assert tx is not None
            records = [AdmissionRecord(node_id=orm_id, **r) for r in rows]
            tx.add(records)
            tx.commit()
        with node_repo.write(engine, dict_id) as tx:
            assert tx is not None
            built = [NewLogRow(node_id=dict_id, **r) for r in rows]  # type: ignore[typeddict-item]
            numbered = tx.add_rows(built)
            tx.commit()
        orm, plain = _stored(engine, orm_id), _stored(engine, dict_id)
        assert [row[:-1] for row in plain] == [row[:-1] for row in orm]
        assert [(r.id, r.seq) for r in records] == [(row[-1], row[0]) for row in orm]
        assert numbered == [(row[-1], row[0]) for row in plain]
        assert [seq for _, seq in numbered] == list(range(1, len(rows) + 1))

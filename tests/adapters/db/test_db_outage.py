"""``app.adapters.db.outage``: which real database failures are an outage (a 503 that will
pass), in what words, and one log line per outage."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text

from app.adapters.db import outage
from app.adapters.db.engine import make_engine
from tests.processes import free_port


def locked_error(tmp_path: Path) -> sqlite3.OperationalError:
    path = tmp_path / "x.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (a)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError) as caught:
            other.execute("BEGIN IMMEDIATE")
        return caught.value
    finally:
        other.close()
        holder.close()


def test_a_locked_sqlite_file_is_an_outage(tmp_path: Path) -> None:
    err = locked_error(tmp_path)
    assert outage.reason(err) == "the database is locked by another writer"
    wrapped = sa_exc.OperationalError("BEGIN IMMEDIATE", {}, err)
    assert outage.reason(wrapped) == "the database is locked by another writer"
    try:  # a service's own error raised while handling it: found through the chain
        try:
            raise wrapped
        except sa_exc.OperationalError as inner:
            raise RuntimeError("the change was not made") from inner
    except RuntimeError as outer:
        assert outage.unavailable(outer)


def test_a_missing_table_on_sqlite_is_a_bug_not_an_outage(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'y.db'}")
    with pytest.raises(sa_exc.OperationalError) as caught, engine.connect() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    assert "no such table" in str(caught.value)
    assert outage.reason(caught.value) is None
    engine.dispose()


def test_a_postgresql_that_does_not_answer_is_an_outage() -> None:
    pytest.importorskip("psycopg")
    engine = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/none")
    with pytest.raises(sa_exc.OperationalError) as caught, engine.connect():
        pass
    said = outage.reason(caught.value)
    assert said is not None and "127.0.0.1" not in said and "SELECT" not in said
    engine.dispose()


def test_one_line_per_outage(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    err = locked_error(tmp_path)
    now = [100.0]
    record = outage.Outage(quiet=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger=outage.__name__):
        for _ in range(5):  # failures 4 s apart: one outage
            record.noticed(err)
            now[0] += 4.0
        assert record.open and record.count == 1
        now[0] += 10.0  # quiet for longer than 10 s: it is over
        assert not record.open
        record.noticed(err)
    lines = [r.getMessage() for r in caplog.records if "database unavailable" in r.getMessage()]
    assert len(lines) == 2 and record.count == 2
    assert "database is locked" in lines[0]

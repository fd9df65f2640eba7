"""Real server processes: the database URLs the tests run on (SQLite always, PostgreSQL when
``NUMASCOPE_TEST_POSTGRES_URL`` names a server, as ``make test`` arranges)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get("NUMASCOPE_TEST_POSTGRES_URL", "")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file, or a fresh database on the PostgreSQL test server (dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'numascope.db'}"
        return
    if not PG_URL:
        if os.environ.get("NUMASCOPE_REQUIRE_POSTGRES") == "1":
            pytest.fail("NUMASCOPE_TEST_POSTGRES_URL is not set")
        pytest.skip("no PostgreSQL server (set NUMASCOPE_TEST_POSTGRES_URL)")
    name = f"numascope_live_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

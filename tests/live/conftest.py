"""Real server processes: the database URLs the tests run on (SQLite always, PostgreSQL when
``NUMASCOPE_TEST_POSTGRES_URL`` names a server, as ``make test`` arranges)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import postgres_database


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file, or a fresh database on the PostgreSQL test server (dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'numascope.db'}"
        return
    with postgres_database("numascope_live") as url:
        yield url

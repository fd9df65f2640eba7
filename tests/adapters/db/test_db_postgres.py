"""The same schema and node service on PostgreSQL (the supported non-default database).

Runs when ``NUMASCOPE_TEST_POSTGRES_URL`` names a server; ``make test`` starts a throwaway one
with scripts/pg-test-server.sh (CI requires it with ``NUMASCOPE_REQUIRE_POSTGRES=1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from app.adapters.db.migrate import current_revisions, head_revisions
from app.web.app import create_app
from tests.adapters.db.test_db_migrations import check_admission_seq_backfill
from tests.helpers import DB_POD, POD_SCOPE, SMALL, make_settings, postgres_database


@pytest.fixture
def database_url() -> Iterator[str]:
    """A fresh database on the test server, dropped afterwards."""
    with postgres_database("numascope_test") as url:
        yield url


def test_migrations_and_nodes_survive_a_restart_on_postgres(
    database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, database_url=database_url)
    app = create_app(settings)
    engine = app.state.engine
    assert engine.dialect.name == "postgresql"
    assert current_revisions(engine) == head_revisions()
    tables = set(inspect(engine).get_table_names())
    assert "alembic_version" in tables and len(tables) > 1

    nodes = app.state.nodes
    nodes.create("pg-node", SMALL, POD_SCOPE)
    batch = nodes.admit("pg-node", DB_POD)
    assert batch.admitted == 1
    before = str(nodes.reads.snapshot("pg-node").pods[0].pod_cpuset)
    engine.dispose()

    restarted = create_app(settings).state.nodes
    assert restarted.registry.simulated_names() == ["pg-node"]
    (pod,) = restarted.reads.snapshot("pg-node").pods
    assert str(pod.pod_cpuset) == before
    log = restarted.reads.admissions("pg-node")
    assert [(e.action, e.namespace, e.name, e.admitted) for e in log] == [
        ("admit", "prod", "db", True)
    ]


def test_admission_seq_is_backfilled_per_node_on_postgres(database_url: str) -> None:
    check_admission_seq_backfill(database_url)

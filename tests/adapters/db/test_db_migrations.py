"""Database scaffolding: engine pragmas, session scope, and `alembic upgrade head`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from app.adapters.db.engine import DatabaseConfigError, make_engine, session_scope
from app.adapters.db.migrate import (
    ALEMBIC_INI,
    MIGRATIONS_DIR,
    alembic_config,
    current_revisions,
    head_revisions,
    upgrade_head,
)

ROOT = ALEMBIC_INI.parent


def test_make_engine_creates_sqlite_folder_and_sets_pragmas(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "er" / "numascope.db"
    engine = make_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 5000
    assert db.parent.is_dir()
    engine.dispose()


def test_in_memory_sqlite_shares_one_database() -> None:
    engine = make_engine("sqlite://")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT x FROM t")).scalar() == 1


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("not a url", id="malformed"),
        pytest.param("nosuchdialect://x/y", id="unknown-dialect"),
    ],
)
def test_bad_urls_raise_database_config_error(url: str) -> None:
    with pytest.raises(DatabaseConfigError, match=r"database_url|dialect"):
        make_engine(url)


def test_session_scope_commits_and_rolls_back(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 's.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    with session_scope(engine) as session:
        session.exec(text("INSERT INTO t VALUES (1)"))  # type: ignore[call-overload]
    with pytest.raises(RuntimeError), session_scope(engine) as session:
        session.exec(text("INSERT INTO t VALUES (2)"))  # type: ignore[call-overload]
        raise RuntimeError("boom")
    with engine.connect() as conn:
        assert [r[0] for r in conn.execute(text("SELECT x FROM t"))] == [1]


def test_upgrade_head_programmatically(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'var' / 'n.db'}")
    upgrade_head(engine)
    assert "alembic_version" in inspect(engine).get_table_names()
    assert current_revisions(engine) == head_revisions()
    upgrade_head(engine)  # idempotent


def test_alembic_config_points_at_the_migrations_folder() -> None:
    cfg = alembic_config("postgresql://u:p%40ss@h/db")
    assert cfg.get_main_option("script_location") == str(MIGRATIONS_DIR)
    assert cfg.get_main_option("sqlalchemy.url") == "postgresql://u:p%40ss@h/db"
    assert (MIGRATIONS_DIR / "versions").is_dir()


def test_alembic_cli_upgrade_head_on_tmp_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "cli" / "numascope.db"
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url=sqlite:///{db}", "upgrade", "head"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    engine = make_engine(f"sqlite:///{db}")
    assert "alembic_version" in inspect(engine).get_table_names()
    engine.dispose()


def test_alembic_cli_takes_url_from_settings_env(tmp_path: Path) -> None:
    db = tmp_path / "env" / "numascope.db"
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"NUMASCOPE_DATABASE_URL": f"sqlite:///{db}", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert db.is_file()


def check_admission_seq_backfill(url: str) -> None:
    """Revision c3e5a7b90003 numbers the rows already logged per node, in id order, and
    refuses a second row with a node's number (used on SQLite here, on PostgreSQL too)."""
    from alembic import command

    cfg = alembic_config(url)
    cfg.attributes["configure_logger"] = False
    command.upgrade(cfg, "b2d4f6a80002")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for name in ("a", "b"):
                conn.execute(
                    text(
                        "INSERT INTO nodes (name, topology, topology_kind, kubelet_config,"
                        " release, demo, created_at, version) VALUES (:n, 't', 'builtin', '{}',"
                        " '1.37', false, CURRENT_TIMESTAMP, 0)"
                    ),
                    {"n": name},
                )
            ids = dict(conn.execute(text("SELECT name, id FROM nodes")).all())
            # a, b, b, a, b, a: the global ids interleave
            for i, node in enumerate("abbaba"):
                conn.execute(
                    text(
                        "INSERT INTO admissions (node_id, batch, action, namespace, name, uid,"
                        " admitted, reason, message, manifest, created_at) VALUES (:node, :b,"
                        " 'admit', 'ns', :p, :p, true, '', '', '{}', CURRENT_TIMESTAMP)"
                    ),
                    {"node": ids[node], "b": f"batch-{i}", "p": f"pod-{i}"},
                )
        command.upgrade(cfg, "head")
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT n.name, a.name, a.seq FROM admissions a JOIN nodes n"
                    " ON n.id = a.node_id ORDER BY a.id"
                )
            ).all()
        assert [tuple(r) for r in rows] == [
            ("a", "pod-0", 1),
            ("b", "pod-1", 1),
            ("b", "pod-2", 2),
            ("a", "pod-3", 2),
            ("b", "pod-4", 3),
            ("a", "pod-5", 3),
        ]
        uniques = inspect(engine).get_unique_constraints("admissions")
        assert {"name": "uq_admissions_node_id_seq", "column_names": ["node_id", "seq"]} in [
            {"name": u["name"], "column_names": u["column_names"]} for u in uniques
        ]
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO admissions (node_id, seq, batch, action, namespace, name, uid,"
                    " admitted, reason, message, manifest, created_at) VALUES (:node, 3, 'x',"
                    " 'admit', 'ns', 'dup', 'dup', true, '', '', '{}', CURRENT_TIMESTAMP)"
                ),
                {"node": ids["a"]},
            )
        command.downgrade(cfg, "b2d4f6a80002")
        assert "seq" not in {c["name"] for c in inspect(engine).get_columns("admissions")}
    finally:
        engine.dispose()


def test_admission_seq_is_backfilled_per_node_on_sqlite(tmp_path: Path) -> None:
    check_admission_seq_backfill(f"sqlite:///{tmp_path / 'seq.db'}")

"""Database scaffolding: engine pragmas, session scope, and `alembic upgrade head`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

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

"""Run the Alembic migrations in ``migrations/`` programmatically (``alembic upgrade head``).

``create_app`` calls ``upgrade_head`` at startup so a fresh machine gets the schema. The
engine's connection is handed to ``migrations/env.py`` through ``Config.attributes`` so the
same pragmas (and, for ``sqlite://``, the same in-memory database) are used.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from app.adapters.db.engine import immediate_engine

# alembic.ini is only in a checkout (for the ``alembic`` command); the migrations ship inside the
# package (app/migrations links to the top-level folder), so an installed wheel has them.
PROJECT_ROOT = Path(__file__).resolve().parents[3]
ALEMBIC_INI = PROJECT_ROOT / "alembic.ini"
MIGRATIONS_DIR = PROJECT_ROOT / "app" / "migrations"


class MigrationError(RuntimeError):
    """The migrations could not be found or applied."""


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config for this project; ``url`` becomes ``sqlalchemy.url`` when given."""
    if not MIGRATIONS_DIR.is_dir():
        raise MigrationError(f"migrations folder not found at {MIGRATIONS_DIR}")
    cfg = Config(str(ALEMBIC_INI)) if ALEMBIC_INI.is_file() else Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        # ConfigParser interpolation: a literal '%' (URL-encoded passwords) must be doubled.
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


# pg_advisory_xact_lock key of the migration: replicas starting together migrate one by one.
MIGRATION_LOCK_KEY = 0x6E756D61  # "numa"


def upgrade_head(engine: Engine) -> None:
    """Bring the database behind ``engine`` to the newest revision.

    Several processes may start at once on one database (replicas, a restarted pod beside a
    running one): the migration runs under the database's write lock — ``BEGIN IMMEDIATE`` on
    SQLite (waiting the busy timeout), an advisory transaction lock on PostgreSQL — so the
    second waits for the first and then finds the schema at head.
    """
    cfg = alembic_config()
    cfg.attributes["configure_logger"] = False
    sqlite = engine.dialect.name == "sqlite"
    try:
        with (immediate_engine(engine) if sqlite else engine).begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, "head")
    except MigrationError:
        raise
    except Exception as err:
        raise MigrationError(f"alembic upgrade head failed: {err}") from err


def current_revisions(engine: Engine) -> tuple[str, ...]:
    with engine.connect() as connection:
        return tuple(MigrationContext.configure(connection).get_current_heads())


def head_revisions() -> tuple[str, ...]:
    return tuple(ScriptDirectory.from_config(alembic_config()).get_heads())

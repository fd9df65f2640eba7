"""Alembic environment for Numascope.

The database URL comes from, in order: ``alembic -x url=...``; ``sqlalchemy.url`` set on the
Config by a caller (tests); the ``NUMASCOPE_DATABASE_URL`` setting. A caller may also pass an
open connection in ``config.attributes["connection"]`` (``app.adapters.db.migrate``).
SQLite needs ``render_as_batch=True`` for ALTER TABLE.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from app.adapters.db.engine import make_engine
from app.adapters.db.models import metadata

config = context.config

if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = metadata


def database_url() -> str:
    x_url = context.get_x_argument(as_dictionary=True).get("url")
    if x_url:
        return x_url
    ini_url = config.get_main_option("sqlalchemy.url")
    if ini_url:
        return ini_url
    from app.settings import Settings

    return Settings().database_url


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    url = database_url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _configure(given)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(database_url())
    try:
        with engine.connect() as connection:
            _configure(connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

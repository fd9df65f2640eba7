"""``numascope serve``: run the dashboard and API with uvicorn.

Flags override the ``NUMASCOPE_*`` environment, which overrides the defaults in
``app.settings.Settings``. With ``--reload`` or ``--workers N`` (N > 1) uvicorn imports the app
through the factory ``app.web.app:make_app`` in other processes, so the flags are handed over
through the environment. The workers share one truth, the database (``app.services.nodes.service``):
a change through any of them is seen by all on their next request.

A single process migrates a database file or server in a short-lived child process
(``migrate_in_child``) before it builds the app, so the long-running server never imports
alembic (about 10 MiB of the node agent's memory, issue 20 pt 7); the child costs some CPU
once at start. An in-memory ``sqlite://`` can only be migrated by the process that holds it,
so ``create_app`` does that itself, as do the workers of ``--workers N`` and ``--reload``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from app.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI

FACTORY = "app.web.app:make_app"

# The child of ``migrate_in_child``: the database URL is its argument; a configuration or
# migration error is its one line on stderr and exit status 1.
MIGRATE_SCRIPT = """
import sys
from app.adapters.db.engine import DatabaseConfigError, make_engine
from app.adapters.db.migrate import MigrationError, upgrade_head
try:
    engine = make_engine(sys.argv[1])
    upgrade_head(engine)
    engine.dispose()
except (DatabaseConfigError, MigrationError) as err:
    print(err, file=sys.stderr)
    sys.exit(1)
"""


Flag = tuple[tuple[str, ...], dict[str, Any]]


def _flag(*names: str, **kwargs: Any) -> Flag:
    """One settings flag: its names and ``add_argument`` keywords (``default`` is ``None`` so
    that only flags given on the command line override the environment)."""
    return names, {"default": None, **kwargs}


_ON_OFF = {"action": argparse.BooleanOptionalAction}
_SET = {"action": "store_true"}

# Every flag that overrides a setting, by concern, in the order ``--help`` lists them.
SERVER_FLAGS = (
    _flag("--host", help="address to bind (default 127.0.0.1, env NUMASCOPE_HOST)"),
    _flag("--port", type=int, help="TCP port (default 8000, env NUMASCOPE_PORT)"),
)
NODE_FLAGS = (
    _flag("--database-url", help="SQLAlchemy URL (env NUMASCOPE_DATABASE_URL)"),
    _flag("--sysfs", dest="sysfs_root", help="sysfs root (env NUMASCOPE_SYSFS_ROOT)"),
    _flag(
        "--kubelet-state-dir",
        dest="kubelet_root",
        help="kubelet root dir, read only (default /var/lib/kubelet, env NUMASCOPE_KUBELET_ROOT)",
    ),
    _flag(
        "--podresources-socket",
        help="kubelet PodResources socket, with or without unix:// "
        "(env NUMASCOPE_PODRESOURCES_SOCKET)",
    ),
    _flag(
        "--kubelet-config-file",
        help="KubeletConfiguration of the observed kubelet, read only (default "
        "<kubelet-state-dir>/config.yaml if present, env NUMASCOPE_KUBELET_CONFIG_FILE)",
    ),
    _flag(
        "--observe",
        **_ON_OFF,
        help="list the node this process runs on, read-only (default on when the kubelet "
        "state dir or the PodResources socket exists, env NUMASCOPE_OBSERVE)",
    ),
    _flag(
        "--node-name",
        help="name of the observed node (default env NODE_NAME, else the host name)",
    ),
    _flag(
        "--podresources-dir",
        help="serve each simulated node's PodResources on DIR/<node>.sock "
        "(off by default, env NUMASCOPE_PODRESOURCES_DIR)",
    ),
    _flag(
        "--state-dir",
        help="state files of simulated nodes (default ./var/nodes, env NUMASCOPE_STATE_DIR)",
    ),
    _flag(
        "--demo", **_ON_OFF, help="load the demo simulated nodes (default on, env NUMASCOPE_DEMO)"
    ),
    _flag(
        "--simulated",
        **_ON_OFF,
        help="keep simulated nodes in the database (default on; --no-simulated: no database, "
        "only the observed node, the lean node agent; env NUMASCOPE_SIMULATED)",
    ),
    _flag(
        "--hint-search-budget",
        type=int,
        metavar="N",
        help="refuse pods whose topology-hint search would examine more than N NUMA-mask "
        "combinations (default 5000000, 0: no limit, env NUMASCOPE_HINT_SEARCH_BUDGET)",
    ),
    _flag(
        "--cpu-time-budget",
        type=float,
        metavar="SECONDS",
        help="stop an admission or dry run after SECONDS of computing, with 503 (default 20, "
        "env NUMASCOPE_CPU_TIME_BUDGET)",
    ),
    _flag(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="log level (default info, env NUMASCOPE_LOG_LEVEL)",
    ),
)
CLUSTER_FLAGS = (
    _flag("--hub", **_SET, help="run as the fleet hub (env NUMASCOPE_HUB)"),
    _flag(
        "--agents",
        dest="hub_agents",
        metavar="URL[,URL...]",
        help="agents to poll (env NUMASCOPE_HUB_AGENTS)",
    ),
    _flag(
        "--agents-dns",
        dest="hub_agents_dns",
        metavar="NAME:PORT",
        help="headless Service whose A/AAAA records are the agents (env NUMASCOPE_HUB_AGENTS_DNS)",
    ),
    _flag(
        "--demo-fleet",
        type=int,
        metavar="N",
        help="N simulated nodes of the hub's own (env NUMASCOPE_DEMO_FLEET)",
    ),
    _flag(
        "--publish-nrt",
        **_SET,
        help="publish the observed node's NodeResourceTopology (env NUMASCOPE_PUBLISH_NRT)",
    ),
    _flag(
        "--nrt-fingerprint-method",
        choices=["all", "with-exclusive-resources"],
        help="which pods the NodeResourceTopology's pod fingerprint counts (default all, "
        "env NUMASCOPE_NRT_FINGERPRINT_METHOD)",
    ),
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "serve",
        help="run the web dashboard and JSON API",
        description="Run the Numascope dashboard and JSON API (uvicorn).",
    )
    _add_flags(parser, SERVER_FLAGS)
    parser.add_argument(
        "--reload", action="store_true", help="restart when source files change (development)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (default 1); they share the database, which keeps them in step",
    )
    _add_flags(parser, NODE_FLAGS)
    _add_flags(parser.add_argument_group("cluster (hub and agents)"), CLUSTER_FLAGS)
    parser.set_defaults(func=run)


def _add_flags(parser: Any, flags: tuple[Flag, ...]) -> None:
    for names, kwargs in flags:
        parser.add_argument(*names, **kwargs)


# The settings the flags override: each flag's ``dest``, as argparse derives it.
OVERRIDES = tuple(
    kwargs.get("dest", names[0].lstrip("-").replace("-", "_"))
    for names, kwargs in (*SERVER_FLAGS, *NODE_FLAGS, *CLUSTER_FLAGS)
)


def build_settings(args: argparse.Namespace) -> Settings:
    """Settings from the environment with the given flags on top."""
    overrides = {k: getattr(args, k) for k in OVERRIDES if getattr(args, k, None) is not None}
    return Settings(**overrides)


def run(args: argparse.Namespace) -> int:
    try:
        settings = build_settings(args)
    except ValidationError as err:
        print(f"numascope serve: invalid settings:\n{err}", file=sys.stderr)
        return 2
    problem = _flag_conflict(args, settings)
    if problem is not None:
        print(f"numascope serve: {problem}", file=sys.stderr)
        return 2
    if args.reload or args.workers > 1:
        _export_flags(args)
    if args.workers > 1:
        return _run_workers(settings, args.workers)
    if args.reload:
        return _uvicorn(FACTORY, settings, factory=True, reload=True)
    return _run_one(settings)


def _uvicorn(app: FastAPI | str, settings: Settings, **options: Any) -> int:
    """Serve ``app`` (or the factory it names) on the settings' address until stopped."""
    import uvicorn

    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        proxy_headers=True,
        **options,
    )
    return 0


def _flag_conflict(args: argparse.Namespace, settings: Settings) -> str | None:
    """Why these flags cannot run together, or ``None``."""
    if not settings.hub and (settings.hub_agents or settings.hub_agents_dns or settings.demo_fleet):
        return "--agents, --agents-dns and --demo-fleet are the hub's: add --hub"
    if not settings.simulated and (args.demo or settings.podresources_dir is not None):
        return "--demo and --podresources-dir are about simulated nodes: drop --no-simulated"
    if args.workers < 1:
        return "--workers must be at least 1"
    if args.workers > 1 and args.reload:
        return "--reload runs one worker; drop --workers"
    if args.workers > 1 and settings.podresources_dir is not None:
        return "--podresources-dir serves one socket per node and needs --workers 1"
    return None


def _export_flags(args: argparse.Namespace) -> None:
    """Hand the flags to processes that import the factory afresh (the reloader, the workers)
    through their ``NUMASCOPE_*`` variables."""
    for key in OVERRIDES:
        value = getattr(args, key, None)
        if value is not None:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            os.environ[f"NUMASCOPE_{key.upper()}"] = text


def _run_one(settings: Settings) -> int:
    """Serve from this process: 1 when the database cannot be configured or migrated."""
    try:
        app = build_app(settings)
    except MigrationFailed as err:
        print(f"numascope serve: {err}", file=sys.stderr)
        return 1
    except Exception as err:
        # create_app opened (and for an in-memory database migrated) the database itself:
        # SQLAlchemy and alembic are loaded by now, so these imports cost nothing (at the top
        # they would load them into every server, the node agent's too, issue 20 pt 7).
        from app.adapters.db.engine import DatabaseConfigError
        from app.adapters.db.migrate import MigrationError

        if not isinstance(err, DatabaseConfigError | MigrationError):
            raise
        print(f"numascope serve: {err}", file=sys.stderr)
        return 1
    return _uvicorn(app, settings)


def build_app(settings: Settings) -> FastAPI:
    """The app one serving process runs: its database migrated by a child
    (``migrate_in_child``), gc tuned for serving, then ``create_app``."""
    from app.web.app import create_app, tune_gc_for_serving

    migrated = migrate_in_child(settings)
    tune_gc_for_serving()
    return create_app(settings, migrated=migrated)


class MigrationFailed(RuntimeError):
    """The child process could not migrate the database (its message is the child's)."""


def migrate_in_child(settings: Settings) -> bool:
    """Bring the database of ``settings`` to head in a child process; ``False`` when this
    process must do it itself (``sqlite://`` in memory) or nobody should (migrations off)."""
    if not settings.simulated or not settings.migrate_on_startup:
        return False  # no database, or nobody should migrate it
    from app.adapters.db.engine import is_sqlite_memory, parse_url

    if is_sqlite_memory(parse_url(settings.database_url)):
        return False
    import app

    env = dict(os.environ)
    package_root = str(Path(app.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", MIGRATE_SCRIPT, settings.database_url],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise MigrationFailed(lines[-1] if lines else f"migration exited {done.returncode}")
    return True


def _run_workers(settings: Settings, workers: int) -> int:
    """``workers`` uvicorn workers of the factory. The database is migrated and the demo nodes
    are created here first, once, so that the workers start on a ready database (each worker
    then loads the nodes from it and follows the others' changes through it)."""
    from app.adapters.db.engine import DatabaseConfigError
    from app.adapters.db.migrate import MigrationError
    from app.web.app import create_app, tune_gc_for_serving

    tune_gc_for_serving()
    try:
        app = create_app(settings)
    except (DatabaseConfigError, MigrationError) as err:
        print(f"numascope serve: {err}", file=sys.stderr)
        return 1
    if app.state.engine is not None:
        app.state.engine.dispose()
    del app
    return _uvicorn(FACTORY, settings, factory=True, workers=workers)

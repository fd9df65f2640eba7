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


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "serve",
        help="run the web dashboard and JSON API",
        description="Run the Numascope dashboard and JSON API (uvicorn).",
    )
    parser.add_argument(
        "--host", default=None, help="address to bind (default 127.0.0.1, env NUMASCOPE_HOST)"
    )
    parser.add_argument(
        "--port", type=int, default=None, help="TCP port (default 8000, env NUMASCOPE_PORT)"
    )
    parser.add_argument(
        "--reload", action="store_true", help="restart when source files change (development)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (default 1); they share the database, which keeps them in step",
    )
    _add_node_flags(parser)
    _add_cluster_flags(parser)
    parser.set_defaults(func=run)


def _add_node_flags(parser: Any) -> None:
    """Where the nodes come from: the database, the host, the kubelet and the demo."""
    parser.add_argument(
        "--database-url", default=None, help="SQLAlchemy URL (env NUMASCOPE_DATABASE_URL)"
    )
    parser.add_argument(
        "--sysfs", dest="sysfs_root", default=None, help="sysfs root (env NUMASCOPE_SYSFS_ROOT)"
    )
    parser.add_argument(
        "--kubelet-state-dir",
        dest="kubelet_root",
        default=None,
        help="kubelet root dir, read only (default /var/lib/kubelet, env NUMASCOPE_KUBELET_ROOT)",
    )
    parser.add_argument(
        "--podresources-socket",
        default=None,
        help="kubelet PodResources socket, with or without unix:// "
        "(env NUMASCOPE_PODRESOURCES_SOCKET)",
    )
    parser.add_argument(
        "--kubelet-config-file",
        default=None,
        help="KubeletConfiguration of the observed kubelet, read only (default "
        "<kubelet-state-dir>/config.yaml if present, env NUMASCOPE_KUBELET_CONFIG_FILE)",
    )
    parser.add_argument(
        "--observe",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="list the node this process runs on, read-only (default on when the kubelet "
        "state dir or the PodResources socket exists, env NUMASCOPE_OBSERVE)",
    )
    parser.add_argument(
        "--node-name",
        default=None,
        help="name of the observed node (default env NODE_NAME, else the host name)",
    )
    parser.add_argument(
        "--podresources-dir",
        default=None,
        help="serve each simulated node's PodResources on DIR/<node>.sock "
        "(off by default, env NUMASCOPE_PODRESOURCES_DIR)",
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        help="state files of simulated nodes (default ./var/nodes, env NUMASCOPE_STATE_DIR)",
    )
    parser.add_argument(
        "--demo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="load the demo simulated nodes (default on, env NUMASCOPE_DEMO)",
    )
    parser.add_argument(
        "--simulated",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep simulated nodes in the database (default on; --no-simulated: no database, "
        "only the observed node, the lean node agent; env NUMASCOPE_SIMULATED)",
    )
    parser.add_argument(
        "--hint-search-budget",
        type=int,
        default=None,
        metavar="N",
        help="refuse pods whose topology-hint search would examine more than N NUMA-mask "
        "combinations (default 5000000, 0: no limit, env NUMASCOPE_HINT_SEARCH_BUDGET)",
    )
    parser.add_argument(
        "--cpu-time-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop an admission or dry run after SECONDS of computing, with 503 (default 20, "
        "env NUMASCOPE_CPU_TIME_BUDGET)",
    )
    parser.add_argument(
        "--log-level",
        default=None,
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="log level (default info, env NUMASCOPE_LOG_LEVEL)",
    )


def _add_cluster_flags(parser: Any) -> None:
    """The hub and the agents."""
    cluster = parser.add_argument_group("cluster (hub and agents)")
    cluster.add_argument(
        "--hub", action="store_true", default=None, help="run as the fleet hub (env NUMASCOPE_HUB)"
    )
    cluster.add_argument(
        "--agents",
        dest="hub_agents",
        default=None,
        metavar="URL[,URL...]",
        help="agents to poll (env NUMASCOPE_HUB_AGENTS)",
    )
    cluster.add_argument(
        "--agents-dns",
        dest="hub_agents_dns",
        default=None,
        metavar="NAME:PORT",
        help="headless Service whose A/AAAA records are the agents (env NUMASCOPE_HUB_AGENTS_DNS)",
    )
    cluster.add_argument(
        "--demo-fleet",
        dest="demo_fleet",
        type=int,
        default=None,
        metavar="N",
        help="N simulated nodes of the hub's own (env NUMASCOPE_DEMO_FLEET)",
    )
    cluster.add_argument(
        "--publish-nrt",
        action="store_true",
        default=None,
        help="publish the observed node's NodeResourceTopology (env NUMASCOPE_PUBLISH_NRT)",
    )
    cluster.add_argument(
        "--nrt-fingerprint-method",
        dest="nrt_fingerprint_method",
        default=None,
        choices=["all", "with-exclusive-resources"],
        help="which pods the NodeResourceTopology's pod fingerprint counts (default all, "
        "env NUMASCOPE_NRT_FINGERPRINT_METHOD)",
    )


OVERRIDES = (
    "host",
    "port",
    "database_url",
    "sysfs_root",
    "kubelet_root",
    "podresources_socket",
    "kubelet_config_file",
    "observe",
    "node_name",
    "podresources_dir",
    "state_dir",
    "demo",
    "simulated",
    "hint_search_budget",
    "cpu_time_budget",
    "log_level",
    "hub",
    "hub_agents",
    "hub_agents_dns",
    "demo_fleet",
    "publish_nrt",
    "nrt_fingerprint_method",
)


def build_settings(args: argparse.Namespace) -> Settings:
    """Settings from the environment with the given flags on top."""
    overrides = {k: getattr(args, k) for k in OVERRIDES if getattr(args, k, None) is not None}
    return Settings(**overrides)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    try:
        settings = build_settings(args)
    except ValidationError as err:
        print(f"numascope serve: invalid settings:\n{err}", file=sys.stderr)
        return 2
    if not settings.hub and (settings.hub_agents or settings.hub_agents_dns or settings.demo_fleet):
        print(
            "numascope serve: --agents, --agents-dns and --demo-fleet are the hub's: add --hub",
            file=sys.stderr,
        )
        return 2
    if not settings.simulated and (args.demo or settings.podresources_dir is not None):
        print(
            "numascope serve: --demo and --podresources-dir are about simulated nodes: "
            "drop --no-simulated",
            file=sys.stderr,
        )
        return 2
    workers = args.workers
    if workers < 1:
        print("numascope serve: --workers must be at least 1", file=sys.stderr)
        return 2
    if workers > 1 and args.reload:
        print("numascope serve: --reload runs one worker; drop --workers", file=sys.stderr)
        return 2
    if workers > 1 and settings.podresources_dir is not None:
        print(
            "numascope serve: --podresources-dir serves one socket per node and needs --workers 1",
            file=sys.stderr,
        )
        return 2
    if args.reload or workers > 1:
        # The reloader and the workers import the factory in fresh processes: pass the flags
        # as env vars.
        for key in OVERRIDES:
            value = getattr(args, key, None)
            if value is not None:
                text = str(value).lower() if isinstance(value, bool) else str(value)
                os.environ[f"NUMASCOPE_{key.upper()}"] = text
    if workers > 1:
        return _run_workers(settings, workers)
    if args.reload:
        uvicorn.run(
            FACTORY,
            factory=True,
            host=settings.host,
            port=settings.port,
            reload=True,
            log_level=settings.log_level,
        )
        return 0

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
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        proxy_headers=True,
    )
    return 0


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
    import uvicorn

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
    uvicorn.run(
        FACTORY,
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_level=settings.log_level,
        proxy_headers=True,
    )
    return 0

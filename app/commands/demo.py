"""``numascope demo restore``: put the demo nodes back as shipped, like the dashboard's button
(``/demo/restore``) and ``POST /api/v1/demo/restore``.

It works on the server's own store, the database (``--database-url`` / ``NUMASCOPE_DATABASE_URL``)
and the state files (``--state-dir`` / ``NUMASCOPE_STATE_DIR``), through the same service and
write lock as the server's workers, so it is safe while ``numascope serve`` runs: the workers
pick the restored nodes up on their next request. Every demo node is deleted (whatever was
admitted or removed on it) and created again with its demo pods; other nodes are not touched,
and a node the user made under a demo name is kept (that demo node is skipped).

Exit codes: 0 restored, 1 the database or state files failed, 2 bad arguments or settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import ValidationError

from app.settings import Settings


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo",
        help="manage the demo simulated nodes",
        description="Manage the demo simulated nodes of a Numascope database.",
    )
    actions = parser.add_subparsers(dest="demo_command", metavar="{restore}", required=True)
    restore = actions.add_parser(
        "restore",
        help="delete and re-create the demo nodes with their pods",
        description="Delete every demo node (whatever was done to it) and create it again with "
        "its demo pods. Other nodes are left alone. Safe while the server runs.",
    )
    restore.add_argument(
        "--database-url", default=None, help="SQLAlchemy URL (env NUMASCOPE_DATABASE_URL)"
    )
    restore.add_argument(
        "--state-dir",
        default=None,
        help="state files of simulated nodes (default ./var/nodes, env NUMASCOPE_STATE_DIR)",
    )
    restore.add_argument("--json", action="store_true", help="print the answer as JSON")
    restore.set_defaults(func=run_restore)


PROG = "numascope demo restore"


class _Failed(Exception):
    """The restore cannot go on: its message, and the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def run_restore(args: argparse.Namespace) -> int:
    from app.services.demo import DEMO_NODES

    try:
        before, restored = _restore(_settings(args))
    except _Failed as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return err.code
    kept = [d.name for d in DEMO_NODES if d.name not in restored]
    if args.json:
        print(json.dumps({"restored": restored, "kept": kept}))
    else:
        for name in restored:
            print(f"{name}: {'restored' if name in before else 'created'}")
        for name in kept:
            print(f"{name}: kept (a node of yours has this name; delete it to get the demo back)")
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    """The environment's settings with the flags on top; every invalid field is one line."""
    overrides = {
        k: getattr(args, k) for k in ("database_url", "state_dir") if getattr(args, k) is not None
    }
    try:
        return Settings(**overrides)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            field = ".".join(str(part) for part in e["loc"]) or "settings"
            lines.append(f"{field}: {e['msg']}")
        raise _Failed(f"\n{PROG}: ".join(lines), 2) from None


def _restore(settings: Settings) -> tuple[set[str], list[str]]:
    """Restore the demo nodes of the settings' store: the simulated nodes there were before,
    and the demo nodes restored."""
    from sqlalchemy.exc import SQLAlchemyError

    from app.adapters.db.engine import DatabaseConfigError, make_engine
    from app.adapters.db.migrate import MigrationError, upgrade_head
    from app.services.nodes.errors import NodeServiceError
    from app.services.nodes.service import NodeService
    from app.services.undo import restore_demo_nodes

    try:
        engine = make_engine(settings.database_url)
    except DatabaseConfigError as err:
        raise _Failed(str(err), 2) from None
    try:
        upgrade_head(engine)  # a fresh database gets its tables, as the server would make them
        service = NodeService(engine, state_dir=settings.state_dir)
        service.start()
        before = set(service.registry.simulated_names())
        return before, restore_demo_nodes(service)
    except (MigrationError, NodeServiceError, SQLAlchemyError, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else err.__class__.__name__
        raise _Failed(first, 1) from None
    finally:
        engine.dispose()

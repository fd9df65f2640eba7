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


def run_restore(args: argparse.Namespace) -> int:
    import json

    from sqlalchemy.exc import SQLAlchemyError

    from app.adapters.db.engine import DatabaseConfigError, make_engine
    from app.adapters.db.migrate import MigrationError, upgrade_head
    from app.services.demo import DEMO_NODES
    from app.services.nodes.errors import NodeServiceError
    from app.services.nodes.service import NodeService
    from app.services.undo import restore_demo_nodes

    overrides = {
        k: getattr(args, k) for k in ("database_url", "state_dir") if getattr(args, k) is not None
    }
    try:
        settings = Settings(**overrides)
    except ValidationError as err:
        for e in err.errors():
            field = ".".join(str(part) for part in e["loc"]) or "settings"
            print(f"numascope demo restore: {field}: {e['msg']}", file=sys.stderr)
        return 2
    try:
        engine = make_engine(settings.database_url)
    except DatabaseConfigError as err:
        print(f"numascope demo restore: {err}", file=sys.stderr)
        return 2
    try:
        upgrade_head(engine)  # a fresh database gets its tables, as the server would make them
        service = NodeService(engine, state_dir=settings.state_dir)
        service.start()
        before = set(service.simulated_names())
        restored = restore_demo_nodes(service)
    except (MigrationError, NodeServiceError, SQLAlchemyError, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else err.__class__.__name__
        print(f"numascope demo restore: {first}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    kept = [d.name for d in DEMO_NODES if d.name not in restored]
    if args.json:
        print(json.dumps({"restored": restored, "kept": kept}))
    else:
        for name in restored:
            print(f"{name}: {'restored' if name in before else 'created'}")
        for name in kept:
            print(f"{name}: kept (a node of yours has this name; delete it to get the demo back)")
    return 0

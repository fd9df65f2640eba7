"""``numascope restart``: a kubelet of release R starts on a simulated node's state files.

::

    numascope restart --state-dir DIR --release R [--kubelet-config FILE]
                      [--feature-gates NAME=BOOL,...] [--json] [--dry-run]

The kubelet reads ``cpu_manager_state`` and ``memory_manager_state`` with R's reader, runs the
managers' start-up validation, re-admits the pods recorded in ``pods.json`` in their admission
order and (unless ``--dry-run``, and only if it started) writes the files as R writes them.
Output: a report, or with ``--json`` the document of ``docs/restart-json.md``. Exit codes: 0
the kubelet started and every pod kept its resources, 1 something was lost, reallocated or
rejected or the kubelet did not start, 2 bad input (nothing in DIR changes).
"""

from __future__ import annotations

import argparse
from typing import Any

from app.commands import fail, print_answer
from app.domain.kubelet_config import RELEASES
from app.services.restart import outcome_to_dict, render_text, restart
from app.services.simulation import SimulationInputError

PROG = "numascope restart"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "restart",
        help="rehearse a kubelet restart, upgrade or downgrade on a simulated node's state dir",
        description="Start a kubelet of the given release on the state files of a simulated "
        "node (numascope simulate --state-dir), re-admit its pods in their admission order "
        "and show what each pod keeps, gets back, gets anew or loses.",
    )
    parser.add_argument(
        "--state-dir",
        required=True,
        metavar="DIR",
        help="the node's state directory (cpu_manager_state, memory_manager_state, pods.json)",
    )
    parser.add_argument(
        "--release", required=True, choices=RELEASES, help="the release of the restarted kubelet"
    )
    parser.add_argument(
        "--kubelet-config",
        metavar="FILE",
        help="the KubeletConfiguration of the restarted kubelet (default: the recorded one)",
    )
    parser.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        default="",
        help="feature gates set over the configuration's, e.g. PodLevelResourceManagers=true",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--dry-run", action="store_true", help="restart in memory, write nothing to DIR"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        outcome = restart(
            args.state_dir,
            args.release,
            kubelet_config=args.kubelet_config,
            feature_gates=args.feature_gates,
            dry_run=args.dry_run,
        )
    except SimulationInputError as err:
        return fail(PROG, str(err))
    print_answer(args, outcome, outcome_to_dict, render_text)
    return outcome.exit_code

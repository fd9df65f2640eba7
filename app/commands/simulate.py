"""``numascope simulate``: admit pods on a simulated node and show where everything went.

::

    numascope simulate --topology PRESET|SPEC --kubelet-config FILE
                       [--release 1.35|1.36|1.37|1.38] [--state-dir DIR] [--dry-run] [--json]
                       [--remove NAMESPACE/NAME]... [POD.yaml ... | -]

``--topology`` is a preset name or a spec string (anything containing ``=``). Pods are admitted
in order (files in order, documents in order; ``-`` reads standard input). With
``--state-dir`` the node keeps its state between runs in ``cpu_manager_state``,
``memory_manager_state`` (the kubelet release's own format) and ``pods.json``; ``--remove``
removes admitted pods first. ``--dry-run`` writes nothing.

Output: a readable report, or with ``--json`` the document described in
``docs/simulate-json.md``. Exit codes: 0 every pod admitted, 1 a pod was rejected, 2 bad
input (topology, configuration, manifest, state directory) with a message on stderr naming the
file and field, or a pod whose topology-hint search is beyond ``--hint-budget`` (the message
says how long it would take here: ``app.domain.hint_budget``).
"""

from __future__ import annotations

import argparse
from typing import Any

from app.commands import fail, print_answer
from app.domain.hint_budget import HintSearchBudgetError, duration_text, measure_rate
from app.domain.kubelet_config import DEFAULT_RELEASE, RELEASES
from app.services.simulation import SimulationInputError, read_pod_source, simulate
from app.services.simulation_report import outcome_to_dict, render_text

PROG = "numascope simulate"
DEFAULT_HINT_BUDGET = 5_000_000  # as the server's NUMASCOPE_HINT_SEARCH_BUDGET


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "simulate",
        help="admit pods on a simulated node (kubelet-faithful CPU, memory, topology managers)",
        description="Admit pods in order on a simulated node built from a topology and a "
        "KubeletConfiguration, print each admission result and the final CPU and memory "
        "placement. With --state-dir the node's state persists in kubelet state files.",
    )
    _node_arguments(parser)
    _admission_arguments(parser)
    parser.set_defaults(func=run)


def _node_arguments(parser: Any) -> None:
    """The simulated node: its topology, configuration, release and state directory."""
    parser.add_argument(
        "--topology",
        required=True,
        metavar="PRESET|SPEC",
        help="a preset name (numascope topology --list-presets) or a spec string such as "
        "sockets=2,cores_per_numa=8,threads_per_core=2",
    )
    parser.add_argument(
        "--kubelet-config",
        required=True,
        metavar="FILE",
        help="a KubeletConfiguration file (YAML or JSON)",
    )
    parser.add_argument(
        "--release",
        choices=RELEASES,
        default=DEFAULT_RELEASE,
        help=f"kubelet release whose rules and file formats apply (default {DEFAULT_RELEASE})",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="keep the node's state in DIR (cpu_manager_state, memory_manager_state, pods.json)",
    )


def _admission_arguments(parser: Any) -> None:
    """What happens on the node: removals, then the pods admitted in order."""
    parser.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="NAMESPACE/NAME",
        help="remove an admitted pod (namespace/name or uid) before admitting; repeatable",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="compute everything, write nothing to --state-dir"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--hint-budget",
        type=int,
        default=DEFAULT_HINT_BUDGET,
        metavar="N",
        help="refuse a pod whose topology-hint search would examine more than N NUMA-mask "
        f"combinations, saying how long it would take (default {DEFAULT_HINT_BUDGET:,}, the "
        "server's; 0: no limit)",
    )
    parser.add_argument(
        "pods", nargs="*", metavar="POD.yaml", help="pod manifests, admitted in order; - is stdin"
    )


def _fail(message: str) -> int:
    return fail(PROG, message)


def _too_large(err: HintSearchBudgetError) -> str:
    rate = measure_rate()
    took = duration_text(err.search.cost / rate)
    return (
        f"{err.message}.\nAt this machine's measured {rate:.3g} combinations a second the search "
        f"would take about {took}; run it anyway with --hint-budget 0"
    )


def run(args: argparse.Namespace) -> int:
    if args.hint_budget < 0:
        return _fail("--hint-budget must be 0 (no limit) or more")
    if args.pods.count("-") > 1:
        return _fail("standard input (-) can be given only once")
    try:
        sources = [read_pod_source(name) for name in args.pods]
        outcome = simulate(
            args.topology,
            args.kubelet_config,
            sources,
            release=args.release,
            state_dir=args.state_dir,
            dry_run=args.dry_run,
            remove=args.remove,
            hint_budget=args.hint_budget or None,
        )
    except SimulationInputError as err:
        return _fail(str(err))
    except HintSearchBudgetError as err:
        return _fail(_too_large(err))
    print_answer(args, outcome, outcome_to_dict, render_text)
    return outcome.exit_code

"""``numascope topology``: show a CPU/memory topology (the host's, a preset, or a spec).

Without a source flag the host is discovered from sysfs (root from ``--sysfs``, else
``NUMASCOPE_SYSFS_ROOT``, else ``/sys``). Output is lstopo-like text, or JSON with ``--json``
(the shape of ``app.domain.topology.view.topology_to_dict`` plus ``source``, and
``observedAt`` for a discovered host). Errors go to stderr with exit code 2.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from app.commands import fail, print_answer
from app.domain.presets import PresetInfo, list_presets
from app.domain.presets import get_preset as _get_preset
from app.domain.topology.model import CPUTopology, TopologyError
from app.domain.topology.spec import parse_topology_spec
from app.domain.topology.view import render_text, topology_to_dict
from app.domain.units import format_bytes

PROG = "numascope topology"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "topology",
        help="show the CPU and memory topology of the host, a preset or a spec",
        description="Show sockets, NUMA nodes, uncore caches, cores and CPUs the way the "
        "kubelet's CPU manager sees them, with memory and hugepages per NUMA node.",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--preset", metavar="NAME", help="a named topology (see --list-presets)")
    source.add_argument(
        "--spec",
        metavar="SPEC",
        help="a synthetic topology, e.g. sockets=2,numa_per_socket=2,cores_per_numa=16,"
        "threads_per_core=2,memory_per_numa=64Gi,hugepages_1Gi_per_numa=8",
    )
    source.add_argument(
        "--sysfs",
        "--sysfs-root",
        dest="sysfs_root",
        metavar="DIR",
        help="discover the machine whose sysfs is mounted at DIR "
        "(default /sys, env NUMASCOPE_SYSFS_ROOT)",
    )
    source.add_argument("--list-presets", action="store_true", help="list the named topologies")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--no-cpuinfo",
        dest="cpuinfo",
        action="store_false",
        default=None,
        help="do not ask py-cpuinfo for the CPU model (env NUMASCOPE_CPUINFO)",
    )
    parser.set_defaults(func=run)


def _presets_json(presets: list[PresetInfo]) -> list[dict[str, Any]]:
    return [
        {
            "name": p.name,
            "kind": p.kind,
            "description": p.description,
            "numCpus": p.num_cpus,
            "numCores": p.num_cores,
            "numSockets": p.num_sockets,
            "numNumaNodes": p.num_numa_nodes,
            "numUncoreCaches": p.num_uncore_caches,
            "cpusPerCore": p.cpus_per_core,
            "memoryBytes": p.memory_bytes,
        }
        for p in presets
    ]


def _presets_table(presets: list[PresetInfo]) -> str:
    header = ("NAME", "CPUS", "SOCKETS", "NUMA", "CORES", "UNCORE", "SMT", "MEMORY", "DESCRIPTION")
    rows = [header] + [
        (
            p.name,
            str(p.num_cpus),
            str(p.num_sockets),
            str(p.num_numa_nodes),
            str(p.num_cores),
            str(p.num_uncore_caches),
            str(p.cpus_per_core),
            format_bytes(p.memory_bytes),
            p.description,
        )
        for p in presets
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]))
    return "\n".join(lines) + "\n"


def _discover(args: argparse.Namespace) -> tuple[CPUTopology, dict[str, Any]]:
    # Imported lazily: pydantic-settings and the adapter are only needed for the host.
    from pydantic import ValidationError

    from app.adapters.sysfs import SysfsError, discover_host
    from app.settings import Settings

    try:
        settings = Settings()
    except (ValidationError, ValueError) as err:
        raise _CommandError(f"invalid NUMASCOPE_* setting: {err}") from None
    root = args.sysfs_root if args.sysfs_root is not None else str(settings.sysfs_root)
    use_cpuinfo = settings.cpuinfo if args.cpuinfo is None else args.cpuinfo
    try:
        topo = discover_host(root, use_cpuinfo=use_cpuinfo)
    except SysfsError as err:
        raise _CommandError(str(err)) from None
    observed = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return topo, {"source": "sysfs", "sysfsRoot": root, "observedAt": observed}


class _CommandError(Exception):
    pass


def run(args: argparse.Namespace) -> int:
    if args.list_presets:
        print_answer(args, list_presets(), _presets_json, _presets_table)
        return 0
    try:
        if args.preset is not None:
            topo, meta = _get_preset(args.preset), {"source": "preset"}
        elif args.spec is not None:
            topo, meta = parse_topology_spec(args.spec), {"source": "spec"}
        else:
            topo, meta = _discover(args)
    except (TopologyError, _CommandError) as err:
        return fail(PROG, str(err))
    print_answer(args, topo, lambda t: {**meta, **topology_to_dict(t)}, render_text)
    return 0

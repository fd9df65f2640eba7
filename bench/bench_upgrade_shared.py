"""What sharing verdicts between nodes of the same inputs saves in a fleet upgrade check
(``app.services.upgrade.SharedChecks``, used by the demo fleet's workers): one worker's shard
of the 5,000-node demo fleet (2,500 nodes, as the hub's two workers hold it), every node
checked for release 1.38 by itself (``check_files``) side by side with the shared check. CPU
time of this process; the parsed files and reports kept between checks are dropped before
each run, so both start cold as a worker's first question does.

Run: .venv/bin/python bench/bench_upgrade_shared.py [--nodes 5000] [--shards 2] [--release 1.38]
Prints figures only.
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (the repository on sys.path)

from app.domain.checkpoint.gojson_scan import forget
from app.services.nodes.demo_fleet import DemoFleet
from app.services.upgrade import NodeFiles, SharedChecks, check_files


def _each(files: list[NodeFiles], release: str) -> float:
    forget()
    started = time.process_time()
    for node in files:
        check_files(node, release, None)
    return time.process_time() - started


def _shared(files: list[NodeFiles], release: str) -> tuple[float, int]:
    forget()
    shared = SharedChecks()
    started = time.process_time()
    for node in files:
        shared.check(node, release, None)
    return time.process_time() - started, len(shared)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--release", default="1.38")
    args = parser.parse_args()
    fleet = DemoFleet(args.nodes)
    fleet.build(0, args.shards)
    files = [sim.node_files() for sim in fleet.list()]
    each = _each(files, args.release)
    shared, distinct = _shared(files, args.release)
    n = len(files)
    print(f"upgrade check to {args.release}, shard 1 of {args.shards} of {args.nodes} demo nodes")
    print(f"  {'':<28}{'each node':>12}{'shared':>12}")
    print(f"  {'nodes checked':<28}{n:>12}{distinct:>12}")
    print(f"  {'CPU s':<28}{each:>12.2f}{shared:>12.2f}")
    print(f"  {'CPU ms per node':<28}{1000 * each / n:>12.2f}{1000 * shared / n:>12.2f}")


if __name__ == "__main__":
    main()

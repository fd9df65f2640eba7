"""One node, one answer (issue 18 point 2): over the demo nodes plus a 1.36 and a 1.37 node ×
every release × {as configured, gate off}, the node's upgrade verdict
(``GET /api/v1/nodes/{node}/upgrade``), the fleet's readiness (``GET /api/v1/fleet/upgrade`` on
a hub polling the agent) and the restart rehearsal (``POST /api/v1/nodes/{node}/restart?
dryRun=true``), all through real ``numascope serve`` processes (``tests/coherence.py``).

Run: .venv/bin/python bench/bench_coherence.py [-v]
Prints the pairs that disagree (a verdict that says the kubelet starts while the rehearsal does
not, or the other way round, or a fleet row that is not the node's verdict) and the pairs not
answered (any of the three not a 200 with an answer), then the counts.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from tests.coherence import start_cluster, survey


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every pair")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-coherence-") as tmp,
        start_cluster(Path(tmp)) as (agent, hub),
    ):
        t0 = time.perf_counter()
        pairs = survey(agent, hub)
        took = time.perf_counter() - t0
    disagree = [p for p in pairs if not p.agrees]
    unanswered = [p for p in pairs if not p.answered]
    for p in pairs:
        if args.verbose or p in disagree or p in unanswered:
            mark = "DISAGREE" if p in disagree else "UNANSWERED" if p in unanswered else "ok"
            print(f"{mark:<10} {p.describe()}")
    print(
        f"bench_coherence: {len(disagree)} of {len(pairs)} pairs disagree, "
        f"{len(unanswered)} of {len(pairs)} not answered ({took:.1f} s)"
    )


if __name__ == "__main__":
    main()

"""Upgrade readiness over the hub's demo fleet (issue 20: 5,000 nodes complete in one call,
within 5 s the first time, ``/healthz`` within 100 ms meanwhile), this checkout side by side
with a reference (``--ref``, default ``main``), each as a real ``numascope serve --hub
--demo-fleet N`` process (``bench/_hub.py``).

Run: .venv/bin/python bench/bench_fleet_upgrade.py [--nodes 1000 5000] [--ref main]
Per fleet size and version: ``GET /api/v1/fleet/upgrade?release=1.38`` the first time and once
more: wall time, CPU time of the hub's process tree (and per node), ``/healthz`` p99 during the
call, how many nodes the one call checked (the reference stops at its time budget) and how
many will fail; the hub's memory after (RSS, hub and children apart, PSS). Prints figures only. How much of it the verdicts shared
between nodes of the same inputs save: ``bench_upgrade_shared.py``.
"""

from __future__ import annotations

from pathlib import Path

from _hub import compare, hub_process, measure, tree_memory

GOAL_S = 5.0
RELEASE = "1.38"
STARTS = ("compatible", "compatible-with-loss")


def run(nodes: int, src: Path | None) -> dict[str, str]:
    cells: dict[str, str] = {}
    with hub_process(nodes, src) as hub:
        assert hub.proc is not None
        for call in ("first", "again"):
            m = measure(hub, "GET", "/api/v1/fleet/upgrade", params={"release": RELEASE})
            results = m.body["results"]
            assert isinstance(results, list)
            checked = [r for r in results if r.get("checked", True) and r.get("verdict")]
            failing = sum(1 for r in checked if r["verdict"] not in STARTS)
            cells[f"{call} call: wall s"] = f"{m.wall:.2f}"
            cells[f"{call} call: CPU s"] = f"{m.cpu:.2f}"
            cells[f"{call} call: CPU ms per node"] = f"{1000 * m.cpu / max(1, len(results)):.2f}"
            cells[f"{call} call: healthz p99 ms"] = f"{m.healthz_p99_ms:.0f}"
            cells[f"{call} call: checked"] = f"{len(checked)}/{len(results)}"
            cells[f"{call} call: will not start"] = str(failing)
        cells.update(tree_memory(hub.proc.pid).cells("after"))
    return cells


if __name__ == "__main__":
    print(f"goal: every node checked in one call, <= {GOAL_S:g} s the first time")
    compare(f"upgrade readiness to {RELEASE}", run)

"""Fleet fit over the hub's demo fleet (issue 20: a fit over 5,000 nodes within 1 s, ``/healthz``
within 100 ms meanwhile), this checkout side by side with a reference (``--ref``, default
``main``), each as a real ``numascope serve --hub --demo-fleet N`` process (``bench/_hub.py``).

Run: .venv/bin/python bench/bench_fleet_fit.py [--nodes 1000 5000] [--ref main]
Per fleet size and version: the hub's memory once ready (``_hub.tree_memory``: the RSS of the
hub and its worker processes summed, the hub and its children apart, and PSS), then
per pod shape (a Guaranteed pod of 2 and of 8 CPUs, a pod-level pod, a Burstable pod) the first
``POST /api/v1/fleet/fit`` of ``FRESH`` new manifests (the pod renamed: least and median) and
the last again: wall time, CPU time of the hub's process tree, ``/healthz`` p99 during the call
(the worst), and how many nodes admit the pod (both versions must agree); the memory after the
fits, after an upgrade check and after the fleet's pages (``FLEET_PAGES``: the document the
hub keeps of every node). Prints figures only.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from _hub import Measured, compare, hub_process, measure, tree_memory

from app.services.demo import bubble_pod, classic_pod
from tests.processes import Server

GOAL_S = 1.0
#: New manifests per pod shape: the first fit's CPU is printed as the least (and median) of
#: them, the machine being shared.
FRESH = 3
UPGRADE_TO = "1.38"
#: The pages that make the hub build its fleet document (rows of every node, heatmap).
FLEET_PAGES = ("/fleet", "/api/v1/fleet", "/fleet/heatmap.svg")
GOAL_HEALTHZ_MS = 100.0
BURSTABLE = """\
apiVersion: v1
kind: Pod
metadata: {name: burst, namespace: default}
spec:
  containers:
  - name: main
    image: busybox
    resources:
      requests: {cpu: 500m, memory: 512Mi}
"""
SHAPES = (
    ("guaranteed 2 CPUs", classic_pod("fit-2", "default", "2", "2Gi")),
    ("guaranteed 8 CPUs", classic_pod("fit-8", "default", "8", "8Gi")),
    ("pod-level 4 CPUs", bubble_pod("fit-bubble", "default", 4, {"app": 2}, ("side",))),
    ("burstable", BURSTABLE),
)
YAML = {"Content-Type": "application/yaml"}


def variant(pod: str, k: int) -> str:
    """``pod`` under a name of its own (``-v{k}``): a new question, the same work."""
    return re.sub(r"name: ([\w-]+)", rf"name: \1-v{k}", pod, count=1)


def run(nodes: int, src: Path | None) -> dict[str, str]:
    """One version's figures at ``nodes`` nodes, as printed cells."""
    cells: dict[str, str] = {}
    with hub_process(nodes, src) as hub:
        assert hub.proc is not None
        cells.update(tree_memory(hub.proc.pid).cells("once ready"))
        for label, pod in SHAPES:
            firsts = [_fit(hub, variant(pod, k)) for k in range(FRESH)]
            again = _fit(hub, variant(pod, FRESH - 1))
            for call, ms in (("first", firsts), ("again", [again])):
                key = f"{label}, {call}"
                cpu = [m.cpu for m in ms]
                cells[f"{key}: wall s"] = f"{min(m.wall for m in ms):.2f}"
                cells[f"{key}: CPU s"] = f"{min(cpu):.2f}" + (
                    f" ({statistics.median(cpu):.2f})" if len(cpu) > 1 else ""
                )
                cells[f"{key}: healthz p99 ms"] = f"{max(m.healthz_p99_ms for m in ms):.0f}"
            results = again.body["results"]
            assert isinstance(results, list)
            fits = sum(1 for r in results if r["admitted"])
            cells[f"{label}: fits"] = f"{fits}/{len(results)}"
        cells.update(tree_memory(hub.proc.pid).cells("after the fits"))
        upgrade = measure(hub, "GET", "/api/v1/fleet/upgrade", params={"release": UPGRADE_TO})
        cells[f"upgrade check to {UPGRADE_TO}: wall s"] = f"{upgrade.wall:.2f}"
        cells.update(tree_memory(hub.proc.pid).cells("after an upgrade check"))
        for path in FLEET_PAGES:
            r = hub.client.get(path, timeout=600.0)
            if r.status_code != 200:
                raise SystemExit(f"GET {path}: HTTP {r.status_code}: {r.text[:300]}")
        cells.update(tree_memory(hub.proc.pid).cells("after the fleet pages"))
    return cells


def _fit(hub: Server, pod: str) -> Measured:
    return measure(hub, "POST", "/api/v1/fleet/fit", content=pod.encode(), headers=YAML)


if __name__ == "__main__":
    print(f"goals: fit <= {GOAL_S:g} s, /healthz p99 <= {GOAL_HEALTHZ_MS:g} ms during it")
    compare("fleet fit", run)

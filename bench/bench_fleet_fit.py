"""Fleet fit over the hub's 1,000 simulated nodes (issue 8: goal <= 1 s): every node's own
dry run of one pod, as ``POST /api/v1/fleet/fit`` answers it.

Run: .venv/bin/python bench/bench_fleet_fit.py [--nodes N] [--runs N]
Builds a hub app with ``--demo-fleet N`` (fixed seed), then through Starlette's TestClient
posts pods of several shapes (a Guaranteed pod of 2 and of 8 CPUs, a pod-level pod, a
Burstable pod) and prints per shape how many nodes admit it and the median / best time of the
whole request (manifest checks, N dry runs, the answer's JSON); with ``--upgrade`` also the
first and the cached ``GET /api/v1/fleet/upgrade?release=1.38``. Prints figures only.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import tmp_settings
from fastapi.testclient import TestClient

from app.services.demo import bubble_pod, classic_pod
from app.web.app import create_app

GOAL_S = 1.0
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


def bench(nodes: int, runs: int, upgrade: bool) -> None:
    with tmp_settings(hub=True, demo_fleet=nodes, allowed_hosts=("testserver",)) as settings:
        app = create_app(settings)
        with TestClient(app) as client:
            app.state.hub.fleet.ready.wait()
            print(f"fleet fit over {nodes} simulated nodes (hub --demo-fleet {nodes})")
            worst = 0.0
            for label, pod in SHAPES:
                samples = []
                admitted = 0
                for _ in range(runs):
                    t0 = time.perf_counter()
                    r = client.post(
                        "/api/v1/fleet/fit",
                        content=pod.encode(),
                        headers={"Content-Type": "application/yaml"},
                    )
                    samples.append(time.perf_counter() - t0)
                    if r.status_code != 200:
                        raise SystemExit(f"fit: HTTP {r.status_code}: {r.text[:300]}")
                    results = r.json()["results"]
                    admitted = sum(1 for x in results if x["admitted"])
                median = statistics.median(samples)
                worst = max(worst, median)
                print(
                    f"  {label:<18} fits {admitted:4d}/{len(results)}  "
                    f"median {median * 1000:7.1f} ms  min {min(samples) * 1000:7.1f} ms"
                )
            verdict = "met" if worst <= GOAL_S else "NOT met"
            print(f"goal: <= {GOAL_S:.0f} s per fit: slowest median {worst:.2f} s -> {verdict}")
            if upgrade:
                for label in ("first", "cached"):
                    t0 = time.perf_counter()
                    r = client.get("/api/v1/fleet/upgrade", params={"release": "1.38"})
                    took = time.perf_counter() - t0
                    bad = sum(1 for x in r.json()["results"] if x["verdict"] == "will-fail")
                    print(
                        f"  upgrade to 1.38 ({label} call): {took:.2f} s, {bad} nodes will fail "
                        "(no goal; the inspector on every node's files)"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--upgrade", action="store_true", help="also time GET /api/v1/fleet/upgrade once"
    )
    args = parser.parse_args()
    bench(args.nodes, args.runs, args.upgrade)


if __name__ == "__main__":
    main()

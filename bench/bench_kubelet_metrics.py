"""Cost of a simulated node's kubelet metrics (``/nodes/{node}/metrics``), computed by replaying
its admission log (``app.services.kubelet_metrics``).

Run: .venv/bin/python bench/bench_kubelet_metrics.py [--pods 250] [--release 1.37]
A node on ``server-2s-8numa-512t`` with the demo-512 configuration gets ``--pods`` admissions
(the mix of bench_admissions.py) through the node service on a temporary SQLite file. Prints
the time of the first scrape (the whole log replayed on a fresh engine), of a scrape after one
more admission (only the new row replayed) and of a scrape after no change (one log read).
``--release 1.38`` measures the CPU gauges recomputed from the state after every allocation
and release (kubernetes#141261) instead of 1.37's deltas. Prints figures only.
"""

from __future__ import annotations

import argparse
import time

from _common import time_calls, tmp_node_service
from bench_admissions import pod_manifests

from app.services.demo import SERVER_CONFIG, classic_pod
from app.services.kubelet_metrics import KubeletMetrics

NODE = "bench-metrics"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--release", default="1.37", choices=("1.36", "1.37", "1.38"))
    args = parser.parse_args()
    with tmp_node_service() as service:
        service.create(NODE, "server-2s-8numa-512t", SERVER_CONFIG, args.release)
        for manifest in pod_manifests(args.pods):
            service.admit(NODE, manifest)

        started = time.perf_counter()
        metrics = KubeletMetrics(service)
        text = metrics.text(NODE)
        first_ms = (time.perf_counter() - started) * 1000
        counter = iter(range(10_000))

        def one_more() -> None:
            service.admit(NODE, classic_pod(f"extra-{next(counter)}", "bench", "1", "64Mi"))

        def after_one_more() -> str:
            return metrics.text(NODE)

        incremental = []
        for _ in range(9):
            one_more()
            t0 = time.perf_counter()
            after_one_more()
            incremental.append((time.perf_counter() - t0) * 1000)
        unchanged = time_calls(lambda: metrics.text(NODE), 15)
        incremental.sort()

    print(f"kubelet metrics of a 512-CPU node ({args.release}) with {args.pods} logged admissions:")
    print(f"  first scrape (full replay):          {first_ms:8.1f} ms ({len(text)} bytes)")
    print(
        f"  after one more admission (1 row):    {incremental[len(incremental) // 2]:8.1f} ms median"
    )
    print(f"  no change (log read only):           {unchanged.median_ms:8.1f} ms median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

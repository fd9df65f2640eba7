"""Weight and server time of the node page on the 512-thread node with 250 pods (issue 10
point 2: page <= 400 KB uncompressed, server time <= 50 ms, first request after an
admission <= 100 ms, text compressed when the client accepts it).

Run: .venv/bin/python bench/bench_web_pages.py [--runs N] [--pods N]
For pods of about two containers (``bench/_web_node.py`` shapes) and of four containers
each: creates the node, admits ``--pods`` pods, then through Starlette's TestClient (routing,
loader, rendering, middleware; no network) prints the node page's size uncompressed and as
sent to a client that accepts gzip, the median and p90 server time of warm requests, and the
time of the first page request after an admission through the API (the views are rebuilt),
median and worst of several; each time also as the process's CPU time, which a busy machine
does not inflate. The process's gc is tuned as ``numascope serve`` tunes it
(``--python-gc`` keeps Python's defaults). Prints figures only.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

from _common import time_requests, tmp_settings
from _web_node import NODE, TOPOLOGY, pod_manifests
from fastapi.testclient import TestClient

from app.services.demo import SERVER_CONFIG, classic_pod
from app.services.nodes.service import NodeService
from app.web.app import create_app, tune_gc_for_serving

PAGE_LIMIT_KB = 400
SERVER_MS = 50.0
FIRST_MS = 100.0


def _sent_size(client: TestClient, path: str) -> tuple[int, str]:
    r = client.get(path, headers={"Accept-Encoding": "gzip"})
    return r.num_bytes_downloaded, r.headers.get("content-encoding", "identity")


def bench(pods: int, containers: int, runs: int) -> None:
    with tmp_settings() as settings:
        app = create_app(settings)
        service: NodeService = app.state.nodes
        service.create(NODE, TOPOLOGY, SERVER_CONFIG)
        admitted = sum(service.admit(NODE, m).admitted for m in pod_manifests(pods, containers))
        client = TestClient(app)
        page = f"/nodes/{NODE}"
        plain = client.get(page, headers={"Accept-Encoding": "identity"})
        size = len(plain.content)
        sent, encoding = _sent_size(client, page)
        pods_size = 0
        pods_path = f"{page}/pods?all=1"
        probe = client.get(pods_path, headers={"Accept-Encoding": "identity"})
        if probe.status_code == 200:
            pods_size = len(probe.content)
        warm = time_requests(client, page, runs, {"Accept-Encoding": "gzip"}, warmup=2)
        warm_cpu = []  # CPU time of the process: what a request costs whatever else runs
        for _ in range(max(5, runs // 3)):
            c0 = time.process_time()
            client.get(page, headers={"Accept-Encoding": "gzip"})
            warm_cpu.append((time.process_time() - c0) * 1000)
        first, first_cpu = [], []
        for i in range(max(5, runs // 4)):
            name = f"probe-{i}"
            r = client.post(
                f"/api/v1{page}/pods",
                content=classic_pod(name, "probe", "2", "1Gi"),
                headers={"Content-Type": "application/yaml"},
            )
            assert r.status_code == 201, r.text
            t0, c0 = time.perf_counter(), time.process_time()
            r = client.get(page, headers={"Accept-Encoding": "gzip"})
            first.append((time.perf_counter() - t0) * 1000)
            first_cpu.append((time.process_time() - c0) * 1000)
            assert r.status_code == 200
            client.delete(f"/api/v1{page}/pods/probe/{name}")
        kb = size / 1000
        print(
            f"  {containers} container(s) a pod ({admitted}/{pods} pods, "
            f"{sum(len(p.containers) for p in service.reads.snapshot(NODE).pods)} containers):"
        )
        verdict = "OK" if kb <= PAGE_LIMIT_KB else "OVER"
        print(f"    node page uncompressed   {kb:8.1f} KB   limit {PAGE_LIMIT_KB} KB: {verdict}")
        print(f"    as sent (gzip accepted)  {sent / 1000:8.1f} KB   content-encoding {encoding}")
        if pods_size:
            print(f"    whole pods table         {pods_size / 1000:8.1f} KB   ({pods_path})")
        verdict = "OK" if warm.median_ms <= SERVER_MS else "SLOWER"
        print(
            f"    server time              {warm.median_ms:8.2f} ms   p90 {warm.p90_ms:.2f} ms, "
            f"target {SERVER_MS:.0f} ms: {verdict}"
        )
        print(f"      CPU time               {statistics.median(warm_cpu):8.2f} ms   (median)")
        med = statistics.median(first)
        verdict = "OK" if med <= FIRST_MS else "SLOWER"
        print(
            f"    first after an admission {med:8.2f} ms   worst {max(first):.2f} ms, "
            f"target {FIRST_MS:.0f} ms: {verdict}"
        )
        print(f"      CPU time               {statistics.median(first_cpu):8.2f} ms   (median)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument(
        "--python-gc", action="store_true", help="keep Python's gc thresholds (not the server's)"
    )
    args = parser.parse_args()
    if not args.python_gc:
        tune_gc_for_serving()  # this process stands for a numascope serve process
    print(
        f"bench_web_pages: {TOPOLOGY} (demo-512 configuration), TestClient, "
        f"gc thresholds {gc.get_threshold()}"
    )
    for containers in (1, 4):
        bench(args.pods, containers, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Server time of the simulated-node pages and PodResources JSON on a 512-thread node.

Run: .venv/bin/python bench/bench_web_nodes.py [--runs N] [--pods N]
Builds a node on ``server-2s-8numa-512t`` (the demo-512 configuration: static + full-pcpus-only,
Static memory, restricted, scope pod, pod-level resource managers on), admits ``--pods`` pods
of mixed shapes (pod-level bubbles with exclusive and shared containers, classic Guaranteed
pods, Burstable pods), then measures whole requests through Starlette's TestClient (routing,
loader, Jinja rendering, response) after one warm-up request each. Also times one admission
followed by the node page (the views are rebuilt after a change). Prints figures only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from _common import request_line, time_requests, tmp_settings
from fastapi.testclient import TestClient

from app.services.demo import SERVER_CONFIG, bubble_pod, classic_pod
from app.services.nodes.service import NodeService
from app.web.app import create_app

NODE = "bench-512"
TOPOLOGY = "server-2s-8numa-512t"


def pod_manifests(count: int) -> list[str]:
    """``count`` pods that all fit the node (about 3/4 of its CPUs)."""
    out = []
    for i in range(count):
        kind = i % 5
        if kind in (0, 1):
            out.append(bubble_pod(f"bubble-{i}", "apps", 8, {"main": 4, "helper": 2}, ("proxy",)))
        elif kind == 2:
            out.append(classic_pod(f"classic-{i}", "telco", "4", "4Gi"))
        elif kind == 3:
            out.append(bubble_pod(f"db-{i}", "data", 12, {"engine": 10}, ("exporter",)))
        else:
            out.append(
                f"metadata: {{name: web-{i}, namespace: web}}\n"
                "spec: {containers: [{name: nginx, resources: {requests: {cpu: 500m}}}]}\n"
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--pods", type=int, default=50)
    args = parser.parse_args()
    with tmp_settings() as settings:
        app = create_app(settings)
        service: NodeService = app.state.nodes
        service.create(NODE, TOPOLOGY, SERVER_CONFIG)
        started = time.perf_counter()
        admitted = 0
        for manifest in pod_manifests(args.pods):
            admitted += service.admit(NODE, manifest).admitted
        admit_ms = (time.perf_counter() - started) * 1000 / max(args.pods, 1)
        client = TestClient(app)
        page = f"/nodes/{NODE}"
        snapshot = service.reads.snapshot(NODE)
        some = snapshot.pods[0]
        cases = [
            ("node page", page, {}),
            ("htmx fragment", page, {"HX-Request": "true"}),
            ("JSON twin", f"{page}.json", {}),
            ("pod page", f"{page}/pods/{some.namespace}/{some.name}", {}),
            ("podresources", f"/api/v1{page}/podresources", {}),
            ("podres Get", f"/api/v1{page}/podresources/{some.namespace}/{some.name}", {}),
            ("allocatable", f"/api/v1{page}/allocatable", {}),
            ("api node", f"/api/v1{page}", {}),
        ]
        print(
            f"bench_web_nodes: {TOPOLOGY}, {admitted}/{args.pods} pods admitted "
            f"({admit_ms:.1f} ms per admission incl. log + state files), "
            f"{args.runs} runs each (TestClient)"
        )
        for label, path, headers in cases:
            # one warm-up request builds the cached views
            timing = time_requests(client, path, args.runs, headers, warmup=1)
            size = len(client.get(path, headers=headers).content)
            print(request_line(label, timing, size, width=14))
        # After a change the views are rebuilt once: admission + first page load.
        cold = []
        for i in range(max(3, args.runs // 8)):
            name = f"probe-{i}"
            t0 = time.perf_counter()
            service.admit(NODE, classic_pod(name, "probe", "2", "1Gi"))
            t1 = time.perf_counter()
            client.get(page)
            t2 = time.perf_counter()
            service.remove_pod(NODE, "probe", name)
            cold.append(((t1 - t0) * 1000, (t2 - t1) * 1000))
        print(
            f"  after a change: admission median {statistics.median(c[0] for c in cold):7.2f} ms, "
            f"first node page median {statistics.median(c[1] for c in cold):7.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

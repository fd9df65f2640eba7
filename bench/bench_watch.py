"""What a node page's live refresh costs the server: one check of ``/api/v1/nodes/{node}/watch``.

Run: .venv/bin/python bench/bench_watch.py [--runs N]
Simulated: the demo-512 node (512 threads); a check while nothing changed (304) and the first
check after an admission (200, the node's views are not needed: the token is its version).
Observed: the 128-thread fake host of the tests (state files, PodResources socket, sysfs);
with the observer's cache off, each check observes the node again and digests its view, which
is the worst case (the server re-observes at most every 2 s, and many watchers of one
observation share one digest). Whole requests through Starlette's TestClient. Prints figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _common import Timing, request_line, time_calls, time_requests, tmp_settings
from fastapi.testclient import TestClient

from app.services.watch import view_digest
from app.web.app import create_app
from tests.fixtures.kubelet_host import KubeletHost

POD = (
    "metadata: {name: watch-%d, namespace: bench}\n"
    "spec: {containers: [{name: a, resources: {requests: {cpu: '2', memory: 1Gi}, "
    "limits: {cpu: '2', memory: 1Gi}}}]}\n"
)
YAML = {"Content-Type": "application/yaml"}


def simulated(runs: int) -> None:
    with tmp_settings(demo=True, allowed_hosts=("testserver",)) as settings:
        c = TestClient(create_app(settings))
        with c:
            path = "/api/v1/nodes/demo-512/watch"
            etag = c.get(path).headers["etag"]
            unchanged = time_calls(
                lambda: _expect(c.get(path, headers={"If-None-Match": etag}), 304), runs
            )
            print("simulated node demo-512 (512 threads)")
            print(request_line("check, 304", unchanged, 0, 22))
            samples = []
            for i in range(min(runs, 40)):
                r = c.post("/api/v1/nodes/demo-512/pods", content=POD % i, headers=YAML)
                _expect(r, 201)
                samples.append(
                    time_calls(
                        lambda: _expect(c.get(path, headers={"If-None-Match": etag}), 200),
                        1,
                        warmup=0,
                    ).samples[0]
                )
            print(request_line("check after admission", Timing(tuple(samples)), 0, 22))


def observed(runs: int) -> None:
    host = KubeletHost("bench-observed")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            app = create_app(host.settings(Path(tmp)))
            app.state.observer.ttl = 0.0
            with TestClient(app) as c:
                path = "/api/v1/nodes/bench-observed/watch"
                etag = c.get(path).headers["etag"]
                checks = time_calls(
                    lambda: _expect(c.get(path, headers={"If-None-Match": etag}), 304), runs
                )
                view = app.state.observer.node_view()
                digest = time_calls(lambda: view_digest(view), runs)
                page = time_requests(c, "/nodes/bench-observed", max(5, runs // 4))
            print("observed node (128 threads, fake host), observer cache off")
            print(request_line("check, 304", checks, 0, 22))
            print(request_line("  of which the digest", digest, 0, 22))
            print(request_line("the page it refetches", page, 0, 22))
    finally:
        host.close()


def _expect(r: object, status: int) -> None:
    code = getattr(r, "status_code", None)
    if code != status:
        raise SystemExit(f"HTTP {code}, expected {status}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    simulated(args.runs)
    observed(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

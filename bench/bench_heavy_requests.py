"""Heavy requests against a real server: does ``/healthz`` still answer, and how does the
exponential topology-hint search end? (issue 13 point 5)

Two runs on a fresh ``numascope serve`` process each:

1. ``NUMASCOPE_HINT_SEARCH_BUDGET=0`` (no budget), ``NUMASCOPE_CPU_TIME_BUDGET=5``: a dry run
   of one pod on a 13-NUMA node (about 6.7e7 combinations); ``/healthz`` is probed every 0.1 s
   meanwhile. Prints the dry run's status and time and the probes' median and worst latency.
2. Default settings: the same pod on a 16-NUMA node (about 4.3e9 combinations). Prints the
   status and time of the answer (or that none came within ``--wait`` seconds).

Run: ``.venv/bin/python bench/bench_heavy_requests.py [--wait 60]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _common import ROOT  # noqa: F401  (the repository on sys.path)

from tests.fixtures.wide_machine import WIDE_CONFIG, WIDE_POD, wide_topology
from tests.processes import Server, server_env


def run(numa: int, wait: float, **settings: str) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="heavy-"))
    server = Server(tmp, server_env(tmp, **settings)).start()
    try:
        body = {"name": "wide", "topology": wide_topology(numa), "kubeletConfig": WIDE_CONFIG}
        r = httpx.post(f"{server.url}/api/v1/nodes", json=body, timeout=60)
        assert r.status_code == 201, r.text
        answer: dict[str, object] = {}

        def heavy() -> None:
            t0 = time.monotonic()
            try:
                resp = httpx.post(
                    f"{server.url}/api/v1/nodes/wide/pods?dryRun=true",
                    content=WIDE_POD,
                    headers={"content-type": "application/yaml"},
                    timeout=wait,
                )
                reason = resp.json().get("error", {}).get("reason", "") if resp.is_error else ""
                answer["text"] = f"{resp.status_code} {reason}".strip()
            except httpx.TimeoutException:
                answer["text"] = f"no answer within {wait:g} s"
            answer["took"] = time.monotonic() - t0

        worker = threading.Thread(target=heavy)
        worker.start()
        probes: list[float] = []
        with httpx.Client(timeout=wait) as probe:
            while worker.is_alive():
                t0 = time.monotonic()
                try:
                    probe.get(f"{server.url}/healthz")
                    probes.append(time.monotonic() - t0)
                except httpx.TimeoutException:
                    probes.append(wait)
                time.sleep(0.1)
        worker.join()
        line = f"{numa}-NUMA dry run: {answer['text']} after {answer['took']:.2f} s"
        if probes:
            line += (
                f"; /healthz x{len(probes)}: median {statistics.median(probes) * 1000:.0f} ms, "
                f"worst {max(probes) * 1000:.0f} ms"
            )
        return line
    finally:
        server.kill9()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=60.0, help="client timeout, seconds")
    args = parser.parse_args()
    print(run(13, args.wait, hint_search_budget="0", cpu_time_budget="5"))
    print(run(16, args.wait))


if __name__ == "__main__":
    main()

"""Benchmark the checkpoint inspector on a hostile upload; prints figures.

    .venv/bin/python bench/bench_inspect_overlaps.py [--pods N] [--repeat N]

The case of issue 13 point 3: a ``cpu_manager_state`` (V2, valid checksum) whose ``--pods``
entries (default 2,000, about 100 KB) all hold CPU 0. It is posted to
``POST /api/v1/checkpoints/inspect`` of a real uvicorn server on 127.0.0.1 (a free port), and
the bench prints the upload's median time, the answer's size, and how many overlap findings
the answer carries (one per CPU group, pod list capped, with a count).

While one such upload runs, the bench times ``GET /healthz`` on a second connection: the
inspection runs off the event loop, so the probe keeps being answered.

Figures on the shared 2-core machine (2,000 pods, 102 KB), one upload at a time:

* before (main at 3cca25f: one finding per pair of pods, inspection on the event loop):
  39.0 s per upload, a 578 MB answer with 1,999,000 findings, ``/healthz`` waited up to 22.4 s;
* after (findings grouped per CPU, inspection in a worker thread): median 0.52-1.16 s per
  upload over runs (best 0.30 s; most of it the eight release readers' decoding and checksums,
  linear in the file), a 105 KB answer with 1 finding, ``/healthz`` at most 0.26-0.33 s (the
  GIL is shared with the worker), median 18-24 ms.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
from _common import Timing
from _web_node import app_env, uvicorn_server

from app.domain.checkpoint import CPUCheckpointState, write_cpu_checkpoint
from app.domain.cpuset import CPUSet


def hostile_checkpoint(pods: int) -> bytes:
    """``pods`` entries, each with one container on CPU 0; CPUs 1-3 in the default set."""
    entries = {str(uuid.UUID(int=i)): {"app": CPUSet.parse("0")} for i in range(pods)}
    state = CPUCheckpointState("static", CPUSet.parse("1-3"), entries)
    return write_cpu_checkpoint(state, "v2").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    body = hostile_checkpoint(args.pods)
    headers = {"Content-Type": "application/json"}
    with (
        tempfile.TemporaryDirectory() as tmp_name,
        uvicorn_server("app.web.app:make_app", env=app_env(Path(tmp_name)), factory=True) as base,
    ):
        with httpx.Client(base_url=base, timeout=600) as client:
            samples: list[int] = []
            answer = b""
            for _ in range(args.repeat):
                t0 = time.perf_counter_ns()
                r = client.post("/api/v1/checkpoints/inspect", content=body, headers=headers)
                samples.append(time.perf_counter_ns() - t0)
                if r.status_code != 200:
                    raise SystemExit(f"inspect: HTTP {r.status_code}: {r.text[:200]}")
                answer = r.content
        upload = Timing(tuple(samples))
        issues = json.loads(answer)["issues"]
        overlaps = [i for i in issues if i["code"] == "overlapping-exclusive"]

        probes: list[float] = []

        def heavy() -> None:
            with httpx.Client(base_url=base, timeout=600) as other:
                other.post("/api/v1/checkpoints/inspect", content=body, headers=headers)

        worker = threading.Thread(target=heavy)
        worker.start()
        with httpx.Client(base_url=base, timeout=600) as probe:
            while worker.is_alive():
                t0 = time.perf_counter()
                probe.get("/healthz")
                probes.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.005)
        worker.join()

    print(f"inspect upload: {args.pods} pods on CPU 0, {len(body) / 1000:.0f} KB")
    print(
        f"  upload          median {upload.median_ms:9.1f} ms  best {upload.best_ms:9.1f} ms"
        f"  (answer {len(answer) / 1000:.0f} KB, {len(issues)} issues, "
        f"{len(overlaps)} overlap findings)"
    )
    if probes:
        print(
            f"  /healthz during one upload: {len(probes)} probes, "
            f"slowest {max(probes):.1f} ms, median {sorted(probes)[len(probes) // 2]:.1f} ms"
        )


if __name__ == "__main__":
    main()

"""Cost of one HTTP admission as a node fills up: first 25 against last 25 of 250 pods.

Run: .venv/bin/python bench/bench_admissions.py [--pods 250] [--workers 1]
Starts ``numascope serve`` (a real uvicorn process, SQLite file, state files in a temporary
folder), creates a node on ``server-2s-8numa-512t`` with the demo-512 configuration and posts
``--pods`` single-pod admissions over HTTP (httpx, one connection), timing each request from
send to the full answer. Prints the median and mean of the first 25 and the last 25 admissions
and their ratio (issue 10: last 25 at most 1.5 x the first 25), and beside them the server's
CPU time per admission over the same 25 (``/proc/<pid>/stat`` user + system ticks, read before
and after each block of 25: independent of the load on the machine, which wall time is not).
With ``--workers 1`` the server is one process. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.services.demo import SERVER_CONFIG, bubble_pod, classic_pod

NODE = "bench-admit"
TOPOLOGY = "server-2s-8numa-512t"
ROOT = Path(__file__).resolve().parents[1]


def pod_manifests(count: int) -> list[str]:
    """``count`` pods that all fit the node: 250 of these hold about 3/4 of its CPUs."""
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            out.append(bubble_pod(f"bubble-{i}", "apps", 2, {"main": 1}, ("proxy",)))
        elif kind == 1:
            out.append(classic_pod(f"classic-{i}", "telco", "2", "1Gi"))
        elif kind == 2:
            out.append(bubble_pod(f"db-{i}", "data", 2, {"engine": 2}, ()))
        else:
            out.append(
                f"metadata: {{name: web-{i}, namespace: web}}\n"
                "spec: {containers: [{name: nginx, resources: {requests: {cpu: 500m}}}]}\n"
            )
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("server did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(label: str, times: list[float]) -> str:
    return (
        f"  {label:<9} median {statistics.median(times):6.2f} ms  "
        f"mean {statistics.fmean(times):6.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = dict(os.environ)
        env.update(
            NUMASCOPE_DATABASE_URL=f"sqlite:///{tmp}/bench.db",
            NUMASCOPE_STATE_DIR=f"{tmp}/nodes",
            NUMASCOPE_DEMO="false",
            NUMASCOPE_OBSERVE="false",
            NUMASCOPE_SYSFS_ROOT=f"{tmp}/no-sysfs",
            NUMASCOPE_CPUINFO="false",
        )
        cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
        cmd += ["--log-level", "warning"]
        if args.workers > 1:
            cmd += ["--workers", str(args.workers)]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_ready(base, proc)
            with httpx.Client(base_url=base, timeout=60) as client:
                r = client.post(
                    "/api/v1/nodes",
                    json={"name": NODE, "topology": TOPOLOGY, "kubeletConfig": SERVER_CONFIG},
                )
                if r.status_code != 201:
                    raise SystemExit(f"create: HTTP {r.status_code}: {r.text}")
                times: list[float] = []
                admitted = 0
                manifests = pod_manifests(args.pods)
                cpu: dict[str, float] = {}
                for i, manifest in enumerate(manifests):
                    if i in (0, len(manifests) - 25):
                        cpu["first" if i == 0 else "last"] = -cpu_seconds(proc.pid)
                    started = time.perf_counter()
                    r = client.post(
                        f"/api/v1/nodes/{NODE}/pods",
                        content=manifest,
                        headers={"Content-Type": "application/yaml"},
                    )
                    times.append((time.perf_counter() - started) * 1000)
                    if r.status_code not in (200, 201):
                        raise SystemExit(f"admit: HTTP {r.status_code}: {r.text}")
                    admitted += bool(r.json()["admitted"])
                    if i in (24, len(manifests) - 1):
                        cpu["first" if i == 24 else "last"] += cpu_seconds(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    first, last = times[:25], times[-25:]
    print(
        f"bench_admissions: {TOPOLOGY}, {admitted}/{args.pods} pods admitted over HTTP "
        f"(uvicorn, {args.workers} worker(s), SQLite, state files)"
    )
    print(summary("first 25", first))
    print(summary("last 25", last))
    ratio = statistics.median(last) / statistics.median(first)
    print(f"  ratio     {ratio:.2f} x (median last 25 / median first 25; target <= 1.5)")
    per = {k: v / 25 * 1000 for k, v in cpu.items()}
    print(
        f"  server CPU per admission: first 25 {per['first']:.1f} ms, last 25 {per['last']:.1f} ms,"
        f" ratio {per['last'] / per['first']:.2f} x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

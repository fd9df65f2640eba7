"""Memory of the node agent (the DaemonSet's ``numascope serve --observe``), measured on a real
process: the figures behind the memory request and limit in ``deploy/``.

A fake host is built in a temporary directory: the sysfs tree of ``server-2s-8numa-512t``, a
kubelet root with the state files of ``--pods`` pod-level pods (default 200) admitted by the
engine, and a PodResources socket answering for them (served from this process). Then the agent
is started as the DaemonSet runs it (``serve --no-demo --observe --no-simulated``: no
database; without ``--publish-nrt``: no API server here) and its resident memory is read from ``/proc/<pid>/status``:

* idle: after ``/readyz`` said ready and a few seconds of quiet;
* loaded: the peak (``VmHWM``) while ``--clients`` clients fetch the node page, its JSON, the
  PodResources List, pod pages, ``/metrics`` and ``/readyz`` for ``--seconds`` seconds.

Run: ``.venv/bin/python bench/bench_agent_memory.py [--pods 200] [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _common import ROOT

from app.adapters.grpc.server import PodResourcesServer
from tests.live.agent_host import AGENT_ARGS, NODE, agent_env, build_host, rss_kib
from tests.processes import free_port


def load(url: str, paths: list[str], until: float, counts: list[int]) -> None:
    with httpx.Client(timeout=30, headers={"accept-encoding": "gzip"}) as client:
        i = 0
        while time.monotonic() < until:
            r = client.get(url + paths[i % len(paths)])
            if r.status_code != 200:
                raise RuntimeError(f"{paths[i % len(paths)]}: {r.status_code} {r.text[:200]}")
            i += 1
        counts.append(i)


def load_for(url: str, paths: list[str], seconds: float, clients: int) -> list[int]:
    """``clients`` threads asking ``paths`` in turn for ``seconds``: each thread's count."""
    until = time.monotonic() + seconds
    counts: list[int] = []
    threads = [
        threading.Thread(target=load, args=(url, paths, until, counts)) for _ in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="agent-", dir="/tmp"))  # short: sun_path limit
    try:
        node, root, sysfs = build_host(base, args.pods)
        snap = node.snapshot()
        sock = base / "pr.sock"
        data = base / "data"
        data.mkdir()
        port = free_port()
        env = agent_env(root, sysfs, sock, data)
        cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
        cmd += AGENT_ARGS  # the DaemonSet's arguments
        with PodResourcesServer(lambda: snap, str(sock)):
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
            url = f"http://127.0.0.1:{port}"
            try:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    try:
                        if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    time.sleep(0.2)
                else:
                    raise SystemExit("the agent did not become ready")
                time.sleep(3)
                idle = rss_kib(proc.pid)
                pod = snap.pods[0]
                paths = [
                    f"/nodes/{NODE}",
                    f"/nodes/{NODE}.json",
                    f"/api/v1/nodes/{NODE}/podresources",
                    f"/nodes/{NODE}/pods/{pod.namespace}/{pod.name}",
                    "/metrics",
                    "/readyz",
                    "/nodes",
                ]
                counts = load_for(url, paths, args.seconds, args.clients)
                peak = rss_kib(proc.pid, "VmHWM")
                after = rss_kib(proc.pid)
            finally:
                proc.terminate()
                proc.wait(30)
        print(f"agent on server-2s-8numa-512t with {len(snap.pods)} pods (observed, read-only)")
        print(f"  idle RSS after ready:      {idle / 1024:6.1f} MiB")
        print(
            f"  peak RSS under load:       {peak / 1024:6.1f} MiB "
            f"({args.clients} clients, {args.seconds:g} s, {sum(counts)} requests)"
        )
        print(f"  RSS after the load:        {after / 1024:6.1f} MiB")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Shared by the web benches: the 512-thread node of issue 10 with 250 pods, and real uvicorn
servers on ports the kernel picks.

The node is ``server-2s-8numa-512t`` with the ``demo-512`` kubelet configuration (static +
``full-pcpus-only``, Static memory manager, ``restricted``, scope ``pod``, pod-level resource
managers on). ``pod_manifests(n, containers)`` gives ``n`` pods that all fit it, in three
shapes: pod-level bubbles of 4 CPUs (an exclusive ``main`` of 2 and shared sidecars),
classic Guaranteed pods of 2 exclusive CPUs, and Burstable pods in the node shared pool.
``containers`` is the number of containers a pod has (1 gives the mixed shapes of
``bench_web_nodes``, about 2 a pod; 4 gives every pod four).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
from _common import ROOT

from app.services.demo import SERVER_CONFIG, bubble_pod, classic_pod

NODE = "bench-512"
TOPOLOGY = "server-2s-8numa-512t"


def _burstable(name: str, containers: int) -> str:
    items = ", ".join(
        f"{{name: c{k}, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}"
        for k in range(containers)
    )
    return f"metadata: {{name: {name}, namespace: web}}\nspec: {{containers: [{items}]}}\n"


def _classic(name: str, containers: int) -> str:
    if containers <= 1:
        return classic_pod(name, "telco", "2", "2Gi")
    # Guaranteed with one exclusive container and small Guaranteed helpers (shared pool).
    helpers = "".join(
        f'  - name: helper-{k}\n    resources:\n      limits: {{cpu: "100m", memory: 64Mi}}\n'
        for k in range(containers - 1)
    )
    return (
        f"metadata: {{name: {name}, namespace: telco}}\nspec:\n  containers:\n"
        '  - name: main\n    resources:\n      limits: {cpu: "2", memory: 2Gi}\n' + helpers
    )


def pod_manifests(count: int, containers: int = 1) -> list[str]:
    """``count`` pods that all fit the node (about 400 of its 508 allocatable CPUs at 250)."""
    out = []
    for i in range(count):
        kind = i % 10
        if kind < 3:
            sidecars = ("proxy",) if containers <= 1 else tuple(f"side-{k}" for k in range(3))
            out.append(bubble_pod(f"bubble-{i}", "apps", 4, {"main": 2}, sidecars))
        elif kind < 6:
            out.append(_classic(f"classic-{i}", containers))
        else:
            out.append(_burstable(f"web-{i}", containers))
    return out


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port the kernel picked and let go (uvicorn's ``--fd`` treats sockets as unix
    sockets and so loses TCP_NODELAY, which would measure Nagle's delay instead)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def uvicorn_server(
    app: str, *, env: Mapping[str, str] | None = None, factory: bool = False
) -> Iterator[str]:
    """Run ``uvicorn app`` in a child process; yields its base URL once it answers."""
    port = free_port()
    args = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port)]
    args += ["--log-level", "warning", "--no-access-log"]
    if factory:
        args.append("--factory")
    child_env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'bench'}", **(env or {})}
    proc = subprocess.Popen(args, env=child_env, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"uvicorn {app} did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def app_env(tmp: Path) -> dict[str, str]:
    """Environment of a Numascope server on ``tmp`` (SQLite, no sysfs, no demo nodes)."""
    return {
        "NUMASCOPE_DATABASE_URL": f"sqlite:///{tmp / 'bench.db'}",
        "NUMASCOPE_SYSFS_ROOT": str(tmp / "no-sysfs"),
        "NUMASCOPE_CPUINFO": "false",
        "NUMASCOPE_STATE_DIR": str(tmp / "nodes"),
        "NUMASCOPE_DEMO": "false",
        "NUMASCOPE_LOG_LEVEL": "warning",
    }


def populate(base: str, pods: int, containers: int = 1) -> int:
    """Create the node and admit ``pods`` pods through the API; the number admitted."""
    with httpx.Client(base_url=base, timeout=30) as client:
        r = client.post(
            "/api/v1/nodes",
            json={"name": NODE, "topology": TOPOLOGY, "kubeletConfig": SERVER_CONFIG},
        )
        if r.status_code != 201:
            raise SystemExit(f"creating the node: HTTP {r.status_code} {r.text[:200]}")
        admitted = 0
        for manifest in pod_manifests(pods, containers):
            r = client.post(
                f"/api/v1/nodes/{NODE}/pods",
                content=manifest,
                headers={"Content-Type": "application/yaml"},
            )
            admitted += r.status_code == 201
        return admitted

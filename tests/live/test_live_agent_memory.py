"""The DaemonSet's memory request and limit hold for a real agent process (issue 13): started
as the DaemonSet starts it (``serve --no-demo --observe --no-simulated``) on a fake 512-thread host with 100
pods, its idle memory stays under the manifest's request and its peak under load (node page,
JSON, PodResources List, ``/metrics``) under the limit. ``bench/bench_agent_memory.py`` prints
the figures behind the manifest's comment."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import httpx
import yaml

from app.adapters.grpc.server import PodResourcesServer
from app.domain.quantity import Quantity
from tests.live.agent_host import AGENT_ARGS, NODE, agent_env, build_host, rss_kib
from tests.processes import Server

REPO = Path(__file__).resolve().parents[2]

MANIFEST = REPO / "deploy" / "daemonset.yaml"


def manifest_memory() -> tuple[int, int]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    [ds] = [d for d in docs if d["kind"] == "DaemonSet"]
    resources = ds["spec"]["template"]["spec"]["containers"][0]["resources"]
    return (
        Quantity.parse(resources["requests"]["memory"]).value(),
        Quantity.parse(resources["limits"]["memory"]).value(),
    )


def test_the_agent_fits_the_daemonsets_memory_request_and_limit() -> None:
    request, limit = manifest_memory()
    base = Path(tempfile.mkdtemp(prefix="mem-", dir="/tmp"))  # short: sun_path limit
    try:
        idle, peak, errors = measure(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert errors == []
    assert idle < request, f"idle {idle / 2**20:.0f} MiB over the request"
    assert peak < limit, f"peak {peak / 2**20:.0f} MiB over the limit"


def measure(base: Path) -> tuple[int, int, list[str]]:
    """Idle and peak resident bytes of an agent on a fake host under ``base``; failed fetches."""
    node, root, sysfs = build_host(base, 100)
    snap = node.snapshot()
    sock, data = base / "pr.sock", base / "data"
    data.mkdir()
    with PodResourcesServer(lambda: snap, str(sock)):
        agent = Server(data, agent_env(root, sysfs, sock, data), AGENT_ARGS)
        try:
            agent.start(120)
            agent.wait_for(
                lambda: agent.client.get("/readyz", timeout=5).status_code == 200, "/readyz", 120
            )
            assert agent.proc is not None
            idle = rss_kib(agent.proc.pid) * 1024
            paths = [f"/nodes/{NODE}", f"/nodes/{NODE}.json", "/metrics"]
            paths.append(f"/api/v1/nodes/{NODE}/podresources")
            errors: list[str] = []

            def client() -> None:
                with httpx.Client(timeout=60) as http:
                    for i in range(12):
                        r = http.get(agent.url + paths[i % len(paths)])
                        if r.status_code != 200:
                            errors.append(f"{paths[i % len(paths)]}: {r.status_code}")

            threads = [threading.Thread(target=client) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            peak = rss_kib(agent.proc.pid, "VmHWM") * 1024
        finally:
            agent.close()
    return idle, peak, errors

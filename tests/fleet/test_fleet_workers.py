"""The demo fleet's fits and upgrade checks in worker processes (issue 20), against a real hub
process (``numascope serve --hub --demo-fleet N``): the answers are the serial judge's (each
node's own dry run and upgrade verdict, computed here in the test's process from the same
seed), ``/healthz`` answers while a fit runs, the upgrade check is complete in one call and the
page's JSON twin lists the nodes not checked yet as pending, never as failing; the heatmap.
Not timed beyond generous bounds: the figures are the benches' (``bench/bench_fleet_fit.py``,
``bench/bench_fleet_upgrade.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.domain.kubelet_config import KubeletConfig
from app.services.demo import bubble_pod, classic_pod
from app.services.fleet import workers
from app.services.fleet.agent_summary import SummaryCache
from app.services.fleet.heatmap import BUCKETS, bucket
from app.services.fleet.rows import fit_result, upgrade_result
from app.services.fleet.score import ScoreBasis, rank_fits
from app.services.nodes.demo_fleet import SEED, DemoFleet
from app.services.nodes.inputs import parse_manifests
from tests.processes import Server, children, server_env

COUNT = 40
YAML = {"Content-Type": "application/yaml"}
SVG = "{http://www.w3.org/2000/svg}"
#: What a fit row says about the node's own dry run and the ranking (the rest: ids).
FIT_FIELDS = ("node", "admitted", "reason", "message", "numaNodes", "score", "flags", "checked")
UPGRADE_FIELDS = ("node", "verdict", "lost", "error", "recovery", "checked")


@pytest.fixture(scope="module")
def serial() -> DemoFleet:
    """The same fleet built here, judged serially (the reference answers)."""
    fleet = DemoFleet(COUNT)
    fleet.build()
    return fleet


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp: Path = tmp_path_factory.mktemp("fleet-workers")
    env = server_env(tmp, hub="true", demo_fleet=str(COUNT), hub_fleet_workers="2")
    server = Server(tmp, env=env).start()
    try:
        server.wait_for(lambda: server.client.get("/readyz").status_code == 200, "/readyz", 300.0)
        yield server
    finally:
        server.close()


def _serial_fit(fleet: DemoFleet, manifest: str, strategy: str) -> list[dict[str, Any]]:
    pod = parse_manifests(manifest, KubeletConfig())[0]
    rows = [fit_result(name, doc) for name, doc in fleet.dry_run_all(manifest)]
    cache = SummaryCache()

    def basis_of(node: str, agent: str | None) -> ScoreBasis:
        return ScoreBasis.of(fleet.nodes[node].agent_summary(cache))

    return rank_fits(rows, pod, strategy, basis_of)


def _fields(rows: list[dict[str, Any]], names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in names} for r in rows]


@pytest.mark.parametrize(
    ("manifest", "strategy"),
    [
        (classic_pod("fit-2", "default", "2", "2Gi"), "LeastAllocated"),
        (classic_pod("fit-8", "default", "8", "8Gi"), "MostAllocated"),
        (bubble_pod("fit-b", "default", 4, {"app": 2}, ("side",)), "BalancedAllocation"),
    ],
)
def test_fit_is_the_serial_judges_answer(
    hub: Server, serial: DemoFleet, manifest: str, strategy: str
) -> None:
    r = hub.client.post(
        "/api/v1/fleet/fit", params={"strategy": strategy}, content=manifest, headers=YAML
    )
    assert r.status_code == 200, r.text
    got = r.json()["results"]
    want = _serial_fit(serial, manifest, strategy)
    assert len(got) == COUNT
    assert _fields(got, FIT_FIELDS) == _fields(want, FIT_FIELDS)
    assert [x["allocation"] for x in got] == [x["allocation"] for x in want]
    assert any(x["admitted"] for x in got) and any(not x["admitted"] for x in got)
    # The node's own dry run gives no reason for a fit: the row adds none.
    assert all(x["reason"] is None for x in got if x["admitted"])
    assert all(x["reason"] for x in got if not x["admitted"])


def test_upgrade_is_complete_in_one_call_and_the_serial_judges_answer(
    hub: Server, serial: DemoFleet
) -> None:
    r = hub.client.get("/api/v1/fleet/upgrade", params={"release": "1.38"}, timeout=300)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["progress"]["complete"] is True
    assert body["progress"]["checked"] == body["progress"]["total"] == COUNT
    want = [upgrade_result(n.name, n.upgrade("1.38", None)) for n in serial.list()]
    assert _fields(body["results"], UPGRADE_FIELDS) == _fields(want, UPGRADE_FIELDS)
    assert {x["verdict"] for x in body["results"]} >= {"compatible"}


def test_pending_nodes_are_listed_never_counted_as_failing(hub: Server) -> None:
    """Asked at once for a new question, the page's JSON twin answers with what is checked so
    far; every node is either checked (and counted) or pending (and listed as such)."""
    seen: list[dict[str, Any]] = []
    params = {"release": "1.36", "podLevelResourceManagers": "false"}
    while True:
        plan = hub.json("/fleet/upgrade.json", **params)
        seen.append(plan)
        progress = plan["progress"]
        pending = {n["node"] for n in plan["notChecked"]}
        assert progress["total"] == COUNT == plan["total"]
        assert progress["checked"] + len(pending) == COUNT
        assert plan["drain"]["count"] + plan["starts"]["count"] == progress["checked"]
        assert not pending & set(plan["drain"]["nodes"])
        assert all(n["why"] == "pending: not checked yet" for n in plan["notChecked"])
        if progress["complete"]:
            break
        time.sleep(0.05)
    assert seen[-1]["notChecked"] == [] and seen[-1]["progress"]["checked"] == COUNT
    page = hub.client.get("/fleet/upgrade", params=params).text
    assert "Checking the fleet" not in page


def test_healthz_answers_while_fits_and_an_upgrade_check_run(hub: Server) -> None:
    """The dry runs and start-up checks run in the workers: the event loop answers
    ``/healthz`` meanwhile (a generous bound; the 100 ms figure is the bench's)."""
    # Questions not asked before (nothing cached), asked together so that they take a while.
    manifests = [classic_pod(f"fit-h{n}", "default", str(n), f"{n}Gi") for n in range(1, 9)]
    answers: list[httpx.Response] = []

    def fit(manifest: str) -> None:
        answers.append(hub.client.post("/api/v1/fleet/fit", content=manifest, headers=YAML))

    def upgrade() -> None:
        params = {"release": "1.37", "podLevelResourceManagers": "true"}
        answers.append(hub.client.get("/api/v1/fleet/upgrade", params=params, timeout=300))

    threads = [threading.Thread(target=fit, args=(m,)) for m in manifests]
    threads.append(threading.Thread(target=upgrade))
    probes: list[tuple[int, float, bool]] = []  # status, seconds, sent while work ran
    # The probe's client is made and connected first: the work may end within the time that
    # takes.
    with httpx.Client(base_url=hub.url, timeout=10.0, trust_env=False) as client:
        assert client.get("/healthz").status_code == 200
        for t in threads:
            t.start()
        while True:
            running = any(t.is_alive() for t in threads)
            t0 = time.perf_counter()
            status = client.get("/healthz").status_code
            probes.append((status, time.perf_counter() - t0, running))
            if not running:
                break
            time.sleep(0.01)
    for t in threads:
        t.join()
    assert len(answers) == len(threads) and all(a.status_code == 200 for a in answers)
    assert all(len(a.json()["results"]) == COUNT for a in answers)
    during = [p for p in probes if p[2]]
    assert during, "the work ended before a probe was sent"
    assert all(status == 200 for status, _, _ in probes)
    assert max(took for _, took, _ in during) < 5.0


def test_the_heatmap_shows_every_numa_node_by_its_free_cpus(hub: Server) -> None:
    doc = hub.json("/api/v1/fleet")
    expected = [0] * (len(BUCKETS) + 1)
    for n in doc["nodes"]:
        for row in n["numa"]:
            expected[bucket(row["available"])] += 1
    r = hub.client.get("/fleet/heatmap.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    svg = ET.fromstring(r.content)
    assert svg.attrib["role"] == "img"
    fills = {}
    for path in svg.iter(f"{SVG}path"):
        cells = 0
        for run in path.attrib["d"].split("z")[:-1]:
            cells += int(run.split("h")[1].split("v")[0])
        fills[path.attrib["fill"]] = cells
    want = {BUCKETS[i][2]: n for i, n in enumerate(expected[: len(BUCKETS)]) if n}
    assert fills == want
    desc = svg.find(f"{SVG}desc")
    assert desc is not None and desc.text
    for i, n in enumerate(expected[: len(BUCKETS)]):
        if n:
            assert f"{n} NUMA nodes {BUCKETS[i][1]}" in desc.text
    etag = r.headers["etag"]
    assert hub.client.get("/fleet/heatmap.svg", headers={"If-None-Match": etag}).status_code == 304
    page = hub.client.get("/fleet").text
    assert 'class="heatmap-img"' in page and f"Heatmap of {COUNT} nodes" in page
    assert "?sort=free" in page


def test_a_shard_of_the_fleet_is_the_same_nodes_as_the_whole() -> None:
    """Workers rebuild their shard from the seed: the shards together are the fleet."""
    whole = DemoFleet(30)
    whole.build()
    parts = [DemoFleet(30) for _ in range(3)]
    for k, part in enumerate(parts):
        part.build(k, 3)
        assert all(int(name.split("-")[1]) % 3 == k for name in part.nodes)
    joined = {name: n for part in parts for name, n in part.nodes.items()}
    assert sorted(joined) == sorted(whole.nodes)
    for name, node in whole.nodes.items():
        other = joined[name]
        assert (node.preset, node.release, node.config_text, node.rejected) == (
            other.preset,
            other.release,
            other.config_text,
            other.rejected,
        )
        assert sorted(p.key for p in node.engine.pods.values()) == sorted(
            p.key for p in other.engine.pods.values()
        )
        # The managers' checkpoints (pods.json carries admission times, which differ).
        mine, theirs = node.state_files(), other.state_files()
        for name in ("cpu_manager_state", "memory_manager_state"):
            assert mine[name] == theirs[name]


def test_shards_keep_the_nodes_that_share_dry_runs_together() -> None:
    """``shard_owners``: the nodes of one machine, configuration and release (the only ones
    that can share a free state) in one shard, every node in exactly one, shards of about
    equal size; a shard built by it is those very nodes."""
    count, shards = 300, 3
    owner = workers.shard_owners(count, SEED, shards)
    whole = DemoFleet(count)
    whole.build()
    group_shard: dict[tuple[str, str, str], int] = {}

    def group_of(node: Any) -> tuple[str, str, str]:
        return (node.preset, node.config_text, node.release)

    for i, node in enumerate(whole.list()):
        key = group_of(node)
        assert group_shard.setdefault(key, owner[i]) == owner[i], key
    sizes = [owner.count(k) for k in range(shards)]
    largest = max(Counter(group_of(n) for n in whole.list()).values())
    # dealt largest first to the smallest shard: never further apart than one group
    assert sum(sizes) == count and max(sizes) - min(sizes) <= largest
    part = DemoFleet(count)
    part.build(1, owner=owner)
    assert sorted(part.nodes) == [n.name for i, n in enumerate(whole.list()) if owner[i] == 1]


def test_a_dead_worker_costs_one_answer_not_the_hub(hub: Server) -> None:
    """A worker killed (as the OOM killer would): the next fit answers 200 with the demo nodes
    listed as not checked (never as refusals), the workers start afresh, and the fit after
    that is whole again. Last in this module: it restarts the workers."""
    workers = children(hub.proc.pid) if hub.proc is not None else []
    assert len(workers) == 2, workers
    os.kill(workers[0], signal.SIGKILL)
    manifest = classic_pod("fit-after-kill", "default", "1", "1Gi")
    r = hub.client.post("/api/v1/fleet/fit", content=manifest, headers=YAML)
    assert r.status_code == 200, r.text
    rows = r.json()["results"]
    assert len(rows) == COUNT and all(not x["checked"] and not x["admitted"] for x in rows)
    assert all("fleet worker stopped" in x["error"] for x in rows)
    hub.wait_for(lambda: hub.client.get("/readyz").status_code == 200, "/readyz", 300.0)
    again = hub.client.post("/api/v1/fleet/fit", content=manifest, headers=YAML).json()
    assert all(x["checked"] for x in again["results"])
    assert any(x["admitted"] for x in again["results"])


#: What a fleet worker never loads, a fit and an upgrade check answered: the database layer
#: and the Kubernetes API client were 24 MiB of every worker's RSS (bench/bench_fleet_fit.py).
WORKER_NEVER_IMPORTS = ("sqlalchemy", "sqlmodel", "httpx", "app.adapters.db", "fastapi")
WORKER = """
import json, sys
from app.domain.kubelet_config import KubeletConfig
from app.services.fleet import workers
from app.services.nodes.demo_fleet import SEED
from app.services.nodes.inputs import parse_manifests

count, manifest, never = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
workers._start(count, SEED, 0, workers.shard_owners(count, SEED, 1))
pod = parse_manifests(manifest, KubeletConfig())[0]
entries, _ = workers._fit(manifest, pod, "LeastAllocated", 10.0)
rows, _ = workers._upgrade("1.38", None, [f"sim-{i:04d}" for i in range(count)])
print(json.dumps({"fits": len(entries), "upgrades": len(rows),
                  "loaded": [m for m in never if m in sys.modules]}))
"""


def test_a_worker_loads_neither_the_database_nor_http_clients() -> None:
    """A worker process, started as the pool starts it (a fresh interpreter running
    ``workers._start``), answers a fit and an upgrade check without the database layer."""
    manifest = classic_pod("fit-2", "default", "2", "2Gi")
    argv = [sys.executable, "-c", WORKER, "12", manifest, json.dumps(WORKER_NEVER_IMPORTS)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300)
    answer = json.loads(out.stdout.splitlines()[-1])
    assert answer == {"fits": 12, "upgrades": 12, "loaded": []}

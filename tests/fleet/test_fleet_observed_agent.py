"""An observing agent as a real process (``serve --observe``: a kubelet root dir, a fake sysfs
and a PodResources socket served from the test, as a DaemonSet pod sees them) behind a hub
process: the hub lists the agent's numbers, its fit is the agent's dry run on a copy of the
observed state, and its upgrade verdict is what the checkpoint inspector's CLI says about that
very kubelet root dir. The kubelet's files are only ever read."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.adapters import statefiles
from app.adapters.grpc.server import PodResourcesServer
from app.domain.presets import get_preset
from app.services import demo
from tests.fixtures.sysfs import fake_sysfs_from_topology
from tests.processes import NUMASCOPE, Server, server_env, wait_for
from tests.services.test_services_observer import (
    NODE,
    _files_with_ghost,
    _sysfs_engine,
    tree_state,
)

YAML = {"Content-Type": "application/yaml"}


@dataclass
class Observed:
    agent: Server
    hub: Server
    root: Path


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    tmp = tmp_path_factory.mktemp("observed")
    base = Path(tempfile.mkdtemp(prefix="h13-", dir="/tmp"))  # short: sun_path holds 108 bytes
    agent = hub = None
    try:
        sysfs = fake_sysfs_from_topology(get_preset("server-2s-4numa-128t")).write(tmp)
        node = _sysfs_engine(sysfs)
        root = base / "kubelet"
        root.mkdir()
        statefiles.write_files(root, _files_with_ghost(node))
        (root / "config.yaml").write_text(demo.POD_SCOPE_CONFIG)
        snap = node.snapshot()
        for p in snap.pods:
            (root / "pods" / p.uid).mkdir(parents=True)
        sock = base / "pr.sock"
        with PodResourcesServer(lambda: snap, str(sock)):
            host = "127.0.0.70"
            env = server_env(
                tmp / "agent",
                observe="true",
                kubelet_root=str(root),
                podresources_socket=f"unix://{sock}",
                sysfs_root=str(sysfs),
            )
            env["NODE_NAME"] = NODE
            agent = Server(tmp / "agent", env, host=host).start()
            hub_env = server_env(tmp / "hub", hub_poll_interval="0.3")
            args = ["--hub", "--agents", agent.url]
            hub = Server(tmp / "hub", hub_env, args, host="127.0.0.71").start()
            wait_for(lambda: hub.json("/api/v1/fleet")["nodes"])
            yield Observed(agent, hub, root)
    finally:
        for s in (hub, agent):
            if s is not None:
                s.close()
        shutil.rmtree(base, ignore_errors=True)


def test_the_hub_lists_the_observed_node_with_the_agents_numbers(observed: Observed) -> None:
    (row,) = observed.hub.json("/api/v1/fleet")["nodes"]
    (mine,) = observed.agent.json("/api/v1/summary")["nodes"]
    assert row["node"] == NODE and row["status"] == "ok" and row["source"] == mine["source"]
    assert row["numa"] == mine["numa"]
    pools = observed.agent.json(f"/api/v1/nodes/{NODE}")["numaPools"]
    assert [r["available"] for r in row["numa"]] == [p["available"] for p in pools]
    # The ghost entry (a pod the node no longer has) is a finding the fleet shows.
    assert any(f["code"] == "stale-entry" for f in row["findings"])
    assert row["stateFiles"] == mine["stateFiles"] and row["stateFiles"]["cpu"] == "V4"


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(demo.classic_pod("probe", "fit", "4", "4Gi"), id="fits"),
        pytest.param(demo.classic_pod("wide", "fit", "40", "8Gi"), id="refused"),
    ],
)
def test_fit_on_the_observed_node_is_the_agents_dry_run_on_a_copy(
    observed: Observed, pod: str
) -> None:
    before = tree_state(observed.root)
    fit = observed.hub.client.post("/api/v1/fleet/fit", content=pod.encode(), headers=YAML)
    assert fit.status_code == 200
    (result,) = fit.json()["results"]
    direct = observed.agent.admit(NODE, pod, dry_run=True)
    assert direct.status_code == 200
    mine = {k: v for k, v in direct.json().items() if k != "batch"}
    assert {k: v for k, v in result.items() if k in mine} == mine
    assert tree_state(observed.root) == before


@pytest.mark.parametrize("release", ["1.35", "1.36", "1.38"])
def test_upgrade_of_the_observed_node_is_the_inspectors_verdict_on_its_root_dir(
    observed: Observed, release: str
) -> None:
    doc = observed.hub.json("/api/v1/fleet/upgrade", release=release)
    (result,) = doc["results"]
    out = subprocess.run(
        [NUMASCOPE, "checkpoint", "check", str(observed.root), "--target", release, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    check = json.loads(out.stdout)
    assert {f["name"]: f["status"] for f in result["files"]} == {
        f["name"]: f["status"] for f in check["files"]
    }
    for got, mine in zip(result["files"], check["files"], strict=True):
        assert got["verdict"] == mine.get("verdict")
        assert got["rescues"] == mine.get("rescues", [])
    # the node's verdict says the kubelet starts exactly when the rehearsal does
    rehearsal = observed.agent.client.post(
        f"/api/v1/nodes/{result['node']}/restart", params={"release": release, "dryRun": "true"}
    ).json()
    assert (result["verdict"] in ("compatible", "compatible-with-loss")) == rehearsal["started"]
    assert result["issues"] == check["issues"]
    # The node's verdict is its worst file's (a missing file is a fresh start).
    order = ["compatible", "compatible-with-loss", "policy-mismatch", "will-fail"]
    statuses = [f["status"] for f in check["files"] if f["status"] != "missing"]
    assert result["verdict"] == max(statuses, key=order.index, default="compatible")

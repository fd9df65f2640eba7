"""``numascope serve --observe --publish-nrt`` as a real process: a fake machine (kubelet root
with state files and config, sysfs tree, PodResources socket served by the test acting as the
kubelet), a fake Kubernetes API server over HTTP reached through ``KUBECONFIG``. The agent
creates the node's NodeResourceTopology, equal to what its own
``/api/v1/nodes/{node}/noderesourcetopology`` answers; when the kubelet's state changes (a pod
goes) it updates the object with the resourceVersion it read. Plus the start-up refusal of
``--publish-nrt`` without an observed node (exit 2)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.adapters import statefiles
from app.adapters.grpc.server import PodResourcesServer
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.adapters.nrt_publisher import GROUP, PLURAL, VERSION
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.presets import get_preset
from app.domain.snapshot import NodeSnapshot
from app.services import demo
from tests.fake_kube_api import FakeKubeAPI, kubeconfig, namespace, running
from tests.fixtures.sysfs import fake_sysfs_from_topology
from tests.processes import NUMASCOPE, Server, server_env

NODE = "worker-7"


class Kubelet:
    """The test's stand-in for the kubelet: state files, config, pods dir and PodResources."""

    def __init__(self, base: Path) -> None:
        config = parse_kubelet_config_text(demo.POD_SCOPE_CONFIG, "1.37")
        self.node = Node(NODE, get_preset("server-2s-4numa-128t"), config, clock=lambda: 100.0)
        for text in (demo.DATABASE_POD, demo.CLASSIC_POD):
            for pod in parse_pod_manifests(text):
                assert self.node.admit(pod).admitted
        self.root = base / "kubelet"
        self.root.mkdir()
        (self.root / "config.yaml").write_text(demo.POD_SCOPE_CONFIG)
        self.sysfs = fake_sysfs_from_topology(self.node.topology).write(base / "sys")
        self.socket = base / "pr.sock"
        self.snapshot: NodeSnapshot = self.node.snapshot()
        self.write()

    def write(self) -> None:
        self.snapshot = self.node.snapshot()
        statefiles.write_files(self.root, render_state_files(self.node))
        pods = self.root / "pods"
        shutil.rmtree(pods, ignore_errors=True)
        for p in self.snapshot.pods:
            (pods / p.uid).mkdir(parents=True)


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="nrt-", dir="/tmp"))  # short: sun_path holds 108 bytes
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with running(GROUP, VERSION, PLURAL) as fake:
        yield fake


def serve(base: Path, kubelet: Kubelet, api: FakeKubeAPI) -> Server:
    config = base / "kubeconfig"
    config.write_text(kubeconfig(api.url, token="agent-token"))
    env = server_env(base / "agent", nrt_interval="0.2")
    env.update(KUBECONFIG=str(config), NODE_NAME=NODE, POD_NAMESPACE="numascope")
    args = [
        "--no-demo", "--observe", "--publish-nrt", "--kubelet-state-dir", str(kubelet.root),
        "--sysfs", str(kubelet.sysfs), "--podresources-socket", str(kubelet.socket),
        "--log-level", "warning",
    ]  # fmt: skip
    return Server(base / "agent", env, args).launch()


def test_the_agent_creates_then_updates_its_node_resource_topology(
    base: Path, api: FakeKubeAPI
) -> None:
    kubelet = Kubelet(base)
    api.others["/api/v1/namespaces/numascope"] = namespace("numascope", "ns-uid")
    with PodResourcesServer(lambda: kubelet.snapshot, str(kubelet.socket)):
        agent = serve(base, kubelet, api)
        url = agent.url
        try:
            agent.wait_for(lambda: NODE in api.objects, "the NodeResourceTopology to be created")
            served = httpx.get(f"{url}/api/v1/nodes/{NODE}/noderesourcetopology").json()
            created = api.objects[NODE]
            assert {k: v for k, v in created.items() if k != "metadata"} == {
                k: v for k, v in served.items() if k != "metadata"
            }
            assert created["metadata"]["name"] == NODE
            (post,) = api.calls_of("POST")
            # As served, owned by the agent's namespace (garbage-collected with it).
            owners = post.body["metadata"].pop("ownerReferences")
            assert post.body == served
            assert owners == [
                {"apiVersion": "v1", "kind": "Namespace", "name": "numascope", "uid": "ns-uid"}
            ]
            assert post.headers["authorization"] == "Bearer agent-token"
            before = created["metadata"]["resourceVersion"]
            free_before = sum(
                int(r["available"])
                for z in created["zones"]
                for r in z["resources"]
                if r["name"] == "cpu"
            )

            # The kubelet removes the database pod: the next ticks see the node change.
            db = next(p for p in kubelet.snapshot.pods if p.name == "tightly-coupled-database")
            kubelet.node.remove(f"{db.namespace}/{db.name}")
            kubelet.write()
            agent.wait_for(lambda: api.calls_of("PUT"), "the NodeResourceTopology update")
            put = api.calls_of("PUT")[0]
            assert put.body["metadata"]["resourceVersion"] == before
            updated = api.objects[NODE]
            free_after = sum(
                int(r["available"])
                for z in updated["zones"]
                for r in z["resources"]
                if r["name"] == "cpu"
            )
            assert free_after > free_before
            served = httpx.get(f"{url}/api/v1/nodes/{NODE}/noderesourcetopology").json()
            assert updated["zones"] == served["zones"]
            metrics = httpx.get(f"{url}/metrics").text
            assert 'numascope_nrt_publish_total{outcome="created"} 1.0' in metrics
            assert 'numascope_nrt_publish_total{outcome="updated"} 1.0' in metrics
            # Unchanged node, no more writes: the publisher only writes what changed.
            writes = len(api.calls_of("PUT")) + len(api.calls_of("POST"))
            assert httpx.get(f"{url}/healthz").status_code == 200
            time.sleep(1.0)  # five more ticks of 0.2 s (nothing to wait for: absence)
            assert len(api.calls_of("PUT")) + len(api.calls_of("POST")) == writes
        finally:
            out = agent.close()
    assert "Traceback" not in out, out


def test_publish_nrt_without_an_observed_node_is_exit_2(base: Path) -> None:
    env = server_env(base)
    proc = subprocess.run(
        [str(NUMASCOPE), "serve", "--no-observe", "--publish-nrt", "--no-demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "numascope serve: invalid settings" in proc.stderr
    assert "a NodeResourceTopology is published for the observed node: add --observe" in (
        proc.stderr
    )

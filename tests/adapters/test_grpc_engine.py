"""PodResources of nodes simulated by the engine (app.domain.node.model), end to end.

The documentation's pod-level examples are admitted by the real engine; the assertions are
the reporting rules (which fields are filled, subsets, sizes), not the engine's CPU choice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.adapters.grpc.client import PodResourcesClient
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.node.model import Node
from app.domain.podresources import build_list_response
from app.domain.pools import pools_from_snapshot
from app.domain.topology.spec import parse_topology_spec

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = "sockets=2,cores_per_numa=16"

KUBELET_CONFIG = """
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: {scope}
reservedSystemCPUs: "0,32"
kubeReserved: {{cpu: "1", memory: "1Gi"}}
systemReserved: {{cpu: "1", memory: "1Gi"}}
evictionHard: {{memory.available: "100Mi"}}
reservedMemory:
- numaNode: 0
  limits: {{memory: "2148Mi"}}
featureGates:
  PodLevelResourceManagers: true
"""

DATABASE_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: tightly-coupled-database
spec:
  resources:
    requests: {cpu: "8", memory: "16Gi"}
    limits: {cpu: "8", memory: "16Gi"}
  initContainers:
  - name: metrics-exporter
    image: metrics-exporter:v1
    restartPolicy: Always
  - name: backup-agent
    image: backup-agent:v1
    restartPolicy: Always
  containers:
  - name: database
    image: database:v1
    resources:
      requests: {cpu: "6", memory: "12Gi"}
      limits: {cpu: "6", memory: "12Gi"}
"""

MIXED_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: container-scope-mixed
spec:
  resources:
    requests: {cpu: "4", memory: "4Gi"}
    limits: {cpu: "4", memory: "4Gi"}
  initContainers:
  - name: infrastructure-sidecar
    image: registry.k8s.io/pause:3.9
    restartPolicy: Always
    resources:
      requests: {cpu: "2", memory: "2Gi"}
      limits: {cpu: "2", memory: "2Gi"}
  containers:
  - name: worker-1
    image: registry.k8s.io/pause:3.9
  - name: worker-2
    image: registry.k8s.io/pause:3.9
"""


def _node(scope: str, manifest: str) -> Node:
    node = Node(
        "sim",
        parse_topology_spec(TOPOLOGY),
        parse_kubelet_config_text(KUBELET_CONFIG.format(scope=scope)),
    )
    for pod in parse_pod_manifests(manifest):
        result = node.admit(pod)
        assert result.admitted, (result.reason, result.message)
    return node


def test_engine_pod_scope_database() -> None:
    snapshot = _node("pod", DATABASE_POD).snapshot()
    pod = build_list_response(snapshot).pod_resources[0]
    assert [c.name for c in pod.containers] == ["metrics-exporter", "backup-agent", "database"]
    assert len(pod.cpu_ids) == 8
    database = pod.containers[2]
    assert len(database.cpu_ids) == 6 and set(database.cpu_ids) < set(pod.cpu_ids)
    assert [(m.memory_type, m.size) for m in database.memory] == [("memory", 12 * 1024**3)]
    assert [(m.memory_type, m.size) for m in pod.memory] == [("memory", 16 * 1024**3)]
    for sidecar in pod.containers[:2]:
        assert sidecar.cpu_ids == () and sidecar.memory == ()
    pools = pools_from_snapshot(snapshot)
    shared = pools.pod("default", "tightly-coupled-database")
    assert shared is not None and shared.shared_cpus.size() == 2
    assert dict(shared.shared_memory) == {"memory": 4 * 1024**3}


def test_engine_container_scope_mixed_without_memory_manager() -> None:
    """The docs' mixed model: the sidecar gets exclusive CPUs, the workers the node pool."""
    config = KUBELET_CONFIG.format(scope="container").replace(
        "memoryManagerPolicy: Static", "memoryManagerPolicy: None"
    )
    node = Node("sim", parse_topology_spec(TOPOLOGY), parse_kubelet_config_text(config))
    for pod in parse_pod_manifests(MIXED_POD):
        result = node.admit(pod)
        assert result.admitted, (result.reason, result.message)
    snapshot = node.snapshot()
    pod_resources = build_list_response(snapshot).pod_resources[0]
    assert pod_resources.cpu_ids == () and pod_resources.memory == ()
    sidecar, worker_1, worker_2 = pod_resources.containers
    assert sidecar.name == "infrastructure-sidecar" and len(sidecar.cpu_ids) == 2
    assert worker_1.cpu_ids == worker_2.cpu_ids == ()
    pools = pools_from_snapshot(snapshot)
    assert pools.node_shared.size() == 62 - 2


def test_engine_container_scope_mixed_with_static_memory_follows_the_code() -> None:
    """With the Static memory manager and single-numa-node, the kubelet's code rejects the
    docs' mixed pod: a worker that is not equivalent Guaranteed asks for no memory, so its
    merged hint has no NUMA mask and ``getDefaultHint`` finds no hint for an empty request
    (memorymanager/policy_static.go). The docs describe the workers in the node shared pool;
    Numascope follows the code: a 1.36 kubelet rejects the pod, from 1.37 (kubernetes#138770)
    the workers are skipped and the pod is admitted. (This asserted the rejection on 1.37 before
    #138770 was modelled.)"""
    (pod,) = parse_pod_manifests(MIXED_POD)
    config = KUBELET_CONFIG.format(scope="container")
    admitted = Node("sim", parse_topology_spec(TOPOLOGY), parse_kubelet_config_text(config, "1.37"))
    assert admitted.admit(pod).admitted
    node = Node("sim", parse_topology_spec(TOPOLOGY), parse_kubelet_config_text(config, "1.36"))
    result = node.admit(pod)
    assert not result.admitted
    assert result.reason == "UnexpectedAdmissionError"
    assert result.message == (
        "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, "
        "no NUMA nodes with enough memory is available, which is unexpected"
    )
    assert node.snapshot().pods == ()


@pytest.fixture
def files() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="npr-e2e-", dir="/tmp"))
    (d / "kubelet.yaml").write_text(KUBELET_CONFIG.format(scope="pod"))
    (d / "pods.yaml").write_text(DATABASE_POD + "---\n" + MIXED_POD)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_serve_command_with_the_engine(files: Path) -> None:
    sock = str(files / "k.sock")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "podresources",
            "serve",
            "--socket",
            sock,
            "--topology",
            TOPOLOGY,
            "--kubelet-config",
            str(files / "kubelet.yaml"),
            "--pods",
            str(files / "pods.yaml"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving PodResources v1"), proc.stderr.read() if proc.stderr else ""
        with PodResourcesClient(sock) as client:
            pods = {p.name: p for p in client.list().pod_resources}
        assert set(pods) == {"tightly-coupled-database", "container-scope-mixed"}
        assert len(pods["tightly-coupled-database"].cpu_ids) == 8
        proc.terminate()
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not os.path.exists(sock)

"""``GET /api/v1/nodes/{node}/noderesourcetopology``: the NodeResourceTopology of a node, in the
OpenAPI document, agreeing zone by zone with the node JSON's ``numaPools`` (the numbers a
topology-aware scheduler would read), 404 for an unknown node."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.adapters import statefiles
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.sysfs import discover_host
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.services.demo import classic_pod
from app.services.nodes.service import NodeService
from app.web.app import create_app
from tests.helpers import DB_POD, POD_SCOPE, SMALL, make_settings


def test_the_object_agrees_with_the_node_json(client: TestClient, nodes: NodeService) -> None:
    nodes.create("small", SMALL, POD_SCOPE)
    nodes.admit("small", DB_POD)
    nodes.admit("small", classic_pod("web", "prod", "2", "2Gi"))
    r = client.get("/api/v1/nodes/small/noderesourcetopology")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    obj = r.json()
    assert (obj["apiVersion"], obj["kind"]) == (
        "topology.node.k8s.io/v1alpha2",
        "NodeResourceTopology",
    )
    doc = client.get("/nodes/small.json").json()
    pools = {row["numaNode"]: row for row in doc["numaPools"]}
    assert len(obj["zones"]) == len(pools) == 2
    for zone in obj["zones"]:
        n = int(zone["name"].removeprefix("node-"))
        cpu = {r["name"]: r for r in zone["resources"]}["cpu"]
        counts = pools[n]["counts"]
        assert int(cpu["available"]) == pools[n]["available"]
        assert int(cpu["capacity"]) == counts["total"]
        assert int(cpu["allocatable"]) == counts["total"] - counts["reserved"]
    # db's budget (4) and web's exclusive 2 CPUs: 11 allocatable, 5 available.
    available = sum(
        int(r["available"]) for z in obj["zones"] for r in z["resources"] if r["name"] == "cpu"
    )
    assert available == 11 - 4 - 2


def test_unknown_node_is_a_404(client: TestClient) -> None:
    r = client.get("/api/v1/nodes/nope/noderesourcetopology")
    assert r.status_code == 404
    assert r.json()["error"]["reason"]


def test_it_is_in_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "get" in paths["/api/v1/nodes/{node}/noderesourcetopology"]


OBSERVED_CONFIG = """\
cpuManagerPolicy: static
memoryManagerPolicy: Static
kubeReserved: {cpu: "1", memory: 1Gi}
reservedMemory:
- numaNode: 0
  limits: {memory: 1124Mi}
"""


def test_an_observed_node_with_a_memory_only_numa_node(tmp_path: Path, host_sysfs: Path) -> None:
    """The fake host of tests/web/conftest.py: NUMA 0 and 1 with CPUs, NUMA 2 memory only
    (CXL-like), 2Mi hugepages on NUMA 0. The memory-only node is a zone with memory and no
    cpu resource, and the distances name it."""
    config = parse_kubelet_config_text(OBSERVED_CONFIG, "1.37")
    node = Node("obs", discover_host(host_sysfs, use_cpuinfo=False), config, clock=lambda: 1.0)
    root = tmp_path / "kubelet"
    statefiles.write_files(root, render_state_files(node))
    (root / "config.yaml").write_text(OBSERVED_CONFIG)
    settings = make_settings(
        tmp_path,
        sysfs_root=host_sysfs,
        kubelet_root=root,
        observe=True,
        node_name="obs",
        podresources_socket=str(tmp_path / "absent.sock"),
    )
    with TestClient(create_app(settings)) as client:
        r = client.get("/api/v1/nodes/obs/noderesourcetopology")
    assert r.status_code == 200, r.text
    zones = {z["name"]: z for z in r.json()["zones"]}
    assert list(zones) == ["node-0", "node-1", "node-2"]
    # Every hugepage size on every NUMA node, as the memory manager's machine state has them
    # (cAdvisor reports each size per node, zero pages where there are none).
    res = {n: {r["name"]: r for r in z["resources"]} for n, z in zones.items()}
    assert {n: sorted(r) for n, r in res.items()} == {
        "node-0": ["cpu", "hugepages-1Gi", "hugepages-2Mi", "memory"],
        "node-1": ["cpu", "hugepages-1Gi", "hugepages-2Mi", "memory"],
        "node-2": ["hugepages-1Gi", "hugepages-2Mi", "memory"],
    }
    assert res["node-0"]["hugepages-2Mi"]["capacity"] == str(512 * 2 * 1024**2)
    assert res["node-2"]["hugepages-2Mi"]["capacity"] == "0"
    assert zones["node-2"]["costs"] == [
        {"name": "node-0", "value": 30},
        {"name": "node-1", "value": 30},
        {"name": "node-2", "value": 10},
    ]
    mem2 = zones["node-2"]["resources"][0]
    assert mem2["capacity"] == mem2["allocatable"] == mem2["available"] == str(64 * 1024**3)

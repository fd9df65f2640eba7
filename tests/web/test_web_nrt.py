"""``GET /api/v1/nodes/{node}/noderesourcetopology``: the NodeResourceTopology of a node, in the
OpenAPI document, agreeing zone by zone with the node JSON's ``numaPools`` (the numbers a
topology-aware scheduler would read), 404 for an unknown node."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.services.demo import classic_pod
from app.services.nodes import NodeService
from tests.helpers import DB_POD, POD_SCOPE, SMALL


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

"""/nodes/{node}/metrics and /api/v1/nodes/{node}/kubelet-metrics: the kubelet's
resource-manager series of a simulated node, counted over its whole admission log."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.services.demo import EMPTY_SHARED_POOL_POD
from app.services.kubelet_metrics import KubeletMetrics, families_of
from app.services.nodes.service import NodeService
from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}
SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (\S+)$")


def samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


@pytest.fixture
def api(client: TestClient) -> TestClient:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": "1.37"},
    )
    assert r.status_code == 201, r.text
    return client


def test_counts_admissions_and_rejections_but_not_dry_runs(api: TestClient) -> None:
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    other = DB_POD.replace("name: db", "name: db2")
    r = api.post("/api/v1/nodes/small/pods?dryRun=true", content=other, headers=YAML)
    assert r.status_code == 200 and r.json()["admitted"] is True
    r = api.post("/api/v1/nodes/small/pods", content=EMPTY_SHARED_POOL_POD, headers=YAML)
    assert r.status_code == 200 and r.json()["admitted"] is False

    r = api.get("/nodes/small/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = samples(r.text)
    # db: the pod, its sidecar (every init container counts) and main; the dry run is no
    # kubelet event; the rejected pod fails at hint time, before any allocation.
    assert got["kubelet_memory_manager_pinning_requests_total"] == 3
    assert got["kubelet_cpu_manager_pinning_requests_total"] == 1
    assert got["kubelet_memory_manager_pinning_errors_total"] == 0
    mem = 'resource_name="memory"'
    assert got[f'kubelet_resource_manager_allocations_total{{{mem},source="pod"}}'] == 2
    # Label pairs come out sorted by name, as the kubelet's registry writes them.
    assignments = "kubelet_resource_manager_container_assignments"
    assert got[f'{assignments}{{assignment_type="pod_exclusive",{mem}}}'] == 1
    assert got[f'{assignments}{{assignment_type="pod_shared",{mem}}}'] == 1
    assert "# TYPE kubelet_resource_manager_container_assignments counter" in r.text
    assert "# HELP kubelet_resource_manager_allocations_total [BETA]" in r.text


def test_json_twin_lists_the_same_series(api: TestClient) -> None:
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    text = samples(api.get("/nodes/small/metrics").text)
    body = api.get("/api/v1/nodes/small/kubelet-metrics").json()
    assert (body["node"], body["release"], body["admissionAttempts"]) == ("small", "1.37", 1)
    from_json = {}
    for f in body["series"]:
        for s in f["samples"]:
            labels = ",".join(f'{k}="{v}"' for k, v in s["labels"].items())
            from_json[f["name"] + (f"{{{labels}}}" if labels else "")] = s["value"]
    assert from_json == text


def test_replay_equals_the_live_engine_without_dry_runs(
    api: TestClient, nodes: NodeService
) -> None:
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    api.post("/api/v1/nodes/small/pods", content=EMPTY_SHARED_POOL_POD, headers=YAML)
    assert api.delete("/api/v1/nodes/small/pods/prod/db").status_code == 200
    live = families_of(nodes.registry.fresh("small").node)  # the live engine itself
    body = api.get("/api/v1/nodes/small/kubelet-metrics").json()
    assert [(f["name"], [s["value"] for s in f["samples"]]) for f in body["series"]] == [
        (f.name, [s.value for s in f.samples]) for f in live
    ]


def test_release_names_the_series(client: TestClient) -> None:
    for name, release in (("r136", "1.36"), ("r135", "1.35")):
        config = (
            POD_SCOPE
            if release == "1.36"
            else POD_SCOPE.replace(
                "PodLevelResources: true, PodLevelResourceManagers: true", "PodLevelResources: true"
            ).replace("topologyManagerScope: pod", "topologyManagerScope: container")
        )
        r = client.post(
            "/api/v1/nodes",
            json={"name": name, "topology": SMALL, "kubeletConfig": config, "release": release},
        )
        assert r.status_code == 201, r.text
    t136 = client.get("/nodes/r136/metrics").text
    # Registered but nothing counted yet: a CounterVec without label values is not gathered,
    # so the text has no HELP/TYPE for it; the JSON twin lists the registered family.
    assert "resource_manager_allocations_total" not in t136
    assert "kubelet_resource_manager" not in t136
    series = client.get("/api/v1/nodes/r136/kubelet-metrics").json()["series"]
    assert {"name": "resource_manager_allocations_total", "samples": []}.items() <= next(
        f for f in series if f["name"] == "resource_manager_allocations_total"
    ).items()
    t135 = client.get("/nodes/r135/metrics").text
    assert "resource_manager_" not in t135.replace("kubelet_cpu_manager", "")
    assert "kubelet_memory_manager_pinning_requests_total 0" in t135


def test_unknown_node_is_404(client: TestClient) -> None:
    r = client.get("/nodes/nope/metrics")
    assert r.status_code == 404
    assert client.get("/api/v1/nodes/nope/kubelet-metrics").json()["error"]["reason"] == "NotFound"


def test_node_page_links_its_kubelet_metrics(api: TestClient) -> None:
    assert 'href="/nodes/small/metrics"' in api.get("/nodes/small").text


def test_incremental_replay_equals_a_fresh_one(api: TestClient, nodes: NodeService) -> None:
    seen = KubeletMetrics(nodes)
    empty = seen.view("small")
    assert empty.admission_attempts == 0
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    first = seen.view("small")
    api.post("/api/v1/nodes/small/pods", content=EMPTY_SHARED_POOL_POD, headers=YAML)
    assert api.delete("/api/v1/nodes/small/pods/prod/db").status_code == 200
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    later = seen.view("small")
    assert later == KubeletMetrics(nodes).view("small")
    assert later.admission_attempts == 3 and later != first


def test_recreated_node_starts_from_zero(api: TestClient, nodes: NodeService) -> None:
    seen = KubeletMetrics(nodes)
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    assert seen.view("small").admission_attempts == 1
    assert api.delete("/api/v1/nodes/small", headers={"X-Confirm": "yes"}).status_code in (200, 204)
    r = api.post(
        "/api/v1/nodes", json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE}
    )
    assert r.status_code == 201
    again = seen.view("small")
    assert again.admission_attempts == 0
    assert again == KubeletMetrics(nodes).view("small")

"""/api/v1/nodes: create/delete nodes, admit/remove pods, the admission log, and PodResources
List/Get/GetAllocatableResources in canonical proto3 JSON; error bodies and status codes."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.adapters.podresources_cache import list_response_json
from app.adapters.podresources_json import allocatable_json
from app.services.demo import EMPTY_SHARED_POOL_POD, classic_pod
from app.services.nodes.service import NodeService
from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}


@pytest.fixture
def api(client: TestClient) -> TestClient:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE},
    )
    assert r.status_code == 201, r.text
    return client


def error_of(r: object) -> dict[str, str]:
    body = r.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"}
    error: dict[str, str] = body["error"]
    assert set(error) <= {"reason", "message", "field"}
    return error


# -- nodes ------------------------------------------------------------------------------------


def test_create_node_returns_201_with_location_and_detail(client: TestClient) -> None:
    r = client.post(
        "/api/v1/nodes",
        json={
            "name": "made",
            "topology": "sockets=1,cores_per_numa=4,threads_per_core=2",
            "kubeletConfig": {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"},
            "release": "1.36",
        },
    )
    assert r.status_code == 201
    assert r.headers["location"] == "/api/v1/nodes/made"
    body = r.json()
    assert body["summary"]["name"] == "made" and body["summary"]["release"] == "1.36"
    assert body["summary"]["topology"]["kind"] == "spec"
    assert body["kubeletConfig"]["reservedSystemCPUs"] == "0"
    assert body["pools"]["reserved"] == {"cpus": "0", "cpuIds": [0]}
    assert body["pods"] == []
    listed = client.get("/api/v1/nodes").json()
    assert [n["name"] for n in listed["nodes"]] == ["made"]
    assert "presets" in listed and "1.37" in listed["releases"]


@pytest.mark.parametrize(
    ("body", "status", "reason", "field"),
    [
        pytest.param(
            {"name": "n", "topology": "laptop-1s", "kubeletConfig": "cpuManagerPolicy: x"},
            422, "Invalid", "cpuManagerPolicy", id="config",
        ),
        pytest.param(
            {"name": "n", "topology": "nope", "kubeletConfig": ""}, 422, "Invalid", "topology",
            id="topology",
        ),
        pytest.param({"topology": "laptop-1s"}, 422, "Invalid", "name", id="missing-name"),
        pytest.param(
            {"name": "small", "topology": "laptop-1s", "kubeletConfig": ""}, 409,
            "AlreadyExists", "name", id="duplicate",
        ),
    ],
)  # fmt: skip
def test_create_node_errors(
    api: TestClient, body: dict[str, object], status: int, reason: str, field: str
) -> None:
    r = api.post("/api/v1/nodes", json=body)
    assert r.status_code == status
    error = error_of(r)
    assert error["reason"] == reason and error["field"] == field
    assert error["message"]


def test_node_detail_and_delete(api: TestClient) -> None:
    api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    body = api.get("/api/v1/nodes/small").json()
    assert set(body) == {
        "summary", "observedAt", "kubeletConfig", "pools", "numaPools", "memory", "pods",
    }  # fmt: skip
    assert body["summary"]["simulated"] is True
    assert body["kubeletConfig"]["topologyManagerScope"] == "pod"
    assert set(body["pools"]["perNuma"]) == {"0", "1"}
    assert body["pods"][0]["budget"]["cpu"] == "4"
    assert "map" not in body
    assert api.delete("/api/v1/nodes/small").status_code == 204
    r = api.get("/api/v1/nodes/small")
    assert r.status_code == 404 and error_of(r)["reason"] == "NotFound"
    assert api.delete("/api/v1/nodes/small").status_code == 404


# -- pods -------------------------------------------------------------------------------------


def test_admit_yaml_text_is_201(api: TestClient) -> None:
    r = api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    assert r.status_code == 201
    body = r.json()
    assert body["admitted"] is True and body["dryRun"] is False
    (result,) = body["results"]
    assert result["pod"]["name"] == "db" and result["url"] == "/nodes/small/pods/prod/db"
    containers = {c["name"]: c for c in result["allocation"]["containers"]}
    assert containers["main"]["isolation"] == "container"
    assert containers["side"]["isolation"] == "pod"


def test_a_rejected_pod_is_200_with_reason_and_message(api: TestClient) -> None:
    r = api.post("/api/v1/nodes/small/pods", content=EMPTY_SHARED_POOL_POD, headers=YAML)
    assert r.status_code == 200
    body = r.json()
    assert body["admitted"] is False
    assert body["reason"] == "TopologyAffinityError"
    assert body["message"] == (
        "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
    )
    assert body["results"][0]["reason"] == "TopologyAffinityError"
    log = api.get("/api/v1/nodes/small/admissions").json()["admissions"]
    assert (log[0]["admitted"], log[0]["reason"]) == (False, "TopologyAffinityError")


def test_dry_run_keeps_nothing(api: TestClient) -> None:
    r = api.post("/api/v1/nodes/small/pods?dryRun=true", content=DB_POD, headers=YAML)
    assert r.status_code == 200
    assert r.json()["admitted"] is True and r.json()["dryRun"] is True
    assert api.get("/api/v1/nodes/small").json()["pods"] == []


@pytest.mark.parametrize(
    "send",
    [
        pytest.param(lambda: {"json": json.loads(json.dumps(_pod_dict()))}, id="json-pod"),
        pytest.param(lambda: {"json": {"manifest": DB_POD}}, id="json-manifest"),
        pytest.param(
            lambda: {"content": DB_POD, "headers": {"Content-Type": "application/yaml"}},
            id="yaml",
        ),
    ],
)
def test_admit_accepts_json_pods_and_manifest_text(api: TestClient, send: object) -> None:
    r = api.post("/api/v1/nodes/small/pods", **send())  # type: ignore[operator]
    assert r.status_code == 201, r.text
    assert [p["key"] for p in api.get("/api/v1/nodes/small").json()["pods"]] == ["prod/db"]


@pytest.mark.parametrize(
    "headers",
    [{"Content-Type": "text/plain"}, {}, {"Content-Type": "application/x-www-form-urlencoded"}],
    ids=["text-plain", "no-content-type", "form"],
)
def test_admit_refuses_bodies_a_foreign_page_could_send(
    api: TestClient, headers: dict[str, str]
) -> None:
    # The "simple" requests of a no-cors fetch or a form: never admitted (issue 13, point 6).
    r = api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=headers)
    assert r.status_code == 415, r.text
    assert r.json()["error"]["field"] == "Content-Type"
    assert api.get("/api/v1/nodes/small").json()["pods"] == []


def _pod_dict() -> dict[str, object]:
    import yaml

    doc: dict[str, object] = yaml.safe_load(DB_POD)
    return doc


@pytest.mark.parametrize(
    ("content", "content_type", "field"),
    [
        pytest.param(
            "metadata: {name: x}\nspec: {containers: [{name: c, resources: {limits: {cpu: lots}}}]}",
            "application/yaml", "spec.containers[0].resources.limits.cpu", id="quantity",
        ),
        pytest.param("", "application/yaml", "manifest", id="empty"),
        pytest.param("{broken", "application/json", "manifest", id="bad-json"),
        pytest.param('{"manifest": 3}', "application/json", "manifest", id="manifest-not-text"),
    ],
)  # fmt: skip
def test_bad_manifests_are_422_with_the_field(
    api: TestClient, content: str, content_type: str, field: str
) -> None:
    r = api.post(
        "/api/v1/nodes/small/pods", content=content, headers={"Content-Type": content_type}
    )
    assert r.status_code == 422
    error = error_of(r)
    assert (error["reason"], error["field"]) == ("Invalid", field)


def test_conflict_and_unknown_node(api: TestClient) -> None:
    assert api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    r = api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    assert r.status_code == 409 and error_of(r)["reason"] == "AlreadyExists"
    r = api.post("/api/v1/nodes/nope/pods", content=DB_POD, headers=YAML)
    assert r.status_code == 404 and "nope" in error_of(r)["message"]


def test_remove_pod(api: TestClient) -> None:
    api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    r = api.delete("/api/v1/nodes/small/pods/prod/db")
    assert r.status_code == 200
    assert r.json()["removed"]["action"] == "remove"
    r = api.delete("/api/v1/nodes/small/pods/prod/db")
    assert r.status_code == 404
    assert error_of(r)["message"] == "pod db in namespace prod not found"


def test_admission_log_newest_first_and_by_batch(api: TestClient) -> None:
    first = api.post(
        "/api/v1/nodes/small/pods",
        content=classic_pod("a", "x", "1", "1Gi") + "---\n" + classic_pod("b", "x", "1", "1Gi"),
        headers=YAML,
    ).json()
    api.delete("/api/v1/nodes/small/pods/x/a")
    log = api.get("/api/v1/nodes/small/admissions").json()
    assert log["node"] == "small"
    assert [(e["action"], e["name"]) for e in log["admissions"]] == [
        ("remove", "a"), ("admit", "b"), ("admit", "a"),
    ]  # fmt: skip
    batch = api.get(f"/api/v1/nodes/small/admissions?batch={first['batch']}").json()
    assert [e["name"] for e in batch["admissions"]] == ["a", "b"]
    assert len(api.get("/api/v1/nodes/small/admissions?limit=1").json()["admissions"]) == 1
    r = api.get("/api/v1/nodes/small/admissions?limit=0")
    assert r.status_code == 422 and error_of(r)["field"] == "limit"


# -- PodResources -----------------------------------------------------------------------------


def test_podresources_list_get_allocatable_are_canonical_json(
    nodes: NodeService, api: TestClient
) -> None:
    api.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    snapshot = nodes.reads.snapshot("small")
    listed = api.get("/api/v1/nodes/small/podresources")
    assert listed.status_code == 200
    assert listed.json() == list_response_json(snapshot)
    (pod,) = listed.json()["podResources"]
    assert (pod["name"], pod["namespace"]) == ("db", "prod")
    assert all(isinstance(i, str) for i in pod["cpuIds"])  # int64 as strings
    names = [c["name"] for c in pod["containers"]]
    assert names == ["side", "main"]  # sidecars first, then app containers
    main = pod["containers"][1]
    assert len(main["cpuIds"]) == 2 and "cpuIds" not in pod["containers"][0]
    got = api.get("/api/v1/nodes/small/podresources/prod/db").json()
    assert got == {"podResources": pod}
    alloc = api.get("/api/v1/nodes/small/allocatable").json()
    assert alloc == allocatable_json(snapshot)
    assert "0" not in alloc["cpuIds"] and len(alloc["cpuIds"]) == 11


def test_podresources_get_unknown_pod_is_404_with_the_kubelet_text(api: TestClient) -> None:
    r = api.get("/api/v1/nodes/small/podresources/prod/nope")
    assert r.status_code == 404
    assert error_of(r) == {"reason": "NotFound", "message": "pod nope in namespace prod not found"}
    assert api.get("/api/v1/nodes/nope/podresources").status_code == 404


def test_empty_node_podresources_list_is_an_empty_object(api: TestClient) -> None:
    assert api.get("/api/v1/nodes/small/podresources").json() == {}


def test_openapi_documents_the_node_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/api/v1/nodes",
        "/api/v1/nodes/{node}",
        "/api/v1/nodes/{node}/pods",
        "/api/v1/nodes/{node}/pods/{namespace}/{name}",
        "/api/v1/nodes/{node}/admissions",
        "/api/v1/nodes/{node}/podresources",
        "/api/v1/nodes/{node}/podresources/{namespace}/{name}",
        "/api/v1/nodes/{node}/allocatable",
        "/nodes.json",
        "/nodes/{node}.json",
    ):
        assert path in paths, path
    body = paths["/api/v1/nodes/{node}/pods"]["post"]["requestBody"]["content"]
    assert {"application/yaml", "application/json"} <= set(body)
    assert "text/plain" not in body  # the request guard answers 415 to it (issue 22)
    assert "dryRun" in [p["name"] for p in paths["/api/v1/nodes/{node}/pods"]["post"]["parameters"]]

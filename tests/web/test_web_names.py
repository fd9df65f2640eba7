"""Pod, namespace, container names and UIDs checked like the API server on every web path: the
JSON API, the admission form (with and without htmx), manifest lists; a refused name is a 422
naming the field, the node keeps nothing, and its pages keep answering."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.services.nodes.service import NodeService
from tests.factories import pod_json
from tests.helpers import DB_POD, POD_SCOPE, SMALL
from tests.web.html_helpers import cpu_cells, elements

JSON = {"Content-Type": "application/json"}
HX = {"HX-Request": "true"}
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"

# Names a browser would run as markup if they were ever shown unescaped.
PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "<svg/onload=alert(1)>",
    "javascript:alert(1)",
    "a/b",
    "../../etc/passwd",
    "x%2Fy",
    "pod\x00nul",
    "UPPER",
    "a" * 254,
]


@pytest.fixture
def node_client(nodes: NodeService, client: TestClient) -> TestClient:
    nodes.create("small", SMALL, POD_SCOPE)
    nodes.admit("small", DB_POD)
    return client


def _pods_of(client: TestClient) -> list[str]:
    body = client.get("/api/v1/nodes/small").json()
    return sorted(f"{p['namespace']}/{p['name']}" for p in body["pods"])


@pytest.mark.parametrize("name", PAYLOADS, ids=range(len(PAYLOADS)))
def test_api_refuses_bad_pod_names_with_422(node_client: TestClient, name: str) -> None:
    before = _pods_of(node_client)
    r = node_client.post("/api/v1/nodes/small/pods", content=pod_json(name), headers=JSON)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["reason"] == "Invalid" and error["field"] == "metadata.name"
    assert error["message"].startswith("metadata.name: Invalid value: ")
    assert (
        SUBDOMAIN in error["message"] or "must be no more than 253 characters" in error["message"]
    )
    assert _pods_of(node_client) == before
    page = node_client.get("/nodes/small")
    assert page.status_code == 200
    assert {c["data-owner"] for c in cpu_cells(page.text)} >= {"prod/db/main"}


@pytest.mark.parametrize(
    ("manifest", "field", "needle"),
    [
        (pod_json("web", namespace="Team_A"), "metadata.namespace", LABEL),
        (pod_json("web", namespace="team.a"), "metadata.namespace", "must not contain dots"),
        (pod_json("web", container="Main"), "spec.containers[0].name", LABEL),
        (pod_json("web", uid="a/b"), "metadata.uid", "a pod UID must consist of alphanumeric"),
        (pod_json("web", uid="u" * 129), "metadata.uid", "must be no more than 128 characters"),
    ],
    ids=["namespace", "namespace-dots", "container", "uid", "uid-long"],
)
def test_api_refuses_bad_namespaces_containers_and_uids(
    node_client: TestClient, manifest: str, field: str, needle: str
) -> None:
    r = node_client.post("/api/v1/nodes/small/pods", content=manifest, headers=JSON)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == field and needle in error["message"]
    assert _pods_of(node_client) == ["prod/db"]


def test_a_list_with_one_bad_name_admits_nothing(node_client: TestClient) -> None:
    good = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "good"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]},
    }
    bad = {**good, "metadata": {"name": "a/b"}}
    r = node_client.post(
        "/api/v1/nodes/small/pods", json={"apiVersion": "v1", "kind": "List", "items": [good, bad]}
    )
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == "items[1].metadata.name"
    assert error["message"].startswith('items[1].metadata.name: Invalid value: "a/b": ')
    assert _pods_of(node_client) == ["prod/db"]
    # The same as a dry run: refused before any engine work, nothing logged.
    r = node_client.post(
        "/api/v1/nodes/small/pods?dryRun=true", content=pod_json("a/b"), headers=JSON
    )
    assert r.status_code == 422
    log = node_client.get("/api/v1/nodes/small/admissions").json()
    assert "a/b" not in str(log)


@pytest.mark.parametrize("htmx", [False, True], ids=["no-js", "htmx"])
def test_the_form_shows_the_name_error_inline(node_client: TestClient, htmx: bool) -> None:
    r = node_client.post(
        "/nodes/small/admissions",
        data={"manifest": pod_json("<b>bold</b>"), "action": "admit"},
        headers=HX if htmx else {},
        follow_redirects=False,
    )
    assert r.status_code == (200 if htmx else 422)
    (box,) = [a for t, a in elements(r.text) if t == "div" and "data-field" in a]
    assert box["data-field"] == "metadata.name"
    assert "<b>bold</b>" not in r.text  # shown escaped, in the message and the textarea
    assert "&lt;b&gt;bold&lt;/b&gt;" in r.text
    assert _pods_of(node_client) == ["prod/db"]


def test_a_bad_name_in_the_url_is_not_found(node_client: TestClient) -> None:
    assert node_client.get("/nodes/small/pods/default/a%2Fb").status_code == 404
    r = node_client.delete("/api/v1/nodes/small/pods/default/a%2Fb")
    assert r.status_code == 404 and r.json()["error"]["reason"] == "NotFound"

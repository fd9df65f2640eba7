"""An applied kubelet restart is confirmed first, recorded in the node's history with its maps
before and after, and can be undone where the files allow it (issue 21 point 4):
``app.web.routers.kubelet_restarts``, ``app.services.history.replay``, ``app.services.undo``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.services.demo import classic_pod
from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}
APPLY = {"release": "1.38", "gate": "on", "action": "apply"}
WEB = classic_pod("web", "shop", "2", "1Gi")


@pytest.fixture
def node(client: TestClient) -> TestClient:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": "1.37"},
    )
    assert r.status_code == 201, r.text
    for pod in (DB_POD, WEB):
        r = client.post("/api/v1/nodes/small/pods", content=pod, headers=YAML)
        assert r.status_code == 201, r.text
    return client


def release(client: TestClient) -> str:
    summary: dict[str, str] = client.get("/api/v1/nodes/small").json()["summary"]
    return summary["release"]


def test_an_unconfirmed_restart_goes_to_the_confirmation_and_changes_nothing(
    node: TestClient,
) -> None:
    r = node.post("/nodes/small/restart", data=APPLY, follow_redirects=False)
    assert r.status_code == 303
    where = urlsplit(r.headers["location"])
    assert where.path == "/nodes/small/restart"
    assert parse_qs(where.query) == {"release": ["1.38"], "gate": ["on"]}
    # htmx: the whole page goes there
    r = node.post("/nodes/small/restart", data=APPLY, headers={"HX-Request": "true"})
    assert r.headers["HX-Redirect"] == "/nodes/small/restart?release=1.38&gate=on"
    assert release(node) == "1.37"

    page = node.get("/nodes/small/restart?release=1.38&gate=on")
    assert page.status_code == 200
    text = page.text
    assert "Restart the kubelet of node small as 1.38?" in text
    assert "The node runs kubelet 1.37 now" in text and "rehearsed: 1 kept, 1 restored" in text
    assert '<input type="hidden" name="confirm" value="yes">' in text
    assert '<input type="hidden" name="action" value="apply">' in text
    assert "Restart the kubelet as 1.38</button>" in text
    assert release(node) == "1.37"

    confirmed = node.post("/nodes/small/restart", data={**APPLY, "confirm": "yes"})
    assert confirmed.status_code == 200 and 'data-applied="true"' in confirmed.text
    assert release(node) == "1.38"


def test_the_confirmation_of_a_kubelet_that_would_not_start_offers_no_button(
    node: TestClient,
) -> None:
    page = node.get("/nodes/small/restart?release=1.36&gate=on")
    assert page.status_code == 200
    assert "A 1.36 kubelet does not start on this node&#39;s files" in page.text
    assert "Restart the kubelet as 1.36</button>" not in page.text


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ("release=1.99", 422, "release"),
        ("release=1.38&gate=maybe", 422, "podLevelResourceManagers"),
    ],
    ids=["unknown-release", "bad-gate"],
)
def test_a_bad_confirmation_request_names_the_field(
    node: TestClient, query: str, status: int, field: str
) -> None:
    r = node.get(f"/nodes/small/restart?{query}", headers={"Accept": "application/json"})
    assert r.status_code == status
    assert r.json()["error"]["field"] == field


def test_a_restart_is_a_history_event_with_maps_before_and_after(node: TestClient) -> None:
    before_map = node.get("/nodes/small/history/2.json").json()["map"]
    node.post("/api/v1/nodes/small/restart?release=1.38&podLevelResourceManagers=true")
    events = node.get("/nodes/small/history.json").json()["events"]
    restart = events[-1]
    assert restart["action"] == "restart" and restart["changed"] is True
    assert restart["pod"] == "kubelet 1.37 \u2192 1.38"
    assert restart["restart"] == {
        "fromRelease": "1.37",
        "toRelease": "1.38",
        "podLevelResourceManagers": True,
    }
    assert restart["diffUrl"] == f"/nodes/small/diff?from={events[-2]['id']}&to={restart['id']}"
    # The map after the restart is the node as it runs now; the one before, as it ran then.
    after = node.get(f"/nodes/small/history/{restart['id']}.json").json()
    now = node.get("/api/v1/nodes/small").json()
    assert sorted(after["pods"]) == sorted(f"{p['namespace']}/{p['name']}" for p in now["pods"])
    assert after["map"]["cells"] == node.get("/nodes/small.json").json()["map"]["cells"]
    assert node.get("/nodes/small/history/2.json").json()["map"] == before_map
    page = node.get("/nodes/small/history")
    assert "kubelet restart" in page.text and "before and after" in page.text
    diff = node.get(restart["diffUrl"])
    assert diff.status_code == 200


def test_undo_starts_the_previous_release_again(node: TestClient) -> None:
    r = node.delete("/api/v1/nodes/small/pods/prod/db")
    assert r.status_code in (200, 204), r.text
    node.post("/api/v1/nodes/small/restart?release=1.38&podLevelResourceManagers=true")
    assert release(node) == "1.38"
    page = node.get("/nodes/small")
    assert 'data-undo="restart"' in page.text and "Undo the restart" in page.text
    r = node.post("/nodes/small/undo-restart", follow_redirects=False)
    assert r.status_code == 303, r.text
    assert release(node) == "1.37"
    events = node.get("/nodes/small/history.json").json()["events"]
    assert [e["pod"] for e in events[-2:]] == [
        "kubelet 1.37 \u2192 1.38",
        "kubelet 1.38 \u2192 1.37",
    ]
    # the way back is a restart too: undoing again goes forward
    assert node.post("/api/v1/nodes/small/undo-restart").json()["applied"] is True
    assert release(node) == "1.38"


def test_undo_is_refused_where_the_files_do_not_allow_it(node: TestClient) -> None:
    """A 1.37 kubelet would reject the pod-level pod 1.38 keeps: nothing is done."""
    node.post("/api/v1/nodes/small/restart?release=1.38&podLevelResourceManagers=true")
    r = node.post("/api/v1/nodes/small/undo-restart")
    assert r.status_code == 409
    error = r.json()["error"]
    assert error["reason"] == "Conflict"
    assert "would not keep everything (prod/db)" in error["message"]
    assert release(node) == "1.38"


def test_nothing_to_undo_without_a_restart(node: TestClient) -> None:
    r = node.post("/api/v1/nodes/small/undo-restart")
    assert r.status_code == 409
    assert "is not a kubelet restart" in r.json()["error"]["message"]
    assert node.post("/api/v1/nodes/nope/undo-restart").status_code == 404

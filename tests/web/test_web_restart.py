"""Restart rehearsals on the dashboard: ``POST /api/v1/nodes/{node}/restart`` (dry run and
applied, on a simulated node), the node page's panel (with and without htmx), and errors."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.domain.checkpoint import detect_version
from app.services.nodes.service import NodeService
from app.services.nodes.target_config import restart_config
from app.settings import Settings
from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}


HX = {"HX-Request": "true"}


@pytest.fixture
def node(client: TestClient) -> TestClient:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": "1.37"},
    )
    assert r.status_code == 201, r.text
    r = client.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    assert r.status_code == 201, r.text
    return client


def state_dir(settings: Settings) -> Path:
    assert settings.state_dir is not None
    return Path(settings.state_dir) / "small"


def files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_dry_run_answers_and_changes_nothing(node: TestClient, settings: Settings) -> None:
    before = files(state_dir(settings))
    r = node.post("/api/v1/nodes/small/restart?release=1.38&dryRun=true")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["node"] == "small" and body["dryRun"] is True and body["applied"] is False
    assert body["started"] is True and body["previousRelease"] == "1.37"
    [pod] = body["pods"]
    assert pod["pod"] == "prod/db" and pod["outcome"] == "restored"
    assert pod["podBudget"]["before"] == pod["podBudget"]["after"]
    assert files(state_dir(settings)) == before
    assert node.get("/api/v1/nodes/small").json()["summary"]["release"] == "1.37"


def test_same_release_rejects_the_pod_level_pod(node: TestClient) -> None:
    body = node.post("/api/v1/nodes/small/restart?release=1.37&dryRun=true").json()
    assert [p["outcome"] for p in body["pods"]] == ["rejected"]
    assert body["pods"][0]["reason"] == "TopologyAffinityError"


def test_a_kubelet_that_does_not_start(node: TestClient, settings: Settings) -> None:
    before = files(state_dir(settings))
    r = node.post("/api/v1/nodes/small/restart?release=1.36&podLevelResourceManagers=true")
    assert r.status_code == 200
    body = r.json()
    assert body["started"] is False and body["applied"] is False
    assert body["error"].startswith("start ") and body["recovery"]
    assert any(t.startswith("cpu_manager_state: podEntries of ") for t in body["lost"])
    assert body["lostPods"] and all(any(p in t for t in body["lost"]) for p in body["lostPods"])
    assert "kubectl drain small " in body["recovery"][0]  # the node's name, not NODE
    assert files(state_dir(settings)) == before


def test_apply_switches_the_release_and_writes_its_formats(
    node: TestClient, settings: Settings, nodes: NodeService
) -> None:
    r = node.post("/api/v1/nodes/small/restart?release=1.38")
    assert r.status_code == 200 and r.json()["applied"] is True
    detail = node.get("/api/v1/nodes/small").json()
    assert detail["summary"]["release"] == "1.38"
    assert [p["name"] for p in detail["pods"]] == ["db"]
    d = state_dir(settings)
    assert json.loads((d / "pods.json").read_text())["release"] == "1.38"
    assert detect_version((d / "cpu_manager_state").read_text(), "cpu").version == "V4"
    # The database says 1.38 too: a fresh service (another worker) loads the node as 1.38.
    fresh = NodeService(nodes.registry.engine, state_dir=Path(settings.state_dir or ""))
    fresh.start()
    assert fresh.registry.definition("small").release == "1.38"
    assert fresh.reads.node_view("small").summary.load_error is None
    # Admitting after the restart uses the 1.38 engine.
    r = node.post(
        "/api/v1/nodes/small/pods?dryRun=true",
        content=DB_POD.replace("name: db", "name: db2"),
        headers=YAML,
    )
    assert r.status_code == 200


def test_apply_removes_the_pods_the_restarted_kubelet_rejects(
    node: TestClient, settings: Settings, nodes: NodeService
) -> None:
    body = node.post("/api/v1/nodes/small/restart?release=1.37").json()
    assert body["applied"] is True and body["pods"][0]["outcome"] == "rejected"
    assert node.get("/api/v1/nodes/small").json()["pods"] == []
    log = node.get("/api/v1/nodes/small/admissions").json()
    assert log["admissions"][0]["action"] == "remove" and log["admissions"][0]["name"] == "db"
    fresh = NodeService(nodes.registry.engine, state_dir=Path(settings.state_dir or ""))
    fresh.start()
    assert fresh.reads.node_view("small").summary.load_error is None  # log and files agree


def test_other_worker_picks_up_the_new_release(
    node: TestClient, settings: Settings, nodes: NodeService
) -> None:
    other = NodeService(nodes.registry.engine, state_dir=Path(settings.state_dir or ""))
    other.start()
    assert other.registry.definition("small").release == "1.37"
    node.post("/api/v1/nodes/small/restart?release=1.38")
    assert other.registry.definition("small").release == "1.38"
    assert other.reads.node_view("small").summary.load_error is None


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("release=1.34", "release"),
        ("", "release"),
    ],
    ids=["unknown-release", "missing-release"],
)
def test_bad_parameters_are_422_naming_them(
    node: TestClient, settings: Settings, query: str, field: str
) -> None:
    before = files(state_dir(settings))
    r = node.post(f"/api/v1/nodes/small/restart?{query}")
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert field in (error.get("field") or "") + error["message"]
    assert files(state_dir(settings)) == before


@pytest.mark.parametrize(
    "query",
    ["release=1.35", "release=1.35&podLevelResourceManagers=true"],
    ids=["recorded-gate-in-1.35", "gate-unknown-in-1.35"],
)
def test_a_gate_the_release_refuses_is_an_answer(
    node: TestClient, settings: Settings, query: str
) -> None:
    """200 with the kubelet's gate error, the change, and the restart once changed (a 422
    before this change, issue 19 point 4)."""
    before = files(state_dir(settings))
    r = node.post(f"/api/v1/nodes/small/restart?{query}&dryRun=true")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["started"] is False and body["applied"] is False
    assert body["error"].endswith("unrecognized feature gate: PodLevelResourceManagers")
    assert [g["gate"] for g in body["featureGatesRefused"]] == ["PodLevelResourceManagers"]
    assert body["recovery"][0] == (
        "change the kubelet configuration: remove PodLevelResourceManagers from featureGates "
        "(kubelet 1.35 does not know it)"
    )
    once = body["onceChanged"]
    assert once["featureGates"]["PodLevelResourceManagers"] is False
    assert once["started"] is False and once["error"].startswith("start memory manager error")
    assert files(state_dir(settings)) == before
    applied = node.post(f"/api/v1/nodes/small/restart?{query}").json()
    assert applied["applied"] is False and files(state_dir(settings)) == before


def test_downgrade_to_135_with_the_gate_off(node: TestClient) -> None:
    body = node.post(
        "/api/v1/nodes/small/restart?release=1.35&podLevelResourceManagers=false&dryRun=true"
    ).json()
    assert body["release"] == "1.35" and body["featureGates"]["PodLevelResourceManagers"] is False
    # 1.35 reads the files' inline V2/V1 parts: the pod's memory is in the machine state but
    # in no container entry it reads, so the memory manager's Start refuses.
    assert body["started"] is False and body["pods"] == []
    assert body["error"] == (
        "start memory manager error: [memorymanager] the expected machine state is different "
        "from the real one"
    )


def test_unknown_node_is_404(client: TestClient) -> None:
    r = client.post("/api/v1/nodes/nope/restart?release=1.38")
    assert r.status_code == 404


# -- the panel ----------------------------------------------------------------------------


def test_node_page_has_the_panel(node: TestClient) -> None:
    html = node.get("/nodes/small").text
    assert 'id="restart"' in html and "Rehearse a kubelet restart, upgrade or downgrade" in html
    assert 'name="release"' in html and 'value="1.38" selected' in html


def test_panel_rehearsal_without_javascript(node: TestClient) -> None:
    r = node.post("/nodes/small/restart", data={"release": "1.38", "gate": "on"})
    assert r.status_code == 200
    html = r.text
    assert 'id="restart-before"' in html and 'id="restart-after"' in html
    assert 'data-pod="prod/db" data-outcome="restored"' in html
    assert "dry run: nothing kept" in html


def test_panel_with_htmx_swaps_the_panel_only(node: TestClient) -> None:
    r = node.post(
        "/nodes/small/restart",
        data={"release": "1.36", "gate": "on"},
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 200
    html = r.text
    assert html.lstrip().startswith("{#") is False and '<section id="restart"' in html
    assert 'data-started="false"' in html and "Recovery" in html
    assert 'id="cpu-map"' not in html  # nothing applied: the page's map stays


def test_panel_names_the_lost_pods_and_the_way_out(node: TestClient) -> None:
    """Issue 21 point 2 / issue 19 point 4: 1.37 files on a 1.36 kubelet: the pod is named and
    linked, memory humanised, the drain command names the node, and why it does not start."""
    r = node.post("/nodes/small/restart", data={"release": "1.36", "gate": "on"}, headers=HX)
    page = html.unescape(r.text)
    assert 'data-started="false"' in page
    assert "podEntries of prod/db (memory 8 GiB on NUMA " in page
    assert 'href="/nodes/small/pods/prod/db"' in page
    assert "kubectl drain small --ignore-daemonsets" in page and "NODE" not in page
    assert "safely restores standard container allocations" in page


def test_panel_shows_a_refused_gate_and_what_happens_once_changed(node: TestClient) -> None:
    r = node.post("/nodes/small/restart", data={"release": "1.35", "gate": "keep"}, headers=HX)
    assert r.status_code == 200
    page = html.unescape(r.text)
    assert "does not start with this configuration" in page
    assert "unrecognized feature gate: PodLevelResourceManagers" in page
    assert 'data-gate="PodLevelResourceManagers"' in page
    assert (
        "remove PodLevelResourceManagers from featureGates (kubelet 1.35 does not know it)" in page
    )
    assert 'data-once-changed="fails"' in page


def test_panel_apply_with_htmx_updates_the_map(node: TestClient) -> None:
    r = node.post(
        "/nodes/small/restart",
        data={"release": "1.38", "gate": "on", "action": "apply", "confirm": "yes"},
        headers={"HX-Request": "true"},
    )
    assert 'data-applied="true"' in r.text
    assert 'id="cpu-map"' in r.text and 'hx-swap-oob="true"' in r.text
    assert node.get("/api/v1/nodes/small").json()["summary"]["release"] == "1.38"


def test_panel_bad_gate_is_inline(node: TestClient) -> None:
    r = node.post("/nodes/small/restart", data={"release": "1.38", "gate": "maybe"})
    assert r.status_code == 422
    assert "expected on, off or keep" in r.text


def test_apply_keeps_the_configuration_text_unless_the_gate_changes(
    node: TestClient, nodes: NodeService
) -> None:
    node.post("/api/v1/nodes/small/restart?release=1.38&podLevelResourceManagers=true")
    assert nodes.registry.definition("small").release == "1.38"
    assert nodes.registry.definition("small").kubelet_config == POD_SCOPE  # comments and all
    target, text = restart_config(POD_SCOPE, "1.38", "1.37", False)
    assert not target.config.gate("PodLevelResourceManagers")
    assert json.loads(text)["featureGates"] == {
        "PodLevelResources": True,
        "PodLevelResourceManagers": False,
    }
    target, text = restart_config(POD_SCOPE, "1.38", "1.35", False)
    assert "PodLevelResourceManagers" not in json.loads(text)["featureGates"]
    assert target.config.release == "1.35" and target.refusals == ()


def test_apply_works_on_the_committed_state_of_another_worker(
    node: TestClient, settings: Settings, nodes: NodeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose engine fell behind (it did not refresh) restarts what is committed: the
    pod another worker admitted meanwhile is re-admitted too, nothing of it is lost."""
    other = NodeService(nodes.registry.engine, state_dir=Path(settings.state_dir or ""))
    other.start()
    monkeypatch.setattr(other.registry, "refresh", lambda: None)  # behind from here on
    second = DB_POD.replace("name: db", "name: db2")
    assert node.post("/api/v1/nodes/small/pods", content=second, headers=YAML).status_code == 201
    rehearsal = other.restarts.restart("small", "1.38")
    assert rehearsal.applied
    assert sorted(p.key for p in rehearsal.result.pods) == ["prod/db", "prod/db2"]
    assert [p["name"] for p in node.get("/api/v1/nodes/small").json()["pods"]] == ["db", "db2"]

"""The hub's own simulated nodes (``--demo-fleet N``), in process: the same seed gives the same
fleet, fit and upgrade on a simulated node are that node's engine and the checkpoint inspector.
The checks on agents' summaries are the contract's (``tests/fleet/test_contracts.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.domain.node.state_files import render_state_files
from app.services.demo import bubble_pod, classic_pod
from app.services.fleet.rows import fit_result, upgrade_result
from app.services.nodes.demo_fleet import DemoFleet
from app.services.upgrade import check_files
from app.web.app import create_app
from tests.helpers import make_settings

YAML = {"Content-Type": "application/yaml"}
COUNT = 24


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp: Path = tmp_path_factory.mktemp("demo-fleet")
    app = create_app(make_settings(tmp, hub=True, demo_fleet=COUNT))
    with TestClient(app) as client:
        assert app.state.hub.fleet.ready.wait(60)
        yield client


def _fleet(client: TestClient) -> DemoFleet:
    fleet: DemoFleet = client.app.state.hub.fleet  # type: ignore[attr-defined]
    return fleet


def test_the_same_seed_gives_the_same_fleet(hub: TestClient) -> None:
    again = DemoFleet(COUNT)
    again.build()
    mine = _fleet(hub)
    assert list(again.nodes) == list(mine.nodes)
    for name, node in mine.nodes.items():
        other = again.nodes[name]
        assert (other.preset, other.release, other.config_text) == (
            node.preset,
            node.release,
            node.config_text,
        )
        assert render_state_files(other.engine) == render_state_files(node.engine)
    releases = {n.release for n in mine.nodes.values()}
    presets = {n.preset for n in mine.nodes.values()}
    assert len(releases) >= 3 and len(presets) >= 4  # varied, as a demo should be


def test_the_fleet_lists_every_simulated_node_with_its_engines_numbers(hub: TestClient) -> None:
    doc = hub.get("/api/v1/fleet").json()
    assert doc["agents"] == []
    rows = {n["node"]: n for n in doc["nodes"]}
    assert len(rows) == COUNT
    for name, node in _fleet(hub).nodes.items():
        row = rows[name]
        assert row["agent"] is None and row["status"] == "ok" and row["url"] is None
        assert row["pods"] == len(node.engine.pods)
        available = [r.available for r in node.views().numa_pools]
        assert [r["available"] for r in row["numa"]] == available
        assert row["largestFreeNuma"] == max(available)
    page = hub.get("/fleet")
    assert page.status_code == 200 and page.text.count('<span class="nb"') >= COUNT


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(classic_pod("fit", "default", "2", "2Gi"), id="guaranteed"),
        pytest.param(bubble_pod("fit", "default", 4, {"app": 2}, ("side",)), id="pod-level"),
    ],
)
def test_fit_on_simulated_nodes_is_each_engines_dry_run(hub: TestClient, pod: str) -> None:
    r = hub.post("/api/v1/fleet/fit", content=pod.encode(), headers=YAML)
    assert r.status_code == 200
    results = {x["node"]: x for x in r.json()["results"]}
    assert len(results) == COUNT
    for name, node in _fleet(hub).nodes.items():
        own = fit_result(name, node.dry_run(pod).to_dict())
        got = results[name]
        # The hub adds its ranking (score and flags of a fit) to the node's own answer.
        ranking = ("batch", "agent", "score", "flags")
        assert {k: v for k, v in got.items() if k not in ranking} == {
            k: v for k, v in own.items() if k not in ranking
        }
        assert (got["score"] is not None) == got["admitted"]
    assert any(x["admitted"] for x in results.values())


def test_fit_refuses_what_admission_refuses(hub: TestClient) -> None:
    r = hub.post("/api/v1/fleet/fit", content=b"kind: Service\n", headers=YAML)
    assert r.status_code == 422
    assert r.json()["error"]["reason"] == "Invalid"
    page = hub.get("/fleet/fit")
    assert page.status_code == 200 and "Find where it fits" in page.text


def test_upgrade_on_simulated_nodes_is_the_inspectors_verdict(hub: TestClient) -> None:
    doc = hub.get("/api/v1/fleet/upgrade", params={"release": "1.35"}).json()
    results = {x["node"]: x for x in doc["results"]}
    for name, node in _fleet(hub).nodes.items():
        own = check_files(node.node_files(), "1.35", None)
        # The hub adds who answered and that the node was checked (``UpgradeRow``).
        assert results[name]["checked"] is True
        assert {k: v for k, v in results[name].items() if k not in ("agent", "checked")} == own
    verdicts = {x["verdict"] for x in results.values()}
    assert verdicts <= {"compatible", "compatible-with-loss", "will-fail", "policy-mismatch"}
    page = hub.get("/fleet/upgrade", params={"release": "1.35"})
    assert (page.status_code == 200 and "must be drained first" in page.text) or "All " in page.text


def test_the_lost_pods_of_an_upgrade_are_named_and_linked_to_their_pages(hub: TestClient) -> None:
    """Issue 21 point 2: each lost pod is ``namespace/name`` linked to its pod page, which the
    hub serves for its demo-fleet nodes."""
    linked = 0
    for release in ("1.35", "1.36"):
        doc = hub.get("/api/v1/fleet/upgrade", params={"release": release}).json()
        page = hub.get("/fleet/upgrade", params={"release": release}).text
        for row in doc["results"]:
            for p in row.get("lostPods", []):
                namespace, name = p["pod"].split("/")
                assert p["url"] == f"/nodes/{row['node']}/pods/{namespace}/{name}"
                assert f'data-pod="{p["pod"]}" href="{p["url"]}">{p["pod"]}</a>' in page
                if linked == 0:  # the pod page answers, naming the pod
                    pod = hub.get(p["url"])
                    assert pod.status_code == 200 and name in pod.text
                linked += 1
    assert linked > 0, "no demo-fleet node loses a pod: the test proves nothing"


def test_hub_metrics_count_the_simulated_nodes(hub: TestClient) -> None:
    text = hub.get("/metrics").text
    assert f'numascope_hub_nodes{{status="ok"}} {float(COUNT)}' in text


def test_a_causes_recovery_names_its_nodes_not_a_placeholder(hub: TestClient) -> None:
    """Issue 21 point 2: the inspector's "kubectl drain NODE" / "kubectl uncordon NODE" in a
    cause's steps name the cause's nodes."""
    # The API answers once every node is checked; the page's twin then has them all (asked
    # first, it answers at once with the nodes still pending).
    assert hub.get("/api/v1/fleet/upgrade", params={"release": "1.35"}).status_code == 200
    plan = hub.get("/fleet/upgrade.json", params={"release": "1.35"}).json()
    assert plan["notChecked"] == []
    steps = [(c, a) for c in plan["drain"]["causes"] for a in c["advice"]]
    named = [(c, a) for c, a in steps if "kubectl uncordon" in a]
    assert named, "no cause asks for the documented recovery: the test proves nothing"
    for cause, advice in named:
        names = " ".join(sorted(n["node"] for n in cause["nodes"]))
        assert f"kubectl uncordon {names})" in advice
        assert f"kubectl drain {names} --ignore-daemonsets" in advice
    assert not [a for _, a in steps if " NODE" in a]


def test_upgrade_answers_are_typed_before_a_page_reads_them() -> None:
    row = upgrade_result("n", {"verdict": 3, "lost": "all", "recovery": [1, "drain"]})
    assert row["verdict"] is None and row["lost"] == [] and row["recovery"] == ["drain"]
    assert row["error"] == "the agent answered without a verdict"
    err = upgrade_result("n", {"error": {"reason": "Invalid", "message": "bad release"}})
    assert err["verdict"] is None and err["error"] == "bad release"
    # Lost pods: the hub builds each link from the name; an agent's own url is not followed.
    hostile = [
        {"uid": "u1", "pod": "ns/p", "url": "javascript:alert(1)"},
        {"uid": "u2", "pod": "no-namespace"},
        "ns/q",
    ]
    row = upgrade_result("n", {"verdict": "compatible-with-loss", "lostPods": hostile})
    assert row["lostPods"] == [{"uid": "u1", "pod": "ns/p", "url": "/nodes/n/pods/ns/p"}]
    assert "lostPods" not in upgrade_result("n", {"verdict": "compatible"})


def test_upgrade_is_complete_in_one_call_whatever_the_time_budget(tmp_path: Path) -> None:
    """The API's upgrade readiness is complete in one call (issue 20): the check runs in the
    workers as a job and the call waits for it; a tiny per-request budget stops nothing."""
    app = create_app(make_settings(tmp_path, hub=True, demo_fleet=6, cpu_time_budget=0.001))
    with TestClient(app) as client:
        assert app.state.hub.fleet.ready.wait(60)
        r = client.get("/api/v1/fleet/upgrade", params={"release": "1.35"})
        assert r.status_code == 200
        body = r.json()
        assert [x["node"] for x in body["results"]] == [f"sim-{i:04d}" for i in range(6)]
        assert all(x["checked"] and x["verdict"] for x in body["results"])
        assert body["progress"]["complete"] is True
        assert body["progress"]["checked"] == body["progress"]["total"] == 6


def test_the_fleet_bytes_never_miss_a_node_added_while_they_were_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node added while the document is being built (the demo fleet grows in a thread) is
    in the next answer: the cached bytes are keyed by the nodes they were built from."""
    import json

    app = create_app(make_settings(tmp_path, hub=True, demo_fleet=4))
    with TestClient(app):
        hub = app.state.hub
        fleet = hub.fleet
        assert fleet.ready.wait(60)
        name, late = sorted(fleet.nodes.items())[-1]
        del fleet.nodes[name]
        listed = fleet.list

        def list_then_grow() -> Any:
            nodes = listed()
            fleet.nodes[name] = late  # the builder thread adds a node meanwhile
            return nodes

        monkeypatch.setattr(fleet, "list", list_then_grow)
        first = json.loads(hub.view.encoded().body)
        assert name not in {n["node"] for n in first["nodes"]}
        monkeypatch.setattr(fleet, "list", listed)
        second = json.loads(hub.view.encoded().body)
        assert name in {n["node"] for n in second["nodes"]}
        assert len(second["nodes"]) == 4

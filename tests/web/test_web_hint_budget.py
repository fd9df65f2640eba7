"""The hint-search budget over HTTP (issue 13 point 5): a node with the kubelet's
``max-allowable-numa-nodes`` raised is created as the kubelet would start, but a pod whose hint
search is beyond ``NUMASCOPE_HINT_SEARCH_BUDGET`` is refused with 422 before any search runs,
on the API and the form alike; ``simulate`` says how long the search would take."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.services.nodes.service import NodeService
from tests.fixtures.wide_machine import WIDE_CONFIG, WIDE_POD, wide_topology


def create(client: TestClient, name: str, numa: int) -> None:
    body = {"name": name, "topology": wide_topology(numa), "kubeletConfig": WIDE_CONFIG}
    r = client.post("/api/v1/nodes", json=body)
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("dry_run", ["false", "true"])
def test_the_api_refuses_a_search_beyond_the_budget(
    client: TestClient, nodes: NodeService, dry_run: str
) -> None:
    create(client, "wide16", 16)
    r = client.post(
        f"/api/v1/nodes/wide16/pods?dryRun={dry_run}",
        content=WIDE_POD,
        headers={"content-type": "application/yaml"},
    )
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["reason"] == "HintSearchTooLarge"
    assert error["field"] == "manifest"
    assert "about 4.3e+09 NUMA-mask combinations" in error["message"]
    assert "this server's budget (NUMASCOPE_HINT_SEARCH_BUDGET) of 5,000,000" in error["message"]
    assert "(here the search would take about " in error["message"]
    assert nodes.reads.snapshot("wide16").pods == ()
    assert client.get("/api/v1/nodes/wide16/admissions").json()["admissions"] == []


def test_within_the_budget_the_wide_node_admits(client: TestClient) -> None:
    create(client, "wide9", 9)  # beyond the kubelet's default 8, within the budget
    r = client.post(
        "/api/v1/nodes/wide9/pods", content=WIDE_POD, headers={"content-type": "application/yaml"}
    )
    assert r.status_code == 201, r.text


def test_the_form_shows_the_refusal_inline(client: TestClient) -> None:
    create(client, "wide16", 16)
    r = client.post("/nodes/wide16/admissions", data={"manifest": WIDE_POD, "action": "dry-run"})
    assert r.status_code == 422
    assert "NUMA-mask combinations" in r.text


def test_the_cli_says_how_long_it_would_take(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "kc.yaml"
    config.write_text(WIDE_CONFIG)
    pod = tmp_path / "pod.yaml"
    pod.write_text(WIDE_POD)
    args = ["simulate", "--topology", wide_topology(16), "--kubelet-config", str(config)]
    assert main([*args, str(pod)]) == 2
    err = capsys.readouterr().err
    assert "numascope simulate: error: pod default/wide-pod" in err
    assert "more than the budget (--hint-budget) of 5,000,000" in err
    assert "combinations a second the search would take about" in err
    assert "run it anyway with --hint-budget 0" in err
    # a budget of its own: the 9-NUMA search fits 1,000,000 but not 100,000
    nine = ["simulate", "--topology", wide_topology(9), "--kubelet-config", str(config)]
    assert main([*nine, "--hint-budget", "1000000", str(pod)]) == 0
    capsys.readouterr()
    assert main([*nine, "--hint-budget", "100000", str(pod)]) == 2
    assert main([*nine, "--hint-budget", "-1", str(pod)]) == 2
    assert "--hint-budget must be 0 (no limit) or more" in capsys.readouterr().err


def test_a_search_past_the_time_budget_is_stopped_on_the_api_and_the_form(
    tmp_path: Path,
) -> None:
    """A 10-NUMA search (about 1e6 combinations) under a 1 ms budget: 503 Timeout, the form
    shows the error page, and nothing of either request is kept."""
    from app.web.app import create_app
    from tests.helpers import act_as_browser, make_settings

    settings = make_settings(tmp_path, cpu_time_budget=0.001)
    with TestClient(create_app(settings)) as raw:
        client = act_as_browser(raw)
        create(client, "wide10", 10)
        r = client.post(
            "/api/v1/nodes/wide10/pods",
            content=WIDE_POD,
            headers={"content-type": "application/yaml"},
        )
        assert r.status_code == 503, r.text
        assert r.json()["error"]["reason"] == "Timeout"
        assert "the admission was stopped after 0.001 s" in r.json()["error"]["message"]
        r = client.post(
            "/nodes/wide10/admissions", data={"manifest": WIDE_POD, "action": "dry-run"}
        )
        assert r.status_code == 503
        assert "the dry run was stopped after 0.001 s" in r.text
        assert client.get("/api/v1/nodes/wide10").json()["pods"] == []
        assert client.get("/api/v1/nodes/wide10/admissions").json()["admissions"] == []


def test_a_restart_is_stopped_by_the_time_budget_and_changes_nothing(tmp_path: Path) -> None:
    """Re-admitting a wide node's pods searches hints again: under a 1 ms budget the applied
    restart answers 503 Timeout and the node keeps its release, pods and state files."""
    from app.web.app import create_app
    from tests.helpers import act_as_browser, make_settings

    with TestClient(create_app(make_settings(tmp_path))) as raw:
        client = act_as_browser(raw)
        create(client, "wide10", 10)
        r = client.post(
            "/api/v1/nodes/wide10/pods",
            content=WIDE_POD,
            headers={"content-type": "application/yaml"},
        )
        assert r.status_code == 201, r.text
        before = client.get("/api/v1/nodes/wide10").json()
    state = sorted(p for p in tmp_path.rglob("*_manager_state"))
    files = {p: p.read_bytes() for p in state}
    assert files
    with TestClient(create_app(make_settings(tmp_path, cpu_time_budget=0.001))) as raw:
        client = act_as_browser(raw)
        r = client.post("/api/v1/nodes/wide10/restart", params={"release": "1.38"})
        assert r.status_code == 503, r.text
        assert r.json()["error"]["reason"] == "Timeout"
        assert "the restart was stopped after 0.001 s" in r.json()["error"]["message"]
        page = client.post(
            "/nodes/wide10/restart", data={"release": "1.38", "action": "apply", "confirm": "yes"}
        )
        assert page.status_code == 503 and "the restart was stopped" in page.text
        after = client.get("/api/v1/nodes/wide10").json()
    assert after["summary"]["release"] == before["summary"]["release"] == "1.37"
    assert after["pods"] == before["pods"]
    assert {p: p.read_bytes() for p in state} == files

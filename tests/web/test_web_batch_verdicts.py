"""One submission's verdicts, totals first and a page at a time; dry runs stay out of Recent
admissions and are one event per submission in History (issue 21 point 5):
``app.services.batch_verdicts``, ``app.web.routers.batches``, ``app.services.history.views``."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.adapters.db import node_repo
from tests.factories import pod_list
from tests.helpers import POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}


@pytest.fixture
def node(client: TestClient) -> TestClient:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": "1.37"},
    )
    assert r.status_code == 201, r.text
    r = client.post(
        "/api/v1/nodes/small/pods", content=pod_list(1).replace("p0", "kept"), headers=YAML
    )
    assert r.status_code == 201, r.text
    return client


def dry_run_form(client: TestClient, manifest: str) -> tuple[str, str]:
    r = client.post(
        "/nodes/small/admissions",
        data={"manifest": manifest, "action": "dry-run"},
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 200, r.text
    batch = re.search(r"/nodes/small/batches/([0-9a-f-]{36})", r.text)
    assert batch is not None
    return r.text, batch.group(1)


def test_a_long_dry_run_shows_totals_first_and_pages_the_rest(
    node: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_repo, "DRY_RUN_RETENTION", 20)  # the batch outlives it, whole
    html, batch = dry_run_form(node, pod_list(60))
    section = html[html.index('<section id="batch-verdicts"') :]
    # Totals come before any verdict.
    assert section.index('data-count="admitted"') < section.index("admit-verdict")
    admitted = int(re.search(r'data-count="admitted">([\d,]+)<', section).group(1))  # type: ignore[union-attr]
    rejected = int(re.search(r'data-count="rejected">([\d,]+)<', section).group(1))  # type: ignore[union-attr]
    assert admitted + rejected == 60 and admitted == 10 and rejected == 50  # 11 free CPUs - kept
    assert (
        '<li data-reason="TopologyAffinityError"><code>TopologyAffinityError</code> 50</li>'
        in section
    )
    assert (
        section.count('class="ok-box admit-verdict"')
        + section.count('class="error-box admit-verdict"')
        == 25
    )
    assert "Verdicts 1–25 of 60, in manifest order" in section
    assert "page 1 of 3" in section

    doc = node.get(f"/nodes/small/batches/{batch}.json", params={"page": 3}).json()
    assert (doc["total"], doc["admitted"], doc["rejected"]) == (60, 10, 50)
    assert doc["byReason"] == [{"reason": "TopologyAffinityError", "count": 50}]
    assert [e["name"] for e in doc["entries"]] == [f"p{i}" for i in range(50, 60)]
    assert doc["dryRun"] is True and doc["first"] == 51
    # every verdict is reachable: the pages cover the submission exactly once
    names = []
    for page in (1, 2, 3):
        names += [
            e["name"]
            for e in node.get(f"/nodes/small/batches/{batch}.json?page={page}").json()["entries"]
        ]
    assert names == [f"p{i}" for i in range(60)]
    # htmx pages swap the section in place; placements of would-be-admitted pods are shown
    frag = node.get(f"/nodes/small/batches/{batch}?page=1", headers={"HX-Request": "true"})
    assert frag.text.lstrip().startswith("{#") is False and 'id="batch-verdicts"' in frag.text
    assert frag.text.count('class="placement"') == 10
    page = node.get(f"/nodes/small/batches/{batch}?page=2")
    assert page.status_code == 200 and "Dry run of 60 pods on small" in page.text


def test_dry_runs_stay_out_of_recent_admissions_and_are_one_history_event(
    node: TestClient,
) -> None:
    _, batch = dry_run_form(node, pod_list(30))
    view = node.get("/nodes/small.json").json()
    assert [e["action"] for e in view["admissions"]] == ["admit"]
    events = node.get("/nodes/small/history.json").json()["events"]
    assert [e["action"] for e in events] == ["admit", "dry-run"]
    collapsed = events[-1]
    assert collapsed["pod"] == "30 pods" and collapsed["batchSize"] == 30
    assert collapsed["batchUrl"] == f"/nodes/small/batches/{batch}"
    assert collapsed["message"] == (
        "10 would be admitted, 20 would be rejected (TopologyAffinityError 20)"
    )
    html = node.get("/nodes/small/history").text
    assert f'<a href="/nodes/small/batches/{batch}">30 pods</a>' in html


@pytest.mark.parametrize(
    ("query", "field"),
    [("page=0", "page"), ("pageSize=501", "pageSize"), ("pageSize=x", "pageSize")],
    ids=["page-zero", "page-size-too-big", "page-size-not-a-number"],
)
def test_bad_paging_names_the_field(node: TestClient, query: str, field: str) -> None:
    _, batch = dry_run_form(node, pod_list(3))
    r = node.get(f"/nodes/small/batches/{batch}.json?{query}")
    assert r.status_code == 422
    assert r.json()["error"]["field"] == field


def test_unknown_node_or_batch(node: TestClient) -> None:
    assert node.get("/nodes/nope/batches/x.json").status_code == 404
    doc = node.get("/nodes/small/batches/not-a-batch.json").json()
    assert doc["total"] == 0 and doc["entries"] == []
    assert "No verdicts of this submission are kept" in node.get("/nodes/small/batches/x").text

"""The upgrade page as a drain plan (``app.services.fleet.views.upgrade_view``): failing nodes
grouped by cause with one recovery per cause, compatible nodes collapsed, a copyable
``kubectl drain`` line, a label selector, a CSV, and a JSON twin; a node not checked yet is
never counted as failing."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.services.fleet.views import drain_csv, upgrade_view
from app.web.app import create_app
from tests.helpers import make_settings

RELEASE = "1.35"  # files written by later releases make some demo nodes fail to start
STARTS = ("compatible", "compatible-with-loss")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp: Path = tmp_path_factory.mktemp("drain")
    app = create_app(make_settings(tmp, hub=True, demo_fleet=60))
    with TestClient(app) as client:
        assert app.state.hub.fleet.ready.wait(60)
        yield client


def _api(hub: TestClient) -> dict[str, Any]:
    r = hub.get("/api/v1/fleet/upgrade", params={"release": RELEASE})
    assert r.status_code == 200
    doc: dict[str, Any] = r.json()
    return doc


def test_failing_nodes_are_grouped_by_cause(hub: TestClient) -> None:
    api = _api(hub)
    failing = {r["node"]: r for r in api["results"] if r["verdict"] not in (*STARTS, None)}
    assert failing, "the demo fleet has nodes a 1.35 kubelet refuses"
    plan = hub.get("/fleet/upgrade.json", params={"release": RELEASE}).json()
    drain = plan["drain"]
    assert drain["count"] == len(failing) and drain["nodes"] == sorted(failing)
    assert drain["kubectl"].startswith("kubectl drain ")
    assert drain["kubectl"].split()[-len(failing) :] == sorted(failing)
    assert drain["selector"] == f"kubernetes.io/hostname in ({','.join(sorted(failing))})"
    grouped = [n["node"] for c in drain["causes"] for n in c["nodes"]]
    assert sorted(grouped) == sorted(failing)  # every failing node in exactly one cause
    for cause in drain["causes"]:
        rows = [failing[n["node"]] for n in cause["nodes"]]
        assert {r["verdict"] for r in rows} == {cause["verdict"]}
        assert {r["error"] for r in rows} == {cause["error"]}
        files = {f["name"]: (f["version"], f["status"]) for f in cause["files"]}
        for r in rows:
            mine = {
                f["name"]: (f["version"], f["status"])
                for f in r["files"]
                if f["status"] not in (*STARTS, "missing")
            }
            assert mine == files
        # One way out per failing file, its conversions as alternatives.
        assert {a["file"] for a in cause["alternatives"]} <= set(files)
        for a in cause["alternatives"]:
            assert a["options"] and all(o["verdict"] in STARTS for o in a["options"])
            assert all(
                o["command"].startswith("numascope checkpoint convert") for o in a["options"]
            )
    assert plan["starts"]["count"] + drain["count"] == plan["total"] == len(api["results"])


def test_the_page_gives_each_recovery_once_and_collapses_the_nodes_that_start(
    hub: TestClient,
) -> None:
    _api(hub)  # the whole check first, as in the test below
    plan = hub.get("/fleet/upgrade.json", params={"release": RELEASE}).json()
    page = hub.get("/fleet/upgrade", params={"release": RELEASE})
    assert page.status_code == 200
    text = page.text
    drain = plan["drain"]
    assert f"{drain['count']} of {plan['total']} nodes must be drained first" in text
    assert drain["kubectl"] in text
    options = sum(len(a["options"]) for c in drain["causes"] for a in c["alternatives"])
    # Each conversion once per cause, not once per node.
    assert text.count("numascope checkpoint convert") == options
    assert (
        f"<summary>{plan['starts']['count']} nodes start with kubelet {RELEASE}</summary>" in text
    )
    for cause in drain["causes"]:
        assert f'id="{cause["id"]}"' in text
    assert "upgrade.csv?release=1.35" in text and "upgrade.json?release=1.35" in text


def test_the_nodes_to_drain_as_csv(hub: TestClient) -> None:
    _api(hub)  # the whole check first: the JSON twin answers with what is checked so far
    plan = hub.get("/fleet/upgrade.json", params={"release": RELEASE}).json()
    r = hub.get("/fleet/upgrade.csv", params={"release": RELEASE})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert 'filename="drain-1.35.csv"' in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert sorted(row["node"] for row in rows) == plan["drain"]["nodes"]
    bad = hub.get("/fleet/upgrade.csv", params={"release": "1.99"})
    assert bad.status_code == 422


def test_a_spreadsheet_never_runs_an_agents_text() -> None:
    result = {
        "release": RELEASE,
        "unreachable": [],
        "results": [
            {
                "node": "n1",
                "agent": "http://a",
                "verdict": "will-fail",
                "error": "=HYPERLINK(1)",
                "files": [],
                "checked": True,
            },
        ],
    }
    rows = list(csv.reader(io.StringIO(drain_csv(upgrade_view(result)))))
    assert rows[1][-1] == "'=HYPERLINK(1)"


def test_nodes_not_checked_are_never_counted_as_failing(tmp_path: Path) -> None:
    """The page and its JSON twin answer at once with the check as far as it got: the nodes
    not answered yet are pending, listed as not checked and never in the drain list; the API's
    one call waits for the whole answer, and the page then shows the plan."""
    app = create_app(make_settings(tmp_path, hub=True, demo_fleet=30, cpu_time_budget=0.001))
    with TestClient(app) as client:
        assert app.state.hub.fleet.ready.wait(60)
        plan = client.get("/fleet/upgrade.json", params={"release": RELEASE}).json()
        late = plan["notChecked"]
        progress = plan["progress"]
        assert progress["total"] == 30 and progress["checked"] == 30 - len(late)
        if not progress["complete"]:  # the workers are still building their shards
            assert late and all(n["why"] == "pending: not checked yet" for n in late)
            page = client.get("/fleet/upgrade", params={"release": RELEASE}).text
            assert re.search(r"Checking the fleet: \d+ of 30 checked", page)
            assert 'hx-trigger="every 1s"' in page
        checked = plan["total"] - len(late)
        assert plan["drain"]["count"] + plan["starts"]["count"] == checked
        assert not {n["node"] for n in late} & set(plan["drain"]["nodes"])
        whole = client.get("/api/v1/fleet/upgrade", params={"release": RELEASE}).json()
        assert whole["progress"]["complete"] and len(whole["results"]) == 30
        assert all(r["checked"] for r in whole["results"])
        done = client.get("/fleet/upgrade.json", params={"release": RELEASE}).json()
        assert done["notChecked"] == [] and done["progress"]["checked"] == 30
        assert done["drain"]["count"] + done["starts"]["count"] == 30
        page = client.get("/fleet/upgrade", params={"release": RELEASE}).text
        assert "Checking the fleet" not in page and 'hx-trigger="every 1s"' not in page

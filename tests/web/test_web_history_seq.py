"""A node's history entries are numbered 1, 2, 3… in its own log (issue 21 point 7), whatever
other nodes logged in between: the History page and JSON, point-in-time pages, ``map.svg?at=``,
diffs and the CSV series all use that number (``admissions.seq``, ``app.adapters.db.node_repo``);
a number the node does not have (an old link's global id) is a 404 naming the field."""

from __future__ import annotations

import csv
import io
import re

import pytest
from fastapi.testclient import TestClient

from app.services.demo import classic_pod
from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}
WEB = classic_pod("web", "shop", "2", "1Gi")
CACHE = classic_pod("cache", "shop", "1", "512Mi")


@pytest.fixture
def two(client: TestClient) -> TestClient:
    """Nodes a and b, changed in turn: a db, b db, a web, b web, a cache, b removes web."""
    for name in ("a", "b"):
        r = client.post(
            "/api/v1/nodes",
            json={"name": name, "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": "1.37"},
        )
        assert r.status_code == 201, r.text
    for node, pod in (("a", DB_POD), ("b", DB_POD), ("a", WEB), ("b", WEB), ("a", CACHE)):
        r = client.post(f"/api/v1/nodes/{node}/pods", content=pod, headers=YAML)
        assert r.status_code == 201, r.text
    assert client.delete("/api/v1/nodes/b/pods/shop/web").status_code in (200, 204)
    return client


def events(client: TestClient, node: str) -> list[dict[str, object]]:
    r = client.get(f"/nodes/{node}/history.json")
    assert r.status_code == 200
    out: list[dict[str, object]] = r.json()["events"]
    return out


def test_each_node_numbers_its_entries_from_one(two: TestClient) -> None:
    a, b = events(two, "a"), events(two, "b")
    assert [e["seq"] for e in a] == [1, 2, 3]
    assert [e["seq"] for e in b] == [1, 2, 3]
    assert [e["pod"] for e in b] == ["prod/db", "shop/web", "shop/web"]
    # the global ids are kept, and they interleave: b's are not 1, 2, 3
    assert [e["id"] for e in b] != [1, 2, 3]
    assert sorted([*(e["id"] for e in a), *(e["id"] for e in b)]) == [1, 2, 3, 4, 5, 6]
    assert [e["mapUrl"] for e in b] == [f"/nodes/b/history/{n}" for n in (1, 2, 3)]

    page = two.get("/nodes/b/history").text
    assert re.findall(r'<tr data-entry="(\d+)"', page) == ["0", "1", "2", "3"]
    assert re.findall(r'name="to" value="(\d+)"', page) == ["1", "2", "3"]
    assert 'name="to" value="3" aria-label="diff to entry 3" checked' in page


def test_point_in_time_pages_and_the_svg_take_the_nodes_number(two: TestClient) -> None:
    point = two.get("/nodes/b/history/2.json").json()
    assert point["entry"] == 2 and point["label"].startswith("#2 · ")
    assert sorted(point["pods"]) == ["prod/db", "shop/web"]
    after = two.get("/nodes/b/history/3.json").json()
    assert after["pods"] == ["prod/db"] and "removed" in after["label"]
    page = two.get("/nodes/b/history/2")
    assert page.status_code == 200 and "?at=2" in page.text

    svg = two.get("/nodes/b/map.svg?at=2")
    assert svg.status_code == 200 and "#2" in svg.text
    assert 'filename="b-map-at-2.svg"' in svg.headers["content-disposition"]
    # at #2 web owns CPUs on the map (and the subtitle names entry 2: db's admission is #1)
    assert svg.text.count("shop/web") > 1
    removed = two.get("/nodes/b/map.svg?at=3").text
    assert removed.count("shop/web") == 1 and "shop/web removed" in removed  # the subtitle


def test_a_number_the_node_does_not_have_is_a_404_naming_the_field(two: TestClient) -> None:
    # b's last entry has global id 6 (an old link), but b has only 3 entries
    assert max(int(str(e["id"])) for e in events(two, "b")) == 6
    r = two.get("/nodes/b/map.svg?at=6")
    assert r.status_code == 404 and "has no admission log entry 6" in r.text
    assert "Field: <code>at</code>" in r.text
    r = two.get("/nodes/b/history/6.json")
    assert r.status_code == 404 and r.json()["error"]["field"] == "entry"
    r = two.get("/nodes/b/diff.json", params={"from": 1, "to": 6})
    assert r.status_code == 404 and r.json()["error"]["field"] == "to"
    r = two.get("/nodes/b/diff.json", params={"from": 4, "to": 1})
    assert r.status_code == 404 and r.json()["error"]["field"] == "from"


def test_diff_and_series_use_the_nodes_numbers(two: TestClient) -> None:
    d = two.get("/nodes/b/diff.json", params={"from": 2, "to": 3}).json()
    assert (d["fromEntry"], d["toEntry"]) == (2, 3)
    assert d["fromLabel"].startswith("#2 · ") and d["toLabel"].startswith("#3 · ")
    assert {m["pod"]: m["change"] for m in d["moves"]} == {
        "prod/db": "unchanged",
        "shop/web": "removed",
    }
    page = two.get("/nodes/a/diff")  # a bare diff: as created → a's latest change, #3
    assert page.status_code == 200 and "#3 · " in page.text

    rows = list(csv.DictReader(io.StringIO(two.get("/nodes/a/history.csv").text)))
    assert sorted({int(x["entry"]) for x in rows}) == [0, 1, 2, 3]


def test_a_rejection_page_names_the_entry_by_the_nodes_number(two: TestClient) -> None:
    big = classic_pod("huge", "shop", "64", "1Gi")
    r = two.post("/api/v1/nodes/b/pods", content=big, headers=YAML)
    assert r.status_code == 200 and not r.json()["results"][0]["admitted"], r.text
    [rejected] = [e for e in events(two, "b") if not e["admitted"]]
    assert rejected["seq"] == 4 and rejected["id"] == 7
    assert rejected["explainUrl"] == "/nodes/b/rejections/4"  # the node's own number
    why = two.get("/nodes/b/rejections/4.json").json()
    assert (why["entry"], why["id"]) == (4, 7)
    assert why["beforeUrl"] == "/nodes/b/history/3"  # the last change before it, b's #3
    page = two.get("/nodes/b/rejections/4").text
    assert '<span aria-current="page">#4</span>' in page
    assert 'href="/nodes/b/rejections/4.json"' in page
    assert 'href="/nodes/b/rejections/4"' in two.get("/nodes/b").text  # Recent admissions
    # The old address, by global id, redirects there for good (page and JSON).
    for old, new in (("7", "4"), ("7.json", "4.json")):
        r = two.get(f"/nodes/b/admissions/{old}", follow_redirects=False)
        assert (r.status_code, r.headers["location"]) == (308, f"/nodes/b/rejections/{new}")
    assert two.get("/nodes/b/admissions/7.json").json()["entry"] == 4
    # b's #4 is not a's: a has no rejection; a global id of another node's row is unknown.
    assert two.get("/nodes/a/rejections/4").status_code == 404
    r = two.get("/nodes/a/admissions/7", follow_redirects=False)
    assert r.status_code == 404 and "entry" in r.text
    assert two.get("/nodes/b/admissions/1").status_code == 404  # a's row, admitted

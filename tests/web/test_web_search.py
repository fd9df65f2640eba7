"""The dashboard's one search (issue 21 "Beyond"): nodes, pods on every node, a CPU's owner on
every node (``cpu:37``), pages; a bad ``cpu:`` word is 422 naming ``q``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests.helpers import act_as_browser, make_settings


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("s"), demo=True))) as c:
        yield act_as_browser(c)


def test_cpu_names_its_owner_on_every_node(demo: TestClient) -> None:
    hits = demo.get("/search.json", params={"q": "cpu:37"}).json()["hits"]
    by_node = {h["title"].split(":")[0]: h for h in hits}
    assert set(by_node) == {"CPU 37 on demo-512", "CPU 37 on demo-pod-scope"}  # 12-CPU node: none
    cell = demo.get("/nodes/demo-512.json").json()["map"]["cells"]["37"]
    owner = by_node["CPU 37 on demo-512"]
    assert owner["title"] == "CPU 37 on demo-512: telco/upf-1 · dataplane"
    assert (
        owner["url"] == "/nodes/demo-512/pods/telco/upf-1"
        and cell["owner"] == "telco/upf-1/dataplane"
    )
    assert by_node["CPU 37 on demo-pod-scope"]["title"].endswith(": node shared pool")


def test_words_find_nodes_pods_and_pages(demo: TestClient) -> None:
    kinds = {(h["kind"], h["title"]) for h in demo.get("/search.json?q=telco").json()["hits"]}
    assert ("pod", "telco/upf-0") in kinds and ("pod", "telco/ptp-daemon") in kinds
    titles = [h["title"] for h in demo.get("/search.json?q=512").json()["hits"]]
    assert titles[0] == "demo-512"
    pages = demo.get("/search.json?q=glossary").json()["hits"]
    assert pages == [{"kind": "page", "title": "Glossary", "detail": "page", "url": "/glossary"}]
    assert all(h["title"] != "Fleet" for h in demo.get("/search.json?q=fleet").json()["hits"])
    html = demo.get("/search?q=upf").text
    assert '<a href="/nodes/demo-512/pods/telco/upf-0">telco/upf-0</a>' in html
    assert "Nothing matches" in demo.get("/search?q=zzzz").text


def test_a_bad_cpu_word_names_the_field(demo: TestClient) -> None:
    r = demo.get("/search.json?q=cpu:x")
    assert r.status_code == 422 and r.json()["error"]["field"] == "q"

"""Find and paging of a node's pods (/nodes/{node}/pods: page, htmx fragment, JSON twin) and
the node page's first page of the table."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app.domain.cpuset import CPUSet
from app.services.demo import classic_pod
from app.services.nodes.service import NodeService
from app.services.pod_find import PAGE_SIZE, PodQueryError, parse_query, pods_page
from tests.web.html_helpers import with_attr

HX = {"HX-Request": "true"}
TOPOLOGY = "sockets=2,cores_per_numa=8,threads_per_core=2"
CONFIG = 'cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n'


def _burstable(name: str) -> str:
    return (
        f"metadata: {{name: {name}, namespace: web}}\n"
        "spec: {containers: [{name: app, resources: {requests: {cpu: 100m}}}]}\n"
    )


@pytest.fixture
def many(nodes: NodeService, client: TestClient) -> TestClient:
    """Node 'many': 10 Guaranteed pods of one exclusive CPU (telco/g-N), 20 Burstable (web/b-N)."""
    nodes.create("many", TOPOLOGY, CONFIG)
    for i in range(10):
        assert nodes.admit("many", classic_pod(f"g-{i}", "telco", "1", "1Gi")).admitted
    for i in range(20):
        assert nodes.admit("many", _burstable(f"b-{i}")).admitted
    return client


def _find(client: TestClient, query: str = "", **params: str) -> dict[str, object]:
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    r = client.get(f"/nodes/many/pods.json?q={quote(query)}{extra}")
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


def _keys(body: dict[str, object]) -> list[str]:
    rows = body["rows"]
    assert isinstance(rows, list)
    return [r["pod"]["key"] for r in rows]


def test_node_page_shows_the_first_page_and_the_find_box(many: TestClient) -> None:
    html = many.get("/nodes/many").text
    rows = with_attr(html, "data-pod", "tr")
    assert len(rows) == PAGE_SIZE
    assert all(r["data-cpus"] for r in rows)  # what the map lights for the row
    form = [a for a in with_attr(html, "role", "form") if a.get("class") == "find"]
    assert form and form[0]["action"] == "/nodes/many/pods"
    assert 'id="find-pods"' in html and 'name="q"' in html
    assert "Pods 1–25 of 30." in html and "Show all 30" in html
    assert 'href="/nodes/many/pods?all=1"' in html


def test_paging_and_the_whole_list(many: TestClient) -> None:
    first, second = _find(many), _find(many, page="2")
    assert (first["matched"], first["pages"], first["first"]) == (30, 2, 1)
    assert len(_keys(first)) == PAGE_SIZE and len(_keys(second)) == 5
    assert second["first"] == 26
    assert set(_keys(first)).isdisjoint(_keys(second))
    everything = _find(many, all="1")
    assert _keys(everything) == _keys(first) + _keys(second)
    assert _find(many, page="99")["page"] == 2  # past the end: the last page
    page = many.get("/nodes/many/pods?all=1")
    assert page.status_code == 200 and "<html" in page.text
    assert len(with_attr(page.text, "data-pod", "tr")) == 30


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("telco", {f"telco/g-{i}" for i in range(10)}, id="namespace-word"),
        pytest.param("ns:web", {f"web/b-{i}" for i in range(20)}, id="ns"),
        pytest.param("name:g-1", {"telco/g-1"}, id="name"),
        pytest.param("qos:g", {f"telco/g-{i}" for i in range(10)}, id="qos-prefix"),
        pytest.param("Burstable", {f"web/b-{i}" for i in range(20)}, id="qos-word"),
        pytest.param("web b-1", {"web/b-1", *(f"web/b-1{i}" for i in range(10))}, id="and"),
        pytest.param("nope", set(), id="none"),
    ],
)
def test_find_by_words(many: TestClient, query: str, expected: set[str]) -> None:
    body = _find(many, query, all="1")
    assert set(_keys(body)) == expected
    assert body["matched"] == len(expected) and body["total"] == 30


def test_find_by_cpu_and_numa_node(many: TestClient, nodes: NodeService) -> None:
    snap = nodes.reads.snapshot("many")
    g3 = snap.pod("telco", "g-3")
    assert g3 is not None
    cpu = next(iter(g3.exclusive_cpus()))
    # An exclusive CPU leads to its owner only, and is what the map lights.
    assert _keys(_find(many, str(cpu))) == ["telco/g-3"]
    found = _find(many, f"cpu:{cpu}")
    assert _keys(found) == ["telco/g-3"] and found["note"] == ""
    assert found["lit"] == str(
        CPUSet.from_mask(g3.pod_cpuset.mask if g3.pod_cpuset else 0) | g3.exclusive_cpus()
    )
    # A CPU of the node shared pool belongs to no pod (issue 21 point 7, deliberately changed:
    # it used to find every Burstable pod that runs there); the page says where it is.
    shared = next(iter(snap.default_cpuset - snap.reserved_cpus))
    nobody = _find(many, f"cpu:{shared}", all="1")
    assert _keys(nobody) == [] and nobody["lit"] == ""
    assert nobody["note"] == (
        f"CPU {shared} belongs to no pod: it is in the node shared pool or reserved, where "
        "every container without exclusive CPUs or a pod budget runs."
    )
    rows = nodes.reads.views("many").pods
    for numa in (0, 1):
        on_it = {r.key for r in rows if numa in r.numa_nodes}
        assert set(_keys(_find(many, f"numa:{numa}", all="1"))) == on_it
    assert "telco/g-3" in _keys(_find(many, "numa:0,1", all="1"))
    every = CPUSet.parse(f"0-{snap.topology.num_cpus - 1}")
    # every CPU: the pods that hold some (the 10 Guaranteed ones; the Burstable pods hold none)
    holders = _find(many, f"cpu:{every}", all="1")
    assert sorted(_keys(holders)) == sorted(f"telco/g-{i}" for i in range(10))


@pytest.mark.parametrize(
    ("query", "words"),
    [
        pytest.param("cpu:x", "is not a CPU list", id="cpu"),
        pytest.param("numa:a", "is not a list of NUMA node ids", id="numa"),
        pytest.param("colour:red", "unknown field 'colour'", id="field"),
        pytest.param("ns:", "needs a value", id="empty"),
        pytest.param("cpu:3-", "is not a CPU list", id="open-range"),
    ],
)
def test_bad_queries_are_422_naming_q(many: TestClient, query: str, words: str) -> None:
    r = many.get(f"/nodes/many/pods.json?q={quote(query)}")
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == "q" and words in error["message"]
    page = many.get(f"/nodes/many/pods?q={quote(query)}")
    assert page.status_code == 422 and words.replace("'", "&#39;") in page.text
    assert len(with_attr(page.text, "data-pod", "tr")) == PAGE_SIZE  # the list, unfiltered
    frag = many.get(f"/nodes/many/pods?q={quote(query)}", headers=HX)
    assert frag.status_code == 200 and 'data-field="q"' in frag.text


def test_too_long_a_query_is_422(many: TestClient) -> None:
    r = many.get(f"/nodes/many/pods.json?q={'a' * 201}")
    assert r.status_code == 422


def test_htmx_gets_the_list_fragment(many: TestClient) -> None:
    r = many.get("/nodes/many/pods?q=telco", headers=HX)
    assert r.status_code == 200 and "<html" not in r.text
    assert r.text.lstrip().startswith('<div id="pods-list" data-matched="10" data-total="30"')
    assert len(with_attr(r.text, "data-pod", "tr")) == 10
    assert 'href="/nodes/many/pods"' in r.text  # Clear
    more = many.get("/nodes/many/pods?page=1", headers=HX)
    assert 'hx-get="/nodes/many/pods?page=2"' in more.text
    found = many.get("/nodes/many/pods?q=e", headers=HX)  # all 30: paged, the query kept
    assert 'hx-get="/nodes/many/pods?q=e&amp;all=1"' in found.text
    assert 'hx-get="/nodes/many/pods?q=e&amp;page=2"' in found.text


def test_unknown_node_is_404(client: TestClient) -> None:
    assert client.get("/nodes/nope/pods").status_code == 404
    assert client.get("/nodes/nope/pods.json").status_code == 404


def test_admission_answer_keeps_the_table_paged(many: TestClient) -> None:
    r = many.post(
        "/nodes/many/admissions",
        data={"manifest": _burstable("late"), "action": "admit"},
        headers=HX,
    )
    assert r.status_code == 200
    assert 'id="pods" aria-labelledby="pods-title" hx-swap-oob="true"' in r.text
    assert len(with_attr(r.text, "data-pod", "tr")) == PAGE_SIZE
    assert "of 31." in r.text


def test_parse_query_units() -> None:
    words = parse_query("  Web  ns:Telco qos:BE numa:0,2 cpu:4-7 12 ")
    assert [(w.field, w.text) for w in words] == [
        ("", "web"), ("ns", "telco"), ("qos", "be"), ("numa", "0,2"), ("cpu", "4-7"),
        ("cpu", "12"),
    ]  # fmt: skip
    assert words[3].numa == {0, 2} and words[4].cpus == CPUSet.parse("4-7")
    assert parse_query("namespace:x")[0].field == "ns"
    with pytest.raises(PodQueryError) as err:
        parse_query("x" * 201)
    assert err.value.field == "q"


def test_pods_page_of_no_rows(nodes: NodeService) -> None:
    nodes.create("empty", TOPOLOGY, CONFIG)
    page = pods_page([], nodes.reads.summary("empty"), query="x")
    assert (page.total, page.matched, page.pages, page.first, page.rows) == (0, 0, 1, 0, [])

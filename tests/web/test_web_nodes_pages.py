"""Node pages: /, /nodes, /nodes/{node}, the pod breakdown, their htmx fragments and JSON
twins, the forms (POST → 303 without JavaScript, inline results for htmx) and /metrics."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.services.demo import EMPTY_SHARED_POOL_POD, classic_pod
from app.services.nodes.service import NodeService
from app.web.app import create_app
from tests.helpers import DB_POD, POD_SCOPE, SMALL, make_settings
from tests.web.html_helpers import cpu_cells, elements, hrefs, with_attr

HX = {"HX-Request": "true"}


@pytest.fixture
def node_client(nodes: NodeService, client: TestClient) -> TestClient:
    """A client of an app with one node 'small' (topoDualSocketHT, pod scope) holding 'db'."""
    nodes.create("small", SMALL, POD_SCOPE)
    nodes.admit("small", DB_POD)
    return client


@pytest.fixture(scope="module")
def demo_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("demo")
    with TestClient(create_app(make_settings(tmp, demo=True))) as c:
        yield c


# -- / and /nodes ----------------------------------------------------------------------------


def test_root_is_the_topology_index_without_nodes(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200
    assert with_attr(r.text, "data-topology", "tr")
    assert r.headers["vary"] == "HX-Request, Accept-Encoding"


def test_root_redirects_to_the_only_node(node_client: TestClient) -> None:
    r = node_client.get("/", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/nodes/small"


def test_root_lists_several_nodes(demo_client: TestClient) -> None:
    r = demo_client.get("/")
    assert r.status_code == 200
    rows = [row["data-node"] for row in with_attr(r.text, "data-node", "tr")]
    assert rows == ["demo-512", "demo-container-scope", "demo-pod-scope"]
    assert "/topologies" in hrefs(r.text)


def test_nodes_page_fragment_and_twin(demo_client: TestClient) -> None:
    page = demo_client.get("/nodes")
    assert page.status_code == 200 and "<html" in page.text
    assert page.text.count(">simulated</span>") == 3
    assert "/nodes/demo-pod-scope" in hrefs(page.text)
    row = re.search(r'<tr data-node="demo-pod-scope">(.*?)</tr>', page.text, re.S)
    assert row is not None
    nums = re.findall(r'<td class="num[^"]*">([^<]*)</td>', row.group(1))
    assert nums == ["128", "2", "102", "4", "20", "4", "1"]
    frag = demo_client.get("/nodes", headers=HX)
    assert frag.headers["vary"] == "HX-Request, Accept-Encoding"
    assert frag.text.lstrip().startswith('<div id="nodes-table"') and "<html" not in frag.text
    twin = demo_client.get("/nodes.json").json()
    assert twin == demo_client.get("/api/v1/nodes").json()
    pod_scope = next(n for n in twin["nodes"] if n["name"] == "demo-pod-scope")
    assert pod_scope["simulated"] is True and pod_scope["source"] == "simulation"
    assert pod_scope["cpus"] == {
        "total": 128, "reserved": 2, "nodeShared": 102, "podShared": 4, "exclusive": 20,
    }  # fmt: skip
    assert (pod_scope["pods"], pod_scope["rejected"]) == (4, 1)


def test_empty_nodes_page_invites_to_create_one(client: TestClient) -> None:
    r = client.get("/nodes")
    assert r.status_code == 200
    assert "No simulated nodes yet" in r.text
    assert with_attr(r.text, "name", "textarea")[0]["name"] == "kubelet_config"


# -- create / delete forms -------------------------------------------------------------------


def test_create_form_then_303(client: TestClient) -> None:
    r = client.post(
        "/nodes",
        data={
            "name": "made",
            "topology": "laptop-1s",
            "kubelet_config": POD_SCOPE,
            "release": "1.37",
        },
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == "/nodes/made"
    assert client.get("/nodes/made").status_code == 200


@pytest.mark.parametrize(
    ("form", "status", "text"),
    [
        pytest.param(
            {"name": "x", "topology": "laptop-1s", "kubelet_config": "cpuManagerPolicy: nope"},
            422, "cpuManagerPolicy", id="bad-config",
        ),
        pytest.param(
            {"name": "X!", "topology": "laptop-1s", "kubelet_config": ""}, 422, "RFC 1123",
            id="bad-name",
        ),
        pytest.param(
            {"name": "small", "topology": "laptop-1s", "kubelet_config": ""}, 409,
            "already exists", id="duplicate",
        ),
    ],
)  # fmt: skip
def test_create_form_errors_come_back_inline(
    node_client: TestClient, form: dict[str, str], status: int, text: str
) -> None:
    r = node_client.post("/nodes", data=form, follow_redirects=False)
    assert r.status_code == status
    assert "<html" in r.text and 'role="alert"' in r.text and text in r.text
    assert "<details open>" in r.text  # the form stays open with what was typed
    assert f'value="{form["name"]}"' in r.text.replace("&#34;", '"')


YES = {"confirm": "yes"}


def test_delete_form_then_303(node_client: TestClient) -> None:
    # One click changes nothing: an unconfirmed POST goes to the confirmation page.
    r = node_client.post("/nodes/small/delete", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/nodes/small/delete"
    assert node_client.get("/nodes/small").status_code == 200
    page = node_client.get("/nodes/small/delete")
    assert page.status_code == 200 and 'name="confirm" value="yes"' in page.text
    r = node_client.post("/nodes/small/delete", data={"confirm": "yes"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/nodes"
    assert node_client.get("/nodes/small").status_code == 404
    assert node_client.post("/nodes/small/delete").status_code == 404


# -- the node page --------------------------------------------------------------------------------


def test_node_page_draws_every_cpu_with_its_owner(
    nodes: NodeService, node_client: TestClient
) -> None:
    r = node_client.get("/nodes/small")
    assert r.status_code == 200 and r.headers["vary"] == "HX-Request, Accept-Encoding"
    cells = {c["data-cpu"]: c for c in cpu_cells(r.text)}
    assert len(cells) == 12
    snap = nodes.reads.snapshot("small")
    db = snap.pod("prod", "db")
    assert db is not None
    main = next(c for c in db.containers if c.name == "main")
    for cpu in main.cpuset:
        cell = cells[str(cpu)]
        assert (cell["data-pool"], cell["data-owner"]) == ("exclusive", "prod/db/main")
        # One element, no repeated text: the id, the tag as data (hover text is made by JS).
        assert cell["data-tag"] == "A1" and "title" not in cell
        assert cell["data-numa"] in ("0", "1")
    for cpu in db.shared_pool():
        assert (cells[str(cpu)]["data-pool"], cells[str(cpu)]["data-owner"]) == (
            "pod-shared", "prod/db",
        )  # fmt: skip
    assert (cells["0"]["data-pool"], cells["0"]["data-owner"]) == ("reserved", "reserved")
    pools = {c["data-pool"] for c in cells.values()}
    assert pools == {"reserved", "node-shared", "pod-shared", "exclusive"}
    legend = {
        e["data-owner"]
        for e in with_attr(r.text, "data-owner", "li")
        if "legend-item" in e.get("class", "")
    }
    assert legend == {"reserved", "node-shared", "prod/db", "prod/db/main"}
    links = hrefs(r.text)
    for link in ("/nodes/small.json", "/api/v1/nodes/small", "/api/v1/nodes/small/podresources"):
        assert link in links
    assert "/nodes/small/pods/prod/db" in links
    assert len(with_attr(r.text, "data-numa-memory", "aside")) == 2
    assert [p["data-pod"] for p in with_attr(r.text, "data-pod", "tr")] == ["prod/db"]
    assert "Recent admissions" in r.text


def test_node_fragment_is_the_cpu_map(node_client: TestClient) -> None:
    r = node_client.get("/nodes/small", headers=HX)
    assert r.status_code == 200 and r.headers["vary"] == "HX-Request, Accept-Encoding"
    assert r.text.lstrip().startswith('<section id="cpu-map"')
    assert "<html" not in r.text and "hx-swap-oob" not in r.text
    assert len(cpu_cells(r.text)) == 12


def test_node_json_twin(node_client: TestClient) -> None:
    body = node_client.get("/nodes/small.json").json()
    assert body["summary"]["name"] == "small" and body["summary"]["simulated"] is True
    assert set(body["map"]["cells"]) == {str(i) for i in range(12)}
    assert body["map"]["cells"]["0"]["pool"] == "reserved"
    assert set(body["pools"]) >= {"reserved", "nodeShared", "exclusive", "podShared", "perNuma"}
    assert body["pods"][0]["key"] == "prod/db"
    assert body["admissions"][0]["action"] == "admit"
    assert body["kubeletConfigText"] == POD_SCOPE


def test_a_512_cpu_node_page_has_every_cell(demo_client: TestClient) -> None:
    r = demo_client.get("/nodes/demo-512")
    assert r.status_code == 200
    cells = cpu_cells(r.text)
    assert len(cells) == 512 and 'class="topology-map cpu-map dense' in r.text
    assert all(c["data-pool"] and c["data-owner"] and c["data-numa"] for c in cells)
    assert not any("title" in c for c in cells)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        pytest.param("/nodes/nope", "html", id="page"),
        pytest.param("/nodes/nope.json", "json", id="twin"),
        pytest.param("/nodes/small/pods/prod/nope", "html", id="pod-page"),
        pytest.param("/nodes/small/pods/prod/nope.json", "json", id="pod-twin"),
    ],
)
def test_unknown_node_or_pod_is_404(node_client: TestClient, path: str, kind: str) -> None:
    r = node_client.get(path)
    assert r.status_code == 404
    if kind == "json":
        error = r.json()["error"]
        assert error["reason"] == "NotFound"
        assert "not found" in error["message"]
    else:
        assert "<html" in r.text and "NotFound" in r.text
        assert "/nodes" in hrefs(r.text) or "/nodes/small" in hrefs(r.text)


def test_unknown_pod_uses_the_kubelet_text(node_client: TestClient) -> None:
    r = node_client.get("/nodes/small/pods/prod/nope.json")
    assert r.json()["error"]["message"] == "pod nope in namespace prod not found"


# -- the admission form -----------------------------------------------------------------------------


def _batch_of(location: str) -> str:
    parts = urlsplit(location)
    assert parts.path == "/nodes/small" and parts.fragment == "admit"
    return parse_qs(parts.query)["batch"][0]


def test_admit_form_without_js_redirects_to_the_verdict(node_client: TestClient) -> None:
    r = node_client.post(
        "/nodes/small/admissions",
        data={"manifest": classic_pod("solo", "batch", "2", "1Gi"), "action": "admit"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    _batch_of(r.headers["location"])
    page = node_client.get(r.headers["location"])
    verdict = with_attr(page.text, "data-admitted", "div")
    assert [(v["data-pod"], v["data-admitted"]) for v in verdict] == [("batch/solo", "true")]
    owners = {c["data-owner"] for c in cpu_cells(page.text)}
    assert "batch/solo/main" in owners


def test_a_rejection_shows_reason_and_message(node_client: TestClient) -> None:
    r = node_client.post(
        "/nodes/small/admissions",
        data={"manifest": EMPTY_SHARED_POOL_POD, "action": "admit"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    page = node_client.get(r.headers["location"]).text
    (box,) = [a for t, a in elements(page) if t == "div" and a.get("data-admitted") == "false"]
    assert box["data-reason"] == "TopologyAffinityError" and box["role"] == "alert"
    assert (
        "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
        in page
    )
    assert "ml/empty-shared-pool" in page


def test_admit_form_with_htmx_returns_the_form_and_oob_updates(node_client: TestClient) -> None:
    r = node_client.post(
        "/nodes/small/admissions",
        data={"manifest": classic_pod("solo", "batch", "2", "1Gi"), "action": "admit"},
        headers=HX,
    )
    assert r.status_code == 200 and "<html" not in r.text
    assert r.text.lstrip().startswith('<section id="admit"')
    oob = [a["id"] for a in with_attr(r.text, "hx-swap-oob", "section")]
    assert oob == ["cpu-map", "pools", "pods"]
    assert "batch/solo/main" in {c["data-owner"] for c in cpu_cells(r.text)}
    assert 'data-admitted="true"' in r.text


def test_dry_run_form_keeps_nothing(node_client: TestClient) -> None:
    r = node_client.post(
        "/nodes/small/admissions",
        data={"manifest": classic_pod("maybe", "batch", "2", "1Gi"), "action": "dry-run"},
        headers=HX,
    )
    assert "Would be admitted" in r.text and "dry run" in r.text
    assert "batch/maybe/main" not in {c["data-owner"] for c in cpu_cells(r.text)}


@pytest.mark.parametrize("htmx", [False, True], ids=["no-js", "htmx"])
def test_a_bad_manifest_comes_back_inline(node_client: TestClient, htmx: bool) -> None:
    manifest = (
        "metadata: {name: x}\nspec: {containers: [{name: c, resources: {limits: {cpu: lots}}}]}"
    )
    r = node_client.post(
        "/nodes/small/admissions",
        data={"manifest": manifest, "action": "admit"},
        headers=HX if htmx else {},
        follow_redirects=False,
    )
    assert r.status_code == (200 if htmx else 422)
    assert ("<html" in r.text) is not htmx
    (box,) = [a for t, a in elements(r.text) if t == "div" and "data-field" in a]
    assert box["data-field"] == "spec.containers[0].resources.limits.cpu"
    assert "lots" in r.text  # the textarea keeps what was typed


def test_a_pod_already_there_is_a_conflict_inline(node_client: TestClient) -> None:
    r = node_client.post(
        "/nodes/small/admissions", data={"manifest": DB_POD}, follow_redirects=False
    )
    assert r.status_code == 409
    assert "already on node small" in r.text


def test_remove_form(node_client: TestClient) -> None:
    r = node_client.post("/nodes/small/pods/prod/db/remove", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/nodes/small/pods/prod/db/remove"
    assert node_client.get("/nodes/small/pods/prod/db").status_code == 200  # still there
    r = node_client.post("/nodes/small/pods/prod/db/remove", data=YES, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/nodes/small#pods"
    page = node_client.get("/nodes/small").text
    assert {c["data-pool"] for c in cpu_cells(page)} == {"reserved", "node-shared"}
    node_client.post("/nodes/small/admissions", data={"manifest": DB_POD})
    r = node_client.post("/nodes/small/pods/prod/db/remove", data=YES, headers=HX)
    assert r.status_code == 200 and "Removed pod <strong>prod/db</strong>" in r.text
    assert node_client.post("/nodes/small/pods/prod/db/remove", data=YES).status_code == 404


# -- the pod page -------------------------------------------------------------------------------------


def test_pod_page_breaks_the_budget_down(node_client: TestClient) -> None:
    r = node_client.get("/nodes/small/pods/prod/db")
    assert r.status_code == 200 and r.headers["vary"] == "HX-Request, Accept-Encoding"
    parts = [a["data-part"] for a in with_attr(r.text, "data-part", "tr")]
    assert parts == ["exclusive", "pod-shared"]
    containers = {a["data-container"]: a for a in with_attr(r.text, "data-container", "tr")}
    assert containers["main"]["data-isolation"] == "container"
    assert containers["side"]["data-isolation"] == "pod"
    assert containers["main"]["id"] == "container-main"
    assert "&#34;podResources&#34;" in r.text or '"podResources"' in r.text
    links = hrefs(r.text)
    assert "/nodes/small/pods/prod/db.json" in links
    assert "/api/v1/nodes/small/podresources/prod/db" in links
    focus = with_attr(r.text, "data-focus", "section")
    assert focus and focus[0]["data-focus"] == "prod/db"


def test_pod_fragment_and_twin(node_client: TestClient) -> None:
    frag = node_client.get("/nodes/small/pods/prod/db", headers=HX)
    assert frag.text.lstrip().startswith('<section id="cpu-map"') and "<html" not in frag.text
    twin = node_client.get("/nodes/small/pods/prod/db.json").json()
    assert twin["pod"]["key"] == "prod/db"
    assert [p["part"] for p in twin["parts"]] == ["exclusive", "pod-shared"]
    assert twin["podresources"]["podResources"]["name"] == "db"
    assert twin["node"]["name"] == "small"


# -- metrics --------------------------------------------------------------------------------------


def test_metrics_have_per_node_series(node_client: TestClient) -> None:
    # prometheus_client writes the labels of a sample in name order
    text = node_client.get("/metrics").text
    assert 'numascope_cpus{node="small",numa_node="0",pool="reserved"} 1.0' in text
    assert re.search(
        r'numascope_container_exclusive_cpus\{container="main",namespace="prod",node="small",'
        r'numa_node="\d",pod="db"\} 2.0',
        text,
    )
    assert (
        'numascope_pod_budget_cpus{namespace="prod",node="small",part="pod_shared",pod="db"} 2.0'
        in text
    )
    assert re.search(
        r'numascope_numa_memory_bytes\{node="small",numa_node="0",resource="memory",'
        r'state="free"\} \d',
        text,
    )
    assert "# TYPE numascope_cpus gauge" in text

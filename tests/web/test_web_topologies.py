"""Topology pages, htmx fragments, JSON twins and /api/v1/topologies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.domain.presets import get_preset, list_presets
from app.domain.topology.model import CPUTopology
from app.domain.topology.view import topology_to_dict
from app.settings import Settings
from app.web.app import create_app
from tests.helpers import make_settings
from tests.web.html_helpers import cpu_cells, elements, hrefs, with_attr

PRESETS = [p.name for p in list_presets()]
HX = {"HX-Request": "true"}


# -- index -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/topologies"], ids=["root", "topologies"])
def test_index_lists_host_and_every_preset_with_links(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["vary"] == "HX-Request, Accept-Encoding"
    assert "<html" in r.text
    links = hrefs(r.text)
    for name in ["host", *PRESETS]:
        assert f"/topologies/{name}" in links
    rows = with_attr(r.text, "data-topology", "tr")
    assert [row["data-topology"] for row in rows] == ["host", *PRESETS]
    assert "/topologies.json" in links


def test_index_shows_counts_of_a_preset(client: TestClient) -> None:
    r = client.get("/")
    row = re.search(r'<tr data-topology="server-2s-8numa-512t">(.*?)</tr>', r.text, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells == ["2", "8", "256", "512", "1.5 TiB"]


def test_index_fragment_for_htmx(client: TestClient) -> None:
    r = client.get("/", headers=HX)
    assert r.status_code == 200
    assert r.headers["vary"] == "HX-Request, Accept-Encoding"
    assert "<html" not in r.text
    assert r.text.lstrip().startswith('<div id="topology-table"')


def test_index_json_twin_matches_api(client: TestClient) -> None:
    twin = client.get("/topologies.json")
    api = client.get("/api/v1/topologies")
    assert twin.status_code == api.status_code == 200
    assert twin.json() == api.json()
    names = [t["name"] for t in api.json()["topologies"]]
    assert names == ["host", *PRESETS]
    first = api.json()["topologies"][0]
    assert first["kind"] == "host" and first["source"] == "sysfs"
    assert first["numaNodes"] == 2 and first["cpus"] == 8


# -- one topology ----------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS, ids=PRESETS)
def test_preset_page_draws_every_cpu_once(client: TestClient, name: str) -> None:
    topo = get_preset(name)
    r = client.get(f"/topologies/{name}")
    assert r.status_code == 200
    assert r.headers["vary"] == "HX-Request, Accept-Encoding"
    cells = cpu_cells(r.text)
    assert sorted(int(c["data-cpu"]) for c in cells) == list(topo.all_cpus)
    for cell in cells:
        info = topo.cpu_details[int(cell["data-cpu"])]
        assert int(cell["data-core"]) == info.core_id
        assert int(cell["data-numa"]) == info.numa_node_id
        assert int(cell["data-socket"]) == info.socket_id
        assert int(cell["data-uncore"]) == info.uncore_cache_id
    labels = re.findall(r'<li class="cpu" data-cpu="(\d+)"[^>]*>(\d+)</li>', r.text)
    assert len(labels) == topo.num_cpus
    assert all(a == b for a, b in labels)
    links = hrefs(r.text)
    assert f"/topologies/{name}.json" in links
    assert f"/api/v1/topologies/{name}" in links


def test_topology_page_nests_socket_numa_core_thread(client: TestClient) -> None:
    html = client.get("/topologies/topoDualSocketMultiNumaPerSocketHT").text
    # Document order: each thread's enclosing socket/NUMA/core elements precede it.
    socket = numa = core = None
    for tag, attrs in elements(html):
        if tag == "section" and "data-socket" in attrs:
            socket = int(attrs["data-socket"])
        elif tag == "section" and "data-numa" in attrs:
            numa = int(attrs["data-numa"])
        elif tag == "li" and "data-core" in attrs and "data-cpu" not in attrs:
            core = int(attrs["data-core"])
        elif tag == "li" and "data-cpu" in attrs:
            assert (socket, numa, core) == (
                int(attrs["data-socket"]),
                int(attrs["data-numa"]),
                int(attrs["data-core"]),
            )
    assert len(with_attr(html, "data-numa-memory")) == 4


@pytest.mark.parametrize(
    ("name", "l3_boxes"),
    [
        pytest.param("topoDualSocketHT", 0, id="one-l3-per-numa"),
        pytest.param("topoUncoreSingleSocketMultiNuma", 4, id="two-l3-per-numa"),
        pytest.param("server-2s-8numa-512t", 32, id="512t"),
    ],
)
def test_l3_groups_only_where_a_numa_node_has_several(
    client: TestClient, name: str, l3_boxes: int
) -> None:
    html = client.get(f"/topologies/{name}").text
    assert len(with_attr(html, "data-uncore", "div")) == l3_boxes


def test_numa_node_spanning_sockets_is_drawn_in_each_with_memory_once(
    client: TestClient,
) -> None:
    html = client.get("/topologies/fakeTopoMultiSocketDualSocketPerNumaHT").text
    numa_boxes = with_attr(html, "data-numa", "section")
    assert [int(b["data-numa"]) for b in numa_boxes] == [0, 0, 1, 1]
    assert [int(m["data-numa-memory"]) for m in with_attr(html, "data-numa-memory")] == [0, 1]
    assert "also in socket 1" in html


def test_topology_fragment_for_htmx_is_the_cpu_map(client: TestClient) -> None:
    full = client.get("/topologies/topoDualSocketHT")
    frag = client.get("/topologies/topoDualSocketHT", headers=HX)
    assert frag.status_code == 200
    assert frag.headers["vary"] == "HX-Request, Accept-Encoding"
    assert "<html" not in frag.text
    assert frag.text.lstrip().startswith('<section id="topology-map"')
    # The page includes the fragment: the markup exists once and is identical.
    assert frag.text.strip() in full.text
    assert len(cpu_cells(frag.text)) == 12


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"HX-Request": "true", "HX-History-Restore-Request": "true"}, id="restore"),
        pytest.param({"HX-Request": "true", "HX-Boosted": "true"}, id="boosted"),
        pytest.param({"HX-Request": "false"}, id="not-htmx"),
    ],
)
def test_full_page_when_htmx_needs_one(client: TestClient, headers: dict[str, str]) -> None:
    r = client.get("/topologies/topoDualSocketHT", headers=headers)
    assert "<html" in r.text
    assert r.headers["vary"] == "HX-Request, Accept-Encoding"


@pytest.mark.parametrize("name", ["topoDualSocketHT", "server-2s-8numa-512t"], ids=str)
def test_json_twin_matches_api_and_domain(client: TestClient, name: str) -> None:
    twin = client.get(f"/topologies/{name}.json")
    api = client.get(f"/api/v1/topologies/{name}")
    assert twin.status_code == api.status_code == 200
    assert twin.headers["content-type"] == "application/json"
    body = twin.json()
    assert body == api.json()
    topo = get_preset(name)
    assert body["topology"] == topology_to_dict(topo)
    summary = body["summary"]
    assert (summary["name"], summary["kind"], summary["source"]) == (name, "preset", "preset")
    assert summary["cpus"] == topo.num_cpus
    assert summary["numaNodes"] == topo.num_numa_nodes
    assert summary["jsonUrl"] == f"/topologies/{name}.json"
    cpus = [
        cpu
        for socket in body["cpuMap"]["sockets"]
        for numa in socket["numaNodes"]
        for group in numa["uncoreGroups"]
        for core in group["cores"]
        for cpu in core["cpus"]
    ]
    assert cpus and sorted(cpus) == list(topo.all_cpus)
    assert len(cpus) == len(set(cpus))


def test_host_page_from_sysfs(client: TestClient) -> None:
    r = client.get("/topologies/host")
    assert r.status_code == 200
    cells = cpu_cells(r.text)
    assert sorted(int(c["data-cpu"]) for c in cells) == list(range(8))
    assert {c["data-numa"] for c in cells} == {"0", "1"}
    # Memory beside NUMA 0 and 1, and memory-only node 2 in its own section.
    assert [m["data-numa-memory"] for m in with_attr(r.text, "data-numa-memory")] == [
        "0",
        "1",
        "2",
    ]
    assert "NUMA nodes with memory but no CPUs" in r.text
    assert "hugepages-2Mi" in r.text and "512 × 2Mi pages" in r.text
    body = client.get("/topologies/host.json").json()
    assert body["summary"]["kind"] == "host"
    assert body["cpuMap"]["distances"] == {
        "nodes": [0, 1, 2],
        "rows": [[10, 21, 30], [21, 10, 30], [30, 30, 10]],
        "reported": True,
    }
    assert [m["numaNode"] for m in body["cpuMap"]["memoryOnlyNumaNodes"]] == [2]


def test_host_discovered_once_per_app(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    from app.adapters import sysfs

    calls: list[Path] = []
    real = sysfs.discover_host

    def counting(root: Path, *, use_cpuinfo: bool) -> CPUTopology:
        calls.append(root)
        return real(root, use_cpuinfo=use_cpuinfo)

    service = client.app.state.topologies  # type: ignore[attr-defined]
    monkeypatch.setattr(service, "_discover_host", counting)
    for path in ["/topologies/host", "/", "/topologies/host.json", "/api/v1/topologies/host"]:
        assert client.get(path).status_code == 200
    assert calls == [settings.sysfs_root]


# -- unknown names and host failures ------------------------------------------------------


def test_unknown_topology_html_404_lists_the_choices(client: TestClient) -> None:
    r = client.get("/topologies/nope")
    assert r.status_code == 404
    assert "<html" in r.text
    assert "There is no topology called &#39;nope&#39;" in r.text
    links = hrefs(r.text)
    assert "/topologies/host" in links
    assert all(f"/topologies/{p}" in links for p in PRESETS)


@pytest.mark.parametrize(
    "path", ["/topologies/nope.json", "/api/v1/topologies/nope"], ids=["twin", "api"]
)
def test_unknown_topology_json_404(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/json"
    error = r.json()["error"]
    assert set(error) == {"reason", "message"}
    assert error["reason"] == "NotFound"
    assert error["message"].startswith("unknown topology 'nope': use 'host'")
    assert "server-2s-8numa-512t" in error["message"]


@pytest.fixture
def broken_client(tmp_path: Path) -> TestClient:
    settings = make_settings(tmp_path, sysfs_root=tmp_path / "no-such-sysfs")
    return TestClient(create_app(settings))


def test_host_discovery_failure_is_a_clear_html_error(broken_client: TestClient) -> None:
    r = broken_client.get("/topologies/host")
    assert r.status_code == 503
    assert "<html" in r.text
    assert "HostDiscoveryFailed" in r.text
    assert "could not discover the host topology" in r.text
    assert "no-such-sysfs" in r.text


def test_host_discovery_failure_json_and_index_still_works(broken_client: TestClient) -> None:
    r = broken_client.get("/api/v1/topologies/host")
    assert r.status_code == 503
    assert r.json()["error"]["reason"] == "HostDiscoveryFailed"
    index = broken_client.get("/")
    assert index.status_code == 200
    assert "Unavailable:" in index.text
    host = broken_client.get("/api/v1/topologies").json()["topologies"][0]
    assert host["available"] is False and "no-such-sysfs" in host["error"]
    metrics = broken_client.get("/metrics").text
    assert 'numascope_source_errors_total{source="sysfs"} 1.0' in metrics

"""A node's history as time series (issue 21 "Beyond"): per NUMA node, exclusive, pod shared
and node shared CPUs and free memory after each change, restarts marked, as CSV and as the
History page's chart (``app.services.history.series``)."""

from __future__ import annotations

import csv
import io

from fastapi.testclient import TestClient

from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}


def test_the_series_follow_the_nodes_changes(client: TestClient) -> None:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": "1.37"},
    )
    assert r.status_code == 201
    assert client.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML).status_code == 201
    client.post("/api/v1/nodes/small/restart?release=1.38&podLevelResourceManagers=true")
    r = client.get("/nodes/small/history.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert 'filename="small-history.csv"' in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    # 2 NUMA nodes x (as created, the admission, the restart)
    assert [(x["entry"], x["numa_node"]) for x in rows] == [
        ("0", "0"), ("0", "1"), ("1", "0"), ("1", "1"), ("2", "0"), ("2", "1"),
    ]  # fmt: skip
    created, admitted, restarted = rows[0:2], rows[2:4], rows[4:6]
    assert [x["exclusive_cpus"] for x in created] == ["0", "0"]
    # db: a 4-CPU budget on one NUMA node, main exclusive (2), side in the pod shared pool (2)
    on = next(x for x in admitted if x["exclusive_cpus"] != "0")
    assert (on["exclusive_cpus"], on["pod_shared_cpus"]) == ("2", "2")
    assert int(on["node_shared_cpus"]) == int(created[int(on["numa_node"])]["node_shared_cpus"]) - 4
    assert int(on["free_memory_bytes"]) < int(created[int(on["numa_node"])]["free_memory_bytes"])
    assert [x["restart"] for x in restarted] == ["yes", "yes"]
    assert [x["exclusive_cpus"] for x in restarted] == [x["exclusive_cpus"] for x in admitted]

    svg = client.get("/nodes/small/history.svg")
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    assert svg.text.count('<g class="numa-series"') == 2
    assert svg.text.count('<polyline class="series"') == 6
    assert svg.text.count('<line class="restart"') == 2
    page = client.get("/nodes/small/history").text
    assert 'src="/nodes/small/history.svg"' in page and 'href="/nodes/small/history.csv"' in page
    assert client.get("/nodes/nope/history.csv").status_code == 404

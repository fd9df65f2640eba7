"""The SRE workflow routes on the demo nodes: rejection explained, history and diff,
downloads, confirmations, undo, demo restore, glossary, favicon, placement after Dry run, and
the pod page of a pod in the node shared pool (one meaning of "node shared pool")."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator

import pytest
import yaml
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests.helpers import act_as_browser, make_settings

NODE = "demo-pod-scope"
YES = {"confirm": "yes"}
SMALL_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
"""


@pytest.fixture
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("wf"), demo=True))) as c:
        yield act_as_browser(c)


def _rejected(c: TestClient) -> dict:
    events = c.get(f"/nodes/{NODE}/history.json").json()["events"]
    return next(e for e in events if not e["admitted"])


def test_rejection_is_explained_from_the_log(demo: TestClient) -> None:
    e = _rejected(demo)
    view = demo.get(e["explainUrl"] + ".json").json()
    assert view["pod"] == "ml/empty-shared-pool" and view["replayMatches"] is True
    assert [n["numaNode"] for n in view["numa"]] == [0, 1, 2, 3]
    assert view["numa"][0]["freeCpuCount"] < view["numa"][1]["freeCpuCount"] == 32
    (unit,) = view["units"]
    assert unit["unit"] == "pod" and unit["admit"] is False
    assert [p["provider"] for p in unit["providers"]] == ["CPU manager", "memory manager"]
    assert unit["providers"][0]["resources"] == {"cpu": []}
    assert any(s["kind"] == "fewer-cpus" for s in view["suggestions"])
    assert "pod budget" in view["hint"]
    # The rejected pod's own URL leads there; its log row links there too.
    r = demo.get(f"/nodes/{NODE}/pods/ml/empty-shared-pool", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == e["explainUrl"]
    assert e["explainUrl"] in demo.get(f"/nodes/{NODE}").text
    assert demo.get(f"/nodes/{NODE}/rejections/1").status_code == 404  # admitted entry
    assert demo.get(f"/nodes/{NODE}/admissions/1").status_code == 404  # its old address


def test_plain_pod_gets_no_pod_budget_hint(demo: TestClient) -> None:
    big = SMALL_POD.replace("p1", "big").replace('"2"', '"40"')
    r = demo.post(f"/nodes/{NODE}/admissions", data={"manifest": big}, follow_redirects=True)
    assert "TopologyAffinityError" in r.text
    e = _rejected_last(demo)
    view = demo.get(e["explainUrl"] + ".json").json()
    assert "pod budget" not in view["hint"] and "pod-level" not in view["hint"]
    assert view["requestedCpus"] == 40 and not view["podLevel"]
    texts = [s["text"] for s in view["suggestions"]]
    assert any("32 CPUs instead of 40" in t for t in texts), texts


def _rejected_last(c: TestClient) -> dict:
    events = c.get(f"/nodes/{NODE}/history.json").json()["events"]
    return [e for e in events if not e["admitted"]][-1]


def test_history_point_and_diff(demo: TestClient) -> None:
    empty = demo.get(f"/nodes/{NODE}/history/0.json").json()
    assert empty["pods"] == []
    changed = [e for e in demo.get(f"/nodes/{NODE}/history.json").json()["events"] if e["changed"]]
    first, last = changed[0]["id"], changed[-1]["id"]
    one = demo.get(f"/nodes/{NODE}/history/{first}.json").json()
    assert one["pods"] == [changed[0]["pod"]]
    d = demo.get(f"/nodes/{NODE}/diff.json", params={"from": 0, "to": last}).json()
    assert {m["change"] for m in d["moves"]} == {"added"}
    assert d["freed"] == "" and d["taken"]
    back = demo.get(f"/nodes/{NODE}/diff.json", params={"from": last, "to": 0}).json()
    assert back["freed"] == d["taken"]
    assert demo.get(f"/nodes/{NODE}/history/99999").status_code == 404


def test_downloads(demo: TestClient) -> None:
    z = zipfile.ZipFile(io.BytesIO(demo.get(f"/nodes/{NODE}/state-files.zip").content))
    assert sorted(z.namelist()) == [
        f"{NODE}/cpu_manager_state",
        f"{NODE}/memory_manager_state",
        f"{NODE}/pods.json",
    ]
    pods = list(yaml.safe_load_all(demo.get(f"/nodes/{NODE}/pods.yaml").text))
    assert len(pods) == 4 and all(p["kind"] == "Pod" for p in pods)
    rows = demo.get(f"/nodes/{NODE}/pools.csv").text.splitlines()
    assert rows[0].startswith("numa_node,cpus") and rows[-1].startswith("all,128,")


def test_confirmations_undo_and_restore(demo: TestClient) -> None:
    remove = f"/nodes/{NODE}/pods/frontend/web/remove"
    r = demo.post(remove, follow_redirects=False)
    assert r.headers["location"] == remove  # one click: the confirmation page, no change
    assert demo.get(f"/nodes/{NODE}/pods/frontend/web").status_code == 200
    assert 'value="yes"' in demo.get(remove).text
    assert demo.post(remove, data=YES, follow_redirects=False).status_code == 303
    assert demo.get(f"/nodes/{NODE}/pods/frontend/web").status_code == 404
    assert 'id="undo"' in demo.get(f"/nodes/{NODE}").text
    r = demo.post(f"/api/v1/nodes/{NODE}/undo")
    assert r.status_code == 200 and r.json()["admitted"] is True
    assert demo.get(f"/nodes/{NODE}/pods/frontend/web").status_code == 200
    assert demo.post(f"/api/v1/nodes/{NODE}/undo").status_code == 409
    assert demo.post("/nodes/demo-512/delete", data=YES).status_code == 200
    assert demo.get("/nodes/demo-512").status_code == 404
    assert demo.post("/demo/restore", follow_redirects=False).headers["location"] == "/demo/restore"
    assert demo.get("/nodes/demo-512").status_code == 404  # unconfirmed: nothing
    assert demo.post("/api/v1/demo/restore").json()["restored"][-1] == "demo-512"
    assert demo.get("/nodes/demo-512").status_code == 200


def test_node_shared_pod_page_one_meaning(demo: TestClient) -> None:
    node = demo.get(f"/nodes/{NODE}.json").json()
    shared = node["pools"]["nodeShared"]["cpus"]
    pod = demo.get(f"/nodes/{NODE}/pods/frontend/web.json").json()
    (part,) = pod["parts"]
    assert part["part"] == "node-shared" and part["cpus"]["cpus"] == shared
    assert part["alsoReserved"]["cpus"] == node["pools"]["reserved"]["cpus"]
    assert pod["map"]["focusPools"] == ["node-shared", "reserved"]
    assert [e["pool"] for e in pod["map"]["legend"]] == ["reserved", "node-shared"]
    html = demo.get(f"/nodes/{NODE}/pods/frontend/web").text
    assert 'data-pool="node-shared" data-owner="node-shared"' in html
    assert 'node-shared dim"' not in html and "pool-node-shared dim" not in html


def test_dry_run_answer_shows_placement(demo: TestClient) -> None:
    r = demo.post(f"/nodes/{NODE}/admissions", data={"manifest": SMALL_POD, "action": "dry-run"})
    assert 'class="placement"' in r.text and "Would get CPUs" in r.text


def test_glossary_favicon_and_duplicate_field(demo: TestClient) -> None:
    assert 'id="node-shared-pool"' in demo.get("/glossary").text
    r = demo.get("/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg")
    demo.post(f"/nodes/{NODE}/admissions", data={"manifest": SMALL_POD})
    r = demo.post(f"/api/v1/nodes/{NODE}/pods", json={"manifest": SMALL_POD})
    assert r.status_code == 409 and r.json()["error"].get("field") == "metadata.name"


def test_a_bare_diff_compares_as_created_with_the_latest_change(demo: TestClient) -> None:
    """``/nodes/{node}/diff`` without ``from``/``to`` (issue 21 point 7) is a page, not a raw
    validation error: the node as created against its latest change."""
    events = demo.get(f"/nodes/{NODE}/history.json").json()["events"]
    last = max(e["id"] for e in events if e["changed"])
    page = demo.get(f"/nodes/{NODE}/diff")
    assert page.status_code == 200
    assert f"{NODE}: #0 → #{last}" in page.text and "What changed on" in page.text
    assert demo.get(f"/nodes/{NODE}/diff?from=2").text.count(f"#2 → #{last}") == 1
    bad = demo.get(f"/nodes/{NODE}/diff?from=x")
    assert bad.status_code == 422 and "from" in bad.text

"""The hub's demo-fleet nodes are nodes like any other (``app.services.nodes.catalog``): their
page, JSON twins, pods, PodResources, summary, upgrade verdict, dry run and restart rehearsal
answer through the same routes as a simulated node's, read-only; and one judge
(``app.services.nodes.judge``) answers admission, dry run and the fleet's fit alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from app.services.demo import classic_pod
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.demo_fleet import SimulatedNode
from app.services.nodes.source import NodeSource, WritableNodeSource
from app.web.app import create_app
from tests.helpers import POD_SCOPE, SMALL, act_as_browser, make_settings

YAML = {"Content-Type": "application/yaml"}
COUNT = 12


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A hub with a demo fleet and one stored simulated node, ``small``."""
    tmp: Path = tmp_path_factory.mktemp("fleet-nodes")
    app = create_app(make_settings(tmp, hub=True, demo_fleet=COUNT))
    with TestClient(app) as client:
        assert app.state.hub.fleet.ready.wait(60)
        act_as_browser(client)
        r = client.post(
            "/api/v1/nodes", json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE}
        )
        assert r.status_code == 201, r.text
        yield client


def _catalog(client: TestClient) -> NodeCatalog:
    catalog: NodeCatalog = client.app.state.catalog  # type: ignore[attr-defined]
    return catalog


def _with_pods(client: TestClient) -> SimulatedNode:
    """A fleet node holding at least one pod."""
    fleet = _catalog(client).fleet
    assert fleet is not None
    return next(n for n in fleet.nodes.values() if n.engine.pods)


def test_every_kind_of_node_is_a_source_and_only_stored_ones_are_writable(
    hub: TestClient,
) -> None:
    catalog = _catalog(hub)
    sim = _with_pods(hub)
    assert catalog.get(sim.name) is sim
    assert isinstance(sim, NodeSource) and not isinstance(sim, WritableNodeSource)
    assert isinstance(catalog.get("small"), WritableNodeSource)
    # The index is the dashboard's nodes; the fleet's thousands are the fleet pages'.
    assert catalog.names() == ["small"]


def test_a_demo_fleet_node_has_a_page_and_json_like_any_node(hub: TestClient) -> None:
    sim = _with_pods(hub)
    name = sim.name
    pod = next(iter(sim.engine.pods.values()))
    for url in (
        f"/nodes/{name}",
        f"/nodes/{name}.json",
        f"/api/v1/nodes/{name}",
        f"/nodes/{name}/pods",
        f"/nodes/{name}/pods.json",
        f"/nodes/{name}/pods/{pod.namespace}/{pod.name}",
        f"/nodes/{name}/pods/{pod.namespace}/{pod.name}.json",
        f"/api/v1/nodes/{name}/podresources",
        f"/api/v1/nodes/{name}/podresources/{pod.namespace}/{pod.name}",
        f"/api/v1/nodes/{name}/allocatable",
        f"/api/v1/nodes/{name}/summary",
        f"/api/v1/nodes/{name}/noderesourcetopology",
        f"/api/v1/nodes/{name}/watch",
        f"/api/v1/nodes/{name}/admissions",
        f"/nodes/{name}/state-files.zip",
        f"/nodes/{name}/pods.yaml",
        f"/nodes/{name}/pools.csv",
    ):
        r = hub.get(url)
        assert r.status_code == 200, (url, r.text[:300])
    view = hub.get(f"/nodes/{name}.json").json()
    assert view["summary"]["name"] == name
    assert {(p["namespace"], p["name"]) for p in view["pods"]} == {
        (p.namespace, p.name) for p in sim.engine.pods.values()
    }
    listed = hub.get(f"/api/v1/nodes/{name}/podresources").json()["podResources"]
    assert len(listed) == len(sim.engine.pods)
    manifests = list(yaml.safe_load_all(hub.get(f"/nodes/{name}/pods.yaml").text))
    assert [m["metadata"]["name"] for m in manifests] == [p.name for p in sim.engine.pods.values()]
    missing = hub.get(f"/nodes/{name}/pods/nope/nope.json")
    assert missing.status_code == 404 and missing.json()["error"]["reason"] == "NotFound"


def test_a_demo_fleet_node_answers_the_questions_and_refuses_changes(hub: TestClient) -> None:
    sim = _with_pods(hub)
    name = sim.name
    pod = classic_pod("probe", "fit", "1", "1Gi")
    r = hub.post(f"/api/v1/nodes/{name}/pods?dryRun=true", content=pod, headers=YAML)
    assert r.status_code == 200 and r.json()["dryRun"] is True
    upgrade = hub.get(f"/api/v1/nodes/{name}/upgrade?release={sim.release}")
    assert upgrade.status_code == 200 and upgrade.json()["node"] == name
    rehearsal = hub.post(f"/api/v1/nodes/{name}/restart?release={sim.release}&dryRun=true")
    assert rehearsal.status_code == 200, rehearsal.text
    body = rehearsal.json()
    assert body["node"] == name and body["dryRun"] is True and body["applied"] is False
    assert body["started"] is True  # its own release on its own files starts
    # Nothing changes a fleet node: admissions, removals, restarts and deletions are 409.
    before = hub.get(f"/nodes/{name}.json").json()
    kept = next(iter(sim.engine.pods.values()))
    for method, url in (
        ("POST", f"/api/v1/nodes/{name}/pods"),
        ("DELETE", f"/api/v1/nodes/{name}/pods/{kept.namespace}/{kept.name}"),
        ("POST", f"/api/v1/nodes/{name}/restart?release={sim.release}"),
        ("DELETE", f"/api/v1/nodes/{name}"),
    ):
        r = hub.request(method, url, content=pod, headers=YAML)
        assert r.status_code == 409, (method, url, r.text)
        assert "a node of the fleet (read-only)" in r.json()["error"]["message"]
    assert hub.get(f"/nodes/{name}.json").json() == before
    # ... and no simulated node may take a fleet node's name.
    taken = hub.post(
        "/api/v1/nodes", json={"name": name, "topology": SMALL, "kubeletConfig": POD_SCOPE}
    )
    assert taken.status_code == 409


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(classic_pod("fit", "default", "2", "2Gi"), id="fits-somewhere"),
        pytest.param(classic_pod("huge", "default", "96", "2Gi"), id="fits-nowhere"),
        pytest.param(
            classic_pod("one", "default", "4", "1Gi")
            + "---\n"
            + classic_pod("two", "d", "64", "1Gi"),
            id="two-pods",
        ),
    ],
)
def test_the_fit_row_is_the_nodes_own_dry_run(hub: TestClient, manifest: str) -> None:
    """One judge: each fit row's verdict, reason and message are what the node's own dry-run
    route answers (never a reason the dry run does not have, never none where it has one)."""
    fit = hub.post("/api/v1/fleet/fit", content=manifest, headers=YAML)
    assert fit.status_code == 200
    rows = {r["node"]: r for r in fit.json()["results"]}
    assert len(rows) == COUNT
    for name, row in rows.items():
        own = hub.post(f"/api/v1/nodes/{name}/pods?dryRun=true", content=manifest, headers=YAML)
        assert own.status_code == 200, own.text
        dry = own.json()
        assert row["admitted"] == dry["admitted"], name
        assert [(x["admitted"], x.get("reason")) for x in dry["results"]] == [
            (x["admitted"], x.get("reason")) for x in row["results"]
        ], name
        if "reason" in dry:
            assert (row["reason"], row["message"]) == (dry["reason"], dry["message"]), name


def test_admission_and_dry_run_give_the_same_verdict(hub: TestClient) -> None:
    """On a stored node the dry run of a batch predicts its admission pod for pod (the same
    judge: the dry run on a scratch copy, the admission on the node)."""
    manifest = (
        classic_pod("a1", "judge", "4", "1Gi")
        + "---\n"
        + classic_pod("a2", "judge", "4", "1Gi")
        + "---\n"
        + classic_pod("a3", "judge", "6", "1Gi")
    )
    dry = hub.post("/api/v1/nodes/small/pods?dryRun=true", content=manifest, headers=YAML)
    real = hub.post("/api/v1/nodes/small/pods", content=manifest, headers=YAML)
    assert dry.status_code == 200 and real.status_code == 201
    verdicts = [(r["admitted"], r.get("reason")) for r in dry.json()["results"]]
    assert verdicts == [(r["admitted"], r.get("reason")) for r in real.json()["results"]]
    assert not all(a for a, _ in verdicts)  # the third does not fit after the first two


def test_conflicts_are_judged_in_one_order_on_every_kind_of_node(hub: TestClient) -> None:
    """A pod whose name is on the node is refused as metadata.name, on a stored node and on a
    fleet node alike (the name first, then the uid)."""
    hub.post("/api/v1/nodes/small/pods", content=classic_pod("dup", "c", "1", "1Gi"), headers=YAML)
    sim = _with_pods(hub)
    held = next(iter(sim.engine.pods.values()))
    for node, ns, pod in (("small", "c", "dup"), (sim.name, held.namespace, held.name)):
        manifest = classic_pod(pod, ns, "1", "1Gi")
        r = hub.post(f"/api/v1/nodes/{node}/pods?dryRun=true", content=manifest, headers=YAML)
        assert r.status_code == 409, (node, r.text)
        assert r.json()["error"]["field"] == "metadata.name"
        assert r.json()["error"]["message"] == f"pod {ns}/{pod} is already on node {node}"

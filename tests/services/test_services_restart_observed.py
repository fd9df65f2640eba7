"""Restart rehearsals of the observed node: dry run only, on an in-memory copy of the
kubelet's state files (the release's reader and start-up validation; no pod re-admitted);
nothing under the kubelet root changes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.adapters import statefiles
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.adapters.sysfs import discover_host
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.services import demo
from app.web.app import create_app
from tests.helpers import act_as_browser
from tests.services.test_services_observer import (  # noqa: F401 (fixtures)
    NODE,
    PODS,
    Host,
    engine_node,
    host,
    tree_state,
)


@pytest.fixture
def client(host: Host) -> Iterator[TestClient]:  # noqa: F811
    # State files of the machine sysfs describes (its discovery also lists 1Gi pages, which
    # the preset the fixture's files come from does not: a kubelet would refuse those).
    topology = discover_host(host.sysfs, use_cpuinfo=False, name=NODE)
    node = Node(NODE, topology, parse_kubelet_config_text(demo.POD_SCOPE_CONFIG, "1.37"))
    for text in PODS:
        for pod in parse_pod_manifests(text):
            assert node.admit(pod).admitted
    statefiles.write_files(host.root, render_state_files(node))
    with TestClient(create_app(host.settings(observe=True))) as c:
        yield act_as_browser(c)


def test_dry_run_reads_a_copy_and_writes_nothing(client: TestClient, host: Host) -> None:  # noqa: F811
    before = tree_state(host.root)
    r = client.post(f"/api/v1/nodes/{NODE}/restart?release=1.38&dryRun=true")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["observed"] is True and body["applied"] is False and body["dryRun"] is True
    assert body["error"] is None, body["error"]
    assert body["started"] is True
    assert body["previousRelease"] == "1.37" and body["pods"] == []
    assert "pods' specs are not known" in body["note"]
    assert tree_state(host.root) == before


def test_a_release_that_refuses_the_files(client: TestClient, host: Host) -> None:  # noqa: F811
    body = client.post(
        f"/api/v1/nodes/{NODE}/restart?release=1.36&podLevelResourceManagers=true&dryRun=true"
    ).json()
    assert body["started"] is False
    assert body["error"].startswith("start ") and body["recovery"]
    assert any("podEntries[" in t for t in body["lost"])


def test_applying_is_refused(client: TestClient, host: Host) -> None:  # noqa: F811
    before = tree_state(host.root)
    r = client.post(f"/api/v1/nodes/{NODE}/restart?release=1.38")
    assert r.status_code == 409
    assert "observed node (read-only)" in r.json()["error"]["message"]
    assert tree_state(host.root) == before


def test_the_panel_on_the_observed_page(client: TestClient) -> None:
    html = client.get(f"/nodes/{NODE}").text
    assert 'id="restart"' in html and 'value="apply"' not in html
    r = client.post(f"/nodes/{NODE}/restart", data={"release": "1.38", "gate": "on"})
    assert r.status_code == 200
    assert 'data-started="true"' in r.text and 'id="restart-before"' in r.text

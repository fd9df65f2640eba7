"""A remote agent's node seen through the hub (``app.services.nodes.remote``), with real agent
processes and a real hub process (``conftest.cluster``): the hub serves the node's page, its
JSON twins, its pods' pages and PodResources from the agent's own answers, validated; an SRE who
reaches only the hub sees what the agent shows. A broken agent's nodes are never a 5xx."""

from __future__ import annotations

import httpx

from app.services.demo import classic_pod
from tests.fleet.conftest import Cluster


def _agent_of(cluster: Cluster, node: str) -> str:
    for agent in cluster.agents:
        if any(n["node"] == node for n in agent.json("/api/v1/summary")["nodes"]):
            return agent.url
    raise AssertionError(node)


def test_the_hub_serves_a_remote_nodes_json_as_its_agent_answers_it(cluster: Cluster) -> None:
    hub = cluster.hub.url
    agent = _agent_of(cluster, "alpha-1")
    for path in (
        "/nodes/alpha-1.json",
        "/api/v1/nodes/alpha-1",
        "/nodes/alpha-1/pods/prod/db.json",
        "/api/v1/nodes/alpha-1/podresources",
        "/api/v1/nodes/alpha-1/podresources/prod/db",
        "/api/v1/nodes/alpha-1/allocatable",
        "/api/v1/nodes/alpha-1/upgrade?release=1.38",
    ):
        mine = httpx.get(f"{hub}{path}", timeout=30)
        theirs = httpx.get(f"{agent}{path}", timeout=30)
        assert mine.status_code == theirs.status_code == 200, (path, mine.text[:300])
        assert mine.json() == theirs.json(), path


def test_the_hub_renders_a_remote_nodes_pages_with_links_on_the_hub(cluster: Cluster) -> None:
    hub = cluster.hub.url
    page = httpx.get(f"{hub}/nodes/beta-1", timeout=30)
    assert page.status_code == 200, page.text[:500]
    assert "beta-1" in page.text and 'href="/nodes/beta-1/pods/prod/web"' in page.text
    pod = httpx.get(f"{hub}/nodes/beta-1/pods/prod/web", timeout=30)
    assert pod.status_code == 200 and "prod/web" in pod.text
    watch = httpx.get(f"{hub}/api/v1/nodes/beta-1/watch", timeout=30)
    assert watch.status_code == 200 and watch.json()["token"].startswith("r-")


def test_a_remote_nodes_errors_keep_their_meaning(cluster: Cluster) -> None:
    hub = cluster.hub.url
    missing = httpx.get(f"{hub}/nodes/alpha-1/pods/prod/nope.json", timeout=30)
    assert missing.status_code == 404 and missing.json()["error"]["reason"] == "NotFound"
    unknown = httpx.get(f"{hub}/api/v1/nodes/no-such-node", timeout=30)
    assert unknown.status_code == 404
    refused = httpx.post(
        f"{hub}/api/v1/nodes/alpha-1/pods",
        content=b"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
        headers={"Content-Type": "application/yaml"},
        timeout=30,
    )
    assert refused.status_code == 409 and "read-only" in refused.json()["error"]["message"]


def test_a_dry_run_through_the_hub_is_the_agents_and_the_fit_rows_reason(cluster: Cluster) -> None:
    """The hub asks the remote node's agent: the same verdicts as asking the agent directly,
    and the fleet fit's row for that node carries the same reason."""
    hub = cluster.hub.url
    agent = _agent_of(cluster, "gamma-1")
    manifest = classic_pod("wide", "fit", "10", "1Gi").encode()  # 11 free CPUs, 4 held
    yaml = {"Content-Type": "application/yaml"}
    path = "/api/v1/nodes/gamma-1/pods?dryRun=true"
    mine = httpx.post(f"{hub}{path}", content=manifest, headers=yaml, timeout=30)
    theirs = httpx.post(f"{agent}{path}", content=manifest, headers=yaml, timeout=30)
    assert mine.status_code == theirs.status_code == 200, mine.text[:300]
    drop = {"batch"}
    assert {k: v for k, v in mine.json().items() if k not in drop} == {
        k: v for k, v in theirs.json().items() if k not in drop
    }
    assert mine.json()["admitted"] is False and mine.json()["reason"]
    fit = httpx.post(f"{hub}/api/v1/fleet/fit", content=manifest, headers=yaml, timeout=60)
    row = next(r for r in fit.json()["results"] if r["node"] == "gamma-1")
    assert (row["admitted"], row["reason"], row["message"]) == (
        False,
        mine.json()["reason"],
        mine.json()["message"],
    )

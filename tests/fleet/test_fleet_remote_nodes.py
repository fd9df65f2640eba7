"""A remote agent's node seen through the hub (``app.services.nodes.remote``), with real agent
processes and a real hub process (``conftest.cluster``): the hub serves the node's page, its
JSON twins, its pods' pages and PodResources from the agent's own answers, validated; an SRE who
reaches only the hub sees what the agent shows. A broken agent's nodes are never a 5xx."""

from __future__ import annotations

import httpx

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

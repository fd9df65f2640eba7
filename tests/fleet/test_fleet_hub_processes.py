"""The hub against real agent processes on 127.0.0.x (``conftest.cluster``): the fleet lists the
agents' own numbers, fit is each agent's own dry run field for field, upgrade verdicts are the
checkpoint inspector's, broken agents are shown as such without a 5xx, conditional requests,
and the hub's metrics."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.services.demo import bubble_pod, classic_pod
from tests.fleet.conftest import LAYOUT, Cluster
from tests.processes import NUMASCOPE, Server, wait_for

YAML = {"Content-Type": "application/yaml"}


def _hub_nodes(cluster: Cluster) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(n["node"], n["agent"]): n for n in cluster.fleet()["nodes"]}  # type: ignore[attr-defined]


def test_every_agent_node_is_listed_with_the_agents_own_numbers(cluster: Cluster) -> None:
    nodes = _hub_nodes(cluster)
    for agent in cluster.agents:
        summary = agent.json("/api/v1/summary")
        assert summary["nodes"], agent.url
        for mine in summary["nodes"]:
            row = nodes[(mine["node"], agent.url)]
            assert row["status"] == "ok"
            for key in ("release", "numa", "pods", "rejected", "findings", "stateFiles"):
                assert row[key] == mine[key], (mine["node"], key)
            assert row["version"] == mine["version"]
            assert row["featureGates"] == mine["featureGates"]
            # The NUMA rows' available CPUs are the node JSON's numaPools[].available.
            detail = agent.json(f"/api/v1/nodes/{mine['node']}")
            pools = {p["numaNode"]: p["available"] for p in detail["numaPools"]}
            assert {r["numaNode"]: r["available"] for r in row["numa"]} == pools
            assert row["largestFreeNuma"] == max(pools.values())
            assert row["url"] == agent.url + mine["url"]
    expected = {name for agent_nodes in LAYOUT for name, *_ in agent_nodes}
    assert expected <= {name for name, _ in nodes}


def test_the_fleet_page_and_its_json_twin_show_the_agents(cluster: Cluster) -> None:
    page = cluster.hub.client.get("/fleet")
    assert page.status_code == 200
    for agent in cluster.agents:
        assert agent.url in page.text
    assert "beta-2" in page.text
    view = cluster.hub.json("/fleet.json", q="beta", sort="free")
    assert [n["node"] for n in view["nodes"]] == ["beta-2", "beta-1"]  # 128 CPUs free first
    assert view["matched"] == 2
    released = cluster.hub.json("/fleet.json", release="1.35")
    assert [n["node"] for n in released["nodes"]] == ["gamma-1"]


def _strip(answer: dict[str, Any]) -> dict[str, Any]:
    """A dry-run answer without its batch id (a fresh uuid per call)."""
    return {k: v for k, v in answer.items() if k != "batch"}


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(classic_pod("probe", "default", "2", "1Gi"), id="guaranteed-2"),
        pytest.param(classic_pod("wide", "default", "6", "2Gi"), id="guaranteed-6"),
        pytest.param(bubble_pod("bub", "default", 4, {"app": 2}, ("side",)), id="pod-level"),
    ],
)
def test_fit_is_each_agents_own_dry_run_field_for_field(cluster: Cluster, pod: str) -> None:
    before = {a.url: a.client.get("/api/v1/summary").headers["etag"] for a in cluster.agents}
    r = cluster.hub.client.post("/api/v1/fleet/fit", content=pod.encode(), headers=YAML)
    assert r.status_code == 200, r.text
    results = {(x["node"], x["agent"]): x for x in r.json()["results"]}
    compared = 0
    for agent in cluster.agents:
        for name, *_ in next(n for s, n in zip(cluster.agents, LAYOUT, strict=True) if s is agent):
            direct = agent.admit(name, pod, dry_run=True)
            fit = results[(name, agent.url)]
            if direct.status_code != 200:
                assert fit["admitted"] is False
                assert fit["reason"] == direct.json()["error"]["reason"]
                assert fit["message"] == direct.json()["error"]["message"]
                continue
            mine = _strip(direct.json())
            got = {k: v for k, v in fit.items() if k in mine}
            assert got == mine, name
            first = mine["results"][0]
            assert fit["allocation"] == first.get("allocation")
            hint_numa = {n for h in (first.get("hints") or {}).values() for n in h["numa"] or []}
            assert fit["numaNodes"] == sorted(hint_numa)
            compared += 1
    assert compared >= 3
    # Nothing was admitted anywhere: every agent's summary is byte for byte what it was.
    after = {a.url: a.client.get("/api/v1/summary").headers["etag"] for a in cluster.agents}
    assert after == before


def test_fit_of_a_refused_pod_names_the_kubelets_reason(cluster: Cluster) -> None:
    # 10 exclusive CPUs do not fit one NUMA node of the small nodes (6 CPUs each).
    pod = classic_pod("huge", "default", "10", "1Gi")
    r = cluster.hub.client.post("/api/v1/fleet/fit", content=pod.encode(), headers=YAML)
    results = {x["node"]: x for x in r.json()["results"] if x["agent"]}
    assert results["alpha-1"]["admitted"] is False
    assert results["alpha-1"]["reason"] == "TopologyAffinityError"
    assert results["beta-2"]["admitted"] is True  # 128 CPUs, 4 NUMA nodes
    # The form needs the page's CSRF token: fetch the page first, as a browser does.
    page = cluster.hub.client.post(
        "/fleet/fit", data={"manifest": pod}, headers={"Origin": cluster.hub.url}
    )
    assert page.status_code == 403
    form = cluster.hub.client.get("/fleet/fit")
    token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
    page = cluster.hub.client.post(
        "/fleet/fit",
        data={"manifest": pod, "csrf_token": token},
        headers={"Origin": cluster.hub.url},
    )
    assert page.status_code == 200, page.text
    assert "TopologyAffinityError" in page.text


NOT_PODS = [
    pytest.param(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {}\n", id="deployment"
    ),
    pytest.param("", id="empty"),
    pytest.param("kind: Pod\nmetadata: {name: [unclosed\n", id="bad-yaml"),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a/b}\nspec:\n  containers: []\n", id="bad-name"
    ),
]


@pytest.mark.parametrize("manifest", NOT_PODS)
def test_a_fit_manifest_that_is_not_a_pod_gets_admissions_422(
    cluster: Cluster, manifest: str
) -> None:
    agent = cluster.agents[0]
    direct = agent.admit("alpha-1", manifest, dry_run=True)
    fit = cluster.hub.client.post("/api/v1/fleet/fit", content=manifest.encode(), headers=YAML)
    assert direct.status_code == 422
    assert fit.status_code == 422
    assert fit.json() == direct.json()


def _inspector(agent: Server, node: str, release: str) -> dict[str, Any]:
    """``numascope checkpoint check`` (the inspector's CLI) on a kubelet root dir laid out from
    the agent's own files for ``node``: its state files, its KubeletConfiguration, its pods."""
    root = agent.tmp / f"root-{node}-{release}"
    root.mkdir(exist_ok=True)
    state = agent.tmp / "nodes" / node
    for name in ("cpu_manager_state", "memory_manager_state"):
        if (state / name).is_file():
            (root / name).write_bytes((state / name).read_bytes())
    config = next(c for nodes in LAYOUT for name, _, c, *_ in nodes if name == node)
    (root / "config.yaml").write_text(config)
    (root / "pods").mkdir(exist_ok=True)
    for pod in agent.json(f"/api/v1/nodes/{node}")["pods"]:
        (root / "pods" / pod["uid"]).mkdir(exist_ok=True)
    out = subprocess.run(
        [NUMASCOPE, "checkpoint", "check", str(root), "--target", release, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    return dict(json.loads(out.stdout))


@pytest.mark.parametrize("release", ["1.35", "1.36", "1.38"])
def test_upgrade_verdicts_are_the_inspectors(cluster: Cluster, release: str) -> None:
    doc = cluster.hub.json("/api/v1/fleet/upgrade", release=release)
    assert doc["release"] == release
    results = {(r["node"], r["agent"]): r for r in doc["results"]}
    for agent, nodes in zip(cluster.agents, LAYOUT, strict=True):
        for name, *_ in nodes:
            got = results[(name, agent.url)]
            assert got.pop("checked") is True  # the hub's own field: it asked the node
            assert got == agent.json(f"/api/v1/nodes/{name}/upgrade", release=release) | {
                "agent": agent.url
            }
            check = _inspector(agent, name, release)
            statuses = {f["name"]: f["status"] for f in check["files"]}
            assert {f["name"]: f["status"] for f in got["files"]} == statuses
            # The node's verdict is the start-up model's, the rehearsal's own (a gate the
            # release refuses, or a Start that refuses what the reader read, is will-fail
            # whatever the files alone say); when the kubelet starts, it is its worst file's
            # (a missing file is a fresh start).
            rehearsal = agent.client.post(
                f"/api/v1/nodes/{name}/restart", params={"release": release, "dryRun": "true"}
            ).json()
            starts = got["verdict"] in ("compatible", "compatible-with-loss")
            assert starts == rehearsal["started"]
            order = ["compatible", "compatible-with-loss", "policy-mismatch", "will-fail"]
            present = [s for s in statuses.values() if s != "missing"]
            if starts:
                assert got["verdict"] == max(present, key=order.index, default="compatible")
            for f, mine in zip(got["files"], check["files"], strict=True):
                if mine.get("verdict"):
                    assert f["verdict"]["lost"] == mine["verdict"]["lost"]


def test_upgrade_refuses_an_unknown_release_like_the_agent(cluster: Cluster) -> None:
    hub = cluster.hub.client.get("/api/v1/fleet/upgrade", params={"release": "1.99"})
    agent = cluster.agents[0].client.get(
        "/api/v1/nodes/alpha-1/upgrade", params={"release": "1.99"}
    )
    assert hub.status_code == agent.status_code == 422
    assert hub.json() == agent.json()
    # The JSON answer waits for every node; the page then shows the finished plan at once
    # (asked first, it answers with its progress and fills in).
    done = cluster.hub.client.get("/api/v1/fleet/upgrade", params={"release": "1.38"})
    assert done.status_code == 200 and done.json()["progress"]["complete"]
    page = cluster.hub.client.get("/fleet/upgrade", params={"release": "1.38"})
    assert page.status_code == 200 and "alpha-1" in page.text


def test_broken_agents_are_shown_as_such_and_never_make_a_5xx(cluster: Cluster) -> None:
    fake = cluster.fake_urls

    def errors() -> dict[str, str] | None:
        agents = {a["url"]: a for a in cluster.fleet()["agents"]}  # type: ignore[index]
        if all(agents[u]["status"] == "unreachable" for u in fake.values()):
            return {mode: agents[u]["error"] for mode, u in fake.items()}
        return None

    seen = wait_for(errors)
    assert "not JSON" in seen["garbage"]
    assert "cap" in seen["huge"]
    # Not a summary v1 at all (no format): refused by the contract, the field named
    # (test_fleet_hostile.py breaks one field of a real summary at a time).
    assert "whose format breaks the contract" in seen["wrongtypes"]
    assert "timed out" in seen["silent"]
    assert "HTTP 404" in seen["notfound"] and "no such thing" in seen["notfound"]
    assert all(n["node"] != "fake-1" for n in cluster.fleet()["nodes"])  # type: ignore[attr-defined]
    for path in (
        "/fleet",
        "/fleet.json",
        "/api/v1/fleet",
        "/fleet/fit",
        "/fleet/upgrade?release=1.37",
    ):
        started = time.perf_counter()
        r = cluster.hub.client.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        # Waiting for the silent agent would take up to the hub's 2 s timeout.
        assert time.perf_counter() - started < 1.5, path
    fit = cluster.hub.client.post(
        "/api/v1/fleet/fit", content=classic_pod("p", "default", "1", "1Gi").encode(), headers=YAML
    )
    assert fit.status_code == 200
    assert {a["url"] for a in fit.json()["unreachable"]} >= set(fake.values())


def test_unchanged_answers_cost_a_304(cluster: Cluster) -> None:
    first = cluster.hub.client.get("/api/v1/fleet")
    etag = first.headers["etag"]
    assert etag.startswith('"')
    again = cluster.hub.client.get("/api/v1/fleet", headers={"If-None-Match": etag})
    assert again.status_code in (200, 304)  # a poll may have changed something in between
    if again.status_code == 304:
        assert again.content == b""
    agent = cluster.agents[0]
    summary = agent.client.get("/api/v1/summary")
    cached = agent.client.get("/api/v1/summary", headers={"If-None-Match": summary.headers["etag"]})
    assert cached.status_code == 304
    # The hub follows the agents' watch streams (it polled them with If-None-Match before):
    # each node came as one ADDED event, and an unchanged agent sends only bookmarks.
    metrics = cluster.hub.client.get("/metrics").text
    assert _sample(metrics, 'numascope_hub_watch_events_total{type="ADDED"}') >= 5


def _sample(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in the metrics")


def test_hub_metrics_count_agents_nodes_and_polls(cluster: Cluster) -> None:
    doc = cluster.fleet()
    text = cluster.hub.client.get("/metrics").text
    agents = doc["agents"]  # type: ignore[index]
    ok = sum(1 for a in agents if a["status"] == "ok")
    down = sum(1 for a in agents if a["status"] == "unreachable")
    assert ok >= 3
    metric_ok = _sample(text, 'numascope_hub_agents{status="ok"}')
    metric_down = _sample(text, 'numascope_hub_agents{status="unreachable"}')
    assert metric_ok + metric_down == len(agents)
    assert abs(metric_ok - ok) <= 1  # a poll may land between the two requests
    assert _sample(text, 'numascope_hub_nodes{status="ok"}') >= 4
    # The real agents are followed (their nodes came as ADDED events), the fake ones polled.
    assert _sample(text, 'numascope_hub_watch_events_total{type="ADDED"}') >= 4
    assert _sample(text, 'numascope_hub_poll_duration_seconds_count{outcome="error"}') >= 1
    assert down >= 1 or metric_down >= 1


def test_a_killed_agent_turns_unreachable_while_the_rest_stays_ok(cluster: Cluster) -> None:
    victim = cluster.victim
    assert cluster.agent_status()[victim.url] == "ok"
    victim.kill9()
    wait_for(lambda: cluster.agent_status()[victim.url] == "unreachable")
    status = cluster.agent_status()
    assert all(status[a.url] == "ok" for a in cluster.agents)
    doc = cluster.fleet()
    agent = next(a for a in doc["agents"] if a["url"] == victim.url)  # type: ignore[attr-defined]
    # refused on a fresh poll, or cut in the middle of the hub's watch stream
    assert agent["error"].startswith(("cannot connect", "connection lost")), agent["error"]
    assert agent["lastSeen"] is not None
    row = next(n for n in doc["nodes"] if n["node"] == "delta-1")  # type: ignore[attr-defined]
    assert row["status"] == "unreachable"  # still listed, as last seen
    fit = cluster.hub.client.post(
        "/api/v1/fleet/fit", content=classic_pod("p", "default", "1", "1Gi").encode(), headers=YAML
    )
    assert fit.status_code == 200
    assert all(r["node"] != "delta-1" for r in fit.json()["results"])
    assert victim.url in {a["url"] for a in fit.json()["unreachable"]}
    # The others keep refreshing: a pod admitted on one agent shows in the hub.
    agent0 = cluster.agents[0]
    r = agent0.admit("alpha-1", classic_pod("late", "prod", "1", "1Gi"))
    assert r.status_code == 201
    pods = agent0.json("/api/v1/summary")["nodes"][0]["pods"]
    wait_for(lambda: _hub_nodes(cluster)[("alpha-1", agent0.url)]["pods"] == pods)
    assert agent0.client.delete("/api/v1/nodes/alpha-1/pods/prod/late").status_code in (200, 204)


def test_the_hub_answers_with_the_fleet_routes_only_as_a_hub(tmp_path: Path) -> None:
    server = Server(tmp_path, host="127.0.0.11").start()
    try:
        r = server.client.get("/api/v1/fleet")
        assert r.status_code == 404
        assert "numascope serve --hub" in r.json()["error"]["message"]
        assert server.client.get("/api/v1/summary").json()["nodes"] == []
    finally:
        server.close()


def test_agents_answer_the_hub_by_pod_ip_only_when_allowed(cluster: Cluster) -> None:
    # Behind a headless Service the hub reaches an agent by pod IP; an agent bound to 0.0.0.0
    # needs that name in NUMASCOPE_ALLOWED_HOSTS (app.web.guard). Here: a foreign Host header.
    agent = cluster.agents[0]
    r = httpx.get(agent.url + "/api/v1/summary", headers={"Host": "10.0.0.7:8000"}, trust_env=False)
    assert r.status_code == 400
    assert "NUMASCOPE_ALLOWED_HOSTS" in r.json()["error"]["message"]

"""A hostile agent cannot break the hub: a real agent, a hostile agent process
(``tests/fleet/hostile_agent.py``: numbers past every limit, nesting 950 deep, ``NaN``, huge
strings, negative counts, wrong types, too many nodes, the hub's own names, a trickled body,
hostile dry-run and upgrade answers) and a real hub process with a demo fleet. Every hub page and
JSON answer stays 200 and valid JSON, and each broken agent is ``unreachable`` with the field of
its answer named."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.services.demo import classic_pod
from tests.fleet.hostile_agent import MANY, MODES
from tests.helpers import POD_SCOPE, SMALL
from tests.processes import Server, server_env, wait_for

HOSTILE = Path(__file__).with_name("hostile_agent.py")
YAML = {"Content-Type": "application/yaml"}
DEADLINE = 2.0
HUB_ENV = {
    "hub_poll_interval": "0.3",
    "hub_agent_timeout": str(DEADLINE),
    "hub_max_body_bytes": str(1024 * 1024),
    "hub_max_nodes_per_agent": "50",
    "demo_fleet": "2",
}
#: The field each broken agent is refused for (``None``: no field is to blame).
REFUSED = {
    "bignum": "nodes[0].numa[0].exclusive",
    "deep": "nodes[0].policies.a…",
    "nan": "nodes[0].featureGates.PodLevelResources",
    "infinity": "nodes[0].topology.cpus",
    "hugestring": "nodes[0].findings[0].message",
    "negative": "nodes[0].pods",
    "wrongtype": "nodes[0].numa[0].available",
    "manynodes": "nodes",
    "simname": "nodes[0].node",
    "trickle": None,
}
ACCEPTED = ("duplicate", "evilanswers", "badalloc", "slowfit")


def strict_json(text: str) -> Any:
    """JSON as a strict reader takes it: ``NaN``/``Infinity`` are not JSON."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@dataclass
class Hostile:
    agent: Server
    hub: Server
    urls: dict[str, str]  # mode -> agent URL
    started: float

    def agents(self) -> dict[str, dict[str, Any]]:
        doc = strict_json(self.hub.client.get("/api/v1/fleet").text)
        return {a["url"]: a for a in doc["agents"]}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    tmp = tmp_path_factory.mktemp("hostile")
    agent = Server(tmp / "agent", host="127.0.0.31").start()
    proc: subprocess.Popen[bytes] | None = None
    hub: Server | None = None
    try:
        agent.create_node("real-1", SMALL, POD_SCOPE, "1.37")
        base = tmp / "base.json"
        base.write_text(agent.client.get("/api/v1/summary").text)
        ready = tmp / "hostile.port"
        proc = subprocess.Popen(
            [sys.executable, str(HOSTILE), "127.0.0.32", str(base), str(ready)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(ready.exists)
        root = f"http://127.0.0.32:{ready.read_text()}"
        urls = {mode: f"{root}/{mode}" for mode in MODES}
        args = ["--hub", "--agents", ",".join([agent.url, *urls.values()])]
        hub_tmp = tmp / "hub"
        hub = Server(hub_tmp, server_env(hub_tmp, **HUB_ENV), args, host="127.0.0.33")
        started = time.monotonic()
        hub.start()
        yield Hostile(agent, hub, urls, started)
    finally:
        if hub is not None:
            hub.close()
        if proc is not None:
            proc.kill()
            proc.wait()
        agent.close()


def _settled(h: Hostile) -> dict[str, dict[str, Any]] | None:
    agents = h.agents()
    mine = {mode: agents[url] for mode, url in h.urls.items()}
    if all(mine[m]["status"] == "unreachable" for m in REFUSED) and all(
        mine[m]["status"] == "ok" for m in ACCEPTED
    ):
        return mine
    return None


def test_each_broken_agent_is_unreachable_with_the_field_named(hostile: Hostile) -> None:
    seen = wait_for(lambda: _settled(hostile), timeout=30.0)
    for mode, field in REFUSED.items():
        agent = seen[mode]
        assert agent["field"] == field, (mode, agent)
        if field is not None:
            assert field in agent["error"], (mode, agent)
        assert agent["nodes"] == 0
    assert "nested deeper than 200 levels" in seen["deep"]["error"]
    assert f"claims {MANY} nodes" in seen["manynodes"]["error"]
    assert "at most 50" in seen["manynodes"]["error"]
    assert "demo fleet" in seen["simname"]["error"]
    # Nothing of a refused answer reached the fleet: no node of theirs, the hub's sim-0000 once.
    fleet = strict_json(hostile.hub.client.get("/api/v1/fleet").text)
    names = [n["node"] for n in fleet["nodes"]]
    assert names.count("sim-0000") == 1
    assert not [n for n in names if n.split("-")[0] in REFUSED]


def test_a_trickling_agent_is_cut_off_at_the_answer_deadline(hostile: Hostile) -> None:
    """The trickling agent sends a byte a second, each within httpx's per-read timeout: only
    a deadline on the whole answer frees its poll slot (its body would take minutes)."""

    def cut_off() -> dict[str, Any] | None:
        agent = hostile.agents()[hostile.urls["trickle"]]
        return agent if agent["status"] == "unreachable" else None

    agent = wait_for(cut_off, timeout=15.0)
    assert "deadline" in agent["error"]
    assert time.monotonic() - hostile.started < 60.0
    metrics = hostile.hub.client.get("/metrics").text
    slow = [
        line
        for line in metrics.splitlines()
        if line.startswith('numascope_hub_poll_duration_seconds_bucket{le="5.0",outcome="error"}')
    ]
    total = [
        line
        for line in metrics.splitlines()
        if line.startswith('numascope_hub_poll_duration_seconds_count{outcome="error"}')
    ]
    # Every failed poll (the trickling agent's included) ended within 5 s.
    assert slow and total and float(slow[0].split()[-1]) == float(total[0].split()[-1])


def test_two_agents_claiming_one_node_are_both_listed_with_a_finding(hostile: Hostile) -> None:
    wait_for(lambda: _settled(hostile), timeout=30.0)
    fleet = strict_json(hostile.hub.client.get("/api/v1/fleet").text)
    rows = [n for n in fleet["nodes"] if n["node"] == "real-1"]
    assert {r["agent"] for r in rows} == {hostile.agent.url, hostile.urls["duplicate"]}
    for row in rows:
        (finding,) = [f for f in row["findings"] if f["code"] == "duplicate-node"]
        other = next(r["agent"] for r in rows if r is not row)
        assert finding["severity"] == "error" and other in finding["message"]
    # One node, one answer: a fit asks the name once, of the agent its page is served from.
    pod = classic_pod("probe", "default", "1", "1Gi").encode()
    fit = hostile.hub.client.post("/api/v1/fleet/fit", content=pod, headers=YAML).json()
    asked = [r for r in fit["results"] if r["node"] == "real-1"]
    assert [r["agent"] for r in asked] == [hostile.agent.url]
    page = hostile.hub.client.get("/api/v1/nodes/real-1")
    assert page.status_code == 200


def test_no_hub_page_or_json_fails_because_of_an_agent(hostile: Hostile) -> None:
    seen = wait_for(lambda: _settled(hostile), timeout=30.0)
    client = hostile.hub.client
    for path in ("/api/v1/fleet", "/fleet.json", "/fleet.json?sort=free", "/openapi.json"):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        strict_json(r.text)
    page = client.get("/fleet")
    assert page.status_code == 200
    # The agent column, and each refused agent with the field that got it refused.
    assert '<th scope="col">Agent</th>' in page.text
    for mode, field in REFUSED.items():
        assert seen[mode]["url"] in page.text
        if field is not None:
            assert field in page.text
    for path in ("/fleet/fit", "/fleet/upgrade?release=1.37"):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text[:300])
    upgrade = client.get("/api/v1/fleet/upgrade", params={"release": "1.37"})
    assert upgrade.status_code == 200
    rows = {(r["node"], r["agent"]): r for r in strict_json(upgrade.text)["results"]}
    evil = rows[("evilanswers-1", hostile.urls["evilanswers"])]
    assert evil["verdict"] is None and "deep[0][0][0]…: nested deeper" in evil["error"]
    pod = classic_pod("probe", "default", "1", "1Gi").encode()
    started = time.monotonic()
    fit = client.post("/api/v1/fleet/fit", content=pod, headers=YAML)
    assert fit.status_code == 200, fit.text[:300]
    # The slow agent's dry run is cut off at its deadline (twice a summary's), not awaited.
    assert time.monotonic() - started < 2 * DEADLINE + 2.0
    rows = {(r["node"], r["agent"]): r for r in strict_json(fit.text)["results"]}
    evil = rows[("evilanswers-1", hostile.urls["evilanswers"])]
    assert evil["admitted"] is False and "score" in evil["error"]
    assert rows[("real-1", hostile.agent.url)]["admitted"] is True
    slow = rows[("slowfit-1", hostile.urls["slowfit"])]
    assert slow["admitted"] is False and f"within the {2 * DEADLINE:g} s deadline" in slow["error"]
    bad = rows[("badalloc-1", hostile.urls["badalloc"])]
    assert bad["admitted"] is False
    assert "allocation.containers[0].memory[0].size" in bad["error"]
    # The page renders every row (a size that is not a number never reaches the page).
    page = client.get("/fleet/fit", params={"manifest": pod.decode(), "show": "all"})
    assert page.status_code == 200 and "badalloc-1" in page.text
    assert all(not math.isnan(float(r.get("score", 0) or 0)) for r in rows.values())


def test_one_question_asks_at_most_the_fan_out_cap(hostile: Hostile, tmp_path: Path) -> None:
    """A hub whose fan-out cap is 1 asks one agent and lists the other node as not asked."""
    env = server_env(tmp_path, hub_agent_timeout=str(DEADLINE), hub_max_fanout="1")
    urls = [hostile.agent.url, hostile.urls["badalloc"]]
    hub = Server(tmp_path, env, ["--hub", "--agents", ",".join(urls)], host="127.0.0.34")
    with_hub = hub.start()
    try:
        wait_for(lambda: all(a["status"] == "ok" for a in with_hub.json("/api/v1/fleet")["agents"]))
        pod = classic_pod("probe", "default", "1", "1Gi").encode()
        fit = with_hub.client.post("/api/v1/fleet/fit", content=pod, headers=YAML).json()
        asked = [r for r in fit["results"] if r["admitted"]]
        capped = [r for r in fit["results"] if "cap of 1" in (r.get("error") or "")]
        assert len(asked) == 1 and len(capped) == 1
        assert capped[0]["node"] == "badalloc-1" and capped[0]["checked"] is False
    finally:
        hub.close()


def test_a_demo_fleet_hub_is_ready_only_once_its_fleet_is_built(tmp_path: Path) -> None:
    """``/readyz`` answers 503 while the demo fleet is built, in the hub and in its fleet
    workers (naming how far each is), and 200 only once every node is there: a rollout never
    sends traffic to a half-built fleet."""
    count = 600
    hub = Server(
        tmp_path, server_env(tmp_path, demo_fleet=str(count)), ["--hub"], host="127.0.0.35"
    )
    hub.start()
    try:
        building: list[str] = []

        def ready() -> bool:
            r = hub.client.get("/readyz")
            checks = r.json()["checks"]
            if r.status_code == 503:
                building.append(r.json()["error"]["message"])
                assert "building" in (checks["demoFleet"], checks["fleetWorkers"])
                return False
            assert r.status_code == 200
            assert checks["demoFleet"] == checks["fleetWorkers"] == "ok"
            return True

        wait_for(ready, timeout=180.0)
        assert len(hub.json("/api/v1/fleet")["nodes"]) == count
        assert building
        assert all(f"of {count} nodes built" in m or "shards built" in m for m in building)
    finally:
        hub.close()

"""A remote agent's node through the hub, with the contracts between them: a real agent, a
hub process, and an agent process (``tests/fleet/hostile_agent.py``, its node modes) whose summary is good
but whose node answers break their contracts one way each — numbers past every limit, ``NaN``,
1000-deep nesting, oversized strings, a free-form part too deep, wrong types. The hub refuses
each such answer naming the field (a 424 ``AgentUnreachable`` JSON error, never a page built
from it nor a 5xx of the hub's), while the real
agent's node answers through the hub as the agent answers it: its NodeResourceTopology and its
restart rehearsal included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.services.demo import classic_pod
from app.web.csrf import HEADER, cookie_name
from tests.fleet.hostile_agent import NODE_MODES
from tests.helpers import POD_SCOPE, SMALL, TEST_CSRF_TOKEN
from tests.processes import Server, script_server, server_env, wait_for

HOSTILE = Path(__file__).with_name("hostile_agent.py")
YAML = {"Content-Type": "application/yaml"}
HUB_ENV = {"hub_poll_interval": "0.3", "hub_agent_timeout": "5"}
REHEARSAL = "/restart?release=1.36&dryRun=true"
#: The field each broken answer is refused for.
REFUSED = {
    "nodebignum": "summary.pods",
    "nodenan": "summary.cpus.total",
    "nodedeep": "kubeletConfig.a.a.a…",
    "nodelongname": "summary.name",
    "nodefreedeep": "kubeletConfig",
    "restartcount": "summary.kept",
    "restartgates": "featureGates.PodLevelResources",
    "nrtkind": "kind",
    "dryrunname": "results[0].pod.name",
}


@dataclass
class Fleet:
    agent: Server
    hub: Server


def _ask(server: Server, kind: str, node: str) -> Any:
    """The request for document ``kind`` of ``node`` (as the hostile agent names them)."""
    c = server.client
    base = f"/api/v1/nodes/{node}"
    if kind == "view":
        return c.get(f"/nodes/{node}.json")
    if kind == "detail":
        return c.get(base)
    if kind == "nrt":
        return c.get(f"{base}/noderesourcetopology")
    if kind == "restart":
        return c.post(base + REHEARSAL)
    pod = classic_pod("probe", "default", "1", "1Gi").encode()
    return c.post(f"{base}/pods?dryRun=true", content=pod, headers=YAML)


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("hostile-node")
    agent = Server(tmp / "agent", host="127.0.0.41").start()
    hub: Server | None = None
    try:
        agent.create_node("real-1", SMALL, POD_SCOPE, "1.37")
        assert agent.admit("real-1", classic_pod("db", "prod", "2", "1Gi")).status_code == 201
        docs = {k: _ask(agent, k, "real-1").json() for k in ("view", "detail", "nrt", "restart")}
        docs["dryrun"] = _ask(agent, "dryrun", "real-1").json()
        docs["summary"] = agent.client.get("/api/v1/summary").json()
        (tmp / "docs.json").write_text(json.dumps(docs))
        (tmp / "base.json").write_text(json.dumps(docs["summary"]))
        files = (str(tmp / "base.json"), str(tmp / "docs.json"))
        with script_server(HOSTILE, "127.0.0.42", tmp / "agent.port", *files) as root:
            agents = [agent.url, *(f"{root}/{mode}" for mode in NODE_MODES)]
            hub_tmp = tmp / "hub"
            args = ["--hub", "--agents", ",".join(agents)]
            hub = Server(hub_tmp, server_env(hub_tmp, **HUB_ENV), args, host="127.0.0.43")
            hub.start()
            wanted = {"real-1", *(f"{m}-1" for m in NODE_MODES)}
            fleet = lambda: {n["node"] for n in hub.json("/api/v1/fleet")["nodes"]}  # noqa: E731
            wait_for(lambda: wanted <= fleet(), timeout=30.0)
            yield Fleet(agent, hub)
    finally:
        if hub is not None:
            hub.close()
        agent.close()


@pytest.mark.parametrize("mode", sorted(REFUSED))
def test_a_broken_node_answer_is_refused_with_the_field_named(fleet: Fleet, mode: str) -> None:
    kind = NODE_MODES[mode][0]
    r = _ask(fleet.hub, kind, f"{mode}-1")
    assert r.status_code == 424, (mode, r.status_code, r.text[:300])
    error = _strict(r.text)["error"]
    assert error["reason"] == "AgentUnreachable"
    assert error["field"] == REFUSED[mode], (mode, error)
    assert REFUSED[mode] in error["message"] and "127.0.0.42" in error["message"]


def test_a_broken_node_page_says_why_without_a_5xx(fleet: Fleet) -> None:
    """The node page (HTML) of a broken answer is the hub's error page: 424, the agent and the
    field named."""
    r = fleet.hub.client.get("/nodes/nodebignum-1")
    assert r.status_code == 424 and r.headers["content-type"].startswith("text/html")
    assert "summary.pods" in r.text and "127.0.0.42" in r.text


def test_the_good_answers_of_a_broken_agent_still_come_through(fleet: Fleet) -> None:
    """Only the broken document is refused: the same agent's other answers are served."""
    r = _ask(fleet.hub, "detail", "nrtkind-1")
    assert r.status_code == 200 and r.json()["summary"]["name"] == "real-1"


def test_a_remote_nodes_nrt_and_rehearsal_through_the_hub_are_its_agents(fleet: Fleet) -> None:
    for kind in ("nrt", "restart"):
        mine, theirs = _ask(fleet.hub, kind, "real-1"), _ask(fleet.agent, kind, "real-1")
        assert mine.status_code == theirs.status_code == 200, (kind, mine.text[:300])
        assert mine.json() == theirs.json(), kind
    rehearsal = _ask(fleet.hub, "restart", "real-1").json()
    assert rehearsal["node"] == "real-1" and rehearsal["release"] == "1.36"
    assert rehearsal["dryRun"] is True and rehearsal["applied"] is False
    nrt = _ask(fleet.hub, "nrt", "real-1").json()
    assert nrt["kind"] == "NodeResourceTopology" and nrt["metadata"]["name"] == "real-1"
    applied = fleet.hub.client.post("/api/v1/nodes/real-1/restart?release=1.36")
    assert applied.status_code == 409 and "read-only" in applied.json()["error"]["message"]


def test_the_hub_renders_a_remote_nodes_restart_panel(fleet: Fleet) -> None:
    form = {"release": "1.36", "gate": "keep", "action": "rehearse"}
    client = fleet.hub.client
    client.cookies.set(cookie_name(str(fleet.hub.port)), TEST_CSRF_TOKEN)
    headers = {HEADER: TEST_CSRF_TOKEN}
    page = client.post("/nodes/real-1/restart", data=form, headers=headers)
    assert page.status_code == 200, page.text[:500]
    assert "A 1.36 kubelet" in page.text and "prod/db" in page.text

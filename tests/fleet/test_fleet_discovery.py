"""Agents found through DNS (every A record of a headless Service name, re-resolved while the
hub runs) with a resolver the test controls, and malformed agent URLs / DNS names refused at
start-up with exit status 2 and a message naming the flag."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet.conftest import start_agents
from tests.fleet.dns_server import DNSServer
from tests.helpers import POD_SCOPE, SMALL
from tests.processes import NUMASCOPE, Server, agent_hosts, free_port, server_env, wait_for

SERVICE = "numascope-agents.numascope.svc.cluster.local"


@pytest.fixture
def dns() -> Iterator[DNSServer]:
    with DNSServer() as server:
        yield server


def test_agents_come_and_go_with_the_services_records(tmp_path: Path, dns: DNSServer) -> None:
    hosts = agent_hosts(40, 3)
    port = free_port(hosts)
    agents = start_agents(tmp_path, hosts, port)
    hub = None
    try:
        for i, agent in enumerate(agents):
            agent.create_node(f"dns-{i}", SMALL, POD_SCOPE, "1.37")
        dns.records[SERVICE] = hosts[:2]
        env = server_env(
            tmp_path / "hub",
            hub_poll_interval="0.3",
            hub_agent_timeout="1.0",
            hub_dns_nameserver=dns.address,
        )
        args = ["--hub", "--agents-dns", f"{SERVICE}:{port}"]
        hub = Server(tmp_path / "hub", env, args, host="127.0.0.50").start()

        def nodes() -> set[str]:
            doc = hub.json("/api/v1/fleet")
            return {n["node"] for n in doc["nodes"] if n["status"] == "ok"}

        assert wait_for(lambda: nodes() == {"dns-0", "dns-1"})
        urls = {a["url"] for a in hub.json("/api/v1/fleet")["agents"]}
        assert urls == {f"http://{h}:{port}" for h in hosts[:2]}
        # A pod scheduled onto a third node: its agent's record appears, the hub finds it.
        dns.records[SERVICE] = hosts
        assert wait_for(lambda: nodes() == {"dns-0", "dns-1", "dns-2"})
        # A node drained away: its record goes, and so does its agent.
        dns.records[SERVICE] = hosts[1:]
        assert wait_for(lambda: nodes() == {"dns-1", "dns-2"})
        assert len(hub.json("/api/v1/fleet")["agents"]) == 2
        assert dns.queries >= 3
        assert hub.json("/api/v1/fleet")["discovery"] == {
            "dns": f"{SERVICE}:{port}",
            "error": None,
        }
        # The name failing to resolve keeps the agents found before, and says why.
        del dns.records[SERVICE]
        error = wait_for(lambda: hub.json("/api/v1/fleet")["discovery"]["error"])
        assert "NXDOMAIN" in error
        assert nodes() == {"dns-1", "dns-2"}
        assert "NXDOMAIN" in hub.client.get("/fleet").text
    finally:
        if hub is not None:
            hub.close()
        for a in agents:
            a.close()


BAD_STARTS = [
    pytest.param(["--hub", "--agents", "ftp://10.0.0.1:8000"], "--agents", id="scheme"),
    pytest.param(["--hub", "--agents", "http://10.0.0.1:99999"], "port", id="port"),
    pytest.param(["--hub", "--agents", "http://:8000"], "--agents", id="no-host"),
    pytest.param(["--hub", "--agents", "http://bad host:8000"], "neither", id="space"),
    pytest.param(["--hub", "--agents", "http://a:1/x?q=1"], "query", id="query"),
    pytest.param(["--hub", "--agents", "http://user:pw@a:1"], "credentials", id="credentials"),
    pytest.param(["--hub", "--agents-dns", "agents.svc"], "NAME:PORT", id="dns-no-port"),
    pytest.param(
        ["--hub", "--agents-dns", "bad_name.svc:8000"], "not a valid DNS", id="dns-underscore"
    ),
    pytest.param(["--hub", "--agents-dns=-agents.svc:8000"], "not a valid DNS", id="dns-hyphen"),
    pytest.param(["--hub", "--agents-dns", "agents.svc:0"], "port", id="dns-port-0"),
    pytest.param(["--agents", "http://10.0.0.1:8000"], "add --hub", id="agents-without-hub"),
    pytest.param(["--demo-fleet", "10"], "add --hub", id="demo-fleet-without-hub"),
]


@pytest.mark.parametrize(("args", "words"), BAD_STARTS)
def test_a_malformed_agent_url_or_dns_name_is_exit_2(
    tmp_path: Path, args: list[str], words: str
) -> None:
    out = subprocess.run(
        [NUMASCOPE, "serve", "--host", "127.0.0.1", "--port", "1", *args],
        env=server_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert words in out.stderr
    assert "Traceback" not in out.stderr


def test_a_malformed_dns_name_in_the_environment_is_exit_2(tmp_path: Path) -> None:
    env = server_env(tmp_path, hub="true", hub_agents_dns="agents..svc:8000")
    out = subprocess.run(
        [NUMASCOPE, "serve", "--port", "1"], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 2
    assert "NUMASCOPE_HUB_AGENTS_DNS" in out.stderr


def test_agents_bound_to_every_address_answer_the_hub_only_when_allowed(tmp_path: Path) -> None:
    # In a cluster an agent binds 0.0.0.0 and the hub reaches it by pod IP: that name must be
    # in the agent's NUMASCOPE_ALLOWED_HOSTS (app.web.guard), or the agent answers 400.
    pod_ip = "127.0.0.61"
    plain_port, allowed_port = free_port(["0.0.0.0"]), free_port(["0.0.0.0"])
    plain = Server(tmp_path / "plain", host="0.0.0.0", port=plain_port).launch()
    allowed_env = server_env(tmp_path / "allowed", allowed_hosts=f"{pod_ip},agents.example")
    allowed = Server(tmp_path / "allowed", allowed_env, host="0.0.0.0", port=allowed_port)
    allowed.launch()
    hub = None
    try:
        plain.wait_ready()
        allowed.wait_ready()
        r = allowed.client.post(
            "/api/v1/nodes",
            json={"name": "pod-ip-1", "topology": SMALL, "kubeletConfig": POD_SCOPE},
            headers={"Host": pod_ip},
        )
        assert r.status_code == 201, r.text
        urls = {
            "plain": f"http://{pod_ip}:{plain_port}",
            "allowed": f"http://{pod_ip}:{allowed_port}",
        }
        env = server_env(tmp_path / "hub", hub_poll_interval="0.3")
        args = ["--hub", "--agents", ",".join(urls.values())]
        hub = Server(tmp_path / "hub", env, args, host="127.0.0.62").start()

        def agents() -> dict[str, dict[str, str]] | None:
            found = {a["url"]: a for a in hub.json("/api/v1/fleet")["agents"]}
            return found if all(a["status"] != "pending" for a in found.values()) else None

        seen = wait_for(agents)
        assert seen[urls["allowed"]]["status"] == "ok"
        assert seen[urls["plain"]]["status"] == "unreachable"
        assert "NUMASCOPE_ALLOWED_HOSTS" in seen[urls["plain"]]["error"]
        # The hub's fit (a YAML POST without Origin) passes the agent's request guard.
        pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {limits: {cpu: '2', memory: 1Gi}}\n"
        fit = hub.client.post(
            "/api/v1/fleet/fit", content=pod.encode(), headers={"Content-Type": "application/yaml"}
        )
        assert fit.status_code == 200
        (result,) = fit.json()["results"]
        assert result["node"] == "pod-ip-1" and result["admitted"] is True
    finally:
        if hub is not None:
            hub.close()
        plain.close()
        allowed.close()

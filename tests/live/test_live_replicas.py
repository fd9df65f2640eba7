"""Several replicas on one database behave as one server (issue 10 point 4): two separate
``numascope serve`` processes (not uvicorn workers: each migrates and seeds on its own) started
at the same moment on one fresh database and one state directory.

* Both start: the migrations and the demo seeding do not trip over each other, and every demo
  node exists once.
* A node created through one replica is seen by the other; deleted, it is gone on both.
* 40 concurrent admissions, 20 through each replica, keep every invariant.
"""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live.node_checks import check_invariants, create_node, pod_yaml
from tests.processes import Server, server_env


@pytest.fixture
def replicas(tmp_path: Path, database_url: str) -> Any:
    env = server_env(tmp_path, database_url, demo="true")
    pair = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        pair.append(Server(tmp_path / name, env))
    errors: list[BaseException] = []

    def start(srv: Server) -> None:
        try:
            srv.start()
        except BaseException as err:  # reported below, with the server's log
            errors.append(err)

    threads = [threading.Thread(target=start, args=(srv,)) for srv in pair]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        yield pair
    finally:
        for srv in pair:
            srv.stop()


def node_names(srv: Server) -> list[str]:
    nodes = httpx.get(f"{srv.url}/api/v1/nodes", timeout=30).json()["nodes"]
    return sorted(n["name"] for n in nodes)


def test_two_replicas_start_together_and_share_their_nodes(
    replicas: list[Server],
) -> None:
    a, b = replicas
    demo = node_names(a)
    assert demo and demo == node_names(b)  # seeded once, seen by both
    create_node(a, "made-on-a")
    assert node_names(b) == sorted([*demo, "made-on-a"])
    assert httpx.delete(f"{b.url}/api/v1/nodes/made-on-a", timeout=30).status_code == 204
    assert httpx.get(f"{a.url}/api/v1/nodes/made-on-a", timeout=30).status_code == 404


def test_40_concurrent_admissions_through_two_replicas_keep_every_invariant(
    replicas: list[Server], tmp_path: Path, database_url: str
) -> None:
    a, b = replicas
    create_node(b, "busy")

    def admit(i: int) -> tuple[int, Any, int]:
        srv = (a, b)[i % 2]
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        try:
            headers = {"content-type": "application/yaml"}
            conn.request("POST", "/api/v1/nodes/busy/pods", body=pod_yaml(i), headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read()), srv.port
        finally:
            conn.close()

    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(admit, range(40)))
    assert set(a[0] for a in answers) <= {200, 201}, answers
    check_invariants(answers, a.url, tmp_path / "nodes" / "busy", database_url)
    # the other replica tells the same story
    assert (
        httpx.get(f"{a.url}/api/v1/nodes/busy", timeout=30).json()["pods"]
        == httpx.get(f"{b.url}/api/v1/nodes/busy", timeout=30).json()["pods"]
    )

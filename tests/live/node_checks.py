"""What the many-process tests (workers, replicas) share: the node they load, one request on a
new connection (and which process answered it), and the invariants after 40 admissions."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from app.adapters.db.tables import ACTION_ADMIT, ACTION_REMOVE
from app.domain.cpuset import CPUSet
from tests.factories import guaranteed_yaml
from tests.processes import Server, connection_owner

TOPOLOGY = "sockets=2,cores_per_numa=8,threads_per_core=2,memory_per_numa=64Gi"  # 32 CPUs
STATIC = """\
cpuManagerPolicy: static
kubeReserved: {cpu: "2"}
"""


def pod_yaml(i: int, cpus: int = 1) -> str:
    return guaranteed_yaml(
        f"pod-{i:02d}", "load", f"00000000-0000-4000-8000-{i:012d}", str(cpus), "1Gi"
    )


def request(
    srv: Server, method: str, path: str, body: str | None = None, ctype: str = ""
) -> tuple[int, Any, int | None]:
    """One request on a new connection: status, JSON body, and the worker that served it."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    try:
        conn.connect()
        assert conn.sock is not None
        client_port = conn.sock.getsockname()[1]
        headers = {"content-type": ctype} if ctype else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        # The connection is still open (keep-alive): its socket tells who answered.
        owner = connection_owner(srv.worker_pids(), srv.port, client_port)
        return resp.status, json.loads(data) if data else None, owner
    finally:
        conn.close()


def create_node(srv: Server, name: str) -> int | None:
    body = json.dumps({"name": name, "topology": TOPOLOGY, "kubeletConfig": STATIC})
    status, answer, owner = request(srv, "POST", "/api/v1/nodes", body, "application/json")
    assert status == 201, answer
    return owner


def check_invariants(
    answers: list[tuple[int, Any, int]], url: str, state_dir: Path, database_url: str
) -> None:
    """After the 40 admissions of ``pod_yaml(0..39)`` on node ``busy``: the answers, the API,
    the state files and the database's log agree, and no CPU is given twice."""
    admitted: dict[str, str] = {}  # uid -> cpuset given in the 201 answer
    for status, body, _ in answers:
        [result] = body["results"]
        if result["admitted"]:
            assert status == 201
            [container] = result["allocation"]["containers"]
            admitted[result["pod"]["uid"]] = container["cpuset"]
        else:
            assert status == 200 and result["reason"] == "UnexpectedAdmissionError"
    # 32 CPUs, 2 reserved, 1 CPU a pod: exactly 30 fit.
    assert len(admitted) == 30

    # -- the API --------------------------------------------------------------------------
    node = httpx.get(f"{url}/api/v1/nodes/busy", timeout=30).json()
    pools = node["pools"]
    reserved = CPUSet.parse(pools["reserved"]["cpus"])
    shared = CPUSet.parse(pools["nodeShared"]["cpus"])
    exclusive = {key: CPUSet.parse(v["cpus"]) for key, v in pools["exclusive"].items()}
    union = CPUSet()
    for cpus in exclusive.values():
        assert not (cpus & union), "a CPU given twice"
        union = union | cpus
    assert not (union & reserved) and not (union & shared) and not (reserved & shared)
    assert (reserved | shared | union) == CPUSet.parse("0-31")
    api_pods = {p["uid"]: p["containers"][0]["runsOn"]["cpus"] for p in node["pods"]}
    assert {u: CPUSet.parse(c) for u, c in api_pods.items()} == {
        u: CPUSet.parse(c) for u, c in admitted.items()
    }

    # -- the state files (written by whichever worker held the lock) -------------------------
    cpu_state = json.loads((state_dir / "cpu_manager_state").read_text())
    files = {uid: CPUSet.parse(e["app"]) for uid, e in cpu_state["entries"].items()}
    assert files == {u: CPUSet.parse(c) for u, c in admitted.items()}
    assert CPUSet.parse(cpu_state["defaultCpuSet"]) == reserved | shared
    pods_json = json.loads((state_dir / "pods.json").read_text())
    assert {p["manifest"]["metadata"]["uid"] for p in pods_json["pods"]} == set(admitted)
    assert not [p for p in state_dir.iterdir() if p.name.startswith(".")], "temp files left"

    # -- the database: the log holds every decision, and what it calls running is the rest ---
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT a.uid, a.action, a.admitted, a.seq FROM admissions a JOIN nodes n "
                    "ON a.node_id = n.id WHERE n.name = 'busy' ORDER BY a.id"
                )
            ).all()
            version = conn.execute(text("SELECT version FROM nodes WHERE name = 'busy'")).scalar()
    finally:
        engine.dispose()
    assert len(rows) == 40
    # each decision numbered in the node's own log, in log order, none twice or skipped
    assert [r.seq for r in rows] == list(range(1, 41))
    running = {r.uid for r in rows if r.action == ACTION_ADMIT and r.admitted}
    running -= {r.uid for r in rows if r.action == ACTION_REMOVE}
    assert running == set(admitted)
    assert version is not None and version >= 1 + 30  # creation, then one per admission

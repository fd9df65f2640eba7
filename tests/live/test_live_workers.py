"""``numascope serve --workers 2``: two real uvicorn worker processes on one database (SQLite
file, PostgreSQL) behave as one server (issue 10 point 4).

* A node created through one worker is served to 32 of 32 new connections, and the other
  worker (identified by which process holds the connection's socket) serves it too.
* 40 concurrent admissions from 40 connections, spread over both workers, keep every
  invariant: no CPU is given twice, reserved + node shared + exclusive CPUs partition the
  node, and the database's log, the state files and the API agree pod for pod.
"""

from __future__ import annotations

import http.client
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from app.adapters.db.tables import ACTION_ADMIT, ACTION_REMOVE
from app.domain.cpuset import CPUSet
from tests.live.server import ServerProcess, connection_owner, server_env

TOPOLOGY = "sockets=2,cores_per_numa=8,threads_per_core=2,memory_per_numa=64Gi"  # 32 CPUs
STATIC = """\
cpuManagerPolicy: static
kubeReserved: {cpu: "2"}
"""


def pod_yaml(i: int, cpus: int = 1) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: pod-{i:02d}, namespace: load, uid: 00000000-0000-4000-8000-{i:012d}}}
spec:
  containers:
  - name: app
    resources:
      requests: {{cpu: "{cpus}", memory: 1Gi}}
      limits: {{cpu: "{cpus}", memory: 1Gi}}
"""


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Any:
    srv = ServerProcess(tmp_path, server_env(tmp_path, database_url), workers=2)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def request(
    srv: ServerProcess, method: str, path: str, body: str | None = None, ctype: str = ""
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


def connections_on_each_worker(
    srv: ServerProcess, per_worker: int
) -> list[tuple[http.client.HTTPConnection, int]]:
    """``per_worker`` open connections to every worker: the kernel decides which worker
    accepts, so connect (and ask ``/healthz`` once) until each worker holds enough."""
    pids = srv.worker_pids()
    held: dict[int, list[http.client.HTTPConnection]] = {pid: [] for pid in pids}
    for _ in range(40 * per_worker):
        if all(len(c) >= per_worker for c in held.values()):
            break
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        conn.connect()
        assert conn.sock is not None
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        owner = connection_owner(pids, srv.port, conn.sock.getsockname()[1])
        if owner is not None and len(held[owner]) < per_worker:
            held[owner].append(conn)
        else:
            conn.close()
    assert all(len(c) >= per_worker for c in held.values()), {p: len(c) for p, c in held.items()}
    return [(conn, pid) for pid, conns in held.items() for conn in conns]


def create_node(srv: ServerProcess, name: str) -> int | None:
    body = json.dumps({"name": name, "topology": TOPOLOGY, "kubeletConfig": STATIC})
    status, answer, owner = request(srv, "POST", "/api/v1/nodes", body, "application/json")
    assert status == 201, answer
    return owner


def test_a_node_made_through_one_worker_is_seen_by_32_of_32_new_connections(
    server: ServerProcess,
) -> None:
    pids = server.worker_pids()
    assert len(pids) == 2
    maker = create_node(server, "made-once")
    assert maker in pids
    seen: list[int | None] = []
    for _ in range(32):
        status, answer, owner = request(server, "GET", "/api/v1/nodes/made-once")
        assert status == 200, answer
        assert answer["summary"]["name"] == "made-once"
        seen.append(owner)
    # Keep connecting (up to 200) until the other worker has answered at least once: the
    # kernel chooses who accepts, so 32 alone do not prove both workers were asked.
    while set(pids) - set(seen) and len(seen) < 200:
        status, answer, owner = request(server, "GET", "/api/v1/nodes/made-once")
        assert status == 200, answer
        seen.append(owner)
    assert set(seen) == set(pids), f"connections by worker: {seen}"
    # And a node deleted through one worker is gone for every other.
    status, _, _ = request(server, "DELETE", "/api/v1/nodes/made-once")
    assert status == 204
    for _ in range(16):
        status, _, _ = request(server, "GET", "/api/v1/nodes/made-once")
        assert status == 404


def test_40_concurrent_admissions_on_2_workers_keep_every_invariant(
    server: ServerProcess, database_url: str
) -> None:
    pids = server.worker_pids()
    create_node(server, "busy")

    conns = connections_on_each_worker(server, 20)  # 20 connections held by each worker

    def admit(i: int) -> tuple[int, Any, int]:
        conn, owner = conns[i]
        try:
            headers = {"content-type": "application/yaml"}
            conn.request("POST", "/api/v1/nodes/busy/pods", body=pod_yaml(i), headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read()), owner
        finally:
            conn.close()

    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(admit, range(40)))
    statuses = [a[0] for a in answers]
    assert set(statuses) <= {200, 201}, answers
    by_worker = {pid: sum(1 for a in answers if a[2] == pid) for pid in pids}
    assert by_worker == dict.fromkeys(pids, 20)

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
    node = httpx.get(f"{server.url}/api/v1/nodes/busy", timeout=30).json()
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
    state_dir = server.tmp / "nodes" / "busy"
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
                    "SELECT a.uid, a.action, a.admitted FROM admissions a JOIN nodes n "
                    "ON a.node_id = n.id WHERE n.name = 'busy' ORDER BY a.id"
                )
            ).all()
            version = conn.execute(text("SELECT version FROM nodes WHERE name = 'busy'")).scalar()
    finally:
        engine.dispose()
    assert len(rows) == 40
    running = {r.uid for r in rows if r.action == ACTION_ADMIT and r.admitted}
    running -= {r.uid for r in rows if r.action == ACTION_REMOVE}
    assert running == set(admitted)
    assert version is not None and version >= 1 + 30  # creation, then one per admission

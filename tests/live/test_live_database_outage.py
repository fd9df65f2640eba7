"""A PostgreSQL that stops for a while under ``numascope serve --workers 2`` (issue 22 point 5).

The test runs its own PostgreSQL (``scripts/pg-test-server.sh`` on a port and data directory of
its own, so the suite's shared server never stops) and a real two-worker server on it, keeps
admitting pods from four clients and reading the node from a fifth, stops PostgreSQL for
``OUTAGE_SECONDS`` and starts it again. Then:

* every answer was a success or a 503 ``ServiceUnavailable`` with ``Retry-After`` whose body
  names the failure in fixed words (no SQL, no driver text, no host or port); there was at
  least one 503 (the outage was seen) and no 500;
* the server log has no traceback and at most one "database unavailable" line per worker;
* admissions succeed again without a restart (same worker processes), and every pod a 201
  acknowledged is on the node afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.factories import guaranteed_yaml
from tests.live.node_checks import create_node
from tests.processes import Server, free_port, server_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "pg-test-server.sh"
OUTAGE_SECONDS = 8.0
ADMITTERS = 4


class PrivatePostgres:
    """A PostgreSQL of this test alone, driven by the suite's script."""

    def __init__(self) -> None:
        self.port = free_port()
        # Not under pytest's tmp_path: the postgres user must be able to enter the directory.
        self.data = Path("/tmp") / f"numascope-outage-pg-{uuid.uuid4().hex[:8]}"
        self.env = {
            **os.environ,
            "NUMASCOPE_PG_PORT": str(self.port),
            "NUMASCOPE_PG_DATA": str(self.data),
        }

    def run(self, action: str) -> str:
        done = subprocess.run(
            ["sh", str(SCRIPT), action], env=self.env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


@pytest.fixture
def postgres() -> Iterator[tuple[PrivatePostgres, str]]:
    pg = PrivatePostgres()
    url = pg.run("start")
    if not url:
        shutil.rmtree(pg.data, ignore_errors=True)
        if os.environ.get("NUMASCOPE_REQUIRE_POSTGRES") == "1":
            pytest.fail("scripts/pg-test-server.sh could not run a PostgreSQL server here")
        pytest.skip("no PostgreSQL server can be run here (scripts/pg-test-server.sh)")
    try:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text('CREATE DATABASE "outage"'))
        admin.dispose()
        yield pg, make_url(url).set(database="outage").render_as_string(hide_password=False)
    finally:
        pg.run("stop")


def pod(client: int, i: int) -> str:
    uid = f"00000000-0000-4000-8{client:03d}-{i:012d}"
    return guaranteed_yaml(f"c{client}-{i}", "load", uid, "100m", "16Mi")


class Load:
    """Clients that admit pods (and one that reads the node) until told to stop."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers: list[tuple[float, str, int, dict[str, str], str]] = []
        self.admitted: set[str] = set()
        self.threads = [
            threading.Thread(target=self._admit, args=(k,)) for k in range(ADMITTERS)
        ] + [threading.Thread(target=self._read)]

    def _send(self, what: str, client: httpx.Client, *args: Any, **kwargs: Any) -> int:
        """One request, recorded; a dropped connection is recorded as status 0."""
        try:
            resp = client.request(*args, **kwargs)
        except httpx.HTTPError as err:
            with self.lock:
                self.answers.append((time.monotonic(), what, 0, {}, repr(err)))
            return 0
        with self.lock:
            self.answers.append(
                (time.monotonic(), what, resp.status_code, dict(resp.headers), resp.text)
            )
        return resp.status_code

    def _admit(self, k: int) -> None:
        headers = {"content-type": "application/yaml"}
        with httpx.Client(base_url=self.srv.url, timeout=60, trust_env=False) as client:
            i = 0
            while not self.stop.is_set():
                i += 1
                path = "/api/v1/nodes/busy/pods"
                status = self._send(
                    "admit", client, "POST", path, content=pod(k, i), headers=headers
                )
                if status == 201:
                    with self.lock:
                        self.admitted.add(f"00000000-0000-4000-8{k:03d}-{i:012d}")
                time.sleep(0.1)

    def _read(self) -> None:
        with httpx.Client(base_url=self.srv.url, timeout=60, trust_env=False) as client:
            while not self.stop.is_set():
                self._send("read", client, "GET", "/api/v1/nodes/busy")
                self._send("page", client, "GET", "/nodes/busy", headers={"accept": "text/html"})
                time.sleep(0.1)

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def count(self, status: int, since: float = 0.0, what: str = "admit") -> int:
        with self.lock:
            return sum(
                1 for t, w, s, _, _ in self.answers if s == status and w == what and t > since
            )


def test_a_stopped_postgresql_is_a_503_with_retry_after_and_recovers(
    tmp_path: Path, postgres: tuple[PrivatePostgres, str]
) -> None:
    pg, url = postgres
    srv = Server(tmp_path, server_env(tmp_path, url), workers=2).start()
    try:
        pids = sorted(srv.worker_pids())
        create_node(srv, "busy")
        with Load(srv) as load:
            srv.wait_for(lambda: load.count(201) >= 5, "admissions before the outage", 60)
            pg.run("pause")
            down = time.monotonic()
            time.sleep(OUTAGE_SECONDS)
            pg.run("resume")
            up = time.monotonic()
            srv.wait_for(lambda: load.count(201, since=up) >= 5, "admissions after it", 60)
        assert sorted(srv.worker_pids()) == pids, f"a worker was restarted:\n{srv.output()[-3000:]}"
        node = srv.client.get("/api/v1/nodes/busy").json()
        log = srv.output()
    finally:
        srv.stop()

    statuses = {(w, s) for _, w, s, _, _ in load.answers}
    assert statuses <= {
        ("admit", 201), ("admit", 503), ("read", 200), ("read", 503),
        ("page", 200), ("page", 503),
    }, statuses  # fmt: skip
    unavailable = [a for a in load.answers if a[2] == 503]
    assert any(w == "admit" for _, w, _, _, _ in unavailable), "no admission saw the outage"
    assert all(down - 1 < t < up + 30 for t, _, _, _, _ in unavailable)
    for _, what, _, headers, body in unavailable:
        assert headers.get("retry-after", "").isdigit(), (what, headers)
        assert "the database is unavailable" in body
        for leak in ("SELECT", "INSERT", "UPDATE", "[SQL", "psycopg", str(pg.port), "127.0.0.1"):
            assert leak not in body, (leak, body)
        if what != "page":
            assert '"reason":"ServiceUnavailable"' in body

    assert "Traceback" not in log, log[-4000:]
    outage_lines = [line for line in log.splitlines() if "database unavailable" in line]
    assert 1 <= len(outage_lines) <= 2, outage_lines  # one per worker that saw it, at most

    on_node = {p["uid"] for p in node["pods"]}
    assert load.admitted <= on_node, sorted(load.admitted - on_node)

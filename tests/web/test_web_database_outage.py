"""A SQLite file locked past the busy timeout is a 503 with ``Retry-After`` (no SQL, no
traceback, one log line), and the next request after the lock is gone succeeds
(``app.web.errors``, ``app.adapters.db.outage``). The PostgreSQL outage under two workers is
tests/live/test_live_database_outage.py."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.adapters.db import engine as db_engine
from app.adapters.db import outage
from app.web.app import create_app
from tests.helpers import make_settings

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p%d, namespace: default, uid: 00000000-0000-4000-8000-00000000000%d}
spec:
  containers:
  - name: app
    resources: {requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 100m, memory: 16Mi}}
"""


def test_a_locked_sqlite_database_is_a_503_that_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(db_engine, "SQLITE_BUSY_TIMEOUT_MS", 100)  # wait 0.1 s, not 5
    monkeypatch.setattr(outage, "OUTAGE", outage.Outage())  # no outage from an earlier test
    db = tmp_path / "numascope.db"
    app = create_app(make_settings(tmp_path, database_url=f"sqlite:///{db}"))
    yaml = {"content-type": "application/yaml"}
    with TestClient(app) as client:
        body = {"name": "n1", "topology": "laptop-1s", "kubeletConfig": "cpuManagerPolicy: none\n"}
        assert client.post("/api/v1/nodes", json=body).status_code == 201
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        with caplog.at_level(logging.WARNING):
            answers = [
                client.post("/api/v1/nodes/n1/pods", content=POD % (i, i), headers=yaml)
                for i in (1, 2, 3)
            ]
            page = client.post("/api/v1/nodes", json={**body, "name": "n2"})
        holder.rollback()
        holder.close()
        for resp in (*answers, page):
            assert resp.status_code == 503, resp.text
            assert resp.headers["retry-after"] == "2"
            error = resp.json()["error"]
            assert error["reason"] == "ServiceUnavailable"
            assert error["message"].startswith(
                "the database is unavailable: the database is locked by another writer"
            )
            assert "BEGIN" not in resp.text and str(db) not in resp.text
        again = client.post("/api/v1/nodes/n1/pods", content=POD % (1, 1), headers=yaml)
        assert again.status_code == 201, again.text
        assert json.loads(again.text)["results"][0]["admitted"] is True
    assert not [r for r in caplog.records if r.exc_info]
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len([m for m in said if "database unavailable" in m]) == 1, said
    assert not [m for m in said if "was not made" in m], said

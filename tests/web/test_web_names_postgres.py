"""On PostgreSQL (whose columns have lengths and refuse NUL bytes) names past the API server's
rules used to reach the database and answer 500 while the engine kept the pod's CPUs
(issue 13): they are now refused with a 422 before any engine or database work."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests.adapters.db.test_db_postgres import database_url  # noqa: F401 - the fixture
from tests.factories import pod_json
from tests.helpers import POD_SCOPE, SMALL, make_settings


@pytest.mark.parametrize(
    ("name", "uid", "field"),
    [
        ("a" * 254, "u-1", "metadata.name"),
        ("web", "u" * 129, "metadata.uid"),
        ("nul\x00byte", "u-2", "metadata.name"),
        ("web", "nul\x00byte", "metadata.uid"),
    ],
    ids=["name-254", "uid-129", "nul-name", "nul-uid"],
)
def test_names_past_the_columns_are_422_and_hold_nothing(
    database_url: str,  # noqa: F811 - the fixture
    tmp_path: Path,
    name: str,
    uid: str,
    field: str,
) -> None:
    settings = make_settings(tmp_path, database_url=database_url)
    with TestClient(create_app(settings)) as client:
        assert client.app.state.engine.dialect.name == "postgresql"  # type: ignore[attr-defined]
        r = client.post(
            "/api/v1/nodes", json={"name": "pg", "topology": SMALL, "kubeletConfig": POD_SCOPE}
        )
        assert r.status_code == 201
        free = client.get("/api/v1/nodes/pg").json()["pools"]
        for _ in range(4):  # four refusals used to hold 8 of the node's CPUs
            r = client.post(
                "/api/v1/nodes/pg/pods",
                content=pod_json(name, uid=uid, cpu="2"),
                headers={"Content-Type": "application/json"},
            )
            assert r.status_code == 422 and r.json()["error"]["field"] == field
        body = client.get("/api/v1/nodes/pg").json()
        assert body["pods"] == [] and body["pools"] == free
        assert client.get("/api/v1/nodes/pg/admissions").status_code == 200
    with TestClient(create_app(settings)) as client:  # and nothing comes back after a restart
        assert client.get("/api/v1/nodes/pg").json()["pods"] == []

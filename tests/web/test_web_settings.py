"""app/settings.py and create_app's start-up work (database folder, migrations)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import inspect

from app.adapters.db.migrate import current_revisions, head_revisions
from app.settings import Settings
from app.web.app import create_app, make_app


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ["HOST", "PORT", "DATABASE_URL", "DEMO", "SYSFS_ROOT", "LOG_LEVEL"]:
        monkeypatch.delenv(f"NUMASCOPE_{key}", raising=False)
    s = Settings()
    assert (s.host, s.port) == ("127.0.0.1", 8000)
    assert s.database_url == "sqlite:///./var/numascope.db"
    assert s.sysfs_root == Path("/sys")
    assert s.kubelet_root == Path("/var/lib/kubelet")
    assert s.podresources_socket_path == Path("/var/lib/kubelet/pod-resources/kubelet.sock")
    assert s.state_dir == Path("var/nodes")
    assert s.demo is True
    assert s.log_level == "info"


def test_environment_with_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMASCOPE_PORT", "9100")
    monkeypatch.setenv("NUMASCOPE_DEMO", "false")
    monkeypatch.setenv("NUMASCOPE_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("NUMASCOPE_PODRESOURCES_SOCKET", "/run/pr.sock")
    s = Settings()
    assert s.port == 9100 and s.demo is False and s.log_level == "debug"
    assert s.podresources_socket_path == Path("/run/pr.sock")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("port", 70000, id="port"),
        pytest.param("database_url", "numascope.db", id="database-url"),
        pytest.param("podresources_socket", "relative.sock", id="socket"),
        pytest.param("log_level", "loud", id="log-level"),
    ],
)
def test_bad_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        Settings.model_validate({field: value})


def test_create_app_makes_the_database_and_migrates(tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "sub" / "numascope.db"
    app = create_app(
        Settings(
            database_url=f"sqlite:///{db}", cpuinfo=False, demo=False, state_dir=tmp_path / "n"
        )
    )
    assert db.is_file()
    assert "alembic_version" in inspect(app.state.engine).get_table_names()
    assert current_revisions(app.state.engine) == head_revisions()


def test_create_app_can_skip_migrations(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    app = create_app(
        Settings(
            database_url=f"sqlite:///{db}",
            migrate_on_startup=False,
            demo=False,
            state_dir=tmp_path / "n",
        )
    )
    assert "alembic_version" not in inspect(app.state.engine).get_table_names()
    assert (
        TestClient(app, base_url="http://127.0.0.1").get("/readyz").json()["checks"]["migrations"]
        == "skipped"
    )


def test_make_app_reads_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NUMASCOPE_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.setenv("NUMASCOPE_SYSFS_ROOT", str(tmp_path / "sys"))
    monkeypatch.setenv("NUMASCOPE_STATE_DIR", str(tmp_path / "nodes"))
    monkeypatch.setenv("NUMASCOPE_DEMO", "false")
    app = make_app()
    assert app.state.settings.sysfs_root == tmp_path / "sys"
    assert (tmp_path / "env.db").is_file()

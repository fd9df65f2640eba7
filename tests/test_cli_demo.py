"""``numascope demo restore``: the demo nodes back as shipped on the server's database and state
files (seen by a running app without a restart), a user's node under a demo name kept, a
fresh database, bad settings (exit 2), the console script as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.services.demo import DEMO_NODES
from app.web.app import create_app
from tests.helpers import act_as_browser, make_settings

DEMO = [d.name for d in DEMO_NODES]
NODE = "demo-pod-scope"
YAML = {"Content-Type": "application/yaml"}


def _args(tmp: Path) -> list[str]:
    return [
        "demo",
        "restore",
        "--database-url",
        f"sqlite:///{tmp / 'numascope.db'}",
        "--state-dir",
        str(tmp / "nodes"),
    ]


def test_restore_brings_back_a_deleted_node_and_a_removed_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestClient(create_app(make_settings(tmp_path, demo=True))) as c:
        act_as_browser(c)
        pods = {p["key"] for p in c.get(f"/nodes/{NODE}.json").json()["pods"]}
        victim = sorted(pods)[0]
        ns, name = victim.split("/")
        assert c.delete(f"/api/v1/nodes/{NODE}/pods/{ns}/{name}").is_success
        assert c.delete("/api/v1/nodes/demo-512").is_success
        assert "demo-512" not in {n["name"] for n in c.get("/nodes.json").json()["nodes"]}

        assert main(_args(tmp_path)) == 0
        out = capsys.readouterr().out.splitlines()
        assert out == [
            "demo-pod-scope: restored",
            "demo-container-scope: restored",
            "demo-512: created",
        ]
        # The running app follows the database: both are back, without a restart.
        assert {n["name"] for n in c.get("/nodes.json").json()["nodes"]} >= set(DEMO)
        assert {p["key"] for p in c.get(f"/nodes/{NODE}.json").json()["pods"]} == pods
    for node in DEMO:
        assert (tmp_path / "nodes" / node / "cpu_manager_state").is_file()


def test_a_node_of_yours_under_a_demo_name_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestClient(create_app(make_settings(tmp_path, demo=True))) as c:
        act_as_browser(c)
        assert c.delete("/api/v1/nodes/demo-512").is_success
        body = {"name": "demo-512", "topology": "topoDualSocketHT", "release": "1.37"}
        assert c.post("/api/v1/nodes", json=body).status_code == 201
    assert main([*_args(tmp_path), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer == {"restored": ["demo-pod-scope", "demo-container-scope"], "kept": ["demo-512"]}
    with TestClient(create_app(make_settings(tmp_path))) as c:
        node = c.get("/nodes/demo-512.json").json()["summary"]
        assert node["demo"] is False and node["topology"]["argument"] == "topoDualSocketHT"


def test_fresh_database_gets_the_demo_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(tmp_path / "new")) == 0
    assert capsys.readouterr().out.splitlines() == [f"{n}: created" for n in DEMO]
    with TestClient(create_app(make_settings(tmp_path / "new"))) as c:
        assert [n["name"] for n in c.get("/nodes.json").json()["nodes"]] == sorted(DEMO)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--database-url", "not a url"], "database_url: "),
        (["--database-url", "nosuchdriver://x/y"], "database_url"),
    ],
)
def test_bad_settings_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["demo", "restore", "--state-dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("numascope demo restore: ") and message in err


def test_demo_without_an_action_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo"])
    assert exc.value.code == 2
    assert "restore" in capsys.readouterr().err


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("numascope")
    done = subprocess.run(
        [str(script), *_args(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"restored": DEMO, "kept": []}

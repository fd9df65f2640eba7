"""The node agent stays lean (issue 20 pt 7): a process built as ``numascope serve --no-demo
--observe`` builds it (``app.commands.serve.build_app``, in a fresh interpreter) has migrated its
database without importing alembic, and imports neither jinja2 nor psycopg until a page is asked
for; its pages still work, loading the templates on first use. Pillow (the PNG map) is never
loaded, a page asked for or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine

from app.adapters.db.migrate import current_revisions, head_revisions
from tests.live.agent_host import NODE, agent_env, build_host

REPO = Path(__file__).resolve().parents[2]

#: Loaded by the agent before issue 20 pt 7, none of them needed to observe a node on SQLite.
NOT_IMPORTED = ("alembic", "jinja2", "starlette.templating", "psycopg")
#: Only the dashboard's map.png draws with Pillow (issue 21): never the agent, not even its pages.
NOT_IMPORTED += ("PIL",)

CHILD = """
import json, sys
from app.cli import build_parser
from app.commands.serve import build_app, build_settings

args = build_parser().parse_args(["serve", "--no-demo", "--observe"])
app = build_app(build_settings(args))
loaded = sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)

from fastapi.testclient import TestClient

with TestClient(app, base_url="http://127.0.0.1") as client:
    page = client.get("/nodes/" + sys.argv[2])
print(json.dumps({
    "loaded": loaded,
    "migrated": app.state.migrated,
    "hub": app.state.hub is not None,
    "page": page.status_code,
    "jinja2_after_page": "jinja2" in sys.modules,
    "pillow_after_page": "PIL" in sys.modules,
}))
"""


def test_the_agent_profile_imports_no_database_migrations_templates_or_postgres(
    tmp_path: Path,
) -> None:
    _, root, sysfs = build_host(tmp_path, 2)
    data = tmp_path / "data"
    data.mkdir()
    env = agent_env(root, sysfs, tmp_path / "no.sock", data)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(NOT_IMPORTED), NODE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["loaded"] == []
    assert answer["migrated"] is True
    assert answer["hub"] is False
    # The observed node's page renders on the agent: the templates come with the first page.
    assert answer["page"] == 200
    assert answer["jinja2_after_page"] is True
    assert answer["pillow_after_page"] is False
    # The child process brought the agent's database file to head.
    engine = create_engine(f"sqlite:///{data / 'numascope.db'}")
    try:
        assert current_revisions(engine) == head_revisions()
    finally:
        engine.dispose()

"""The node agent stays lean (issue 20 pt 7). Each process is built as ``numascope serve``
builds it (``app.cli.parser_for`` and ``app.commands.serve.build_app``, in a fresh
interpreter):

* the DaemonSet's agent (``--no-demo --observe --no-simulated``) has no database and answers
  its probes, metrics and summaries (what a hub polls) from its kubelet's state files and
  PodResources without loading the database, the migrations, the templates, the hub's
  fan-out, the other commands, the page routers, grpcio or protobuf; its pages and
  PodResources JSON still work, what they need loading on the first request;
* an agent with its database (``--no-demo --observe``) has migrated it without importing
  alembic, and imports neither jinja2 nor psycopg until a page is asked for;
* the agent's lazily included routers change no answer: every path of the routes included at
  start is answered by the same route as in the full app, and its OpenAPI document lists
  what the full app's lists (the hub's ``/fleet`` aside);
* Pillow (the dashboard's PNG map) is never loaded by an agent, a page asked for or not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from starlette.routing import compile_path

from app.adapters.db.migrate import current_revisions, head_revisions
from app.adapters.grpc.server import PodResourcesServer
from app.settings import Settings
from app.web.app import create_app
from tests.live.agent_host import NODE, agent_env, build_host

REPO = Path(__file__).resolve().parents[2]

#: Never loaded by an agent without a database while it answers what a hub and the kubelet's
#: probes ask (each cost memory or start-up CPU before issue 20 pt 7).
NOT_IMPORTED_LEAN = (
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "psycopg",
    "jinja2",
    "starlette.templating",
    "httpx",
    "dns",
    "app.services.fleet.hub",
    "app.services.nodes.service",
    "app.services.nodes.inputs",
    "app.services.upgrade",
    "app.services.history.replay",
    "app.commands.checkpoint",
    "app.commands.podresources",
    "app.web.routers.nodes",
    "app.web.routers.api_nodes",
    "app.web.routers.workflow",
    "PIL",
    # The kubelet's PodResources is read over h2 (app.adapters.grpc.unary) and decoded by
    # app.adapters.grpc.wire: grpcio and protobuf only serve, and print its canonical JSON.
    "grpc",
    "google.protobuf",
    "app.adapters.podresources_json",
)
#: Loaded by the agent with a database before issue 20 pt 7, none of them needed to observe a
#: node on SQLite.
NOT_IMPORTED = ("alembic", "jinja2", "starlette.templating", "psycopg")
#: Only the dashboard's map.png draws with Pillow (issue 21): never the agent, not even its pages.
NOT_IMPORTED += ("PIL",)

CHILD = """
import json, sys
from app.cli import parser_for
from app.commands.serve import build_app, build_settings

argv = ["serve", *json.loads(sys.argv[2])]
app = build_app(build_settings(parser_for(argv).parse_args(argv)))
watched = json.loads(sys.argv[1])
at_start = {m for m in watched if m in sys.modules}

from fastapi.testclient import TestClient  # brings httpx: watched from here on without it

answers = {}
with TestClient(app, base_url="http://127.0.0.1") as client:
    for path in ("/readyz", "/healthz", "/metrics", "/api/v1/summary",
                 "/api/v1/nodes/" + sys.argv[3] + "/summary"):
        answers[path] = client.get(path).status_code
    loaded = sorted(at_start | {m for m in watched if m in sys.modules and m != "httpx"})
    page = client.get("/nodes/" + sys.argv[3])
    pod_json = client.get("/api/v1/nodes/" + sys.argv[3] + "/podresources")
print(json.dumps({
    "loaded": loaded,
    "answers": answers,
    "migrated": app.state.migrated,
    "database": app.state.engine is not None,
    "hub": app.state.hub is not None,
    "page": page.status_code,
    "podresources": pod_json.status_code,
    "jinja2_after_page": "jinja2" in sys.modules,
    "pillow_after_page": "PIL" in sys.modules,
    "protobuf_after_podresources": "google.protobuf" in sys.modules,
    "routers_after_page": "app.web.routers.nodes" in sys.modules,
}))
"""


def run_agent(
    tmp_path: Path, serve_args: list[str], watched: tuple[str, ...], *, kubelet: bool = False
) -> dict[str, Any]:
    """The answers of an agent on a fake host; ``kubelet``: its PodResources socket answers
    (served from this process), else there is none."""
    node, root, sysfs = build_host(tmp_path, 2)
    data = tmp_path / "data"
    data.mkdir()
    sock = tmp_path / "pr.sock"
    env = agent_env(root, sysfs, sock, data)
    snapshot = node.snapshot()
    with PodResourcesServer(lambda: snapshot, str(sock)) if kubelet else nullcontext():
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(watched), json.dumps(serve_args), NODE],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_the_daemonsets_agent_answers_a_hub_without_database_templates_pages_or_fan_out(
    tmp_path: Path,
) -> None:
    answer = run_agent(
        tmp_path, ["--no-demo", "--observe", "--no-simulated"], NOT_IMPORTED_LEAN, kubelet=True
    )
    assert answer["answers"] == {
        "/readyz": 200,
        "/healthz": 200,
        "/metrics": 200,
        "/api/v1/summary": 200,
        f"/api/v1/nodes/{NODE}/summary": 200,
    }
    assert answer["loaded"] == []
    assert answer["database"] is False
    assert answer["hub"] is False
    assert not (tmp_path / "data" / "numascope.db").exists()
    # Its page and JSON still work: routers and templates come with the first request.
    assert answer["page"] == 200
    assert answer["routers_after_page"] is True
    assert answer["jinja2_after_page"] is True
    # The kubelet's PodResources, as canonical JSON (protobuf loaded for it).
    assert answer["podresources"] == 200
    assert answer["protobuf_after_podresources"] is True


def test_the_agent_with_a_database_imports_no_migrations_templates_or_postgres(
    tmp_path: Path,
) -> None:
    answer = run_agent(tmp_path, ["--no-demo", "--observe"], NOT_IMPORTED)
    assert answer["loaded"] == []
    assert answer["migrated"] is True
    assert answer["database"] is True
    assert answer["hub"] is False
    # The observed node's page renders on the agent: the templates come with the first page.
    assert answer["page"] == 200
    assert answer["jinja2_after_page"] is True
    assert answer["pillow_after_page"] is False
    # The child process brought the agent's database file to head.
    engine = create_engine(f"sqlite:///{tmp_path / 'data' / 'numascope.db'}")
    try:
        assert current_revisions(engine) == head_revisions()
    finally:
        engine.dispose()


def _routes(routes: list[Any]) -> list[tuple[str, str, set[str]]]:
    """(name, path, methods) of every endpoint, in the order the router tries them (FastAPI
    keeps an included router as one entry holding its routes)."""
    flat: list[tuple[str, str, set[str]]] = []
    for route in routes:
        if hasattr(route, "effective_candidates"):
            for candidate in route.effective_candidates():
                if hasattr(candidate, "effective_candidates"):
                    flat += _routes([candidate])
                    continue
                original = candidate.original_route
                flat.append((original.name, candidate.path, set(original.methods or ())))
        elif getattr(route, "methods", None):
            flat.append((route.name, route.path, set(route.methods)))
    return flat


def _first_route(routes: list[tuple[str, str, set[str]]], path: str, method: str) -> str | None:
    for name, template, methods in routes:
        if method in methods and compile_path(template)[0].fullmatch(path):
            return name
    return None


def test_the_routes_included_at_start_answer_as_in_the_full_app() -> None:
    full = create_app(Settings(database_url="sqlite://", demo=False, observe=False))
    lean = create_app(Settings(demo=False, observe=False, simulated=False))
    eager = _routes(lean.router.routes)
    assert {name for name, _, _ in eager} >= {"healthz", "readyz", "metrics", "api_summary"}
    lean.openapi()  # includes the others
    assert lean.router.default.loaded  # type: ignore[attr-defined]
    full_routes, lean_routes = _routes(full.router.routes), _routes(lean.router.routes)
    assert len(lean_routes) > 3 * len(eager)
    for name, template, methods in eager:
        path = template.replace("{node}", "n").replace("{namespace}", "ns")
        for method in sorted(methods):
            assert _first_route(full_routes, path, method) == name, (path, method)
            assert _first_route(lean_routes, path, method) == name, (path, method)
    # Every path and method of the full app but the hub's, and no other.
    full_paths = {p: set(ops) for p, ops in full.openapi()["paths"].items()}
    lean_paths = {p: set(ops) for p, ops in lean.openapi()["paths"].items()}
    hubs = {p for p in full_paths if p.startswith(("/fleet", "/api/v1/fleet"))}
    assert hubs
    assert {p: o for p, o in full_paths.items() if p not in hubs} == lean_paths

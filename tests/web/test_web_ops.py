"""/healthz, /readyz, /metrics, /docs, /openapi.json and the vendored static files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from app.settings import Settings
from app.web.app import SWAGGER_UI_VERSION, create_app
from app.web.rendering import HTMX_STATIC_PATH, HTMX_VERSION, STATIC_DIR, TEMPLATES_DIR
from tests.web.html_helpers import elements


def test_healthz(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


def test_readyz_ready(client: TestClient) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "durability": "ok"},
    }


def test_readyz_unready_when_database_fails(app: FastAPI, tmp_path: Path) -> None:
    app.state.engine = create_engine(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    r = TestClient(app).get("/readyz")
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "unready"
    assert body["checks"]["database"] == "failed"
    assert body["error"]["reason"] == "ServiceUnavailable"
    assert body["error"]["message"].startswith("database: OperationalError")


class FakeObserver:
    """Stands in for ``NodeObserver`` on ``app.state.observer``: ready after ``current()``
    when ``becomes_ready``; ``current()`` raises ``raises`` when given."""

    def __init__(
        self,
        *,
        ready: bool = False,
        becomes_ready: bool = False,
        errors: tuple[tuple[str, str], ...] = (),
        raises: Exception | None = None,
    ) -> None:
        self.ready = ready
        self.becomes_ready = becomes_ready
        self.errors = errors
        self.raises = raises
        self.calls = 0

    def latest(self) -> FakeObserver | None:
        return self if self.calls else None

    def current(self) -> FakeObserver:
        self.calls += 1
        if self.raises is not None:
            raise self.raises
        self.ready = self.becomes_ready
        return self


@pytest.mark.parametrize(
    ("observer", "status", "message", "calls"),
    [
        pytest.param(FakeObserver(ready=True), 200, None, 0, id="ready-no-observation"),
        pytest.param(FakeObserver(becomes_ready=True), 200, None, 1, id="first-observation"),
        pytest.param(
            FakeObserver(errors=(("podresources", "socket not found"), ("sysfs", "gone"))),
            503,
            "observation: podresources: socket not found; sysfs: gone",
            1,
            id="sources-failed",
        ),
        pytest.param(FakeObserver(), 503, "observation: not ready", 1, id="not-ready"),
        pytest.param(
            FakeObserver(becomes_ready=True, errors=(("podresources", "socket not found"),)),
            200,
            None,
            1,
            id="only-the-socket-missing",
        ),
        pytest.param(
            FakeObserver(raises=RuntimeError("boom")),
            503,
            "observation: RuntimeError",
            1,
            id="observation-raised",
        ),
    ],
)
def test_readyz_waits_for_the_observed_node(
    app: FastAPI, observer: FakeObserver, status: int, message: str | None, calls: int
) -> None:
    app.state.observer = observer
    r = TestClient(app).get("/readyz")
    assert r.status_code == status
    body = r.json()
    socket_failed = any(source == "podresources" for source, _ in observer.errors)
    assert body["checks"] == {
        "database": "ok",
        "migrations": "ok",
        "durability": "ok",
        "observation": "ok" if status == 200 else "failed",
        "podresources": "unavailable" if socket_failed else "ok",
    }
    assert observer.calls == calls
    if message is None and socket_failed:
        assert body["warnings"] == ["podresources: socket not found"]
        assert body["status"] == "ready"
    elif message is None:
        assert body == {"status": "ready", "checks": body["checks"]}
    else:
        assert body["status"] == "unready"
        assert body["error"] == {"reason": "ServiceUnavailable", "message": message}
        assert r.headers["cache-control"] == "no-store"


def test_readyz_names_database_and_observation_failures(app: FastAPI, tmp_path: Path) -> None:
    app.state.engine = create_engine(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    app.state.observer = FakeObserver(errors=(("checkpoint", "unreadable"),))
    body = TestClient(app).get("/readyz").json()
    assert body["checks"]["database"] == body["checks"]["observation"] == "failed"
    first, second = body["error"]["message"].split("; ", 1)
    assert first.startswith("database: OperationalError")
    assert second == "observation: checkpoint: unreadable"


def test_metrics_exposition(client: TestClient) -> None:
    client.get("/topologies/topoDualSocketHT")
    client.get("/topologies/topoDualSocketHT")
    client.get("/topologies/nope.json")
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert re.search(
        r'^numascope_build_info\{python_version="[\d.]+",version="0\.1\.0"\} 1\.0$', text, re.M
    )
    assert (
        'numascope_http_requests_total{method="GET",route="/topologies/{name}",status="200"} 2.0'
        in text
    )
    assert (
        'numascope_http_requests_total{method="GET",route="/topologies/{name}.json",status="404"}'
        " 1.0" in text
    )
    assert "topoDualSocketHT" not in text  # route templates, never raw paths
    assert "numascope_http_request_duration_seconds_bucket" in text
    assert "_created" not in text
    names = set(re.findall(r"^# TYPE (\S+)", text, re.M))
    assert all(n.startswith("numascope_") for n in names)


def test_metrics_registry_is_per_app(settings: Settings, tmp_path: Path) -> None:
    first = TestClient(create_app(settings))
    second = TestClient(
        create_app(settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'o.db'}"}))
    )
    for _ in range(3):
        first.get("/healthz")
    line = re.compile(r'route="/healthz",status="200"\} (\S+)')
    assert line.findall(first.get("/metrics").text) == ["3.0"]
    assert line.findall(second.get("/metrics").text) == []


def test_static_and_unmatched_routes_are_labelled(client: TestClient) -> None:
    client.get(f"/static/{HTMX_STATIC_PATH}")
    client.get("/definitely/not/here")
    text = client.get("/metrics").text
    assert 'route="/static",status="200"' in text
    assert 'route="unmatched",status="404"' in text


def test_vendored_htmx_is_served_and_referenced(client: TestClient) -> None:
    js = client.get(f"/static/{HTMX_STATIC_PATH}")
    assert js.status_code == 200
    assert "javascript" in js.headers["content-type"]
    assert js.text.startswith("var htmx=function()")
    assert f'version:"{HTMX_VERSION}"' in js.text
    assert (STATIC_DIR / "vendor" / f"htmx-{HTMX_VERSION}.LICENSE").is_file()
    assert f"htmx.org | {HTMX_VERSION}" in (STATIC_DIR / "vendor" / "README.md").read_text()
    page = client.get("/")
    scripts = [a["src"] for t, a in elements(page.text) if t == "script" and "src" in a]
    # htmx, then our own small scripts (refused htmx requests shown, live refresh, keyboard
    # CPU maps, CPU map details and Find, "/" opens the search), all from this server.
    assert scripts == [
        f"/static/{HTMX_STATIC_PATH}",
        "/static/js/htmx-errors.js",
        "/static/js/watch.js",
        "/static/js/cpu-map-keys.js",
        "/static/js/cpu-map.js",
        "/static/js/global-search.js",
    ]
    for src in scripts[1:]:
        assert client.get(src).status_code == 200
    assert client.get(f"/static/vendor/htmx-{HTMX_VERSION}.LICENSE").status_code == 200


def test_no_cdn_in_templates() -> None:
    for path in TEMPLATES_DIR.rglob("*.html"):
        text = path.read_text()
        assert not re.search(r'(src|href)="(https?:)?//', text), path


def test_stylesheet_served(client: TestClient) -> None:
    r = client.get("/static/css/numascope.css")
    assert r.status_code == 200 and ".cpu" in r.text


def test_docs_use_vendored_swagger_ui(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    refs = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert refs and all(ref.startswith("/static/") for ref in refs), refs
    for ref in refs:
        assert client.get(ref).status_code == 200, ref
    assert f"swagger-ui-{SWAGGER_UI_VERSION}" in r.text
    assert client.get("/redoc").status_code == 404


def test_openapi_lists_the_api(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for path in [
        "/api/v1/topologies",
        "/api/v1/topologies/{name}",
        "/topologies/{name}.json",
        "/healthz",
        "/readyz",
        "/metrics",
    ]:
        assert path in paths, path
    assert "/topologies/{name}" not in paths  # HTML pages stay out of the API description
    assert spec["info"]["title"] == "Numascope"


def test_security_headers_on_pages(client: TestClient) -> None:
    r = client.get("/")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"

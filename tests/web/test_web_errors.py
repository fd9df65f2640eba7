"""web/errors.py: every exception becomes the JSON error shape or the HTML error page."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.domain.admission import SMTAlignmentError, TopologyAffinityError
from app.web.errors import ERROR_STATUS, ERROR_STATUS_BY_NAME, wants_json


class Body(BaseModel):
    cpus: int


@pytest.fixture
def err_client(app: FastAPI) -> TestClient:
    """The real app plus a few routes that fail in known ways."""

    @app.get("/api/v1/test/count")
    def count(n: int) -> dict[str, int]:
        return {"n": n}

    @app.post("/api/v1/test/body")
    def body(payload: Body) -> dict[str, int]:
        return {"cpus": payload.cpus}

    @app.get("/api/v1/test/affinity")
    def affinity() -> None:
        raise TopologyAffinityError()

    @app.get("/api/v1/test/smt")
    def smt() -> None:
        raise SMTAlignmentError(3, 2)

    @app.get("/test/bug")
    def bug() -> None:
        raise RuntimeError("secret internals")

    @app.get("/api/v1/test/bug")
    def api_bug() -> None:
        raise RuntimeError("secret internals")

    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("path", "accept", "json"),
    [
        pytest.param("/api/v1/x", "text/html", True, id="api-prefix"),
        pytest.param("/topologies/x.json", "text/html", True, id="json-suffix"),
        pytest.param("/x", "application/json", True, id="accept-json"),
        pytest.param("/x", "text/html,application/json;q=0.9", False, id="accept-html-first"),
        pytest.param("/x", "*/*", False, id="any"),
    ],
)
def test_wants_json(path: str, accept: str, json: bool) -> None:
    from starlette.requests import Request

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "headers": [(b"accept", accept.encode())],
        "query_string": b"",
    }
    assert wants_json(Request(scope)) is json


def test_unknown_path_html_404(err_client: TestClient) -> None:
    r = err_client.get("/no/such/page")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "<html" in r.text and "404 · NotFound" in r.text
    assert "/no/such/page is not a page or resource" in r.text


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        pytest.param("/api/v1/nothing", {}, id="api"),
        pytest.param("/nothing", {"Accept": "application/json"}, id="accept"),
    ],
)
def test_unknown_path_json_404(err_client: TestClient, path: str, headers: dict[str, str]) -> None:
    r = err_client.get(path, headers=headers)
    assert r.status_code == 404
    assert r.json() == {
        "error": {
            "reason": "NotFound",
            "message": f"nothing here: {path} is not a page or resource of Numascope",
        }
    }


def test_htmx_error_gets_the_fragment(err_client: TestClient) -> None:
    r = err_client.get("/topologies/nope", headers={"HX-Request": "true"})
    assert r.status_code == 404
    assert "<html" not in r.text
    assert r.text.lstrip().startswith('<section id="error"')
    assert r.headers["vary"].split(", ")[0] == "HX-Request"  # Accept-Encoding when compressible


def test_method_not_allowed(err_client: TestClient) -> None:
    r = err_client.post("/api/v1/topologies")
    assert r.status_code == 405
    assert r.json()["error"]["reason"] == "MethodNotAllowed"
    assert r.headers["allow"] == "GET"


def test_query_validation_error_names_the_field(err_client: TestClient) -> None:
    r = err_client.get("/api/v1/test/count", params={"n": "many"})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["reason"] == "Invalid"
    assert error["field"] == "n"
    assert "n:" in error["message"]


def test_body_validation_error_names_the_field(err_client: TestClient) -> None:
    r = err_client.post("/api/v1/test/body", json={"cpus": "lots"})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "cpus"


def test_malformed_json_is_400(err_client: TestClient) -> None:
    r = err_client.post(
        "/api/v1/test/body", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["reason"] == "BadRequest"
    assert error["message"].startswith("request body is not valid JSON")


@pytest.mark.parametrize(
    ("path", "reason", "message"),
    [
        pytest.param(
            "/api/v1/test/affinity",
            "TopologyAffinityError",
            "Resources cannot be allocated with Topology locality",
            id="topology-affinity",
        ),
        pytest.param("/api/v1/test/smt", "SMTAlignmentError", None, id="smt"),
    ],
)
def test_admission_errors_keep_the_kubelet_reason(
    err_client: TestClient, path: str, reason: str, message: str | None
) -> None:
    r = err_client.get(path)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["reason"] == reason
    if message is not None:
        assert error["message"] == message
    else:
        assert error["message"] == str(SMTAlignmentError(3, 2))


def test_bug_is_500_without_internals(err_client: TestClient) -> None:
    r = err_client.get("/api/v1/test/bug")
    assert r.status_code == 500
    assert r.json()["error"]["reason"] == "InternalError"
    assert "secret" not in r.text
    html = err_client.get("/test/bug")
    assert html.status_code == 500
    assert "<html" in html.text and "secret" not in html.text


def test_every_mapped_error_is_4xx_503_or_507() -> None:
    assert all(400 <= s < 500 or s in (503, 507) for s, _ in ERROR_STATUS.values())


def test_errors_named_by_module_are_real_and_answered_like_the_others() -> None:
    """``ERROR_STATUS_BY_NAME`` names classes that exist (a typo would silently make one a
    500), each 4xx/503, and each is answered by a registered handler of its own or of its
    base, in the full app and in the node agent that loads their modules later."""
    import importlib

    from app.services.nodes.errors import NodeServiceError
    from app.settings import Settings
    from app.web.app import create_app

    classes = []
    for name, (status, _) in ERROR_STATUS_BY_NAME.items():
        module, _, cls_name = name.rpartition(".")
        cls = getattr(importlib.import_module(module), cls_name)
        assert issubclass(cls, Exception) and f"{cls.__module__}.{cls.__qualname__}" == name
        assert 400 <= status < 500 or status == 503
        classes.append(cls)
    full = create_app(Settings(database_url="sqlite://", demo=False, observe=False))
    assert all(c in full.exception_handlers for c in classes)
    agent = create_app(Settings(demo=False, observe=False, simulated=False))
    for cls in classes:
        if cls.__module__ != "app.services.fleet.hub":  # an agent has no /fleet routes
            assert (
                issubclass(cls, NodeServiceError) and NodeServiceError in agent.exception_handlers
            )

"""The request guard (app.web.guard): Host allow-list, cross-site refusals with the headers real
browsers send, body types, sizes and depths, CSRF tokens of the forms, response headers and
``Allow`` (issue 13, points 6, 8 and 10)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.services.nodes.service import NodeService
from app.web.app import create_app
from app.web.csrf import cookie_name
from app.web.guard import HostAllowList, split_host
from tests.helpers import DB_POD, POD_SCOPE, SMALL, make_settings

YAML = {"Content-Type": "application/yaml"}


@pytest.fixture
def small(nodes: NodeService, client: TestClient) -> TestClient:
    nodes.create("small", SMALL, POD_SCOPE)
    return client


def _pods(client: TestClient) -> list[str]:
    return [p["key"] for p in client.get("/api/v1/nodes/small").json()["pods"]]


# -- Host --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("localhost:8000", True),
        ("127.0.0.1", True),
        ("[::1]:8000", True),
        ("LOCALHOST.", True),
        ("evil.example:8000", False),
        ("localhost.evil.example", False),
        ("", False),
    ],
)
def test_host_allow_list(header: str, ok: bool) -> None:
    assert HostAllowList("0.0.0.0", ()).allows(header) is ok


def test_host_allow_list_bind_address_and_extras() -> None:
    hosts = HostAllowList("10.1.2.3", ("agent.numascope.svc", ".cluster.local", "[fd00::5]:80"))
    assert hosts.allows("10.1.2.3:8000")
    assert hosts.allows("agent.numascope.svc")
    assert hosts.allows("node-a.agents.cluster.local:8000")
    assert hosts.allows("[fd00::5]")
    assert not hosts.allows("10.1.2.4")
    assert HostAllowList(None, ("*",)).allows("anything.example")
    assert split_host("[::1]:80") == ("::1", "80")


def test_foreign_host_is_refused_but_probes_answer(tmp_path: Path) -> None:
    # A page on a rebound DNS name (Host: evil.example) cannot read the API.
    app = create_app(make_settings(tmp_path, allowed_hosts=()))
    with TestClient(app, base_url="http://evil.example") as c:
        r = c.get("/api/v1/nodes")
        assert r.status_code == 400
        assert r.json()["error"]["field"] == "Host"
        assert "NUMASCOPE_ALLOWED_HOSTS" in r.json()["error"]["message"]
        assert c.get("/healthz").status_code == 200  # liveness says only "ok"
        # Readiness and metrics name the database and the nodes: not to a foreign name.
        for path in ("/readyz", "/metrics"):
            r = c.get(path)
            assert r.status_code == 400, path
            assert "NUMASCOPE_ALLOWED_HOSTS" in r.text
        assert c.post("/api/v1/nodes", json={}).status_code == 400
    with TestClient(app, base_url="http://localhost:8000") as c:
        assert c.get("/api/v1/nodes").status_code == 200


# -- cross-site ---------------------------------------------------------------------------------------

# What Chromium sends for a form post or a no-cors fetch from another site.
CROSS_SITE = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}


@pytest.mark.parametrize(
    "headers",
    [
        CROSS_SITE,
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://localhost:9999"},  # another port of localhost: same-site, not us
        {"Origin": "null"},  # sandboxed iframes and file:// pages
    ],
    ids=["browser", "fetch-metadata-only", "other-port", "null-origin"],
)
def test_cross_site_api_writes_are_refused(small: TestClient, headers: dict[str, str]) -> None:
    r = small.post("/api/v1/nodes/small/pods", content=DB_POD, headers={**YAML, **headers})
    assert r.status_code == 403, r.text
    assert r.json()["error"]["reason"] == "Forbidden"
    assert _pods(small) == []
    small.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    assert small.delete("/api/v1/nodes/small/pods/prod/db", headers=headers).status_code == 403
    assert small.delete("/api/v1/nodes/small", headers=headers).status_code == 403
    assert _pods(small) == ["prod/db"]


def test_cross_site_form_posts_are_refused(small: TestClient) -> None:
    r = small.post(
        "/nodes",
        data={"name": "x", "topology": SMALL, "csrf_token": "guess"},
        headers=CROSS_SITE,
        follow_redirects=False,
    )
    assert r.status_code == 403
    assert small.post("/nodes/small/delete", headers=CROSS_SITE).status_code == 403
    assert small.get("/api/v1/nodes/small").status_code == 200


def test_same_origin_requests_pass(small: TestClient) -> None:
    headers = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin", **YAML}
    r = small.post("/api/v1/nodes/small/pods", content=DB_POD, headers=headers)
    assert r.status_code == 201, r.text


def test_clients_without_browser_headers_pass(small: TestClient) -> None:
    # The CLI, curl and the hub's httpx client send neither Origin nor Sec-Fetch-Site.
    r = small.post("/api/v1/nodes/small/pods", json={"manifest": DB_POD})
    assert r.status_code == 201, r.text


# -- CSRF tokens of the forms ------------------------------------------------------------------------


def test_forms_need_the_token_of_the_cookie(nodes: NodeService, tmp_path: Path) -> None:
    nodes.create("small", SMALL, POD_SCOPE)
    with TestClient(nodes_app := create_app(make_settings(tmp_path / "b"))) as c:
        assert nodes_app is not None
        page = c.get("/nodes")
        cookie = page.headers["set-cookie"]
        assert cookie.startswith(f"{cookie_name('')}=")
        assert "SameSite=Strict" in cookie and "HttpOnly" in cookie
        match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert match is not None
        token = match.group(1)
        form = {"name": "made", "topology": SMALL, "kubelet_config": "", "release": "1.37"}
        r = c.post("/nodes", data=form, follow_redirects=False)
        assert r.status_code == 403
        assert r.headers["content-type"].startswith("text/html")
        r = c.post("/nodes", data={**form, "csrf_token": "x" * 43}, follow_redirects=False)
        assert r.status_code == 403
        r = c.post("/nodes", data={**form, "csrf_token": token}, follow_redirects=False)
        assert r.status_code == 303, r.text
        assert c.get("/api/v1/nodes/made").status_code == 200
        # The page's later responses keep the same cookie (no new Set-Cookie).
        assert "set-cookie" not in c.get("/nodes").headers


def test_every_post_form_carries_the_token(small: TestClient) -> None:
    small.post("/api/v1/nodes/small/pods", content=DB_POD, headers=YAML)
    paths = ("/nodes", "/nodes/small", "/nodes/small/delete", "/checkpoints")
    for path in paths:
        html = small.get(path).text
        forms = re.findall(r"<form\b[^>]*method=\"post\"[^>]*>(.*?)</form>", html, re.S)
        assert forms, path
        for body in forms:
            assert 'name="csrf_token"' in body, path


def test_multipart_upload_form_needs_the_token(client: TestClient) -> None:
    files = {"file": ("cpu_manager_state", b'{"policyName":"none","defaultCpuSet":""}')}
    client.headers.pop("x-csrf-token")
    assert client.post("/checkpoints", files=files).status_code == 403
    token = client.cookies.get(cookie_name(""))
    r = client.post("/checkpoints", files=files, data={"csrf_token": token})
    assert r.status_code == 200, r.text


# -- body types and limits ---------------------------------------------------------------------------


def test_pages_take_only_forms(small: TestClient) -> None:
    r = small.post("/nodes", json={"name": "x"})
    assert r.status_code == 415


def test_body_size_limit(small: TestClient) -> None:
    r = small.post("/api/v1/nodes/small/pods", content=b"a" * (3 * 1024 * 1024), headers=YAML)
    assert r.status_code == 413
    assert r.json()["error"]["reason"] == "RequestEntityTooLarge"


@pytest.mark.parametrize(
    "body",
    [
        '{"manifest": "x", "deep": ' + "[" * 1000 + "]" * 1000 + "}",
        '{"apiVersion": "v1", "kind": "Pod", "n": ' + "9" * 5000 + "}",
    ],
    ids=["deep", "digits"],
)
def test_json_bodies_are_scanned_before_decoding(small: TestClient, body: str) -> None:
    headers = {"Content-Type": "application/json"}
    r = small.post("/api/v1/nodes/small/pods", content=body, headers=headers)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "body"
    r = small.post(
        "/api/v1/nodes",
        content=body.replace('"manifest": "x"', '"name": "n", "topology": "laptop-1s"'),
        headers=headers,
    )
    assert r.status_code == 422


# -- response headers ---------------------------------------------------------------------------------


def test_every_response_has_nosniff(small: TestClient) -> None:
    for path in ("/api/v1/nodes", "/nodes.json", "/healthz", "/openapi.json", "/nodes", "/nope"):
        r = small.get(path)
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert "content-security-policy" in r.headers, path
    assert (
        small.get("/api/v1/nodes")
        .headers["content-security-policy"]
        .startswith("default-src 'none'")
    )


def test_docs_have_a_csp_without_inline_scripts(client: TestClient) -> None:
    r = client.get("/docs")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1]
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", r.text, re.S)
    assert scripts and all("src=" in attrs and not body.strip() for attrs, body in scripts)
    assert client.get("/static/js/swagger-init.js").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/nodes", "GET, POST"),
        ("PATCH", "/api/v1/nodes", "GET, POST"),
        ("POST", "/api/v1/nodes/small", "GET, DELETE"),
        ("PUT", "/checkpoints", "GET, POST"),
    ],
)
def test_allow_names_every_method_of_the_path(
    small: TestClient, method: str, path: str, allow: str
) -> None:
    r = small.request(method, path)
    assert r.status_code == 405
    assert r.headers["allow"] == allow
    # Each method named is served (not 405), each other one is not.
    for m in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        served = small.request(m, path, follow_redirects=False).status_code != 405
        assert served is (m in allow.split(", ")), m


@pytest.mark.parametrize(
    "host", ["10.244.1.7:8000", "10.244.1.7", "[fd00::5]:8000", "[fd00::5]"], ids=str
)
def test_probes_by_pod_ip_pass_without_being_listed(tmp_path: Path, host: str) -> None:
    """The kubelet's probes and Prometheus send the pod IP as Host; a rebinding page sends
    a DNS name, so an IP literal is answered on the probe paths (and only there)."""
    app = create_app(make_settings(tmp_path, allowed_hosts=()))
    with TestClient(app) as c:
        for path in ("/healthz", "/readyz", "/metrics"):
            assert c.get(path, headers={"Host": host}).status_code in (200, 503), path
        assert c.get("/readyz", headers={"Host": host}).json()["checks"]["database"] == "ok"
        assert c.get("/api/v1/nodes", headers={"Host": host}).status_code == 400
        assert c.get("/nodes", headers={"Host": host}).status_code == 400
        assert c.post("/metrics", headers={"Host": host}).status_code == 400


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/glossary", "GET"),
        ("/nodes/small/history", "GET"),
        ("/topologies/laptop-1s", "GET"),
    ],
)
def test_post_on_a_page_only_route_is_405_not_403(small: TestClient, path: str, allow: str) -> None:
    assert small.get(path).status_code == 200, path
    for headers in ({}, {"x-csrf-token": "wrong"}, {"content-type": "application/json"}):
        r = small.post(path, headers=headers, content=b"{}" if headers else None)
        assert r.status_code == 405, (path, headers, r.text)
        assert r.headers["allow"] == allow
    # A form route still wants its token.
    assert small.post("/nodes", headers={"x-csrf-token": "wrong"}).status_code == 403


def test_openapi_bodies_are_the_ones_the_guard_accepts(small: TestClient) -> None:
    spec = small.get("/openapi.json").json()
    bodies = {
        (method, path): sorted(op["requestBody"]["content"])
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if "requestBody" in op
    }
    assert bodies[("post", "/api/v1/nodes/{node}/pods")] == ["application/json", "application/yaml"]
    assert bodies[("post", "/api/v1/fleet/fit")] == ["application/json", "application/yaml"]
    for (method, path), types in bodies.items():
        url = path.replace("{node}", "small")
        for media in types:  # every advertised type gets past the guard (no 415)
            r = small.request(method.upper(), url, content=b"x: 1", headers={"content-type": media})
            assert r.status_code != 415, (path, media, r.text)
    r = small.post(
        "/api/v1/nodes/small/pods", content=DB_POD, headers={"content-type": "text/plain"}
    )
    assert r.status_code == 415

"""The cached JSON fast path (``app.web.fast_json``): the same answers as the routes, taken
only for bytes at hand, still guarded, compressed and counted, and never stale when another
worker changed the node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import app.web.fast_json as fast_json
from app.services.demo import classic_pod
from app.settings import Settings
from app.web.app import create_app

YAML = {"Content-Type": "application/yaml"}
PATHS = [
    "/api/v1/nodes/small",
    "/api/v1/nodes/small/podresources",
    "/api/v1/nodes/small/podresources/ns/a",
    "/api/v1/nodes/small/allocatable",
]


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the fast path answered, in order."""
    seen: list[str] = []
    real = fast_json.encoded_response

    def counting(request: Any, encoded: Any, **kw: Any) -> Any:
        seen.append(request.url.path)
        return real(request, encoded, **kw)

    monkeypatch.setattr(fast_json, "encoded_response", counting)
    return seen


def _headers(r: Any) -> dict[str, str]:
    return {k: v for k, v in r.headers.items() if k not in ("date", "server")}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_the_same_answer_as_the_route(
    small_node: TestClient, taken: list[str], path: str, encoding: str
) -> None:
    accept = {"Accept-Encoding": encoding}
    routed = small_node.get(path, headers=accept)  # first: the route encodes the bytes
    assert routed.status_code == 200 and taken == []
    fast = small_node.get(path, headers=accept)
    assert taken == [path]
    assert fast.status_code == 200
    assert fast.content == routed.content
    assert _headers(fast) == _headers(routed)
    # A query string always goes the router's way (it ignores unknown parameters).
    again = small_node.get(f"{path}?via=router", headers=accept)
    assert taken == [path] and again.content == routed.content
    assert _headers(again) == _headers(routed)
    tag = routed.headers["etag"]
    fast304 = small_node.get(path, headers={**accept, "If-None-Match": tag})
    routed304 = small_node.get(f"{path}?x=1", headers={**accept, "If-None-Match": tag})
    assert fast304.status_code == routed304.status_code == 304
    assert _headers(fast304) == _headers(routed304) and fast304.content == b""
    assert taken == [path, path]


def test_only_bytes_at_hand(small_node: TestClient, taken: list[str]) -> None:
    # Unknown node or pod, HEAD, other methods: the router's answers, not the fast path's.
    assert small_node.get("/api/v1/nodes/nope/podresources").status_code == 404
    assert small_node.get("/api/v1/nodes/small/podresources/ns/zz").status_code == 404
    trailing = small_node.get("/api/v1/nodes/small/podresources/", follow_redirects=False)
    assert trailing.status_code == 307
    small_node.get("/api/v1/nodes/small/allocatable")
    assert small_node.head("/api/v1/nodes/small/allocatable").status_code in (200, 405)
    assert small_node.post("/api/v1/nodes/small/allocatable").status_code == 405
    assert taken == []
    small_node.get("/api/v1/nodes/small/allocatable")
    assert taken == ["/api/v1/nodes/small/allocatable"]
    # A change: the next answer is built by the route again, then served fast.
    r = small_node.post(
        "/api/v1/nodes/small/pods", content=classic_pod("c", "ns", "1", "1Gi"), headers=YAML
    )
    assert r.status_code == 201
    fresh = small_node.get("/api/v1/nodes/small/allocatable")
    assert len(taken) == 1 and fresh.status_code == 200
    small_node.get("/api/v1/nodes/small/allocatable")
    assert len(taken) == 2


def test_guarded_and_counted(small_node: TestClient, taken: list[str]) -> None:
    path = "/api/v1/nodes/small/podresources"
    small_node.get(path)
    r = small_node.get(path)
    assert taken == [path]
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in r.headers["content-security-policy"]
    foreign = small_node.get(path, headers={"Host": "evil.example"})
    assert foreign.status_code == 400 and foreign.json()["error"]["field"] == "Host"
    assert taken == [path]  # refused before it
    metrics = small_node.get("/metrics").text
    line = next(
        x
        for x in metrics.splitlines()
        if x.startswith("numascope_http_requests_total{")
        and 'route="/api/v1/nodes/{node}/podresources"' in x
        and 'status="200"' in x
    )
    assert float(line.rsplit(" ", 1)[1]) == 2.0


@pytest.fixture
def second_worker(settings: Settings) -> Iterator[TestClient]:
    """Another app on the same database and state directory: a second worker."""
    other: FastAPI = create_app(settings)
    with TestClient(other) as c:
        yield c


def test_never_stale_after_a_change_through_another_worker(
    small_node: TestClient, second_worker: TestClient, taken: list[str], tmp_path: Path
) -> None:
    path = "/api/v1/nodes/small/podresources"
    small_node.get(path)
    before = small_node.get(path)
    assert taken == [path] and len(before.json()["podResources"]) == 2
    r = second_worker.post(
        "/api/v1/nodes/small/pods", content=classic_pod("c", "ns", "1", "1Gi"), headers=YAML
    )
    assert r.status_code == 201, r.text
    after = small_node.get(path)
    assert len(after.json()["podResources"]) == 3
    assert after.headers["etag"] != before.headers["etag"]
    assert second_worker.delete("/api/v1/nodes/small").status_code == 204
    assert small_node.get(path).status_code == 404
    assert small_node.get("/api/v1/nodes/small").status_code == 404

"""JSON answers from bytes encoded once per node version (issue 10 pt 1): the same JSON as the
view models, strong ETags, 304 on If-None-Match, new tags after a change, gzip when accepted."""

from __future__ import annotations

import gzip
import json

import pytest
from fastapi.testclient import TestClient

from app.services.demo import classic_pod
from app.services.encoded_json import EncodedJSON, EncodedMemo, encode
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.service import NodeService

YAML = {"Content-Type": "application/yaml"}
NO_GZIP = {"Accept-Encoding": "identity"}


@pytest.fixture
def node(small_node: TestClient, nodes: NodeService) -> NodeService:
    return nodes


def _expected(nodes: NodeService) -> dict[str, object]:
    """Each cached path and the JSON its view model gives (what FastAPI sent before)."""
    return {
        "/api/v1/nodes": NodeCatalog(nodes).index().model_dump(mode="json"),
        "/nodes.json": NodeCatalog(nodes).index().model_dump(mode="json"),
        "/api/v1/nodes/small": nodes.reads.node_detail("small").model_dump(mode="json"),
        "/nodes/small.json": nodes.reads.node_view("small").model_dump(mode="json"),
        "/nodes/small/pods/ns/a.json": nodes.reads.pod_view("small", "ns", "a").model_dump(
            mode="json"
        ),
        "/api/v1/nodes/small/podresources": nodes.reads.podresources_list("small"),
        "/api/v1/nodes/small/podresources/ns/b": nodes.reads.podresources_get("small", "ns", "b"),
        "/api/v1/nodes/small/allocatable": nodes.reads.allocatable("small"),
    }


def test_cached_answers_equal_the_view_models(client: TestClient, node: NodeService) -> None:
    for path, expected in _expected(node).items():
        r = client.get(path, headers=NO_GZIP)
        assert r.status_code == 200, path
        assert r.headers["content-type"] == "application/json", path
        assert r.json() == expected, path
        assert (
            r.content == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode()
        ), path  # key order as the models give it


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nodes",
        "/api/v1/nodes/small",
        "/nodes/small.json",
        "/nodes/small/pods/ns/a.json",
        "/api/v1/nodes/small/podresources",
        "/api/v1/nodes/small/podresources/ns/a",
        "/api/v1/nodes/small/allocatable",
    ],
)
def test_strong_etag_and_304(client: TestClient, node: NodeService, path: str) -> None:
    first = client.get(path, headers=NO_GZIP)
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")
    assert first.headers["cache-control"] == "no-cache"
    assert client.get(path, headers=NO_GZIP).headers["etag"] == etag
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        r = client.get(path, headers={**NO_GZIP, "If-None-Match": header})
        assert r.status_code == 304, header
        assert r.content == b"" and r.headers["etag"] == etag
    stale = client.get(path, headers={**NO_GZIP, "If-None-Match": '"other"'})
    assert stale.status_code == 200 and stale.content == first.content


def test_a_change_gives_new_tags(client: TestClient, node: NodeService) -> None:
    paths = ["/api/v1/nodes/small", "/nodes/small.json", "/api/v1/nodes/small/podresources"]
    before = {p: client.get(p, headers=NO_GZIP).headers["etag"] for p in paths}
    r = client.post(
        "/api/v1/nodes/small/pods", content=classic_pod("c", "ns", "1", "1Gi"), headers=YAML
    )
    assert r.status_code == 201, r.text
    for p in paths:
        r = client.get(p, headers={**NO_GZIP, "If-None-Match": before[p]})
        assert r.status_code == 200, p
        assert r.headers["etag"] != before[p]
    # The node JSON twin follows its Recent admissions, which dry runs stay out of (issue 21
    # point 5, deliberately changed): a dry run leaves the twin as it was.
    tag = client.get("/nodes/small.json", headers=NO_GZIP).headers["etag"]
    r = client.post(
        "/api/v1/nodes/small/pods?dryRun=true",
        content=classic_pod("d", "ns", "1", "1Gi"),
        headers=YAML,
    )
    assert r.status_code == 200, r.text
    r = client.get("/nodes/small.json", headers={**NO_GZIP, "If-None-Match": tag})
    assert r.status_code == 304
    body = client.get("/nodes/small.json", headers=NO_GZIP).json()
    assert body["admissions"][0]["action"] == "admit"


def test_bytes_are_encoded_once_per_version(node: NodeService) -> None:
    first = node.reads.podresources_list_json("small")
    assert node.reads.podresources_list_json("small") is first
    assert node.reads.node_detail_json("small") is node.reads.node_detail_json("small")
    assert node.reads.pod_view_json("small", "ns", "a") is node.reads.pod_view_json(
        "small", "ns", "a"
    )
    node.remove_pod("small", "ns", "a")
    assert node.reads.podresources_list_json("small") is not first


def test_gzip_when_accepted(client: TestClient, node: NodeService) -> None:
    path = "/nodes/small.json"
    plain = client.get(path, headers=NO_GZIP)
    assert "content-encoding" not in plain.headers
    r = client.get(path, headers={"Accept-Encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in r.headers["vary"].lower()
    assert r.content == plain.content  # httpx decodes; the bytes sent were smaller
    assert r.num_bytes_downloaded < len(plain.content) / 3
    tag = r.headers["etag"]
    assert tag != plain.headers["etag"] and tag.endswith('-gz"')
    again = client.get(path, headers={"Accept-Encoding": "gzip", "If-None-Match": tag})
    assert again.status_code == 304
    refused = client.get(path, headers={"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.headers


def test_pages_and_errors_are_compressed_too(client: TestClient, node: NodeService) -> None:
    page = client.get("/nodes/small", headers={"Accept-Encoding": "gzip"})
    assert page.status_code == 200 and page.headers["content-encoding"] == "gzip"
    assert "<html" in page.text
    css = client.get("/static/css/numascope.css", headers={"Accept-Encoding": "gzip"})
    assert css.headers["content-encoding"] == "gzip"
    missing = client.get("/api/v1/nodes/small/podresources/ns/nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["reason"] == "NotFound"
    unknown = client.get("/api/v1/nodes/nope/podresources", headers={"If-None-Match": "*"})
    assert unknown.status_code == 404


def test_encoded_json_units() -> None:
    e = encode({"b": [1, 2], "a": "é"})
    assert e.body == '{"b":[1,2],"a":"é"}'.encode()
    assert e.etag == encode({"b": [1, 2], "a": "é"}).etag != encode({"a": "é"}).etag
    assert gzip.decompress(e.gzipped()) == e.body and e.gzipped() is e.gzipped()
    assert not e.matches('"x"') and e.matches(f" {e.gzip_etag} ")
    with pytest.raises(ValueError):
        encode({"x": float("nan")})
    memo = EncodedMemo(limit=2)
    calls: list[int] = []

    def build(n: int) -> dict[str, int]:
        calls.append(n)
        return {"n": n}

    one = memo.get(1, lambda: build(1))
    assert memo.get(1, lambda: build(1)) is one and calls == [1]
    memo.get(2, lambda: build(2))
    memo.get(3, lambda: build(3))
    assert len(memo) == 2
    assert isinstance(memo.get(1, lambda: build(1)), EncodedJSON) and calls == [1, 2, 3, 1]


def test_peek_answers_only_bytes_at_hand(node: NodeService) -> None:
    assert node.reads.peek_json("small", "allocatable") is None  # never encoded yet
    made = node.reads.allocatable_json("small")
    assert node.reads.peek_json("small", "allocatable") is made
    assert node.reads.peek_json("small", "detail") is None
    assert node.reads.peek_json("small", "detail") is None  # peeking encodes nothing
    detail = node.reads.node_detail_json("small")
    assert node.reads.peek_json("small", "detail") is detail
    assert node.reads.peek_json("nope", "allocatable") is None
    node.remove_pod("small", "ns", "a")  # a new version: the old bytes are not served
    assert node.reads.peek_json("small", "allocatable") is None
    assert node.reads.allocatable_json("small") is not made


def test_answers_without_gzip_say_vary_as_before(client: TestClient, node: NodeService) -> None:
    """Without gzip accepted, a body that would have been compressed still says ``Vary:
    Accept-Encoding`` (caches keep the two forms apart), whether it passes straight through
    (whole JSON of known length) or through Starlette's identity responder (pages); small
    bodies do not."""
    from app.web.app import GZIP_MINIMUM

    big = client.get("/nodes/small.json", headers=NO_GZIP)
    assert len(big.content) >= GZIP_MINIMUM
    assert "accept-encoding" in big.headers["vary"].lower()
    assert "content-encoding" not in big.headers
    page = client.get("/nodes/small", headers=NO_GZIP)
    assert "accept-encoding" in page.headers["vary"].lower()
    small = client.get("/healthz", headers=NO_GZIP)
    assert len(small.content) < GZIP_MINIMUM
    assert "accept-encoding" not in small.headers.get("vary", "").lower()

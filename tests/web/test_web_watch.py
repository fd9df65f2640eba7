"""``GET /api/v1/nodes/{node}/watch``: the change token a node page polls (ETag, 304 while
unchanged), for a simulated node (changes through the API) and for an observed node whose
kubelet state changes on disk and over PodResources; the node page carries the same token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.services.fleet.agent_summary import etag_matches
from app.web.app import create_app
from tests.fixtures.kubelet_host import KubeletHost
from tests.helpers import act_as_browser, make_settings

NODE = "demo-pod-scope"
OBSERVED = "worker-live"
YAML = {"Content-Type": "application/yaml"}
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: extra, namespace: shop}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
"""


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path, demo=True, watch_interval=2.5))) as c:
        yield act_as_browser(c)


@pytest.fixture
def host() -> Iterator[KubeletHost]:
    h = KubeletHost(OBSERVED)
    try:
        yield h
    finally:
        h.close()


def _watch(c: TestClient, node: str, etag: str | None = None) -> tuple[int, dict, str]:
    headers = {"If-None-Match": etag} if etag else {}
    r = c.get(f"/api/v1/nodes/{node}/watch", headers=headers)
    assert r.headers["cache-control"] == "no-cache"
    return r.status_code, (r.json() if r.status_code == 200 else {}), r.headers["etag"]


def test_simulated_node_token_changes_with_each_admission_and_removal(demo: TestClient) -> None:
    status, body, etag = _watch(demo, NODE)
    assert status == 200 and body["node"] == NODE and body["source"] == "simulated"
    assert etag == f'"{body["token"]}"' and body["token"].startswith("s-")

    r = demo.get(f"/api/v1/nodes/{NODE}/watch", headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.content == b"" and r.headers["etag"] == etag

    # A dry run changes nothing; an admission and then a removal each give a new token.
    assert demo.post(f"/api/v1/nodes/{NODE}/pods?dryRun=true", content=POD, headers=YAML).is_success
    assert _watch(demo, NODE, etag)[0] == 304
    assert demo.post(f"/api/v1/nodes/{NODE}/pods", content=POD, headers=YAML).status_code == 201
    status, _, etag2 = _watch(demo, NODE, etag)
    assert status == 200 and etag2 != etag
    assert demo.delete(f"/api/v1/nodes/{NODE}/pods/shop/extra").is_success
    status, _, etag3 = _watch(demo, NODE, etag2)
    assert status == 200 and etag3 not in (etag, etag2)


def test_node_page_carries_the_token_and_interval(demo: TestClient) -> None:
    _, body, _ = _watch(demo, NODE)
    html = demo.get(f"/nodes/{NODE}").text
    box = re.search(r'<div class="watch" id="watch" hidden(.*?)>', html, re.S)
    assert box is not None
    attrs = dict(re.findall(r'(data-watch-[a-z]+)="([^"]*)"', box.group(1)))
    assert attrs == {
        "data-watch-url": f"/api/v1/nodes/{NODE}/watch",
        "data-watch-token": body["token"],
        "data-watch-interval": "2.5",
        "data-watch-regions": "node-lede facts cpu-map pools pods observation",
    }
    for region in ("node-lede", "facts", "cpu-map", "pools", "pods"):
        assert f'id="{region}"' in html
    assert '<script src="/static/js/watch.js" defer>' in html
    assert demo.get("/static/js/watch.js").status_code == 200


def test_unknown_node_is_404(demo: TestClient) -> None:
    r = demo.get("/api/v1/nodes/nope/watch")
    assert r.status_code == 404 and r.json()["error"]["reason"] == "NotFound"
    assert "nope" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        ('"s-1-2"', True),
        ('W/"s-1-2"', True),
        ('"x", "s-1-2"', True),
        ("*", True),
        ('"s-1-3"', False),
        ("", False),
        ("s-1-2", False),  # an entity tag is quoted
    ],
)
def test_if_none_match(header: str, matches: bool) -> None:
    assert etag_matches(header, '"s-1-2"') is matches


def test_observed_node_token_follows_the_kubelet_not_the_clock(
    host: KubeletHost, tmp_path: Path
) -> None:
    app = create_app(host.settings(tmp_path))
    observer = app.state.observer
    observer.ttl = 0.0  # every request observes again
    with TestClient(app) as c:
        status, body, etag = _watch(c, OBSERVED)
        assert status == 200 and body["source"] == "observed" and body["token"].startswith("o-")
        seen = observer.observations
        # Observed again (new observation times), nothing changed: still 304.
        assert _watch(c, OBSERVED, etag)[0] == 304
        assert _watch(c, OBSERVED, etag)[0] == 304
        assert observer.observations >= seen + 2

        # The kubelet admits a pod: state files and PodResources change, so does the token.
        host.admit(POD)
        status, _, etag2 = _watch(c, OBSERVED, etag)
        assert status == 200 and etag2 != etag
        assert 'data-pod="shop/extra"' in c.get(f"/nodes/{OBSERVED}").text
        assert _watch(c, OBSERVED, etag2)[0] == 304

        # And removes it again: back to the first state, so back to the first token.
        host.remove("shop", "extra")
        status, body3, _ = _watch(c, OBSERVED, etag2)
        assert status == 200 and body3["token"] == body["token"]


def test_observed_page_token_is_the_watch_token(host: KubeletHost, tmp_path: Path) -> None:
    with TestClient(create_app(host.settings(tmp_path))) as c:
        html = c.get(f"/nodes/{OBSERVED}").text
        _, body, _ = _watch(c, OBSERVED)
        assert f'data-watch-token="{body["token"]}"' in html


def test_observed_node_that_cannot_be_observed_is_503(host: KubeletHost, tmp_path: Path) -> None:
    settings = host.settings(tmp_path, sysfs_root=tmp_path / "no-sysfs")
    with TestClient(create_app(settings)) as c:
        r = c.get(f"/api/v1/nodes/{OBSERVED}/watch")
        assert r.status_code == 503
        assert f"node {OBSERVED} cannot be observed" in r.json()["error"]["message"]


def test_pod_page_carries_the_token_and_its_regions(demo: TestClient) -> None:
    _, body, _ = _watch(demo, NODE)
    html = demo.get(f"/nodes/{NODE}/pods/frontend/web").text
    assert f'data-watch-token="{body["token"]}"' in html
    regions = "pod-facts breakdown containers cpu-map podresources history"
    assert f'data-watch-regions="{regions}"' in html
    for region in regions.split():
        assert f'id="{region}"' in html

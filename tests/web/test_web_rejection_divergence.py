"""The rejection page of the tutorial's container-scope-mixed pod says the documentation
describes it admitted and names the upstream file that rejects it (HTML and JSON twin)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.domain.doc_divergences import TUTORIAL_URL
from tests.helpers import SMALL
from tests.web.html_helpers import hrefs, with_attr

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
YAML = {"Content-Type": "application/yaml"}


def test_rejection_page_tells_docs_from_code(client: TestClient) -> None:
    # 1.36: from 1.37 (kubernetes#138770) the pod is admitted as the tutorial shows it; this
    # ran on 1.38 before #138770 was modelled.
    config = (FIXTURES / "kubelet" / "container-scope-single-numa.yaml").read_text()
    r = client.post(
        "/api/v1/nodes",
        json={"name": "cs", "topology": SMALL, "kubeletConfig": config, "release": "1.36"},
    )
    assert r.status_code == 201, r.text
    manifest = (FIXTURES / "pods" / "scenarios" / "container-scope-mixed.yaml").read_text()
    r = client.post("/api/v1/nodes/cs/pods", content=manifest, headers=YAML)
    assert r.status_code == 200 and r.json()["admitted"] is False
    events = client.get("/nodes/cs/history.json").json()["events"]
    (rejected,) = [e for e in events if not e["admitted"]]

    view = client.get(rejected["explainUrl"] + ".json").json()
    (d,) = view["divergences"]
    assert d["key"] == "container-scope-memory-default-hint"
    assert d["docsUrl"] == TUTORIAL_URL
    assert d["upstreamUrl"].endswith(
        "/blob/release-1.36/pkg/kubelet/cm/memorymanager/policy_static.go"
    )

    page = client.get(rejected["explainUrl"])
    assert page.status_code == 200
    (aside,) = with_attr(page.text, "data-divergence", "aside")
    assert aside["data-divergence"] == "container-scope-memory-default-hint"
    start = page.text.index('<aside class="docs-divergence"')
    block = page.text[start : page.text.index("</aside>", start)]
    assert TUTORIAL_URL in hrefs(block) and d["upstreamUrl"] in hrefs(block)
    assert "pkg/kubelet/cm/memorymanager/policy_static.go" in block
    assert "worker-1, worker-2" in block


def test_plain_rejection_has_no_divergence(client: TestClient) -> None:
    config = (FIXTURES / "kubelet" / "container-scope-single-numa.yaml").read_text()
    assert (
        client.post(
            "/api/v1/nodes", json={"name": "cs", "topology": SMALL, "kubeletConfig": config}
        ).status_code
        == 201
    )
    big = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  containers:\n  - name: c\n"
        "    resources: {limits: {cpu: '40', memory: 1Gi}}\n"
    )
    client.post("/api/v1/nodes/cs/pods", content=big, headers=YAML)
    events = client.get("/nodes/cs/history.json").json()["events"]
    (rejected,) = [e for e in events if not e["admitted"]]
    assert client.get(rejected["explainUrl"] + ".json").json()["divergences"] == []
    assert "docs-divergence" not in client.get(rejected["explainUrl"]).text

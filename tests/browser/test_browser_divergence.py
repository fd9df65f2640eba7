"""A rejection the documentation describes otherwise, in Debian's chromium: the rejection page
of the tutorial's container-scope-mixed pod shows the note with both links, above the numbers,
and the kubelet metrics page of the node is plain Prometheus text. Screenshot in
test-artifacts/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from app.domain.doc_divergences import TUTORIAL_URL
from app.services.history.replay import log_rows
from tests.browser.axe import describe, require_axe, violations
from tests.helpers import SMALL, make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    server = live_server(make_settings(tmp_path_factory.mktemp("browser-div")))
    nodes = server.app.state.nodes
    config = (FIXTURES / "kubelet" / "container-scope-single-numa.yaml").read_text()
    nodes.create("cs", SMALL, config, "1.36")  # 1.37 admits it (kubernetes#138770)
    manifest = (FIXTURES / "pods" / "scenarios" / "container-scope-mixed.yaml").read_text()
    assert not nodes.admit("cs", manifest).admitted
    return server


def test_rejection_page_shows_the_documentation_note(
    page: Any, served: LiveServer, screenshot: Screenshots, page_errors: list[str]
) -> None:
    (row,) = [r for r in log_rows(served.app.state.nodes, "cs") if not r.admitted]
    page.goto(f"{served.url}/nodes/cs/rejections/{row.seq}")
    note = page.locator("aside.docs-divergence")
    assert note.is_visible()
    assert "documentation" in note.locator("h2").inner_text().lower()
    hrefs = note.locator("a").evaluate_all("els => els.map(e => e.href)")
    assert TUTORIAL_URL in hrefs
    assert any(
        h.endswith("/release-1.36/pkg/kubelet/cm/memorymanager/policy_static.go") for h in hrefs
    )
    # The note comes before the per-NUMA numbers, right under the verdict.
    note_y = note.bounding_box()["y"]
    assert note_y < page.locator("#numa-free").bounding_box()["y"]
    screenshot(page, "rejection-docs-divergence", full_page=False)
    assert page_errors == []
    require_axe()
    found = violations(page)
    assert found == [], describe(found)


def test_kubelet_metrics_page_is_prometheus_text(page: Any, served: LiveServer) -> None:
    response = page.goto(f"{served.url}/nodes/cs/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    body = page.locator("body").inner_text()
    assert "kubelet_memory_manager_pinning_errors_total 1" in body

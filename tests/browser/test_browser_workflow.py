"""The SRE workflow in Debian's chromium: confirmations (one click changes nothing), the
rejected pod's page reached from the log, the placement after Dry run, history and diff.
Every page at a 390 px phone width: test_browser_a11y.py. Screenshots in test-artifacts/."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "demo-pod-scope"
SMALL_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: tiny, namespace: shop}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    return live_server(make_settings(tmp_path_factory.mktemp("browser-wf"), demo=True))


def test_confirm_rejection_page_and_placement(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    base = served.url
    page.goto(f"{base}/nodes/{NODE}")
    # Delete asks first: the click opens a confirmation page and the node stays.
    page.get_by_role("button", name=f"Delete node {NODE}…").click()
    page.wait_for_url(f"{base}/nodes/{NODE}/delete*")  # a GET form: "?" at the end
    screenshot(page, "confirm-delete")
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"{base}/nodes/{NODE}")

    # The rejected demo pod's log row leads to its explanation.
    page.locator(".admissions-table a.explain-link").first.click()
    expect(page.locator("h1")).to_contain_text("ml/empty-shared-pool")
    # Addressed by the node's own number, as History numbers it (issue 21 point 7).
    assert page.url == f"{base}/nodes/{NODE}/rejections/5"
    expect(page.locator(".breadcrumb [aria-current=page]")).to_have_text("#5")
    # The actual cause, named (issue 21 point 6), and the budget as the pod asks for it.
    expect(page.locator("#cause")).to_contain_text("No CPU left for the pod shared pool")
    # The engine's reason under this policy and the other policies' one, as the glossary says.
    expect(page.locator("#cause")).to_contain_text("rejects it with TopologyAffinityError")
    expect(page.locator("#cause")).to_contain_text("EmptyPodSharedPoolError")
    expect(page.locator(".asked-for")).to_contain_text("a 4-CPU budget of which 3+1 are exclusive")
    expect(page.locator(".numa-free-table")).not_to_contain_text("CPUs yes")
    expect(page.locator(".numa-free-table tbody tr")).to_have_count(4)
    expect(page.locator("#what-would-fit li").first).to_contain_text("instead of")
    screenshot(page, "rejection-page")
    page.reload()
    expect(page.locator("#hints .unit-hints")).to_have_count(1)

    # Dry run answers with where the pod would go.
    page.goto(f"{base}/nodes/{NODE}")
    page.locator("#manifest").fill(SMALL_POD)
    page.get_by_role("button", name="Dry run", exact=True).click()
    expect(page.locator(".placement")).to_contain_text("Would get CPUs")
    screenshot(page.locator("#admit"), "dry-run-placement")

    # History and a diff between the creation and the last change.
    page.goto(f"{base}/nodes/{NODE}/history")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator(".diff-table tr[data-change='added']")).to_have_count(4)
    screenshot(page, "diff")

    # A bare diff (no from/to) compares the creation with the last change, not a raw 422.
    response = page.goto(f"{base}/nodes/{NODE}/diff")
    assert response is not None and response.status == 200
    expect(page.locator("h1")).to_have_text(f"What changed on {NODE}")
    expect(page.locator(".diff-table tr[data-change='added']")).to_have_count(4)
    screenshot(page, "diff-bare", full_page=False)

    # The glossary names both reasons of an empty pod shared pool, as the engine gives them.
    page.goto(f"{base}/glossary")
    pool = page.locator("dd", has_text="A pod budget minus its containers")
    expect(pool).to_contain_text("TopologyAffinityError")
    expect(pool).to_contain_text("EmptyPodSharedPoolError")
    assert page_errors == []

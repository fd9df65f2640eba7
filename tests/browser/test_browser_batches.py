"""A 3,000-pod ``List`` dry run in Debian's chromium (issue 21 point 5): totals first (would be
admitted, would be rejected by reason), a page of verdicts and a pager that swaps in place, and
afterwards Recent admissions without a dry-run row and History with one event for it.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from app.services.nodes.service import NodeService
from tests.browser.axe import describe, violations
from tests.factories import pod_list
from tests.helpers import POD_SCOPE, SMALL, make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "small"
PODS = 3000


@pytest.fixture
def served(tmp_path: Any, live_server: Callable[..., LiveServer]) -> LiveServer:
    # 3,000 dry runs take several seconds on a loaded 2-core machine: a budget to match.
    server = live_server(make_settings(tmp_path, cpu_time_budget=150.0))
    service: NodeService = server.app.state.nodes
    service.create(NODE, SMALL, POD_SCOPE, "1.37")
    return server


def test_a_3000_pod_dry_run_shows_totals_first(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{served.url}/nodes/{NODE}")
    admit = page.locator("#admit")
    # Fill the textarea without typing 3,000 pods key by key.
    admit.locator("#manifest").evaluate("(el, text) => { el.value = text; }", pod_list(PODS))
    admit.get_by_role("button", name="Dry run").click()
    verdicts = page.locator("#batch-verdicts")
    expect(verdicts).to_have_attribute("data-total", str(PODS), timeout=120_000)
    expect(verdicts.get_by_role("heading")).to_contain_text("3,000 pods")
    # 12 CPUs, 1 reserved: 11 one-CPU pods would be admitted, every other one rejected.
    expect(verdicts.locator('[data-count="admitted"]')).to_have_text("11")
    expect(verdicts.locator('[data-count="rejected"]')).to_have_text("2,989")
    expect(
        verdicts.locator('.batch-reasons li[data-reason="TopologyAffinityError"]')
    ).to_contain_text("2,989")
    expect(verdicts.locator(".admit-verdict")).to_have_count(25)
    totals = verdicts.locator(".batch-totals").bounding_box()
    first = verdicts.locator(".admit-verdict").first.bounding_box()
    assert totals["y"] < first["y"]  # totals first
    expect(verdicts.locator(".admit-verdict .placement")).to_have_count(11)
    screenshot(admit, "batch-3000-totals")

    verdicts.get_by_role("link", name="Next ›").click()
    expect(verdicts).to_contain_text("Verdicts 26–50 of 3,000")
    expect(verdicts.locator('.admit-verdict[data-pod="batch/p25"]')).to_have_count(1)

    # Recent admissions hold no dry-run row; History has one event for the 3,000 verdicts.
    expect(page.locator(".admissions-table tr[data-action='dry-run']")).to_have_count(0)
    page.goto(f"{served.url}/nodes/{NODE}/history")
    rows = page.locator("table.history-table tbody tr[data-action='dry-run']")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("3,000 pods")
    expect(rows.first).to_contain_text("11 would be admitted, 2,989 would be rejected")
    screenshot(page, "batch-3000-history")
    rows.first.get_by_role("link", name="3,000 pods").click()
    expect(page.locator("h1")).to_have_text("Dry run of 3,000 pods on small")
    found = violations(page)
    assert found == [], describe(found)
    assert page_errors == []

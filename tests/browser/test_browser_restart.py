"""The restart rehearsal panel in Debian's chromium (Playwright): rehearse an upgrade to 1.38
(maps before and after side by side, the pod restored), a downgrade whose kubelet does not
start (its error and the recovery steps), then apply the upgrade (the node runs 1.38); the
maps stack at phone width.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from app.services.nodes.service import NodeService
from tests.helpers import DB_POD, POD_SCOPE, SMALL, make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "small"


@pytest.fixture
def served(tmp_path: pytest.TempPathFactory, live_server: Callable[..., LiveServer]) -> LiveServer:
    server = live_server(make_settings(tmp_path))  # type: ignore[arg-type]
    service: NodeService = server.app.state.nodes
    service.create(NODE, SMALL, POD_SCOPE, "1.37")
    service.admit(NODE, DB_POD)
    return server


def test_rehearse_then_apply_an_upgrade(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{served.url}/nodes/{NODE}")
    panel = page.locator("#restart")
    expect(panel.get_by_role("heading", name="Rehearse a kubelet restart, upgrade or downgrade"))
    panel.get_by_label("Kubelet release").select_option("1.38")
    panel.get_by_label("PodLevelResourceManagers").select_option("on")
    panel.get_by_role("button", name="Rehearse (dry run)").click()

    before, after = page.locator("#restart-before"), page.locator("#restart-after")
    expect(after).to_be_visible()
    expect(page.locator("#restart-before-title")).to_have_text("Before: kubelet 1.37")
    expect(page.locator("#restart-after-title")).to_have_text("After: kubelet 1.38")
    b, a = before.bounding_box(), after.bounding_box()
    assert a["x"] > b["x"] + b["width"] / 2 and abs(a["y"] - b["y"]) < 5  # side by side
    row = panel.locator('tr[data-pod="prod/db"]')
    expect(row).to_have_attribute("data-outcome", "restored")
    # The pod's exclusive CPUs are painted by the same owner before and after.
    owned_before = before.locator('li.cpu[data-pool="exclusive"]').evaluate_all(
        "els => els.map(e => e.dataset.cpu)"
    )
    owned_after = after.locator('li.cpu[data-pool="exclusive"]').evaluate_all(
        "els => els.map(e => e.dataset.cpu)"
    )
    assert owned_before and owned_before == owned_after
    expect(panel.get_by_text("dry run: nothing kept")).to_be_visible()
    screenshot(panel, "restart-rehearsal-138")

    panel.get_by_label("Kubelet release").select_option("1.36")
    panel.get_by_role("button", name="Rehearse (dry run)").click()
    verdict = panel.locator('.restart-verdict[data-started="false"]')
    expect(verdict).to_contain_text("A 1.36 kubelet does not start on these files")
    expect(verdict).to_contain_text("start memory manager error")
    expect(verdict.locator("ol.recovery li")).to_have_count(5)
    # pods named and linked, memory humanised (issue 21 point 2), the node named in the drain
    lost = panel.locator(".restart-lost")
    expect(lost).to_contain_text("podEntries of prod/db (memory 8 GiB on NUMA ")
    expect(lost.get_by_role("link", name="prod/db")).to_have_attribute(
        "href", f"/nodes/{NODE}/pods/prod/db"
    )
    expect(verdict.locator("ol.recovery li").first).to_contain_text(f"kubectl drain {NODE} ")
    expect(verdict).to_contain_text("safely restores standard container allocations")
    screenshot(panel, "restart-rehearsal-136-refused")

    panel.get_by_label("Kubelet release").select_option("1.38")
    # "Restart the kubelet" asks first, like Remove and Delete (issue 21 point 4): Cancel
    # changes nothing.
    panel.get_by_role("button", name="Restart the kubelet").click()
    confirm = page.locator(".confirm-box")
    expect(confirm.get_by_role("heading")).to_have_text(
        f"Restart the kubelet of node {NODE} as 1.38?"
    )
    expect(confirm).to_contain_text("The node runs kubelet 1.37 now")
    expect(confirm).to_contain_text("rehearsed: 1 restored")
    screenshot(page, "restart-confirm")
    confirm.get_by_role("link", name="Cancel").click()
    expect(page.locator("p.lede")).to_contain_text("kubelet 1.37 configuration")

    panel.get_by_label("Kubelet release").select_option("1.38")
    panel.get_by_role("button", name="Restart the kubelet").click()
    page.locator(".confirm-box").get_by_role("button", name="Restart the kubelet as 1.38").click()
    expect(panel.locator('.restart-verdict[data-applied="true"]')).to_contain_text(
        "Restarted: the node runs kubelet 1.38 now"
    )
    # The page's map shows the restarted node, and still the pod.
    expect(page.locator("#cpu-map li.cpu[data-pool='exclusive']")).to_have_count(len(owned_before))
    page.goto(f"{served.url}/nodes/{NODE}")
    expect(page.locator("p.lede")).to_contain_text("kubelet 1.38 configuration")
    # The restart is in History, with its maps before and after; and it can be undone.
    expect(page.locator('#undo[data-undo="restart"]')).to_contain_text("kubelet 1.37 → 1.38")
    page.goto(f"{served.url}/nodes/{NODE}/history")
    # The history chart draws (issue 21 "Beyond"), the restart marked on it.
    chart = page.locator("#history-chart img")
    expect(chart).to_be_visible()
    assert chart.evaluate("img => img.complete && img.naturalWidth") > 300
    screenshot(page.locator("#history-chart"), "history-chart")
    row = page.locator('tr[data-action="restart"]')
    expect(row).to_contain_text("kubelet restart · 1.37 → 1.38 (PodLevelResourceManagers on)")
    row.get_by_role("link", name="before and after").click()
    expect(page.locator("h1")).to_contain_text("What changed")
    screenshot(page, "restart-history-diff")
    assert page_errors == []


def test_maps_stack_at_phone_width(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{served.url}/nodes/{NODE}")
    panel = page.locator("#restart")
    panel.get_by_label("Kubelet release").select_option("1.38")
    panel.get_by_role("button", name="Rehearse (dry run)").click()
    before, after = page.locator("#restart-before"), page.locator("#restart-after")
    expect(after).to_be_visible()
    b, a = before.bounding_box(), after.bounding_box()
    assert a["y"] >= b["y"] + b["height"] - 1  # stacked
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    screenshot(panel, "restart-rehearsal-phone")
    assert page_errors == []

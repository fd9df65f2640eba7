"""Click through the dashboard in Debian's chromium (Playwright) and look at the CPU map.

Browser, live server, page and screenshots come from conftest.py (skipped without chromium
unless NUMASCOPE_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from app.domain.presets import get_preset
from app.web.rendering import HTMX_VERSION
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

PRESET = "topoDualSocketHT"  # 2 sockets, 2 NUMA nodes, 12 CPUs


@pytest.fixture(scope="module")
def base_url(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> str:
    return live_server(make_settings(tmp_path_factory.mktemp("browser"))).url


def test_click_through_to_a_topology_and_see_every_cpu(
    page: Any, page_errors: list[str], base_url: str, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    topo = get_preset(PRESET)

    page.goto(f"{base_url}/")
    expect(page.get_by_role("heading", name="Topologies")).to_be_visible()
    page.get_by_role("link", name=PRESET, exact=True).click()
    page.wait_for_url(f"{base_url}/topologies/{PRESET}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(PRESET)

    cells = page.locator("[data-cpu]")
    expect(cells).to_have_count(topo.num_cpus)
    cpu7 = page.locator('[data-cpu="7"]')
    expect(cpu7).to_be_visible()
    expect(cpu7).to_have_text("7")
    assert cpu7.get_attribute("data-numa") == str(topo.cpu_details[7].numa_node_id)
    numa_ids = {cells.nth(i).get_attribute("data-numa") for i in range(cells.count())}
    assert numa_ids == {"0", "1"}
    expect(page.locator("[data-numa-memory]")).to_have_count(2)
    expect(page.get_by_role("link", name="JSON")).to_have_attribute(
        "href", f"/topologies/{PRESET}.json"
    )

    # htmx is the vendored 2.x and the same URL gives the CPU-map fragment.
    assert page.evaluate("() => htmx.version") == HTMX_VERSION
    page.evaluate(
        "() => htmx.ajax('GET', location.pathname, {target: '#topology-map', swap: 'outerHTML'})"
    )
    expect(page.locator("#topology-map")).to_have_count(1)
    expect(cells).to_have_count(topo.num_cpus)
    expect(page.locator("header.site-header")).to_have_count(1)

    screenshot(page, f"topology-{PRESET}")

    # The 512-thread server stays readable: every label present, cells not squashed.
    page.goto(f"{base_url}/topologies/server-2s-8numa-512t")
    expect(page.locator("[data-cpu]")).to_have_count(512)
    box = page.locator('[data-cpu="511"]').bounding_box()
    assert box is not None and box["width"] >= 20 and box["height"] >= 12
    screenshot(page, "topology-server-2s-8numa-512t")
    assert page_errors == []

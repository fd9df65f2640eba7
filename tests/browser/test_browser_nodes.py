"""Click through the demo pod-scope node in Debian's chromium (Playwright): the CPU map's owners,
a rejected pod's reason and message, an admitted pod's CPUs appearing, the pod breakdown, and
the 512-thread node staying readable.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from app.services.nodes.service import NodeService
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "demo-pod-scope"
REJECTED = """\
apiVersion: v1
kind: Pod
metadata:
  name: greedy
  namespace: shop
spec:
  resources:
    requests: {cpu: "4", memory: 4Gi}
    limits: {cpu: "4", memory: 4Gi}
  initContainers:
  - name: logger
    image: logger:1
    restartPolicy: Always
  containers:
  - name: main
    image: main:1
    resources:
      requests: {cpu: "4", memory: 4Gi}
      limits: {cpu: "4", memory: 4Gi}
"""
ADMITTED = """\
apiVersion: v1
kind: Pod
metadata:
  name: checkout
  namespace: shop
spec:
  resources:
    requests: {cpu: "6", memory: 6Gi}
    limits: {cpu: "6", memory: 6Gi}
  initContainers:
  - name: envoy
    image: envoy:1
    restartPolicy: Always
  containers:
  - name: api
    image: api:1
    resources:
      requests: {cpu: "4", memory: 4Gi}
      limits: {cpu: "4", memory: 4Gi}
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    """The app with its demo nodes."""
    return live_server(make_settings(tmp_path_factory.mktemp("browser-nodes"), demo=True))


def test_pod_scope_node_map_rejection_admission_and_breakdown(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    base_url = served.url
    service: NodeService = served.app.state.nodes

    page.goto(f"{base_url}/")
    expect(page.get_by_role("heading", name="Nodes", exact=True)).to_be_visible()
    page.get_by_role("link", name=NODE, exact=True).click()
    page.wait_for_url(f"{base_url}/nodes/{NODE}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(NODE)
    expect(page.get_by_role("heading", level=1)).to_contain_text("simulated")

    # The database's exclusive container and its pod shared pool, cell by cell.
    snapshot = service.reads.snapshot(NODE)
    db = snapshot.pod("databases", "tightly-coupled-database")
    assert db is not None
    database = next(c for c in db.containers if c.name == "database")
    cells = page.locator("#cpu-map [data-cpu]")
    expect(cells).to_have_count(snapshot.topology.num_cpus)
    for cpu in database.cpuset:
        cell = page.locator(f'#cpu-map [data-cpu="{cpu}"]')
        expect(cell).to_have_attribute("data-pool", "exclusive")
        expect(cell).to_have_attribute("data-owner", "databases/tightly-coupled-database/database")
        expect(cell).to_contain_text(str(cpu))
    for cpu in db.shared_pool():
        cell = page.locator(f'#cpu-map [data-cpu="{cpu}"]')
        expect(cell).to_have_attribute("data-pool", "pod-shared")
        expect(cell).to_have_attribute("data-owner", "databases/tightly-coupled-database")
    first = page.locator(f'#cpu-map [data-cpu="{next(iter(database.cpuset))}"]')
    first.hover()  # the hover text is made from the cell's data and the legend
    assert "isolation container" in (first.get_attribute("title") or "")
    expect(page.locator('#cpu-map [data-cpu="0"]')).to_have_attribute("data-pool", "reserved")
    screenshot(page, "node-demo-pod-scope")

    # A pod whose exclusive containers take the whole budget: rejected, reason and message.
    page.locator("#manifest").fill(REJECTED)
    page.get_by_role("button", name="Admit", exact=True).click()
    rejected = page.locator('#admit-result [data-admitted="false"]')
    expect(rejected).to_be_visible()
    expect(rejected).to_contain_text("TopologyAffinityError")
    expect(rejected).to_contain_text(
        "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
    )
    expect(rejected).to_contain_text("shop/greedy")
    expect(page.locator('#cpu-map [data-cpu][data-owner^="shop/"]')).to_have_count(0)
    rejected.scroll_into_view_if_needed()
    screenshot(page, "node-rejected", full_page=False)

    # A dry run judges and keeps nothing (htmx sends the clicked button's action).
    page.locator("#manifest").fill(ADMITTED)
    page.get_by_role("button", name="Dry run", exact=True).click()
    expect(page.locator('#admit-result [data-admitted="true"]')).to_contain_text(
        "Would be admitted"
    )
    expect(page.locator('#cpu-map [data-cpu][data-owner^="shop/"]')).to_have_count(0)
    assert service.reads.snapshot(NODE).pod("shop", "checkout") is None

    # An admissible pod: its CPUs appear in the map without a page load (htmx OOB swap).
    page.locator("#manifest").fill(ADMITTED)
    page.get_by_role("button", name="Admit", exact=True).click()
    admitted = page.locator('#admit-result [data-admitted="true"]')
    expect(admitted).to_contain_text("shop/checkout")
    expect(page.locator('#cpu-map [data-cpu][data-owner="shop/checkout/api"]')).to_have_count(4)
    expect(page.locator('#cpu-map [data-cpu][data-owner="shop/checkout"]')).to_have_count(2)
    expect(page.locator('#pods [data-pod="shop/checkout"]')).to_have_count(1)
    kept = service.reads.snapshot(NODE).pod("shop", "checkout")
    assert kept is not None
    api = next(c for c in kept.containers if c.name == "api")
    for cpu in api.cpuset:
        expect(page.locator(f'#cpu-map [data-cpu="{cpu}"]')).to_have_attribute(
            "data-pool", "exclusive"
        )
    # The watch script swaps the map in again after the page's own change: scroll in one step.
    page.evaluate("document.getElementById('cpu-map').scrollIntoView()")
    screenshot(page, "node-admitted")

    # The pod breakdown, reached from the verdict's link.
    admitted.get_by_role("link", name="shop/checkout").click()
    page.wait_for_url(f"{base_url}/nodes/{NODE}/pods/shop/checkout")
    expect(page.get_by_role("heading", level=1)).to_contain_text("shop/checkout")
    parts = page.locator("[data-part]")
    expect(parts).to_have_count(2)
    expect(parts.nth(0)).to_contain_text("api")
    expect(parts.nth(1)).to_contain_text("envoy")
    expect(page.locator('#containers [data-container="api"]')).to_have_attribute(
        "data-isolation", "container"
    )
    expect(page.locator("#podresources pre")).to_contain_text('"podResources"')
    expect(page.locator('#cpu-map [data-cpu][data-owner="shop/checkout/api"]')).to_have_count(4)
    screenshot(page, "pod-shop-checkout")

    # Removing it asks first (one click changes nothing), then frees its CPUs.
    page.get_by_role("button", name="Remove pod shop/checkout").click()
    page.wait_for_url(f"{base_url}/nodes/{NODE}/pods/shop/checkout/remove*")
    page.get_by_role("button", name="Remove pod shop/checkout").click()
    page.wait_for_url(f"{base_url}/nodes/{NODE}#pods")
    expect(page.locator('#cpu-map [data-cpu][data-owner^="shop/"]')).to_have_count(0)
    for cpu in api.cpuset:
        expect(page.locator(f'#cpu-map [data-cpu="{cpu}"]')).to_have_attribute(
            "data-pool", "node-shared"
        )
    assert page_errors == []


def test_the_512_thread_node_stays_readable(
    page: Any, served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{served.url}/nodes/demo-512")
    cells = page.locator("#cpu-map [data-cpu]")
    expect(cells).to_have_count(512)
    for cpu in ("0", "255", "511"):
        box = page.locator(f'#cpu-map [data-cpu="{cpu}"]').bounding_box()
        assert box is not None and box["width"] >= 20 and box["height"] >= 20, (cpu, box)
    # Labels are not clipped: the id and the tag (drawn from data-tag) fit their cell.
    widths = page.evaluate(
        """() => [...document.querySelectorAll('#cpu-map .cpu')]
              .filter(e => e.scrollWidth > e.clientWidth + 1).length"""
    )
    assert widths == 0
    screenshot(page.locator("#cpu-map .socket").first, "node-demo-512-socket0")
    screenshot(page, "node-demo-512")


def test_artifacts_folder_is_the_shared_one(screenshot: Screenshots) -> None:
    assert screenshot.folder.name == "test-artifacts"

"""Find on the 512-thread demo node in Debian's chromium (Playwright): the search box filters
the paged pods table on the server as one types (name, namespace, QoS, NUMA node, CPU id),
the whole list one click away; pointing at a pod row or a legend entry lights its CPUs on the
map (a click pins it, Escape lets go); a CPU's hover text names its owner and a click on it
leads to the owner's page.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from app.domain.cpuset import CPUSet
from app.services.nodes.service import NodeService
from app.services.pod_find import PAGE_SIZE
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "demo-512"
EXTRA = 30  # Burstable pods added to the demo's, so the table has more than a page


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    server = live_server(make_settings(tmp_path_factory.mktemp("browser-find"), demo=True))
    service: NodeService = server.app.state.nodes
    manifests = "---\n".join(
        f"metadata: {{name: web-{i}, namespace: shop}}\n"
        "spec: {containers: [{name: app, resources: {requests: {cpu: 100m}}}]}\n"
        for i in range(EXTRA)
    )
    assert all(r.admitted for r in service.admit(NODE, manifests).results)
    return server


def _cells_lit(page: Any) -> list[str]:
    return list(
        page.evaluate(
            "() => [...document.querySelectorAll('#cpu-map .cpu.hl')].map(c => c.dataset.cpu)"
        )
    )


def test_find_filters_the_paged_table(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    service: NodeService = served.app.state.nodes
    total = len(service.reads.snapshot(NODE).pods)
    page.goto(f"{served.url}/nodes/{NODE}")
    rows = page.locator("#pods tbody tr[data-pod]")
    expect(rows).to_have_count(PAGE_SIZE)
    expect(page.locator("#pods-list .pods-count")).to_contain_text(f"of {total}.")

    box = page.get_by_label("Find pods")
    box.fill("telco")  # as one types: htmx asks the server after a short pause
    expect(rows).to_have_count(4)
    keys = sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.pod)"))
    assert keys == ["telco/dpdk-testpmd", "telco/ptp-daemon", "telco/upf-0", "telco/upf-1"]
    screenshot(page.locator("#pods"), "find-telco")

    ptp = service.reads.snapshot(NODE).pod("telco", "ptp-daemon")
    assert ptp is not None
    cpu = min(ptp.exclusive_cpus())
    box.fill(str(cpu))  # a CPU id leads to its owner
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-pod", "telco/ptp-daemon")

    views = service.reads.views(NODE)
    on_numa_7 = {r.key for r in views.pods if 7 in r.numa_nodes}
    box.fill("numa:7 qos:guaranteed")
    expect(rows).to_have_count(len(on_numa_7))
    assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.pod)")) == on_numa_7

    box.fill("cpu:nonsense")
    expect(page.locator('#pods-list [data-field="q"]')).to_contain_text("is not a CPU list")

    box.fill("")
    expect(page.locator('#pods-list [data-field="q"]')).to_have_count(0)
    expect(rows).to_have_count(PAGE_SIZE)
    page.get_by_role("link", name=f"Show all {total}").click()
    expect(rows).to_have_count(total)
    page.get_by_role("link", name=f"Show {PAGE_SIZE} a page").click()
    expect(rows).to_have_count(PAGE_SIZE)
    page.get_by_role("link", name="Next ›").click()
    expect(rows).to_have_count(total - PAGE_SIZE)
    assert page_errors == []


def test_rows_and_legend_light_their_cpus_and_a_cpu_leads_to_its_owner(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    service: NodeService = served.app.state.nodes
    snap = service.reads.snapshot(NODE)
    pod = snap.pod("ai", "inference-0")
    assert pod is not None and pod.pod_cpuset is not None
    bubble = sorted(str(c) for c in pod.pod_cpuset)
    page.goto(f"{served.url}/nodes/{NODE}")
    cpu_map = page.locator("#cpu-map")

    # Hover the pod's row: exactly its bubble is lit, the rest is dimmed.
    row = page.locator('#pods tr[data-pod="ai/inference-0"]')
    row.locator("td").first.hover()
    expect(cpu_map).to_have_class(lambda_has("highlighting"))
    assert sorted(_cells_lit(page)) == bubble
    page.mouse.move(0, 0)
    expect(cpu_map).not_to_have_class(lambda_has("highlighting"))

    # A click pins it through mouse moves; Escape lets go.
    row.locator("td").first.click()
    page.mouse.move(0, 0)
    assert sorted(_cells_lit(page)) == bubble
    expect(row).to_have_class(lambda_has("pinned"))
    page.locator(f'#cpu-map [data-cpu="{bubble[0]}"]').evaluate(
        "c => c.scrollIntoView({block: 'center'})"  # below the legend, which stays in view
    )
    screenshot(page, "find-row-pinned", full_page=False)
    page.keyboard.press("Escape")
    assert _cells_lit(page) == []

    # A legend entry lights its owner's CPUs (an exclusive container here).
    main = next(c for c in pod.containers if c.name == "model-server")
    entry = page.locator('#cpu-map .legend-item[data-owner="ai/inference-0/model-server"]')
    entry.hover()
    assert sorted(_cells_lit(page)) == sorted(str(c) for c in main.cpuset)
    page.mouse.move(0, 0)

    # A CPU says who owns it, and a click leads there.
    cpu = min(main.cpuset)
    cell = page.locator(f'#cpu-map [data-cpu="{cpu}"]')
    cell.hover()
    title = cell.get_attribute("title") or ""
    assert f"CPU id {cpu}" in title and "exclusive" in title
    assert "ai/inference-0 · model-server" in title and "isolation container" in title
    assert f"NUMA node {cell.get_attribute('data-numa')}" in title
    cell.click()
    page.wait_for_url(f"{served.url}/nodes/{NODE}/pods/ai/inference-0*")
    expect(page.get_by_role("heading", level=1)).to_contain_text("inference-0")
    assert page_errors == []


def lambda_has(name: str) -> Any:
    """A class matcher for ``to_have_class``: any class list holding ``name``."""
    import re

    return re.compile(rf"(^|\s){name}(\s|$)")


def test_find_beside_the_map_lights_the_matched_cpus_and_a_dry_run_its_placement(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    """Issue 21 point 7: the box above the map swaps the pods list below and lights what the
    matched pods hold; a CPU of the node shared pool belongs to no pod (the page says so); a
    dry run's placement is lit on the map."""
    from playwright.sync_api import expect

    service: NodeService = served.app.state.nodes
    snap = service.reads.snapshot(NODE)
    upf = snap.pod("telco", "upf-0")
    assert upf is not None
    held = sorted(str(c) for c in (upf.pod_cpuset or upf.exclusive_cpus()) | upf.exclusive_cpus())
    page.goto(f"{served.url}/nodes/{NODE}")
    cpu_map = page.locator("#cpu-map")
    top = page.locator("form.find-top")
    map_box, find_box = cpu_map.bounding_box(), top.bounding_box()
    assert find_box["y"] < map_box["y"]  # right above the map, not screens below it
    top.get_by_label("Look up a pod or CPU").fill("ns:telco name:upf-0")
    top.get_by_role("button", name="Find").click()
    expect(page.locator("#pods tbody tr[data-pod]")).to_have_count(1)
    expect(cpu_map).to_have_class(lambda_has("highlighting"))
    assert sorted(_cells_lit(page)) == held
    screenshot(page, "find-top-lit", full_page=False)

    shared = min(snap.default_cpuset - snap.reserved_cpus)
    top.get_by_label("Look up a pod or CPU").fill(f"cpu:{shared}")
    top.get_by_role("button", name="Find").click()
    expect(page.locator("#pods-list .find-note")).to_contain_text(
        f"CPU {shared} belongs to no pod: it is in the node shared pool"
    )
    expect(page.locator("#pods tbody tr[data-pod]")).to_have_count(0)
    expect(cpu_map).not_to_have_class(lambda_has("highlighting"))

    page.goto(f"{served.url}/nodes/{NODE}")
    page.locator("#manifest").fill(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: x}\nspec:\n  containers:\n"
        "  - name: c\n    resources: {limits: {cpu: '2', memory: 1Gi}}\n"
    )
    page.locator("#admit").get_by_role("button", name="Dry run", exact=True).click()
    placement = page.locator("#admit-result .placement")
    expect(placement).to_have_count(1)
    expect(cpu_map).to_have_class(lambda_has("highlighting"))
    want = CPUSet.parse(placement.get_attribute("data-cpus") or "")
    assert want.size() == 2 and sorted(_cells_lit(page)) == sorted(str(c) for c in want)
    assert page_errors == []

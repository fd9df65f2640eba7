"""Everyone, in Debian's chromium: every page passes axe-core's WCAG 2.1 AA rules (contrast
included) and fits a 390 px phone; the CPU map works from the keyboard (one Tab stop, arrows,
Home/End, Page Up/Down, Enter opens the owner) and names each CPU for screen readers; the
legend stays in view while the map scrolls under it. Screenshots in test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.axe import describe, violations
from tests.browser.layout import words_split_in_cells
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "demo-pod-scope"
# Every HTML page of the dashboard, on the demo nodes of a fresh database (log ids 1-5 are the
# pod-scope node's: four pods admitted, then the rejected one).
PAGES = [
    "/nodes",
    f"/nodes/{NODE}",
    "/nodes/demo-container-scope",
    "/nodes/demo-512",
    f"/nodes/{NODE}/pods/frontend/web",
    f"/nodes/{NODE}/pods/ml/training",
    f"/nodes/{NODE}/history",
    f"/nodes/{NODE}/history/2",
    f"/nodes/{NODE}/diff?from=0&to=4",
    f"/nodes/{NODE}/diff",
    "/search?q=cpu%3A37",
    f"/nodes/{NODE}/rejections/5",
    f"/nodes/{NODE}/delete",
    f"/nodes/{NODE}/pods/ml/training/remove",
    f"/nodes/{NODE}/restart?release=1.38&gate=on",
    "/demo/restore",
    "/glossary",
    "/checkpoints",
    "/topologies",
    "/topologies/server-2s-4numa-128t",
    "/nodes/no-such-node",
]


def _name(path: str) -> str:
    return path.strip("/").replace("/", "-").replace("?", "-").replace("&", "-") or "root"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    return live_server(make_settings(tmp_path_factory.mktemp("browser-a11y"), demo=True))


@pytest.mark.parametrize("path", PAGES, ids=_name)
def test_page_passes_wcag_aa(page: Any, served: LiveServer, path: str) -> None:
    response = page.goto(served.url + path)
    assert response is not None and response.status == (404 if "no-such" in path else 200)
    found = violations(page)
    assert found == [], f"{path}:\n{describe(found)}"


@pytest.mark.parametrize("path", PAGES, ids=_name)
def test_page_fits_a_phone(
    browser: Any, served: LiveServer, screenshot: Screenshots, path: str
) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(served.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width}px wide"
        # A wide table scrolls in its box; its cells keep their words whole.
        split = words_split_in_cells(page)
        assert split == [], f"{path}: words broken inside table cells: {split[:8]}"
        # The nav wraps: its last entry is on screen.
        box = page.locator(".site-header a", has_text="Metrics").bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390
        screenshot(page, "phone-" + _name(path), full_page=False)
    finally:
        page.close()


def _focused(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => { const e = document.activeElement;
              return {tag: e.tagName, cpu: e.dataset ? e.dataset.cpu : undefined,
                      numa: e.dataset ? e.dataset.numa : undefined,
                      owner: e.dataset ? e.dataset.owner : undefined,
                      label: e.getAttribute('aria-label'), title: e.getAttribute('title'),
                      top: e.getBoundingClientRect().top}; }"""
        )
    )


def test_cpu_map_from_the_keyboard(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{served.url}/nodes/{NODE}")
    cells = page.locator("#cpu-map li.cpu")
    total = cells.count()
    assert total == 128
    # One Tab stop for the whole map; the links inside cells are not Tab stops of their own.
    expect(page.locator('#cpu-map li.cpu[tabindex="0"]')).to_have_count(1)
    expect(page.locator('#cpu-map li.cpu[tabindex="-1"]')).to_have_count(total - 1)
    expect(
        page.locator('#cpu-map li.cpu a[tabindex="0"], #cpu-map li.cpu a:not([tabindex])')
    ).to_have_count(0)
    expect(page.locator("#cpu-map .keys-help")).to_contain_text("arrow keys")

    # Tab from the last legend link lands on the map's first CPU.
    page.locator("#cpu-map .legend a").last.focus()
    page.keyboard.press("Tab")
    first = _focused(page)
    assert first["tag"] == "LI" and first["cpu"] == cells.first.get_attribute("data-cpu")
    # Named as its tooltip says (or, for a cell without one, from its data attributes).
    assert first["label"] and first["cpu"] in first["label"]
    assert first["label"] == (first["title"] or first["label"])

    page.keyboard.press("ArrowRight")
    assert _focused(page)["cpu"] == cells.nth(1).get_attribute("data-cpu")
    page.keyboard.press("ArrowLeft")
    assert _focused(page)["cpu"] == first["cpu"]
    page.keyboard.press("ArrowDown")
    below = _focused(page)
    assert below["tag"] == "LI" and below["top"] > first["top"]
    page.keyboard.press("ArrowUp")
    assert _focused(page)["top"] == first["top"]

    # End: the NUMA node's last CPU; Page Down: the next NUMA node's first.
    page.keyboard.press("End")
    numa0 = page.locator('#cpu-map section.numa[data-numa="0"] li.cpu')
    assert _focused(page)["cpu"] == numa0.last.get_attribute("data-cpu")
    page.keyboard.press("PageDown")
    moved = _focused(page)
    assert moved["numa"] == "1"
    assert moved["cpu"] == page.locator(
        '#cpu-map section.numa[data-numa="1"] li.cpu'
    ).first.get_attribute("data-cpu")
    page.keyboard.press("Control+End")
    assert _focused(page)["cpu"] == cells.last.get_attribute("data-cpu")
    page.keyboard.press("Control+Home")
    assert _focused(page)["cpu"] == first["cpu"]
    # The Tab stop follows the focus, and Tab leaves the map.
    expect(page.locator('#cpu-map li.cpu[tabindex="0"]')).to_have_count(1)
    screenshot(page.locator("#cpu-map .numa").first, "keyboard-focus")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#cpu-map li.cpu') === null")

    # A cell without a tooltip is named from its data attributes.
    named = page.evaluate(
        """() => { const c = document.querySelector('#cpu-map li.cpu[data-pool="exclusive"]');
          c.removeAttribute('title'); c.removeAttribute('aria-label');
          document.dispatchEvent(new CustomEvent('numascope:refreshed'));
          return [c.dataset.cpu, c.dataset.numa, c.dataset.owner, c.getAttribute('aria-label')]; }"""
    )
    cpu, numa, owner_of, label = named
    assert label == f"CPU {cpu} · NUMA node {numa} · exclusive · {owner_of}"

    # Enter on an exclusive CPU opens its pod's page.
    owned = page.locator('#cpu-map li.cpu[data-pool="exclusive"]').first
    owner = owned.get_attribute("data-owner")
    assert owner
    owned.focus()
    page.keyboard.press("Enter")
    namespace, pod = owner.split("/")[:2]
    page.wait_for_url(re.compile(re.escape(f"{served.url}/nodes/{NODE}/pods/{namespace}/{pod}")))
    # The pod's page starts the map's Tab stop on the pod's own CPUs.
    stop = page.locator('#cpu-map li.cpu[tabindex="0"]')
    expect(stop).to_have_count(1)
    expect(stop).not_to_have_class("dim")
    assert page_errors == []


def test_legend_stays_in_view_while_the_map_scrolls(
    page: Any, served: LiveServer, screenshot: Screenshots
) -> None:
    page.goto(f"{served.url}/nodes/demo-512")
    legend = page.locator("#cpu-map .legend")
    start = legend.bounding_box()
    assert start is not None
    # Scroll to the middle of the 512-thread map: the legend sticks to the top of the window.
    page.evaluate(
        "() => { const m = document.getElementById('cpu-map').getBoundingClientRect();"
        " window.scrollTo(0, window.scrollY + m.top + m.height / 2); }"
    )
    page.wait_for_function("() => window.scrollY > 0")
    box = legend.bounding_box()
    assert box is not None and abs(box["y"]) <= 1, box
    # ...and is drawn above the cells (a cell under it is not what the point hits).
    hit = page.evaluate(
        "([x, y]) => !!document.elementFromPoint(x, y).closest('.legend')",
        [box["x"] + 5, box["y"] + box["height"] / 2],
    )
    assert hit
    screenshot(page, "legend-sticky", full_page=False)
    # Past the map, the legend scrolls away with it.
    page.evaluate("() => document.getElementById('pods').scrollIntoView({block: 'start'})")
    page.wait_for_function(
        "() => document.querySelector('#cpu-map .legend').getBoundingClientRect().bottom <= 0"
    )


REJECTED_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: shop}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "100", memory: 1Gi}, limits: {cpu: "100", memory: 1Gi}}
"""


def test_answers_pass_wcag_aa(page: Any, served: LiveServer, screenshot: Screenshots) -> None:
    """The states a page reaches by use, not only as loaded: an inline input error, a rejection
    with its reason, a dry run's placement, the checkpoint inspector's report."""
    from playwright.sync_api import expect

    from tests.fixtures.checkpoints.generate import HERE as CHECKPOINTS

    page.goto(f"{served.url}/nodes/{NODE}")
    form = page.locator("#admit")
    page.locator("#manifest").fill("kind: Pod\nmetadata: {name: Bad_Name}\n")
    page.get_by_role("button", name="Dry run", exact=True).click()
    expect(form.locator(".error-box, .inline-error, [role=alert]").first).to_be_visible()
    found = violations(page)
    assert found == [], "inline error:\n" + describe(found)

    page.locator("#manifest").fill(REJECTED_POD)
    page.get_by_role("button", name="Dry run", exact=True).click()
    expect(form).to_contain_text("TopologyAffinityError")
    screenshot(page, "a11y-rejection-answer", full_page=False)
    found = violations(page)
    assert found == [], "rejection:\n" + describe(found)

    page.goto(f"{served.url}/checkpoints")
    page.locator("#ckpt-file").set_input_files(
        str(CHECKPOINTS / "kubelet-1.36-gate-on" / "cpu_manager_state")
    )
    page.get_by_role("button", name="Inspect").first.click()
    expect(page.locator("#verdict-table")).to_be_visible()
    found = violations(page)
    assert found == [], "checkpoint report:\n" + describe(found)

"""The CPU map as a picture in Debian's chromium (issue 21 "Beyond"): ``/nodes/{node}/map.svg``
opens as an image document, draws every CPU of the 512-CPU demo node and names the owner of
CPU 37 (its tooltip, and the legend entry of the same owner); ``?at=ENTRY`` draws the node at
that point of its history; the node page and the history point page link to it, and to the
same picture as PNG, which downloads.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    return live_server(make_settings(tmp_path_factory.mktemp("browser-svg"), demo=True))


def test_the_svg_opens_and_names_the_owner_of_cpu_37(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    node = httpx.get(f"{served.url}/nodes/demo-512.json", timeout=30).json()["map"]
    owner = node["cells"]["37"]
    (entry,) = [e for e in node["legend"] if e["owner"] == owner["owner"]]
    assert owner["pool"] == "exclusive"  # a pod's container holds it on the demo node

    response = page.goto(f"{served.url}/nodes/demo-512/map.svg")
    assert response is not None and response.status == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert 'filename="demo-512-map.svg"' in response.headers["content-disposition"]
    svg = page.locator("svg")
    expect(svg).to_have_attribute("aria-label", "CPU map of demo-512")
    expect(page.locator("g.cpu")).to_have_count(512)
    cpu = page.locator('g.cpu[data-cpu="37"]')
    expect(cpu).to_have_attribute("data-owner", owner["owner"])
    expect(cpu.locator("title")).to_have_text(
        f"CPU 37 · exclusive · {entry['label']} · isolation {owner['isolation']}"
    )
    expect(cpu.locator("text").nth(1)).to_have_text(owner["tag"])  # the tag, not only colour
    legend = page.locator(f'g.legend-item[data-owner="{owner["owner"]}"]')
    expect(legend).to_contain_text(entry["label"])
    box = svg.bounding_box()
    assert box is not None and box["width"] <= 1410  # compact: no wider than a screen
    screenshot(svg, "map-svg-demo-512")
    assert page_errors == []


def test_a_point_in_history_and_the_links(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    node = "demo-pod-scope"
    page.goto(f"{served.url}/nodes/{node}")
    link = page.get_by_role("link", name="CPU map (SVG)")
    expect(link).to_have_attribute("href", f"/nodes/{node}/map.svg")
    expect(link).to_have_attribute("download", f"{node}-map.svg")

    page.goto(f"{served.url}/nodes/{node}/history/2")
    link = page.get_by_role("link", name="this map as SVG")
    expect(link).to_have_attribute("href", f"/nodes/{node}/map.svg?at=2")
    history = httpx.get(f"{served.url}/nodes/{node}/history/2.json", timeout=30).json()
    page.goto(f"{served.url}/nodes/{node}/map.svg?at=2")
    expect(page.locator("svg")).to_have_attribute("aria-label", f"CPU map of {node} at #2")
    owners = page.locator("g.legend-item").evaluate_all("els => els.map(e => e.dataset.owner)")
    assert owners == [e["owner"] for e in history["map"]["legend"]]
    screenshot(page.locator("svg"), "map-svg-history-2")
    assert httpx.get(f"{served.url}/nodes/{node}/map.svg?at=999").status_code == 404
    assert page_errors == []


def test_the_png_links_download_the_map(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots, tmp_path: Any
) -> None:
    """The node page's "CPU map (PNG)" and the history point's "this map as PNG" download the
    picture: a PNG Pillow reads back, twice the SVG's size, CPU 37 in its owner's colour."""
    from PIL import Image
    from playwright.sync_api import expect

    node = "demo-512"
    page.goto(f"{served.url}/nodes/{node}")
    link = page.get_by_role("link", name="CPU map (PNG)")
    expect(link).to_have_attribute("href", f"/nodes/{node}/map.png")
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == f"{node}-map.png"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    svg = httpx.get(f"{served.url}/nodes/{node}/map.svg", timeout=30).text
    width, height = (int(v) for v in re.findall(r'<svg [^>]*?width="(\d+)" height="(\d+)"', svg)[0])
    with Image.open(saved) as img:
        assert img.format == "PNG" and img.size == (2 * width, 2 * height)
        x, y = (
            float(v) for v in re.findall(r'data-cpu="37".*?<rect x="([\d.]+)" y="([\d.]+)"', svg)[0]
        )
        colour = img.getpixel((round((x + 3) * 2), round((y + 11) * 2)))
    cell = httpx.get(f"{served.url}/nodes/{node}.json", timeout=30).json()["map"]["cells"]["37"]
    # The page draws the same owner in the same colour (its .cN class on the map's cell).
    shown = page.locator('#cpu-map [data-cpu="37"]').first.evaluate(
        "e => getComputedStyle(e).getPropertyValue('--pc').trim()"
    )
    red, green, blue = colour[:3]
    assert f"#{red:02x}{green:02x}{blue:02x}" == shown.lower(), (colour, shown, cell)

    page.goto(f"{served.url}/nodes/demo-pod-scope/history/2")
    link = page.get_by_role("link", name="this map as PNG")
    with page.expect_download() as info:
        link.click()
    assert info.value.suggested_filename == "demo-pod-scope-map-at-2.png"
    screenshot(page, "history-point-png-link", full_page=False)
    assert page_errors == []


def test_slash_opens_the_search_which_names_a_cpus_owner(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    """Issue 21 "Beyond": "/" on any page opens the one search box; cpu:37 → its owner on
    every node; typing "/" in a field stays the field's."""
    from playwright.sync_api import expect

    from tests.browser.axe import describe, violations

    page.goto(f"{served.url}/nodes/demo-512")
    page.locator("#manifest").press("/")  # in a field: no navigation
    assert page.url.endswith("/nodes/demo-512")
    page.locator("h1").click()
    page.keyboard.press("/")
    page.wait_for_url(f"{served.url}/search")
    box = page.get_by_label("Nodes, pods, cpu:37 or pages")
    expect(box).to_be_focused()
    box.fill("cpu:37")
    box.press("Enter")
    hit = page.locator('.search-hits li[data-kind="cpu"]', has_text="demo-512")
    expect(hit).to_contain_text("CPU 37 on demo-512: telco/upf-1 · dataplane")
    screenshot(page, "search-cpu-37", full_page=False)
    found = violations(page)
    assert found == [], describe(found)
    hit.get_by_role("link").click()
    page.wait_for_url(f"{served.url}/nodes/demo-512/pods/telco/upf-1")
    assert page_errors == []

"""The CPU map as a PNG image (issue 21 "Beyond"): ``/nodes/{node}/map.png`` and ``?at=ENTRY``
draw the picture the SVG writes (one layout, ``map_picture``), at twice its size; Pillow reads
it back, CPU 37's cell has its owner's colour (the page's stylesheet, not the renderer's
palette), stripes and hatch are drawn, and the file names and errors are the SVG's."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.web.app import create_app
from tests.helpers import act_as_browser, make_settings

SVG = "{http://www.w3.org/2000/svg}"
CSS = Path(__file__).resolve().parents[2] / "static" / "css" / "nodes.css"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("p"), demo=True))) as c:
        yield act_as_browser(c)


def css_colour(index: int) -> tuple[int, int, int]:
    """The page's colour ``.cN`` (static/css/nodes.css) as RGB."""
    found = re.search(rf"\.c{index} {{ --pc: #([0-9a-f]{{6}}); }}", CSS.read_text())
    assert found, f".c{index} not in nodes.css"
    value = found.group(1)
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def png(client: TestClient, url: str) -> Image.Image:
    r = client.get(url)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "image/png"
    img = Image.open(io.BytesIO(r.content))
    img.load()
    assert img.format == "PNG"
    return img


def cell_rect(svg: str, cpu: int) -> tuple[float, float, float, float]:
    """x, y, width, height of the CPU's cell in the SVG."""
    root = ET.fromstring(svg.split("\n", 1)[1])
    (cell,) = [g for g in root.iter(f"{SVG}g") if g.get("data-cpu") == str(cpu)]
    rect = cell.find(f"{SVG}rect")
    assert rect is not None
    return tuple(float(rect.get(k, "nan")) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


def svg_size(svg: str) -> tuple[int, int]:
    found = re.search(r'<svg [^>]*width="(\d+)" height="(\d+)"', svg)
    assert found
    return int(found.group(1)), int(found.group(2))


def test_the_png_opens_has_twice_the_svgs_size_and_cpu_37_in_its_owners_colour(
    demo: TestClient,
) -> None:
    r = demo.get("/nodes/demo-512/map.png")
    assert 'filename="demo-512-map.png"' in r.headers["content-disposition"]
    img = png(demo, "/nodes/demo-512/map.png")
    svg = demo.get("/nodes/demo-512/map.svg").text
    width, height = svg_size(svg)
    assert img.size == (2 * width, 2 * height)
    cell = demo.get("/nodes/demo-512.json").json()["map"]["cells"]["37"]
    assert cell["pool"] == "exclusive"
    x, y, w, h = cell_rect(svg, 37)
    # Left of the id and the tag, inside the outline (the picture's x starts at -1).
    for dx, dy in ((2, h / 2), (w - 2, h / 2), (w / 2, 1.5)):
        px = round((x + 1 + dx) * 2), round((y + dy) * 2)
        assert img.getpixel(px)[:3] == css_colour(cell["colour"] % 12), (dx, dy)
    # White around the cells' NUMA boxes, ink in the title.
    assert img.getpixel((0, 0))[:3] == (255, 255, 255)
    colours = {c for _, c in img.crop((0, 0, 300, 50)).getcolors(100000) or []}
    assert (0x1B, 0x24, 0x30) in colours


def test_stripes_and_hatch_are_drawn(demo: TestClient) -> None:
    """A pod shared pool CPU is striped (its owner's colour and white), a reserved one hatched."""
    node = demo.get("/nodes/demo-pod-scope.json").json()["map"]["cells"]
    shared = next(c for c in node.values() if c["pool"] == "pod-shared")
    reserved = next(c for c in node.values() if c["pool"] == "reserved")
    img = png(demo, "/nodes/demo-pod-scope/map.png")
    svg = demo.get("/nodes/demo-pod-scope/map.svg").text
    for cell, wanted in (
        (shared, {css_colour(shared["colour"] % 12), (255, 255, 255)}),
        (reserved, {(0xE4, 0xE8, 0xEC), (0x9A, 0xA5, 0xB1)}),
    ):
        x, y, _, _ = cell_rect(svg, cell["id"])
        # the upper band of the cell, left of the id: pattern only
        box = (round((x + 2) * 2), round((y + 1.5) * 2), round((x + 7) * 2), round((y + 7) * 2))
        seen = {c for _, c in img.crop(box).getcolors(10000) or []}
        assert wanted <= seen, (cell["id"], seen)


def test_a_point_in_history_and_the_errors(demo: TestClient) -> None:
    node = "demo-pod-scope"
    r = demo.get(f"/nodes/{node}/map.png?at=2")
    assert 'filename="demo-pod-scope-map-at-2.png"' in r.headers["content-disposition"]
    img = png(demo, f"/nodes/{node}/map.png?at=2")
    width, height = svg_size(demo.get(f"/nodes/{node}/map.svg?at=2").text)
    assert img.size == (2 * width, 2 * height)
    assert demo.get(f"/nodes/{node}/map.png?at=999").status_code == 404
    assert demo.get("/nodes/no-such-node/map.png").status_code == 404
    bad = demo.get(f"/nodes/{node}/map.png?at=-1")
    assert bad.status_code == 422 and "at" in bad.text
    page = demo.get(f"/nodes/{node}").text
    assert f'href="/nodes/{node}/map.png" download="{node}-map.png">CPU map (PNG)</a>' in page
    point = demo.get(f"/nodes/{node}/history/2").text
    assert f'href="/nodes/{node}/map.png?at=2"' in point

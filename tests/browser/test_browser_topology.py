"""Click through the dashboard in Debian's chromium (Playwright) and look at the CPU map.

Skipped when the browser is missing, unless NUMASCOPE_REQUIRE_BROWSER=1 (CI), which makes a
missing browser a failure. Screenshots land in test-artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.domain.presets import get_preset
from app.settings import Settings
from app.web.app import create_app
from app.web.rendering import HTMX_VERSION

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("NUMASCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PRESET = "topoDualSocketHT"  # 2 sockets, 2 NUMA nodes, 12 CPUs


def _require_browser() -> None:
    if Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK):
        return
    reason = f"{CHROMIUM} is missing (install Debian's chromium: sh scripts/ensure-chromium.sh)"
    if os.environ.get("NUMASCOPE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A uvicorn server in a background thread on a free localhost port."""
    import uvicorn

    tmp = tmp_path_factory.mktemp("browser")
    settings = Settings(
        database_url=f"sqlite:///{tmp / 'numascope.db'}",
        sysfs_root=tmp / "no-sysfs",  # the host is not needed here
        cpuinfo=False,
        state_dir=tmp / "nodes",
        demo=False,
    )
    app = create_app(settings)
    # Listening before the thread starts: the browser's first connection waits in the backlog.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def test_click_through_to_a_topology_and_see_every_cpu(browser: object, base_url: str) -> None:
    from playwright.sync_api import Browser, expect

    assert isinstance(browser, Browser)
    topo = get_preset(PRESET)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

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

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"topology-{PRESET}.png"), full_page=True)

    # The 512-thread server stays readable: every label present, cells not squashed.
    page.goto(f"{base_url}/topologies/server-2s-8numa-512t")
    expect(page.locator("[data-cpu]")).to_have_count(512)
    box = page.locator('[data-cpu="511"]').bounding_box()
    assert box is not None and box["width"] >= 20 and box["height"] >= 12
    page.screenshot(path=str(ARTIFACTS / "topology-server-2s-8numa-512t.png"), full_page=True)
    assert problems == []
    page.close()

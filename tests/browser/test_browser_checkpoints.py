"""Upload a 1.36 pod-level CPU V3 file in Debian's chromium and read the verdict table.

Same conventions as test_browser_topology.py: skipped when the browser is missing unless
NUMASCOPE_REQUIRE_BROWSER=1; screenshots land in test-artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.settings import Settings
from app.web.app import create_app
from tests.fixtures.checkpoints.generate import HERE as FIXTURES
from tests.fixtures.checkpoints.generate import POD_B

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
V3 = FIXTURES / "kubelet-1.36-gate-on" / "cpu_manager_state"
EXPECTED = {
    "≤1.17": "will-fail",
    "1.18–1.35": "will-fail",
    "1.36 gate off": "will-fail",
    "1.36 gate on": "compatible",
    "1.37 gate off": "compatible-with-loss",
    "1.37 gate on": "compatible",
}


def _require_browser() -> None:
    if Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK):
        return
    reason = f"{CHROMIUM} is missing (install Debian's chromium: sh scripts/ensure-chromium.sh)"
    if os.environ.get("NUMASCOPE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A uvicorn server in a background thread; its kubelet root holds the 1.37 files."""
    import uvicorn

    tmp = tmp_path_factory.mktemp("browser-checkpoints")
    shutil.copytree(FIXTURES / "kubelet-1.37", tmp / "kubelet")
    settings = Settings(
        database_url=f"sqlite:///{tmp / 'numascope.db'}",
        sysfs_root=tmp / "no-sysfs",
        cpuinfo=False,
        state_dir=tmp / "nodes",
        kubelet_root=tmp / "kubelet",
        demo=False,
    )
    app = create_app(settings)
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


def _read_verdicts(page: object) -> dict[str, str]:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    rows = page.locator("#verdict-table tbody tr")
    out = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        label = row.locator("th").inner_text().strip()
        text = row.locator(".verdict").inner_text().strip()
        out[label] = text.split(" ", 1)[1]  # after the symbol
        assert row.get_attribute("data-verdict") == out[label]
    return out


def test_upload_a_v3_file_and_read_the_verdict_table(browser: object, base_url: str) -> None:
    from playwright.sync_api import Browser, expect

    assert isinstance(browser, Browser)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url}"))

    page.goto(f"{base_url}/checkpoints")
    expect(page.get_by_role("heading", name="Checkpoint inspector")).to_be_visible()
    expect(page.locator("[data-kubelet-file]")).to_have_count(2)

    # htmx: the form posts in the background and swaps the report in; the URL stays.
    page.locator("#ckpt-file").set_input_files(str(V3))
    page.get_by_role("button", name="Inspect").first.click()
    expect(page.locator("#verdict-table")).to_be_visible()
    assert page.url == f"{base_url}/checkpoints"
    assert any(r == f"POST {base_url}/checkpoints" for r in requests)
    expect(page.locator("#checkpoint-report h2")).to_have_text(
        "cpu_manager_state V3 (1.36 pod-level family)"
    )
    expect(page.locator('[data-checksum="checksum"] .ckpt-status')).to_have_text("✓ valid")
    assert _read_verdicts(page) == EXPECTED
    lossy = page.locator('#verdict-table tr[data-target="1.37-gate-off"]')
    expect(lossy).to_contain_text(f"podEntries[{POD_B}] (cpuSet 4-7)")
    failing = page.locator('#verdict-table tr[data-target="1.35"]')
    expect(failing).to_contain_text("checkpoint is corrupted")
    # Colour and text: the badges differ in colour, and each carries its word.
    colours = {
        v: page.locator(f'#verdict-table tr[data-verdict="{v}"] .verdict').first.evaluate(
            "e => getComputedStyle(e).backgroundColor"
        )
        for v in ("compatible", "compatible-with-loss", "will-fail")
    }
    assert len(set(colours.values())) == 3, colours
    expect(page.locator("header.site-header")).to_have_count(1)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "checkpoints-upload-v3.png"), full_page=True)

    # A file of the server's kubelet root dir, through the GET form (URL pushed).
    page.locator('input[name="file"][value="memory_manager_state"]').check()
    page.locator("#checkpoint-kubelet button").click()
    expect(page.locator("#checkpoint-report h2")).to_have_text(
        "memory_manager_state V3 (1.37 family)"
    )
    page.wait_for_url(f"{base_url}/checkpoints?file=memory_manager_state&policy=")
    expect(page.locator('[data-table="machineState"] tbody tr')).to_have_count(2)
    page.screenshot(path=str(ARTIFACTS / "checkpoints-kubelet-memory.png"), full_page=True)
    assert problems == []
    page.close()


def test_the_form_works_without_javascript(browser: object, base_url: str) -> None:
    from playwright.sync_api import Browser, expect

    assert isinstance(browser, Browser)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{base_url}/checkpoints")
    page.locator("#ckpt-file").set_input_files(str(V3))
    page.locator("#ckpt-policy").fill("none")
    with page.expect_navigation():
        page.get_by_role("button", name="Inspect").first.click()
    expect(page.locator("#checkpoint-report h2")).to_have_text(
        "cpu_manager_state V3 (1.36 pod-level family)"
    )
    rows = page.locator('#verdict-table tr[data-verdict="policy-mismatch"]')
    expect(rows).to_have_count(3)  # the releases that read the file, each with policy none
    expect(page.locator("#ckpt-policy")).to_have_value("none")
    context.close()

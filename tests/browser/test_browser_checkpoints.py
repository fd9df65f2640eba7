"""Upload a 1.36 pod-level CPU V3 file in Debian's chromium and read the verdict table.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.fixtures.checkpoints.generate import HERE as FIXTURES
from tests.fixtures.checkpoints.generate import POD_B
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

V3 = FIXTURES / "kubelet-1.36-gate-on" / "cpu_manager_state"
EXPECTED = {
    "≤1.17": "will-fail",
    "1.18–1.35": "will-fail",
    "1.36 gate off": "will-fail",
    "1.36 gate on": "compatible",
    # read without the pod entries, then validateState finds CPUs 4-7 held by no entry
    "1.37 gate off": "will-fail",
    "1.37 gate on": "compatible",
    "1.38 gate off": "will-fail",
    "1.38 gate on": "compatible",
}


@pytest.fixture(scope="module")
def base_url(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> str:
    """The app whose kubelet root holds the 1.37 files."""
    tmp = tmp_path_factory.mktemp("browser-checkpoints")
    shutil.copytree(FIXTURES / "kubelet-1.37", tmp / "kubelet")
    return live_server(make_settings(tmp, kubelet_root=tmp / "kubelet")).url


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


def test_upload_a_v3_file_and_read_the_verdict_table(
    page: Any, page_errors: list[str], base_url: str, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1400, "height": 1000})
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
    # will-fail says why and what to do (issue 21 point 3).
    expect(failing.locator("[data-why]")).to_have_text(
        "Why: 1.35 cannot read `podEntries`, so its checksum check of this V3 file fails"
    )
    expect(failing.locator("[data-rescue]")).to_contain_text("drain the node")
    expect(lossy).to_contain_text("validateState")
    # Colour and text: the three badges differ in colour (this file shows two of them, so the
    # third is drawn beside them with the page's own stylesheet), and each carries its word.
    colours = page.locator("#verdict-table").evaluate(
        """table => Object.fromEntries(
            ["compatible", "compatible-with-loss", "will-fail"].map(v => {
                const badge = document.createElement("span");
                badge.className = `verdict verdict-${v}`;
                table.appendChild(badge);
                const colour = getComputedStyle(badge).backgroundColor;
                badge.remove();
                return [v, colour];
            }))"""
    )
    assert len(set(colours.values())) == 3, colours
    shown = page.locator('#verdict-table tr[data-verdict="will-fail"] .verdict').first
    assert shown.evaluate("e => getComputedStyle(e).backgroundColor") == colours["will-fail"]
    expect(page.locator("header.site-header")).to_have_count(1)
    screenshot(page, "checkpoints-upload-v3")

    # A file of the server's kubelet root dir, through the GET form (URL pushed).
    page.locator('input[name="file"][value="memory_manager_state"]').check()
    page.locator("#checkpoint-kubelet button").click()
    expect(page.locator("#checkpoint-report h2")).to_have_text(
        "memory_manager_state V3 (1.37 family)"
    )
    page.wait_for_url(f"{base_url}/checkpoints?file=memory_manager_state&policy=")
    expect(page.locator('[data-table="machineState"] tbody tr')).to_have_count(2)
    screenshot(page, "checkpoints-kubelet-memory")
    assert page_errors == []


def test_the_form_works_without_javascript(browser: Any, base_url: str) -> None:
    from playwright.sync_api import expect

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
    expect(rows).to_have_count(5)  # the releases that read the file, each with policy none
    expect(page.locator("#ckpt-policy")).to_have_value("none")
    context.close()

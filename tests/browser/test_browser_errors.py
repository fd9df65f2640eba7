"""A refused htmx request replaces its result area with the error (issue 21 point 1), in Debian's
chromium: a 413 upload after a good one, a 503 dry run (stopped at the time budget) after a
good one, and a fresh page (no htmx) showing the same error. ``static/js/htmx-errors.js`` swaps
the error fragment that ``app/web/errors.py`` answers htmx requests with.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.fixtures.checkpoints.generate import HERE as FIXTURES
from tests.fixtures.wide_machine import WIDE_CONFIG, WIDE_POD, wide_topology
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

GOOD_STATE = FIXTURES / "kubelet-1.37" / "cpu_manager_state"
BEST_EFFORT = """\
apiVersion: v1
kind: Pod
metadata: {name: tiny, namespace: default}
spec:
  containers:
  - {name: app, image: app:1}
"""


def _refusals(errors: list[str], *statuses: int) -> list[str]:
    """Console errors other than chromium's own note of the refused requests we caused."""
    expected = tuple(f"status of {s} " for s in statuses)
    return [
        e for e in errors if not ("Failed to load resource" in e and any(x in e for x in expected))
    ]


def test_a_413_upload_replaces_the_previous_verdict(
    page: Any,
    page_errors: list[str],
    tmp_path: Path,
    live_server: Callable[..., LiveServer],
    screenshot: Screenshots,
) -> None:
    from playwright.sync_api import expect

    served = live_server(make_settings(tmp_path))
    page.goto(f"{served.url}/checkpoints")
    form = page.locator("#checkpoint-upload")
    result = page.locator("#checkpoint-result")
    form.locator("#ckpt-file").set_input_files(str(GOOD_STATE))
    form.get_by_role("button", name="Inspect").click()
    expect(result.locator("#verdict-table")).to_be_visible()

    big = {"name": "huge_state", "mimeType": "application/json", "buffer": b"{" * (20 << 20)}
    form.locator("#ckpt-file").set_input_files(big)
    form.get_by_role("button", name="Inspect").click()
    error = result.locator('.error-box[role="alert"]')
    expect(error).to_have_attribute("data-status", "413")
    expect(error).to_contain_text("RequestEntityTooLarge")
    expect(error).to_contain_text("more than 16 MiB")
    expect(error).to_contain_text("file")  # the field
    expect(result.locator("#verdict-table")).to_have_count(0)
    screenshot(page, "error-413-upload")

    # The form still works: the next good upload replaces the error.
    form.locator("#ckpt-file").set_input_files(str(GOOD_STATE))
    form.get_by_role("button", name="Inspect").click()
    expect(result.locator("#verdict-table")).to_be_visible()
    expect(result.locator(".error-box")).to_have_count(0)
    assert _refusals(page_errors, 413) == []


def test_a_fresh_page_shows_the_error_too(
    page: Any,
    page_errors: list[str],
    tmp_path: Path,
    live_server: Callable[..., LiveServer],
    screenshot: Screenshots,
) -> None:
    """Without htmx (a plain form post, a reload) the same error is the whole page."""
    from playwright.sync_api import expect

    served = live_server(make_settings(tmp_path))
    context = page.context.browser.new_context(java_script_enabled=False)
    try:
        plain = context.new_page()
        plain.goto(f"{served.url}/checkpoints")
        form = plain.locator("#checkpoint-upload")
        big = {"name": "huge_state", "mimeType": "application/json", "buffer": b"{" * (20 << 20)}
        form.locator("#ckpt-file").set_input_files(big)
        with plain.expect_navigation():
            form.get_by_role("button", name="Inspect").click()
        error = plain.locator('.error-box[role="alert"]')
        expect(error).to_have_attribute("data-status", "413")
        expect(plain).to_have_title("413 RequestEntityTooLarge · Numascope")
        expect(error).to_contain_text("more than 16 MiB")
        screenshot(plain, "error-413-fresh-page")
    finally:
        context.close()


def test_a_503_dry_run_replaces_the_previous_answer(
    page: Any,
    page_errors: list[str],
    tmp_path: Path,
    live_server: Callable[..., LiveServer],
    screenshot: Screenshots,
) -> None:
    """A dry run stopped by the CPU-time budget (503 Timeout) replaces the previous verdict.
    The 11-NUMA machine's topology-hint search for ``WIDE_POD`` takes about 0.9 s of CPU,
    three times the budget; a BestEffort pod needs no hints."""
    from playwright.sync_api import expect

    served = live_server(make_settings(tmp_path, cpu_time_budget=0.3))
    body = {"name": "wide11", "topology": wide_topology(11), "kubeletConfig": WIDE_CONFIG}
    created = httpx.post(f"{served.url}/api/v1/nodes", json=body, timeout=60)
    assert created.status_code == 201, created.text

    page.goto(f"{served.url}/nodes/wide11")
    admit = page.locator("#admit")
    page.locator("#manifest").fill(BEST_EFFORT)
    page.get_by_role("button", name="Dry run", exact=True).click()
    expect(admit.locator("#admit-result")).to_contain_text("default/tiny")

    page.locator("#manifest").fill(WIDE_POD)
    page.get_by_role("button", name="Dry run", exact=True).click()
    error = admit.locator('.error-box[role="alert"]')
    expect(error).to_have_attribute("data-status", "503", timeout=60_000)
    expect(error).to_contain_text("Timeout")
    expect(error).to_contain_text("the dry run was stopped after 0.3 s")
    result = admit.locator("#admit-result")
    expect(result.locator('.error-box[role="alert"]')).to_have_count(1)
    expect(result).not_to_contain_text("default/tiny")  # the old verdict is gone
    expect(page.locator("#manifest")).to_have_value(WIDE_POD)  # the form stays for the next try
    screenshot(page, "error-503-dry-run")
    assert _refusals(page_errors, 503) == []

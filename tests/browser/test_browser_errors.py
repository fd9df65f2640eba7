"""A refused htmx request replaces its result area with the error (issue 21 point 1), in Debian's
chromium: a 413 upload after a good one, a 503 fleet fit (stopped at the time budget) after a
good one, and a fresh page (no htmx) showing the same error. ``static/js/htmx-errors.js`` swaps
the error fragment that ``app/web/errors.py`` answers htmx requests with.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from app.domain.topology.spec import parse_topology_spec
from app.services.nodes.demo_fleet import SimulatedNode
from app.services.nodes.inputs import build_engine_node, parse_config
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


def _wide_node(name: str) -> SimulatedNode:
    """A simulated node whose topology-hint search for ``WIDE_POD`` runs far past 3 s."""
    spec = wide_topology(13)
    config = parse_config(WIDE_CONFIG, "1.37")
    engine = build_engine_node(name, parse_topology_spec(spec), config, time.time)
    return SimulatedNode(name, spec, WIDE_CONFIG, "1.37", engine, 0)


def test_a_503_fleet_fit_replaces_the_previous_answer(
    page: Any,
    page_errors: list[str],
    tmp_path: Path,
    live_server: Callable[..., LiveServer],
    screenshot: Screenshots,
) -> None:
    from playwright.sync_api import expect

    settings = make_settings(tmp_path, hub=True, demo_fleet=2, cpu_time_budget=3.0)
    served = live_server(settings)
    fleet = served.app.state.hub.fleet
    fleet.build()  # the live server runs no lifespan: the demo fleet is built here
    fleet.nodes["wide"] = _wide_node("wide")

    page.goto(f"{served.url}/fleet/fit")
    results = page.locator("#fit-results")
    page.get_by_label("Pod manifest").fill(BEST_EFFORT)
    page.get_by_role("button", name="Find where it fits").click()
    expect(results.get_by_role("heading", name="Fits on 3 of 3 nodes")).to_be_visible()

    page.get_by_label("Pod manifest").fill(WIDE_POD)
    page.get_by_role("button", name="Find where it fits").click()
    error = results.locator('.error-box[role="alert"]')
    expect(error).to_have_attribute("data-status", "503", timeout=60_000)
    expect(error).to_contain_text("Timeout")
    expect(error).to_contain_text("nothing of it was kept")
    expect(results.get_by_role("heading", name="Fits on 3 of 3 nodes")).to_have_count(0)
    expect(results).to_have_attribute("id", "fit-results")  # the target stays for the next try
    screenshot(page, "error-503-fleet-fit")
    assert _refusals(page_errors, 503) == []

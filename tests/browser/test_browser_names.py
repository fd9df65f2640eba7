"""A pod whose name is markup, typed into the admission form in Debian's chromium: the API
server's message appears inline next to the form, escaped (no script runs, no element is
made), the node keeps nothing, and the page keeps working.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "demo-pod-scope"
PAYLOAD = "<img src=x onerror=alert(1)>"
MANIFEST = f"""\
apiVersion: v1
kind: Pod
metadata:
  name: "{PAYLOAD}"
  namespace: shop
spec:
  containers:
  - name: main
    resources:
      limits: {{cpu: "2", memory: 1Gi}}
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    return live_server(make_settings(tmp_path_factory.mktemp("browser-names"), demo=True))


def test_a_markup_pod_name_is_refused_inline_and_shown_escaped(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{served.url}/nodes/{NODE}")
    before = page.locator("#cpu-map [data-cpu][data-owner]").evaluate_all(
        "cells => cells.map(c => c.dataset.owner).join(' ')"
    )

    page.locator("#manifest").fill(MANIFEST)
    page.get_by_role("button", name="Admit", exact=True).click()
    error = page.locator('#admit [data-field="metadata.name"]')
    expect(error).to_be_visible()
    expect(error).to_contain_text(f'metadata.name: Invalid value: "{PAYLOAD}"')
    expect(error).to_contain_text("a lowercase RFC 1123 subdomain must consist of")
    # Shown as text: no <img> was made from the name, no alert ran, nothing was admitted.
    assert page.locator("img[src='x']").count() == 0
    assert dialogs == []
    after = page.locator("#cpu-map [data-cpu][data-owner]").evaluate_all(
        "cells => cells.map(c => c.dataset.owner).join(' ')"
    )
    assert after == before
    assert served.app.state.nodes.reads.snapshot(NODE).pod("shop", PAYLOAD) is None
    expect(page.locator("#manifest")).to_have_value(MANIFEST)  # what was typed is kept
    error.scroll_into_view_if_needed()
    screenshot(page, "node-bad-pod-name", full_page=False)
    assert page_errors == []

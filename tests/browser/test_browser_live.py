"""Watch, in Debian's chromium: an observed node's page refreshes in place when its kubelet's
state changes (state files and PodResources of a fake host), says so and when it was updated,
keeps the scroll position and the keyboard focus; pausing stops the polling; a server that does
not answer is said so while "updated N s ago" grows; a simulated node changed by another client
refreshes too, while the page's own admission does not announce itself. Screenshots in
test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.browser.axe import describe, violations
from tests.fixtures.kubelet_host import KubeletHost
from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

OBSERVED = "worker-live"
SIMULATED = "demo-pod-scope"
INTERVAL = 0.3  # seconds between checks (NUMASCOPE_WATCH_INTERVAL)
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: extra, namespace: shop}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "4", memory: 1Gi}, limits: {cpu: "4", memory: 1Gi}}
"""


@pytest.fixture(scope="module")
def host() -> Iterator[KubeletHost]:
    h = KubeletHost(OBSERVED)
    try:
        yield h
    finally:
        h.close()


@pytest.fixture(scope="module")
def observed(
    host: KubeletHost,
    tmp_path_factory: pytest.TempPathFactory,
    live_server: Callable[..., LiveServer],
) -> LiveServer:
    server = live_server(
        host.settings(tmp_path_factory.mktemp("browser-live"), watch_interval=INTERVAL)
    )
    server.app.state.observer.ttl = 0.1  # re-observe on (almost) every check
    return server


@pytest.fixture(scope="module")
def simulated(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    return live_server(
        make_settings(
            tmp_path_factory.mktemp("browser-live-sim"), demo=True, watch_interval=INTERVAL
        )
    )


def _watch_requests(page: Any) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if r.url.endswith("/watch") else None)
    return seen


def test_observed_node_refreshes_in_place(
    page: Any,
    page_errors: list[str],
    host: KubeletHost,
    observed: LiveServer,
    screenshot: Screenshots,
) -> None:
    from playwright.sync_api import expect

    url = f"{observed.url}/nodes/{OBSERVED}"
    page.goto(url)
    watch = page.locator("#watch")
    expect(watch).to_be_visible()
    expect(watch.locator(".watch-state")).to_have_text("Live")
    expect(watch.locator(".watch-age")).to_have_text("updated just now")
    expect(page.locator('#pods tr[data-pod="shop/extra"]')).to_have_count(0)
    # "Observed at" moves on with the checks (the server observes again for each).
    first_seen = page.locator("#observed-at").get_attribute("datetime")
    page.wait_for_function(
        "t => document.getElementById('observed-at').dateTime > t", arg=first_seen, timeout=10000
    )
    # A mark that only survives if the page is not reloaded; a CPU focused, scrolled down.
    page.evaluate("window.__notReloaded = true")
    cell = page.locator("#cpu-map li.cpu").nth(20)
    cell.focus()
    focused_cpu = cell.get_attribute("data-cpu")
    page.evaluate("window.scrollTo(0, 300)")
    page.wait_for_function("() => window.scrollY === 300")
    scrolled = 300

    # The kubelet admits a pod: its row and its CPUs appear without a reload.
    host.admit(POD)
    expect(page.locator('#pods tr[data-pod="shop/extra"]')).to_have_count(1, timeout=15000)
    expect(page.locator('#cpu-map li.cpu[data-owner="shop/extra/a"]')).to_have_count(4)
    expect(page.locator("#cpu-map .legend-item", has_text="shop/extra")).to_have_count(1)
    assert page.evaluate("window.__notReloaded") is True
    assert page.url == url
    assert page.evaluate("window.scrollY") == scrolled
    assert page.evaluate("document.activeElement.dataset.cpu") == focused_cpu
    expect(watch.locator("[data-watch-announce]")).to_contain_text("The node changed")
    expect(watch.locator(".watch-state")).to_have_text(re.compile(r"^Live · changed at "))
    # The swapped-in map still works from the keyboard.
    expect(page.locator('#cpu-map li.cpu[tabindex="0"]')).to_have_count(1)
    screenshot(page, "live-refreshed", full_page=False)
    found = violations(page)
    assert found == [], describe(found)

    # Paused: no more checks, the removal is not shown until updates resume.
    page.get_by_role("button", name="Pause updates").click()
    expect(page.get_by_role("button", name="Resume updates")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(watch.locator(".watch-state")).to_have_text("Paused")
    requests = _watch_requests(page)
    host.remove("shop", "extra")
    page.wait_for_timeout(INTERVAL * 1000 * 5)  # five check intervals without a check
    assert requests == []
    expect(page.locator('#pods tr[data-pod="shop/extra"]')).to_have_count(1)
    page.get_by_role("button", name="Resume updates").click()
    expect(page.locator('#pods tr[data-pod="shop/extra"]')).to_have_count(0, timeout=15000)
    expect(page.locator('#cpu-map li.cpu[data-owner="shop/extra/a"]')).to_have_count(0)
    assert page_errors == []


def test_server_away_is_said_and_the_age_grows(
    page: Any, observed: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{observed.url}/nodes/{OBSERVED}")
    watch = page.locator("#watch")
    expect(watch.locator(".watch-state")).to_have_text("Live")
    # The watch endpoint stops answering (as when the server is down).
    page.route("**/watch", lambda route: route.abort("connectionrefused"))
    expect(watch).to_have_attribute("data-state", "error", timeout=10000)
    expect(watch.locator(".watch-state")).to_contain_text("the server does not answer")
    expect(watch.locator(".watch-age")).to_have_text(
        re.compile(r"^updated \d+ s ago$"), timeout=10000
    )
    screenshot(watch, "live-server-away")
    # Back: live again, and up to date.
    page.unroute("**/watch")
    expect(watch).to_have_attribute("data-state", "live", timeout=20000)
    expect(watch.locator(".watch-age")).to_have_text("updated just now", timeout=10000)


def test_simulated_node_follows_other_clients_but_not_itself(
    page: Any, page_errors: list[str], simulated: LiveServer
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{simulated.url}/nodes/{SIMULATED}")
    watch = page.locator("#watch")
    expect(watch.locator(".watch-state")).to_have_text("Live")
    announce = watch.locator("[data-watch-announce]")

    # This page's own admission (htmx): shown by its answer; the watcher takes the new token
    # in without announcing a change.
    token = watch.get_attribute("data-watch-token")
    page.locator("#manifest").fill(POD)
    page.get_by_role("button", name="Admit", exact=True).click()
    expect(page.locator('#pods tr[data-pod="shop/extra"]')).to_have_count(1)
    page.wait_for_function(
        "t => document.getElementById('watch').dataset.watchToken !== t", arg=token
    )
    expect(announce).to_have_text("")
    expect(watch.locator(".watch-state")).to_have_text("Live")

    # Another client removes the pod through the API: this page follows.
    r = httpx.delete(f"{simulated.url}/api/v1/nodes/{SIMULATED}/pods/shop/extra", timeout=30)
    assert r.is_success, r.text
    expect(page.locator('#pods tr[data-pod="shop/extra"]')).to_have_count(0, timeout=15000)
    expect(announce).to_contain_text("The node changed")
    assert page_errors == []


def test_observed_page_fits_a_phone(
    browser: Any, observed: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(f"{observed.url}/nodes/{OBSERVED}")
        expect(page.locator("#watch")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the observed node's page is {width}px wide"
        screenshot(page, "phone-observed", full_page=False)
    finally:
        page.close()


def test_pod_page_says_when_its_pod_has_left(
    page: Any, page_errors: list[str], host: KubeletHost, observed: LiveServer
) -> None:
    from playwright.sync_api import expect

    host.admit(POD.replace("name: extra", "name: solo"))
    page.goto(f"{observed.url}/nodes/{OBSERVED}/pods/shop/solo")
    watch = page.locator("#watch")
    expect(watch.locator(".watch-state")).to_have_text("Live")
    expect(page.locator('#cpu-map li.cpu[data-owner="shop/solo/a"]')).to_have_count(4)
    host.remove("shop", "solo")
    expect(watch).to_have_attribute("data-state", "gone", timeout=15000)
    expect(watch.locator(".watch-state")).to_have_text(
        "This pod is no longer on the node; updates stopped"
    )
    # What was shown stays for reading; the page did not navigate away.
    expect(page.locator('#cpu-map li.cpu[data-owner="shop/solo/a"]')).to_have_count(4)
    assert page.url.endswith("/pods/shop/solo")
    # The browser logs the 404 of the page's own refetch; nothing else went wrong.
    assert [e for e in page_errors if "status of 404" not in e] == []

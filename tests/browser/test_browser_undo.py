"""Undo and reset, go back in time, take away, in Debian's chromium: Remove asks first (one
click changes nothing), the removal can be undone from the node page; Delete asks first, and
"Restore the demo nodes" brings the deleted demo node back with its pods; Admit answers with
the CPUs and NUMA nodes the pod got; the map as it was after an earlier log entry; the
downloads are the node's state files, pods and pools. Screenshots in test-artifacts/."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.helpers import make_settings

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "demo-pod-scope"
POD = "ml/training"
SMALL_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: tiny, namespace: shop}
spec:
  containers:
  - name: a
    resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> LiveServer:
    return live_server(make_settings(tmp_path_factory.mktemp("browser-undo"), demo=True))


def _owned(page: Any, pod: str) -> int:
    return int(page.locator(f'#cpu-map li.cpu[data-owner^="{pod}/"]').count())


def test_remove_asks_first_and_can_be_undone(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    base = served.url
    page.goto(f"{base}/nodes/{NODE}")
    row = page.locator(f'#pods tr[data-pod="{POD}"]')
    cpus = _owned(page, POD)
    assert cpus > 0
    row.get_by_role("link", name=f"Remove pod {POD} (asks first)").click()
    page.wait_for_url(f"{base}/nodes/{NODE}/pods/{POD}/remove")
    expect(page.locator("h1")).to_contain_text(POD)
    screenshot(page, "confirm-remove", full_page=False)
    # Cancel leads to the pod's page: nothing changed.
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"{base}/nodes/{NODE}/pods/{POD}")
    page.goto(f"{base}/nodes/{NODE}")
    expect(page.locator(f'#pods tr[data-pod="{POD}"]')).to_have_count(1)
    assert _owned(page, POD) == cpus

    # Confirmed: gone, with an undo banner; Undo admits it again.
    page.locator(f'#pods tr[data-pod="{POD}"]').get_by_role(
        "link", name=re.compile("Remove pod")
    ).click()
    page.get_by_role("button", name=re.compile("^Remove")).click()
    page.wait_for_url(re.compile(rf"{re.escape(base)}/nodes/{NODE}(\?.*)?(#.*)?$"))
    expect(page.locator(f'#pods tr[data-pod="{POD}"]')).to_have_count(0)
    assert _owned(page, POD) == 0
    undo = page.locator("#undo")
    expect(undo).to_contain_text(f"Removed pod {POD}")
    screenshot(undo, "undo-banner")
    undo.get_by_role("button", name="Undo").click()
    expect(page.locator(f'#pods tr[data-pod="{POD}"]')).to_have_count(1)
    assert _owned(page, POD) == cpus
    expect(page.locator("#undo")).to_have_count(0)
    assert page_errors == []


def test_deleted_demo_node_comes_back_with_restore(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    base = served.url
    node = "demo-container-scope"
    page.goto(f"{base}/nodes/{node}")
    pods = page.locator("#pods tr[data-pod]").count()
    page.get_by_role("button", name=f"Delete node {node}…").click()
    page.get_by_role("button", name=re.compile("^Delete")).click()
    page.wait_for_url(f"{base}/nodes")
    expect(page.locator(f'a[href="/nodes/{node}"]')).to_have_count(0)

    # Restore asks first too; then the node is back with its pods.
    page.get_by_role("button", name="Restore the demo nodes…").click()
    page.wait_for_url(f"{base}/demo/restore*")
    screenshot(page, "confirm-restore", full_page=False)
    page.get_by_role("button", name="Restore the demo nodes").click()
    page.wait_for_url(f"{base}/nodes")
    page.locator(f'a[href="/nodes/{node}"]').first.click()
    expect(page.locator("h1")).to_contain_text(node)
    expect(page.locator("#pods tr[data-pod]")).to_have_count(pods)
    assert page_errors == []


def test_admit_answer_names_cpus_and_numa_nodes(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{served.url}/nodes/{NODE}")
    page.locator("#manifest").fill(SMALL_POD)
    page.get_by_role("button", name="Admit", exact=True).click()
    placement = page.locator("#admit .placement")
    expect(placement).to_contain_text("Got CPUs")
    expect(placement).to_contain_text("NUMA node")
    screenshot(page.locator("#admit"), "admit-placement")
    # The CPUs named are the ones the map shows for the pod.
    owned = page.locator('#cpu-map li.cpu[data-owner="shop/tiny/a"]')
    expect(owned).to_have_count(2)
    for cpu in owned.evaluate_all("els => els.map(e => e.dataset.cpu)"):
        assert cpu in placement.inner_text()
    assert page_errors == []


def test_map_as_it_was_and_downloads(
    page: Any, page_errors: list[str], served: LiveServer, screenshot: Screenshots, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base = served.url
    page.goto(f"{base}/nodes/{NODE}/history")
    # The map after the first admission: only that pod owns CPUs.
    page.locator(".history-table tr[data-entry]").nth(1).get_by_role(
        "link", name="map after"
    ).click()
    expect(page.locator("h1")).to_contain_text(f"{NODE} after")
    owners = set(
        page.locator('#cpu-map li.cpu[data-pool="exclusive"]').evaluate_all(
            "els => els.map(e => e.dataset.owner.split('/').slice(0, 2).join('/'))"
        )
    )
    assert len(owners) == 1
    screenshot(page, "history-point", full_page=False)

    page.goto(f"{base}/nodes/{NODE}")
    tools = page.locator("#admit .node-tools")
    with page.expect_download() as z:
        tools.get_by_role("link", name="state files (zip)").click()
    with zipfile.ZipFile(z.value.path()) as archive:
        names = {Path(n).name for n in archive.namelist()}
        assert {"cpu_manager_state", "memory_manager_state", "pods.json"} <= names
    with page.expect_download() as y:
        tools.get_by_role("link", name="pods (YAML)").click()
    docs = [d for d in yaml.safe_load_all(Path(y.value.path()).read_text()) if d]
    assert {f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in docs} >= {POD}
    with page.expect_download() as c:
        tools.get_by_role("link", name="pools (CSV)").click()
    rows = list(csv.reader(io.StringIO(Path(c.value.path()).read_text())))
    assert len(rows) > 1 and len(rows[0]) > 1
    assert page_errors == []

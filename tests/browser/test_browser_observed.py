"""Click through an observed node in Debian's chromium (Playwright): a fake host (kubelet root,
PodResources socket, sysfs) observed read-only, its badge, its sources, a stale entry, no
admission form, and a pod page with the kubelet's own PodResources answer.

Browser, live server, page and screenshots come from conftest.py.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from app.adapters import statefiles
from app.adapters.grpc.server import PodResourcesServer
from app.services import demo
from tests.fixtures.sysfs import fake_sysfs_from_topology
from tests.helpers import make_settings
from tests.services.test_services_observer import GHOST, _engine_node, _files_with_ghost

if TYPE_CHECKING:
    from tests.browser.conftest import LiveServer, Screenshots

pytestmark = pytest.mark.browser

NODE = "worker-7"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, live_server: Callable[..., LiveServer]
) -> Iterator[str]:
    """The app observing a fake host (kubelet root, PodResources socket, sysfs)."""
    tmp = tmp_path_factory.mktemp("browser-observed")
    base = Path(tempfile.mkdtemp(prefix="h11b-", dir="/tmp"))  # short socket path
    node = _engine_node()
    snap = node.snapshot()
    root = base / "kubelet"
    root.mkdir()
    statefiles.write_files(root, _files_with_ghost(node))
    for p in snap.pods:
        (root / "pods" / p.uid).mkdir(parents=True)
    sysfs = fake_sysfs_from_topology(node.topology).write(tmp)
    pr = PodResourcesServer(lambda: snap, str(base / "pr.sock")).start()
    settings = make_settings(
        tmp,
        sysfs_root=sysfs,
        kubelet_root=root,
        podresources_socket=str(base / "pr.sock"),
        node_name=NODE,
        observe=True,
    )
    server = live_server(settings)
    try:
        yield server.url
    finally:
        server.stop()
        pr.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_observed_node_sources_stale_entry_and_pod(
    page: Any, page_errors: list[str], served: str, screenshot: Screenshots
) -> None:
    from playwright.sync_api import expect

    # The only node: "/" opens it.
    page.goto(f"{served}/")
    page.wait_for_url(f"{served}/nodes/{NODE}")
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_contain_text(NODE)
    expect(heading.locator(".badge-observed")).to_have_text("observed")
    expect(page.locator(".badge-sim")).to_have_count(0)
    expect(page.locator("#admit")).to_have_count(0)
    expect(page.get_by_role("button", name="Remove")).to_have_count(0)

    # Sources: all read; the state files as a 1.37 kubelet reads them.
    sources = page.locator("#observation")
    expect(sources).to_have_attribute("data-ready", "true")
    for name in ("sysfs", "checkpoint", "podresources"):
        expect(sources.locator(f'tr[data-source="{name}"]')).to_have_attribute("data-ok", "true")
    expect(sources.locator('.state-files-table tr[data-file="cpu_manager_state"]')).to_contain_text(
        "1.37 gate on"
    )

    # The stale entry: flagged in the pods table and listed with its CPUs.
    stale_row = page.locator(f'#pods tr[data-uid="{GHOST}"]')
    expect(stale_row).to_have_attribute("data-stale", "true")
    expect(stale_row.locator(".badge-warn")).to_have_text("stale")
    expect(sources.locator(f'.stale-table tr[data-uid="{GHOST}"]')).to_contain_text("30-31")
    expect(page.locator('#cpu-map li.cpu[data-cpu="30"]')).to_have_attribute(
        "data-pool", "exclusive"
    )
    screenshot(page, "observed-node")

    # A CPU of the training pod's bubble leads to its page with the kubelet's answer.
    page.locator('#cpu-map li.cpu[data-owner="ml/training/trainer"]').first.click()
    page.wait_for_url(f"{served}/nodes/{NODE}/pods/ml/training*")
    expect(page.get_by_role("heading", level=1).locator(".badge-observed")).to_be_visible()
    expect(page.locator("#podresources pre")).to_contain_text('"name": "training"')
    expect(page.get_by_role("button", name="Remove pod")).to_have_count(0)
    assert not page_errors, page_errors
    assert demo.ML_POD  # the pod clicked through is the demo's

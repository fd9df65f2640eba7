"""Click through an observed node in Debian's chromium (Playwright): a fake host (kubelet root,
PodResources socket, sysfs) observed read-only, its badge, its sources, a stale entry, no
admission form, and a pod page with the kubelet's own PodResources answer.

Same launch options and skip rules as test_browser_topology.py (its ``browser`` fixture is
reused). Screenshots land in test-artifacts/ (gitignored).
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.adapters import statefiles
from app.adapters.grpc.server import PodResourcesServer
from app.services import demo
from app.settings import Settings
from app.web.app import create_app
from tests.browser.test_browser_topology import ARTIFACTS, browser
from tests.fixtures.sysfs import fake_sysfs_from_topology
from tests.services.test_services_observer import GHOST, _engine_node, _files_with_ghost

pytestmark = pytest.mark.browser

__all__ = ["browser"]  # the fixture, reused

NODE = "worker-7"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app observing a fake host, served by uvicorn in a background thread."""
    import uvicorn

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
    settings = Settings(
        database_url=f"sqlite:///{tmp / 'numascope.db'}",
        sysfs_root=sysfs,
        cpuinfo=False,
        state_dir=tmp / "nodes",
        demo=False,
        kubelet_root=root,
        podresources_socket=str(base / "pr.sock"),
        node_name=NODE,
        observe=True,
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
        pr.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_observed_node_sources_stale_entry_and_pod(browser: object, served: str) -> None:
    from playwright.sync_api import Browser, expect

    assert isinstance(browser, Browser)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    ARTIFACTS.mkdir(exist_ok=True)

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
    page.screenshot(path=str(ARTIFACTS / "observed-node.png"), full_page=True)

    # A CPU of the training pod's bubble leads to its page with the kubelet's answer.
    page.locator('#cpu-map li.cpu[data-owner="ml/training/trainer"] a').first.click()
    page.wait_for_url(f"{served}/nodes/{NODE}/pods/ml/training*")
    expect(page.get_by_role("heading", level=1).locator(".badge-observed")).to_be_visible()
    expect(page.locator("#podresources pre")).to_contain_text('"name": "training"')
    expect(page.get_by_role("button", name="Remove pod")).to_have_count(0)
    assert not problems, problems
    page.close()
    assert demo.ML_POD  # the pod clicked through is the demo's

"""The fleet pages in Debian's chromium, against real processes: an agent on 127.0.0.2 (the demo
nodes) and a hub on 127.0.0.1 polling it, with simulated nodes of its own (``--demo-fleet``).
What the pages show is checked against the hub's JSON and against the agent's own answers
(its dry run, its upgrade verdict): ``/fleet`` (rows, bars, filter, sort, agent status),
``/fleet/fit`` (paste a pod, where it fits and why not; a non-pod is the admission's 422),
``/fleet/upgrade`` (which nodes must be drained), and the page's weight with 1,000 nodes.
Screenshots in test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.browser.layout import words_split_in_cells
from tests.processes import Server, server_env

if TYPE_CHECKING:
    from tests.browser.conftest import Screenshots

pytestmark = pytest.mark.browser

DEMO_FLEET = 24
AGENT_HOST = "127.0.0.2"
YAML = {"Content-Type": "application/yaml"}
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: default}
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits: {cpu: "4", memory: 4Gi}
"""
NOT_A_POD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"


@dataclass
class Fleet:
    agent: Server
    hub: Server
    agent_nodes: list[str]

    def api(self) -> dict[str, Any]:
        doc: dict[str, Any] = httpx.get(f"{self.hub.url}/api/v1/fleet", timeout=30).json()
        return doc


def _ready(hub: Server, nodes: int) -> dict[str, Any] | None:
    doc: dict[str, Any] = httpx.get(f"{hub.url}/api/v1/fleet", timeout=30).json()
    agents_ok = all(a["status"] == "ok" for a in doc["agents"])
    return doc if agents_ok and len(doc["nodes"]) == nodes else None


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    base = tmp_path_factory.mktemp("fleet-browser")
    # The agent serves the demo nodes (what a new user's first agent shows).
    agent = Server(base / "agent", server_env(base / "agent", demo="true"), host=AGENT_HOST)
    agent.start()
    hub: Server | None = None
    try:
        names = [n["name"] for n in httpx.get(f"{agent.url}/nodes.json").json()["nodes"]]
        assert names
        args = ["--hub", "--demo-fleet", str(DEMO_FLEET), "--agents", agent.url]
        hub = Server(base / "hub", args=args).start()
        hub.wait_for(lambda: _ready(hub, DEMO_FLEET + len(names)), "the fleet to be polled")
        yield Fleet(agent, hub, names)
    finally:
        if hub is not None:
            hub.close()
        agent.close()


def rows(page: Any) -> list[dict[str, str]]:
    """The fleet table's rows as {column: text}."""
    return list(
        page.eval_on_selector_all(
            "table.fleet tbody tr",
            """trs => trs.map(tr => {
                const c = [...tr.cells].map(td => td.innerText.trim());
                return {node: c[0], status: c[1], release: c[2], free: c[4], pods: c[5],
                        findings: c[6], bars: String(tr.cells[3].querySelectorAll('.nb').length),
                        href: (tr.cells[0].querySelector('a') || {}).href || ''};
            })""",
        )
    )


def test_fleet_lists_every_node_with_the_agents_numbers(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    doc = fleet.api()
    page.goto(fleet.hub.url + "/fleet")
    # Healthy agents are a count (the list is in the API); only agents not answering get rows.
    assert page.locator("table.agents-table").count() == 0
    assert "1 ok" in page.locator("section.agents h2").inner_text()
    assert page.get_by_text("Every agent answered its last poll").is_visible()
    assert [a["url"] for a in doc["agents"]] == [fleet.agent.url]
    shown = {r["node"]: r for r in rows(page)}
    assert len(shown) == len(doc["nodes"]) == DEMO_FLEET + len(fleet.agent_nodes)
    summaries = httpx.get(f"{fleet.agent.url}/api/v1/summary").json()["nodes"]
    for s in summaries:  # the agent's own numbers, as the hub shows them
        row = shown[s["node"]]
        assert row["status"] == "ok"
        assert row["release"] == s["release"]
        free = max((n["available"] for n in s["numa"]), default=0)
        assert row["free"] == str(free)
        assert row["bars"] == str(len(s["numa"]))
        assert row["href"] == f"{fleet.agent.url}/nodes/{s['node']}"
    for n in doc["nodes"]:
        assert shown[n["node"]]["free"] == str(n["largestFreeNuma"])
    # A bar says what it is made of, in words (colour is not the only signal).
    title = page.locator("table.fleet .nb").first.get_attribute("title")
    assert title is not None and "available" in title and "exclusive" in title
    assert page.get_by_text(f"{len(shown)} of {len(shown)} nodes").is_visible()
    screenshot(page, "fleet")
    assert page_errors == []


def test_fleet_filters_and_sorts_in_place(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    doc = fleet.api()
    page.goto(fleet.hub.url + "/fleet")
    name = fleet.agent_nodes[0]
    with page.expect_response(lambda r: "/fleet?" in r.url and f"q={name}" in r.url):
        page.locator("input[name=q]").press_sequentially(name)  # keyup, as a person types
    page.wait_for_function(
        "n => [...document.querySelectorAll('table.fleet tbody tr')]"
        ".every(tr => tr.cells[0].innerText.includes(n))",
        arg=name,
    )
    expected = sorted(n["node"] for n in doc["nodes"] if name in n["node"])
    assert sorted(r["node"] for r in rows(page)) == expected
    assert f"q={name}" in page.url  # the filtered view is a link one can share
    with page.expect_response(lambda r: "/fleet?" in r.url and "q=&" in r.url):
        page.fill("input[name=q]", "")
        page.locator("input[name=q]").press("Backspace")

    with page.expect_response(lambda r: "sort=free" in r.url):
        page.select_option("select[name=sort]", "free")
    page.wait_for_function(
        "() => document.querySelectorAll('table.fleet tbody tr').length > 1"
        " && location.search.includes('sort=free')"
    )
    frees = [int(r["free"]) for r in rows(page)]
    assert frees == sorted(frees, reverse=True)
    assert frees[0] == max(n["largestFreeNuma"] for n in doc["nodes"])

    release = sorted({n["release"] for n in doc["nodes"]})[0]
    with page.expect_response(lambda r: f"release={release}" in r.url):
        page.select_option("select[name=release]", release)
    page.wait_for_function(
        "r => [...document.querySelectorAll('table.fleet tbody tr')]"
        ".every(tr => tr.cells[2].innerText.trim() === r)",
        arg=release,
    )
    assert len(rows(page)) == sum(1 for n in doc["nodes"] if n["release"] == release)
    screenshot(page, "fleet-filtered")

    # Without JavaScript the same filter is a plain GET.
    r = httpx.get(f"{fleet.hub.url}/fleet.json", params={"release": release, "sort": "free"})
    assert [n["node"] for n in r.json()["nodes"]] == [row["node"] for row in rows(page)]
    assert page_errors == []


def test_fleet_fit_shows_each_nodes_own_dry_run(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    page.goto(fleet.hub.url + "/fleet/fit")
    page.fill("textarea[name=manifest]", POD)
    with page.expect_response(
        lambda r: r.url.endswith("/fleet/fit") and r.request.method == "POST"
    ):
        page.click("button:has-text('Find where it fits')")
    heading = page.locator("#fit-results h2")
    heading.wait_for()
    api = httpx.post(f"{fleet.hub.url}/api/v1/fleet/fit", content=POD, headers=YAML, timeout=60)
    results = {r["node"]: r for r in api.json()["results"]}
    fits = sum(1 for r in results.values() if r["admitted"])
    assert heading.inner_text() == f"Fits on {fits} of {len(results)} nodes"
    table = page.locator("table.fit-results tbody tr")
    assert table.count() == len(results)
    # The agent's nodes: the page's CPUs are what that agent's own dry run answers.
    for node in fleet.agent_nodes:
        own = httpx.post(
            f"{fleet.agent.url}/api/v1/nodes/{node}/pods",
            params={"dryRun": "true"},
            content=POD,
            headers=YAML,
        ).json()
        (result,) = own["results"]
        row = table.filter(has_text=node).first
        text = row.inner_text()
        if result["admitted"]:
            assert "fits" in text
            for c in result["allocation"]["containers"]:
                assert f"{c['name']}: {c['cpuset'] or 'shared'}" in text
        else:
            assert "refused" in text and result["reason"] in text
    screenshot(page, "fleet-fit")
    assert page_errors == []


def test_fleet_fit_refuses_a_non_pod_as_admission_does(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    node = fleet.agent_nodes[0]
    admission = httpx.post(
        f"{fleet.agent.url}/api/v1/nodes/{node}/pods", content=NOT_A_POD, headers=YAML
    )
    fit = httpx.post(f"{fleet.hub.url}/api/v1/fleet/fit", content=NOT_A_POD, headers=YAML)
    assert admission.status_code == fit.status_code == 422
    assert fit.json() == admission.json()
    page.goto(fleet.hub.url + "/fleet/fit")
    page.fill("textarea[name=manifest]", NOT_A_POD)
    page.click("button:has-text('Find where it fits')")
    alert = page.locator("[role=alert] .error-message")
    alert.wait_for()
    assert alert.inner_text() == admission.json()["error"]["message"]
    assert page.locator("textarea[name=manifest]").input_value() == NOT_A_POD  # kept to fix
    screenshot(page, "fleet-fit-not-a-pod", full_page=False)
    assert page_errors == []


def test_fleet_upgrade_names_the_nodes_to_drain(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    release = "1.35"
    page.goto(fleet.hub.url + "/fleet/upgrade")
    page.select_option("select[name=release]", release)
    page.click("button:has-text('Check the fleet')")
    # The plan fills in as the nodes answer (the page polls); then the nodes to drain and
    # (collapsed) the nodes that start: two tables.
    page.locator("#upgrade-plan:not([aria-busy])").wait_for(timeout=120_000)
    page.locator("table.upgrade-results").first.wait_for()
    api = httpx.get(
        f"{fleet.hub.url}/api/v1/fleet/upgrade", params={"release": release}, timeout=120
    ).json()
    verdicts = {r["node"]: r["verdict"] for r in api["results"]}
    shown = dict(
        page.eval_on_selector_all(
            "table.upgrade-results tbody tr",
            # textContent: the rows of the nodes that start sit in a collapsed <details>.
            "trs => trs.map(tr => [tr.cells[0].childNodes[0].textContent.trim(),"
            " tr.cells[1].textContent.trim()])",
        )
    )
    assert shown == {n: v or "error" for n, v in verdicts.items()}
    bad = [n for n, v in verdicts.items() if v not in ("compatible", "compatible-with-loss")]
    heading = page.locator("h2", has_text="nodes").first.inner_text()
    if bad:
        assert heading == f"{len(bad)} of {len(verdicts)} nodes must be drained first"
        # The nodes to drain come first, each with its recovery steps.
        first = page.locator("table.upgrade-results tbody tr").first
        assert first.locator("td").first.inner_text().split("\n")[0] in bad
    else:
        assert heading == f"All {len(verdicts)} nodes start with kubelet {release}"
    for node in fleet.agent_nodes:  # the agent's inspector said the same
        own = httpx.get(
            f"{fleet.agent.url}/api/v1/nodes/{node}/upgrade", params={"release": release}
        ).json()
        assert verdicts[node] == own["verdict"]
    assert f"release={release}" in page.url
    screenshot(page, "fleet-upgrade")
    assert page_errors == []


def test_fleet_upgrade_links_each_lost_pod_to_its_page(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    """Issue 21 point 2: a lost pod is ``namespace/name`` linked to its pod page (the demo
    fleet's 1.36 losses)."""
    from playwright.sync_api import expect

    page.goto(fleet.hub.url + "/fleet/upgrade?release=1.36")
    page.locator("#upgrade-plan:not([aria-busy])").wait_for(timeout=120_000)
    pod = page.locator("table.upgrade-results a.pod-name").first
    expect(pod).to_be_visible()
    name = pod.inner_text()
    assert name.count("/") == 1 and pod.get_attribute("data-pod") == name
    screenshot(page, "fleet-upgrade-lost-pods", full_page=False)
    pod.click()
    page.wait_for_url(f"**/pods/{name}")
    expect(page.locator("h1")).to_contain_text(name)
    assert page_errors == []


def test_fleet_upgrade_shows_its_progress_then_fills_in(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    """A question not asked before answers at once with its progress ("0 of N checked", never
    a node counted as failing), then the page polls and the plan replaces the progress."""
    query = "release=1.37&podLevelResourceManagers=false"
    total = DEMO_FLEET + len(fleet.agent_nodes)
    page.goto(f"{fleet.hub.url}/fleet/upgrade?{query}")
    status = page.locator("#upgrade-plan h2[role=status]")
    assert status.inner_text() == f"Checking the fleet: 0 of {total} checked"
    assert page.locator("#upgrade-plan progress").get_attribute("max") == str(total)
    assert page.locator("text=must be drained first").count() == 0
    screenshot(page, "fleet-upgrade-progress")
    page.locator("#upgrade-plan:not([aria-busy])").wait_for(timeout=120_000)
    api = httpx.get(f"{fleet.hub.url}/fleet/upgrade.json?{query}", timeout=120).json()
    assert api["progress"]["complete"] and api["progress"]["checked"] == total
    heading = page.locator("#upgrade-plan h2").first.inner_text()
    if api["drain"]["count"]:
        assert heading == f"{api['drain']['count']} of {total} nodes must be drained first"
    else:
        assert heading == f"All {total} nodes start with kubelet 1.37"
    assert page.locator("#upgrade-plan[hx-trigger]").count() == 0  # polling stopped
    screenshot(page, "fleet-upgrade-filled-in")
    assert page_errors == []


def test_fleet_heatmap_shows_free_cpus_per_numa_node(
    page: Any, page_errors: list[str], fleet: Fleet, screenshot: Screenshots
) -> None:
    """The heatmap is drawn (an SVG image), described (alt text and legend with counts that
    add up to every NUMA node of the fleet) and links to the same data as a table."""
    doc = fleet.api()
    numa = sum(len(n["numa"]) for n in doc["nodes"])
    page.goto(fleet.hub.url + "/fleet")
    image = page.locator("img.heatmap-img")
    assert page.evaluate("document.querySelector('img.heatmap-img').naturalWidth") > 0
    assert (image.get_attribute("alt") or "").startswith(f"Heatmap of {len(doc['nodes'])} nodes")
    counts = page.eval_on_selector_all(
        ".heatmap-legend li", "lis => lis.map(li => +li.textContent.split(': ').pop())"
    )
    assert sum(counts) == numa
    screenshot(page.locator("section.heatmap"), "fleet-heatmap")
    page.click("text=The same as a table, largest free block first")
    page.locator("table.fleet").wait_for()
    free = [int(r["free"]) for r in rows(page)]
    assert free == sorted(free, reverse=True)
    assert page_errors == []


def test_fleet_of_1000_nodes_is_light(
    page: Any,
    page_errors: list[str],
    tmp_path_factory: pytest.TempPathFactory,
    screenshot: Screenshots,
) -> None:
    """``--demo-fleet 1000``: the page stays under 300 KB of HTML, shows a page of rows with
    the rest one click away, and the browser's DOM stays small."""
    args = ["--hub", "--demo-fleet", "1000"]
    hub = Server(tmp_path_factory.mktemp("fleet-1000"), args=args).start()
    try:
        hub.wait_for(lambda: _ready(hub, 1000), "1,000 simulated nodes", deadline=240)
        html = httpx.get(f"{hub.url}/fleet", timeout=60)
        assert html.status_code == 200
        assert len(html.content) <= 300 * 1024, f"{len(html.content)} bytes"
        page.goto(hub.url + "/fleet")
        shown = len(rows(page))
        assert 0 < shown < 1000
        assert page.get_by_text(f"1000 of 1000 nodes, 1–{shown} shown").is_visible()
        elements = page.evaluate("document.getElementsByTagName('*').length")
        assert elements <= 16 * shown, elements  # a row is a handful of elements
        seen = {r["node"] for r in rows(page)}
        while page.locator("a[rel=next]").count():
            page.click("a[rel=next]")
            page.locator("table.fleet").wait_for()
            seen |= {r["node"] for r in rows(page)}
        assert len(seen) == 1000  # every node reachable, none twice
        assert page.url.count("offset=") == 1  # the pager's links carry one offset
        page.click("a[rel=prev]")
        page.locator("table.fleet").wait_for()
        assert "offset=0" in page.url and page.locator("a[rel=prev]").count() == 0
        assert rows(page)[0]["node"] == "sim-0000"
        screenshot(page, "fleet-1000", full_page=False)
        assert page_errors == []
    finally:
        hub.close()


@pytest.mark.parametrize("path", ["/fleet", "/fleet/fit", "/fleet/upgrade?release=1.35"])
def test_fleet_pages_fit_a_phone(
    browser: Any, fleet: Fleet, screenshot: Screenshots, path: str
) -> None:
    """Issue 21 point 7: /fleet was 605 px wide at 390 px; wide tables now scroll in their
    box and headers break between words, never letter by letter."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(fleet.hub.url + path)
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width}px wide"
        if path == "/fleet":  # the heatmap is scaled down to the phone's width
            box = page.locator("img.heatmap-img").bounding_box()
            assert box is not None and 0 < box["width"] <= 390
        # No header is narrower than its longest word (letter-by-letter breaking).
        broken = page.evaluate(
            """() => [...document.querySelectorAll('table th')].filter(th => {
                 const r = document.createRange(); r.selectNodeContents(th);
                 const lines = [...r.getClientRects()].length;
                 const words = th.innerText.trim().split(/\\s+/).length;
                 return th.innerText.trim() && lines > words;
               }).map(th => th.innerText)"""
        )
        assert broken == [], f"{path}: headers broken inside a word: {broken}"
        split = words_split_in_cells(page)
        assert split == [], f"{path}: words broken inside table cells: {split[:8]}"
        screenshot(page, "phone" + path.replace("/", "-").replace("?", "-"), full_page=False)
    finally:
        page.close()

"""axe-core in the browser tests: WCAG 2.1 A and AA rules (contrast included) run inside the
page as served, under its own Content-Security-Policy.

axe-core comes from the npm registry (tests/browser/package.json, locked; ``make browser-deps``
or ``sh scripts/ensure-axe.sh`` installs it). Missing, the checks are skipped, unless
NUMASCOPE_REQUIRE_BROWSER=1 (CI), which makes that a failure.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")

_RUN = """async (tags) => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
  return r.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '')),
  }));
}"""


def require_axe() -> None:
    if AXE.is_file():
        return
    reason = f"{AXE} is missing (sh scripts/ensure-axe.sh installs axe-core)"
    if os.environ.get("NUMASCOPE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def violations(page: Any, tags: tuple[str, ...] = WCAG_AA) -> list[dict[str, Any]]:
    """The WCAG violations axe finds on ``page`` as it is now (each with up to 5 nodes)."""
    require_axe()
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    result: list[dict[str, Any]] = page.evaluate(_RUN, list(tags))
    return result


def describe(found: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']}\n  " + "\n  ".join(v["nodes"]) for v in found
    )

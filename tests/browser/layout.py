"""Layout checks the browser tests share (run in the page by Playwright)."""

from __future__ import annotations

from typing import Any

# Words (runs of letters and digits) of the cells of scrolling tables that the layout split
# across lines: a cell squeezed until it breaks letter by letter (issue 21 point 7).
SPLIT_WORDS = """() => { const split = [];
  for (const td of document.querySelectorAll('.table-wrap td')) {
    const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (n.parentElement.closest('code')) continue;  // CPU lists may break anywhere
      for (const m of n.data.matchAll(/[A-Za-z0-9]+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) split.push(m[0]);
      }
    }
  }
  return split; }"""


def words_split_in_cells(page: Any) -> list[str]:
    """The words of table cells that a scrolling table's layout split across lines."""
    return list(page.evaluate(SPLIT_WORDS))

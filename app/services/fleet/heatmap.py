"""The fleet heatmap (``/fleet/heatmap.svg``, issue 20): every node × its NUMA nodes, each cell
coloured by the free exclusive CPUs of that NUMA node (the ``available`` CPUs of the node's
summary: what the static policy could still hand out exclusively there).

It must stay light at 5,000 nodes × up to 8 NUMA nodes (40,000 cells), so it is not one
element per cell: the nodes are laid out in bands of ``columns`` nodes (one column per node,
one row per NUMA node, a blank row between bands) and each colour is **one** ``<path>`` whose
runs of same-coloured neighbours in a row are drawn as one rectangle. The picture has a title
and a description with the count of nodes per colour (its text alternative); the page beside
it links to the same data as a table (``/fleet?sort=free``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

#: (lowest free exclusive CPUs, label, colour): a NUMA node is in the last bucket it reaches.
BUCKETS = (
    (0, "no free CPU", "#b2182b"),
    (1, "1–3 free", "#ef8a62"),
    (4, "4–7 free", "#d9ef8b"),
    (8, "8–15 free", "#66bd63"),
    (16, "16 or more free", "#1a9850"),
)
#: A node whose agent does not answer: its last numbers may be stale.
STALE = ("stale (agent not answering)", "#999999")
MAX_COLUMNS = 200
CELL = 6  # px per cell at the picture's natural size


@dataclass(frozen=True, slots=True)
class Heatmap:
    """The picture and what it shows (per colour: its label, colour and cell count)."""

    svg: str
    nodes: int
    legend: tuple[tuple[str, str, int], ...]


def bucket(free: int) -> int:
    """The index in ``BUCKETS`` of a NUMA node with ``free`` free exclusive CPUs."""
    found = 0
    for i, (low, _, _) in enumerate(BUCKETS):
        if free >= low:
            found = i
    return found


def _cells(node: Mapping[str, Any]) -> list[int]:
    """The colour index of each of the node's NUMA nodes (``len(BUCKETS)``: stale)."""
    stale = node.get("status") not in (None, "ok")
    return [len(BUCKETS) if stale else bucket(int(r["available"])) for r in node["numa"]]


def _paths(cells: list[list[int]], columns: int, depth: int) -> tuple[list[list[str]], list[int]]:
    """Per colour, the SVG path pieces of its cells (runs of one colour along a NUMA row of a
    band merged into one rectangle) and its number of cells."""
    band = depth + 1
    runs: list[list[str]] = [[] for _ in range(len(BUCKETS) + 1)]
    counts = [0] * (len(BUCKETS) + 1)
    for first in range(0, len(cells), columns):
        group = cells[first : first + columns]
        y0 = (first // columns) * band
        for numa in range(depth):
            x = 0
            while x < len(group):
                if numa >= len(group[x]):
                    x += 1
                    continue
                colour = group[x][numa]
                end = x + 1
                while end < len(group) and numa < len(group[end]) and group[end][numa] == colour:
                    end += 1
                runs[colour].append(f"M{x} {y0 + numa}h{end - x}v1h-{end - x}z")
                counts[colour] += end - x
                x = end
    return runs, counts


def heatmap(nodes: Sequence[Mapping[str, Any]]) -> Heatmap:
    """The heatmap of the fleet rows ``nodes`` (``FleetNode``s, in the order given)."""
    columns = max(1, min(MAX_COLUMNS, len(nodes)))
    cells = [_cells(n) for n in nodes]
    depth = max((len(c) for c in cells), default=1) or 1
    bands = max(1, -(-len(nodes) // columns))
    runs, counts = _paths(cells, columns, depth)
    names = [(label, colour) for _, label, colour in BUCKETS] + [STALE]
    legend = tuple((label, colour, counts[i]) for i, (label, colour) in enumerate(names))
    height = bands * (depth + 1) - 1
    summary = "; ".join(f"{n} NUMA nodes {label}" for label, _, n in legend if n)
    title = (
        f"Free exclusive CPUs of {len(nodes)} nodes, one column per node, one row per NUMA "
        f"node, {columns} nodes per band"
    )
    paths = "".join(
        f'<path fill="{names[i][1]}" d="{"".join(r)}"/>' for i, r in enumerate(runs) if r
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {columns} {height}" '
        f'width="{columns * CELL}" height="{height * CELL}" preserveAspectRatio="none" '
        f'shape-rendering="crispEdges" role="img" aria-labelledby="hm-title hm-desc">'
        f'<title id="hm-title">{escape(title)}</title><desc id="hm-desc">{escape(summary)}</desc>'
        f"{paths}</svg>"
    )
    return Heatmap(svg, len(nodes), legend)

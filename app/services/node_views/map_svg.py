"""The CPU map of a node as one standalone SVG picture (issue 21 "Beyond", lstopo-style): sockets
→ NUMA nodes → cores → hardware threads as nested boxes, each thread labelled with its CPU id
and its owner's tag and filled by owner, and the legend below, so the picture can go into a
ticket or a runbook. Built from the same ``NodeMapView`` as the node page (``cells`` and
``legend``), for the node now or at a point of its history.

Colour is never the only signal, as on the page: exclusive slices are solid, a pod's shared
pool is striped in the pod's colour, reserved CPUs cross-hatched, the node shared pool plain;
every cell carries its owner's tag, and a ``<title>`` (the tooltip in a browser) names the CPU,
its pool and its owner. The palette is the page's (static/css/nodes.css). L3 groups are not
drawn (the page shows them); cores are laid out eight to a row inside their NUMA node.

No PNG: rasterising SVG needs a library this project does not otherwise depend on (cairo,
a browser); any browser or ``rsvg-convert`` turns this file into one.
"""

from __future__ import annotations

from collections.abc import Iterator
from xml.sax.saxutils import escape, quoteattr

from app.services.node_views.models import CpuCell, LegendEntry, NodeMapView

# The page's owner palette (.c0 … .c11) and neutral colour.
PALETTE = (
    "#74c0fc",
    "#ffd43b",
    "#8ce99a",
    "#ffa8a8",
    "#d0bfff",
    "#ffc078",
    "#63e6be",
    "#faa2c1",
    "#c0eb75",
    "#91a7ff",
    "#e599f7",
    "#99e9f2",
)
NEUTRAL = "#b8c4d0"
INK = "#1b2430"
MUTED = "#5a6675"
POOL_TEXT = {
    "reserved": "reserved",
    "node-shared": "node shared pool",
    "pod-shared": "pod shared pool",
    "exclusive": "exclusive",
}

CELL_W, CELL_H = 30, 24
CORE_PAD = 2
CORES_PER_ROW = 8
NUMA_PAD, NUMA_TITLE = 8, 18
SOCKET_PAD, SOCKET_TITLE = 10, 20
GAP = 10
MAX_WIDTH = 1400
LEGEND_ROW, LEGEND_COL = 20, 540
LEGEND_CHARS = 80  # a label longer than this is cut (the page's legend has it whole)
FONT = "DejaVu Sans, Verdana, sans-serif"


def _colour(index: int | None) -> str:
    return NEUTRAL if index is None else PALETTE[index % len(PALETTE)]


def _fill(pool: str, colour: int | None) -> str:
    if pool == "exclusive":
        return _colour(colour)
    if pool == "pod-shared":
        return f"url(#ps{'n' if colour is None else colour % len(PALETTE)})"
    if pool == "reserved":
        return "url(#reserved)"
    return "#ffffff"


def _defs(m: NodeMapView) -> str:
    used = {c.colour for c in m.cells.values() if c.pool == "pod-shared"}
    used |= {e.colour for e in m.legend if e.pool == "pod-shared"}
    parts = [
        '<pattern id="reserved" width="6" height="6" patternUnits="userSpaceOnUse">'
        '<rect width="6" height="6" fill="#e4e8ec"/>'
        '<path d="M0 0L6 6M6 0L0 6" stroke="#9aa5b1" stroke-width="1.2"/></pattern>'
    ]
    for colour in sorted(used, key=lambda c: -1 if c is None else c):
        key = "n" if colour is None else str(colour % len(PALETTE))
        parts.append(
            f'<pattern id="ps{key}" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)">'
            f'<rect width="6" height="6" fill="#ffffff"/>'
            f'<rect width="3" height="6" fill="{_colour(colour)}"/></pattern>'
        )
    return "<defs>" + "".join(parts) + "</defs>"


def _tooltip(cell: CpuCell, label: str) -> str:
    parts = [f"CPU {cell.id}", POOL_TEXT.get(cell.pool, cell.pool)]
    if cell.pool in ("exclusive", "pod-shared"):
        parts.append(label)
        if cell.isolation:
            parts.append(f"isolation {cell.isolation}")
    return " · ".join(parts)


def _cell(x: int, y: int, cell: CpuCell, label: str) -> str:
    dashed = ' stroke-dasharray="3 2"' if cell.pool == "pod-shared" else ""
    tag = ""
    if cell.tag:
        tag = (
            f'<text x="{x + CELL_W / 2:g}" y="{y + 20}" font-size="8" font-weight="700" '
            f'text-anchor="middle">{escape(cell.tag)}</text>'
        )
    return (
        f'<g class="cpu" data-cpu="{cell.id}" data-pool="{cell.pool}" '
        f"data-owner={quoteattr(cell.owner)}>"
        f"<title>{escape(_tooltip(cell, label))}</title>"
        f'<rect x="{x}" y="{y}" width="{CELL_W - 2}" height="{CELL_H - 2}" rx="2" '
        f'fill="{_fill(cell.pool, cell.colour)}" stroke="{INK}" stroke-width="0.6"{dashed}/>'
        f'<text x="{x + CELL_W / 2 - 1:g}" y="{y + 10}" font-size="9" '
        f'text-anchor="middle">{cell.id}</text>{tag}</g>'
    )


class _Canvas:
    """Elements and the size they cover."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.width = 0
        self.height = 0

    def add(self, part: str, right: float, bottom: float) -> None:
        self.parts.append(part)
        self.width = max(self.width, int(right))
        self.height = max(self.height, int(bottom))


def _numa_size(cores: list[list[int]]) -> tuple[int, int, int]:
    threads = max((len(c) for c in cores), default=1)
    core_w = threads * CELL_W + 2 * CORE_PAD
    per_row = max(1, min(len(cores), CORES_PER_ROW))
    rows = max(1, -(-len(cores) // per_row))
    width = per_row * core_w + 2 * NUMA_PAD
    height = NUMA_TITLE + rows * (CELL_H + 2 * CORE_PAD + 2) + NUMA_PAD
    return width, height, core_w


def _draw_numa(
    canvas: _Canvas,
    x: int,
    y: int,
    numa: object,
    cores: list[tuple[int, list[int]]],
    cells: dict[int, CpuCell],
    labels: dict[str, str],
) -> tuple[int, int]:
    width, height, core_w = _numa_size([c for _, c in cores])
    numa_id = getattr(numa, "id", 0)
    title = f"NUMA node {numa_id} · {getattr(numa, 'cpu_count', 0)} CPUs"
    canvas.add(
        f'<g class="numa" data-numa="{numa_id}"><rect x="{x}" y="{y}" width="{width}" '
        f'height="{height}" rx="4" fill="#f1f5f9" stroke="#8a96a3"/>'
        f'<text x="{x + NUMA_PAD}" y="{y + 13}" font-size="11" font-weight="700">'
        f"{escape(title)}</text>",
        x + width,
        y + height,
    )
    per_row = max(1, min(len(cores), CORES_PER_ROW))
    for i, (core_id, cpus) in enumerate(cores):
        cx = x + NUMA_PAD + (i % per_row) * core_w
        cy = y + NUMA_TITLE + (i // per_row) * (CELL_H + 2 * CORE_PAD + 2)
        canvas.add(
            f'<g class="core" data-core="{core_id}"><rect x="{cx}" y="{cy}" '
            f'width="{core_w - 2}" height="{CELL_H + 2 * CORE_PAD}" rx="2" fill="#dde3ea"/>',
            cx + core_w,
            cy + CELL_H,
        )
        for j, cpu in enumerate(cpus):
            cell = cells.get(cpu)
            if cell is None:
                continue
            canvas.add(
                _cell(cx + CORE_PAD + j * CELL_W, cy + CORE_PAD, cell, labels.get(cell.owner, "")),
                0,
                0,
            )
        canvas.parts.append("</g>")
    canvas.parts.append("</g>")
    return width, height


def _cores(numa: object) -> list[tuple[int, list[int]]]:
    return [
        (core.id, list(core.cpus))
        for group in getattr(numa, "uncore_groups", [])
        for core in group.cores
    ]


def _legend(canvas: _Canvas, y: int, legend: list[LegendEntry], width: int) -> None:
    cols = max(1, min(2, width // LEGEND_COL))
    canvas.add(
        f'<text x="0" y="{y + 12}" font-size="12" font-weight="700">Legend</text>', 60, y + 16
    )
    for i, e in enumerate(legend):
        lx = (i % cols) * LEGEND_COL
        ly = y + 20 + (i // cols) * LEGEND_ROW
        dashed = ' stroke-dasharray="3 2"' if e.pool == "pod-shared" else ""
        pool = POOL_TEXT.get(e.pool, e.pool)
        label = e.label if pool in e.label else f"{e.label} · {pool}"
        if len(label) > LEGEND_CHARS:
            label = label[: LEGEND_CHARS - 1] + "…"
        text = f"{label} · {e.count} CPU" + ("" if e.count == 1 else "s")
        canvas.add(
            f'<g class="legend-item" data-owner={quoteattr(e.owner)} data-pool="{e.pool}">'
            f'<rect x="{lx}" y="{ly}" width="26" height="15" rx="2" '
            f'fill="{_fill(e.pool, e.colour)}" stroke="{INK}" stroke-width="0.6"{dashed}/>'
            f'<text x="{lx + 13}" y="{ly + 11}" font-size="8" font-weight="700" '
            f'text-anchor="middle">{escape(e.tag)}</text>'
            f'<text x="{lx + 32}" y="{ly + 11}" font-size="11">{escape(text)}</text></g>',
            lx + LEGEND_COL,
            ly + LEGEND_ROW,
        )


def _rows(items: list[tuple[int, int]], limit: int) -> Iterator[list[int]]:
    """Indexes of boxes of the given widths, wrapped into rows no wider than ``limit``."""
    row: list[int] = []
    used = 0
    for i, (w, _) in enumerate(items):
        if row and used + GAP + w > limit:
            yield row
            row, used = [], 0
        used += (GAP if row else 0) + w
        row.append(i)
    if row:
        yield row


def render_map_svg(m: NodeMapView, title: str, subtitle: str = "") -> str:
    """The map as an SVG document (``title`` and ``subtitle`` head the picture)."""
    labels = {e.owner: e.label for e in m.legend}
    body = _Canvas()
    y = 8
    body.add(
        f'<text x="0" y="{y + 14}" font-size="16" font-weight="700">{escape(title)}</text>',
        len(title) * 9,
        y + 20,
    )
    y += 22
    if subtitle:
        body.add(
            f'<text x="0" y="{y + 12}" font-size="11" fill="{MUTED}">{escape(subtitle)}</text>',
            len(subtitle) * 6,
            y + 16,
        )
        y += 18
    y += 6
    for socket in m.cpu_map.sockets:
        numas = [(n, _cores(n)) for n in socket.numa_nodes]
        sizes = [_numa_size([c for _, c in cores])[:2] for _, cores in numas]
        top = y
        y += SOCKET_TITLE
        socket_right = 0
        parts_before = len(body.parts)
        for row in _rows(sizes, MAX_WIDTH - 2 * SOCKET_PAD):
            x = SOCKET_PAD
            row_h = 0
            for i in row:
                numa, cores = numas[i]
                w, h = _draw_numa(body, x, y, numa, cores, m.cells, labels)
                x += w + GAP
                row_h = max(row_h, h)
            socket_right = max(socket_right, x - GAP + SOCKET_PAD)
            y += row_h + GAP
        socket_box = (
            f'<g class="socket" data-socket="{socket.id}"><rect x="0" y="{top}" '
            f'width="{socket_right}" height="{y - top}" rx="6" fill="#ffffff" stroke="{INK}"/>'
            f'<text x="{SOCKET_PAD}" y="{top + 15}" font-size="12" font-weight="700">'
            f"Socket {socket.id}</text></g>"
        )
        body.parts.insert(parts_before, socket_box)
        body.width = max(body.width, socket_right)
        y += GAP
    if m.cpu_map.memory_only_numa_nodes:
        ids = ", ".join(str(n.numa_node) for n in m.cpu_map.memory_only_numa_nodes)
        body.add(
            f'<text x="0" y="{y + 12}" font-size="11">NUMA nodes with memory but no CPUs: '
            f"{ids}</text>",
            400,
            y + 16,
        )
        y += 20
    _legend(body, y, m.legend, max(body.width, LEGEND_COL * 2))
    width, height = body.width + 2, body.height + 8
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="-1 0 {width} {height}" font-family="{FONT}" fill="{INK}" role="img" '
        f"aria-label={quoteattr(title)}>"
        f"<title>{escape(title)}</title>"
        f'<rect x="-1" y="0" width="{width}" height="{height}" fill="#ffffff"/>'
        + _defs(m)
        + "".join(body.parts)
        + "</svg>\n"
    )

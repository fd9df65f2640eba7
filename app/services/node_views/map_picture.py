"""The CPU map of a node as a picture, laid out once (issue 21 "Beyond", lstopo-style): sockets
→ NUMA nodes → cores → hardware threads as nested boxes, each thread labelled with its CPU id
and its owner's tag and painted by owner, and the legend below, so the picture can go into a
ticket or a runbook. Built from the same ``NodeMapView`` as the node page (``cells`` and
``legend``), for the node now or at a point of its history.

This module only places boxes and labels; ``map_svg`` writes them as SVG and ``map_png`` draws
them as PNG, so both pictures hold the same content at the same places.

Colour is never the only signal, as on the page: exclusive slices are solid, a pod's shared
pool is striped in the pod's colour, reserved CPUs cross-hatched, the node shared pool plain;
every cell carries its owner's tag, and a tooltip names the CPU, its pool and its owner. The
palette is the page's (static/css/nodes.css). L3 groups are not drawn (the page shows them);
cores are laid out eight to a row inside their NUMA node.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

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
WHITE = "#ffffff"
HATCH_BACK, HATCH_LINE = "#e4e8ec", "#9aa5b1"
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


@dataclass(frozen=True)
class Paint:
    """How a box is filled: a plain colour, the stripes of a pod's shared pool in ``colour``
    (``key`` names the stripe pattern), or the cross-hatch of reserved CPUs."""

    kind: Literal["solid", "stripes", "hatch"]
    colour: str
    key: str = ""


@dataclass(frozen=True)
class Box:
    """A rectangle; ``stroke`` None draws no outline, ``dashed`` a dashed one."""

    x: float
    y: float
    w: float
    h: float
    rx: int
    paint: Paint
    stroke: str | None = None
    stroke_width: float | None = None
    dashed: bool = False


@dataclass(frozen=True)
class Label:
    """A line of text; ``y`` is its baseline, ``anchor`` where ``x`` is on it."""

    x: float
    y: float
    text: str
    size: int
    bold: bool = False
    anchor: Literal["start", "middle"] = "start"
    colour: str | None = None  # None: the picture's ink


@dataclass
class Group:
    """Shapes that belong together (a CPU, a core, a legend entry): ``attrs`` identify it and
    ``tooltip`` describes it where the format can carry them (SVG)."""

    cls: str
    attrs: list[tuple[str, str]]
    items: list[Shape] = field(default_factory=list)
    tooltip: str | None = None


Shape = Box | Label | Group


@dataclass
class MapPicture:
    """The laid-out map: ``items`` in drawing order inside ``width`` × ``height`` (x from -1);
    ``stripes`` the palette indexes (None: neutral) of the pod shared pools drawn."""

    title: str
    width: int
    height: int
    items: list[Shape]
    stripes: list[int | None]


def colour_of(index: int | None) -> str:
    """The palette colour of an owner's colour index (neutral without one)."""
    return NEUTRAL if index is None else PALETTE[index % len(PALETTE)]


def paint_of(pool: str, colour: int | None) -> Paint:
    """How a CPU (or legend entry) of ``pool`` owned in ``colour`` is painted."""
    if pool == "exclusive":
        return Paint("solid", colour_of(colour))
    if pool == "pod-shared":
        key = "n" if colour is None else str(colour % len(PALETTE))
        return Paint("stripes", colour_of(colour), key)
    if pool == "reserved":
        return Paint("hatch", HATCH_BACK)
    return Paint("solid", WHITE)


def _tooltip(cell: CpuCell, label: str) -> str:
    parts = [f"CPU {cell.id}", POOL_TEXT.get(cell.pool, cell.pool)]
    if cell.pool in ("exclusive", "pod-shared"):
        parts.append(label)
        if cell.isolation:
            parts.append(f"isolation {cell.isolation}")
    return " · ".join(parts)


def _cell(x: int, y: int, cell: CpuCell, label: str) -> Group:
    items: list[Shape] = [
        Box(
            x,
            y,
            CELL_W - 2,
            CELL_H - 2,
            2,
            paint_of(cell.pool, cell.colour),
            INK,
            0.6,
            dashed=cell.pool == "pod-shared",
        ),
        Label(x + CELL_W / 2 - 1, y + 10, str(cell.id), 9, anchor="middle"),
    ]
    if cell.tag:
        items.append(Label(x + CELL_W / 2, y + 20, cell.tag, 8, bold=True, anchor="middle"))
    attrs = [("data-cpu", str(cell.id)), ("data-pool", cell.pool), ("data-owner", cell.owner)]
    return Group("cpu", attrs, items, _tooltip(cell, label))


class _Canvas:
    """Shapes and the size they cover."""

    def __init__(self) -> None:
        self.items: list[Shape] = []
        self.width = 0
        self.height = 0

    def add(self, item: Shape, right: float, bottom: float) -> None:
        self.items.append(item)
        self.grow(right, bottom)

    def grow(self, right: float, bottom: float) -> None:
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


def _numa(
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
    group = Group(
        "numa",
        [("data-numa", str(numa_id))],
        [
            Box(x, y, width, height, 4, Paint("solid", "#f1f5f9"), "#8a96a3"),
            Label(x + NUMA_PAD, y + 13, title, 11, bold=True),
        ],
    )
    canvas.add(group, x + width, y + height)
    per_row = max(1, min(len(cores), CORES_PER_ROW))
    for i, (core_id, cpus) in enumerate(cores):
        cx = x + NUMA_PAD + (i % per_row) * core_w
        cy = y + NUMA_TITLE + (i // per_row) * (CELL_H + 2 * CORE_PAD + 2)
        core_box = Box(cx, cy, core_w - 2, CELL_H + 2 * CORE_PAD, 2, Paint("solid", "#dde3ea"))
        core = Group("core", [("data-core", str(core_id))], [core_box])
        canvas.grow(cx + core_w, cy + CELL_H)
        for j, cpu in enumerate(cpus):
            if cpu in cells:
                cell = cells[cpu]
                core.items.append(
                    _cell(
                        cx + CORE_PAD + j * CELL_W, cy + CORE_PAD, cell, labels.get(cell.owner, "")
                    )
                )
        group.items.append(core)
    return width, height


def _cores(numa: object) -> list[tuple[int, list[int]]]:
    return [
        (core.id, list(core.cpus))
        for group in getattr(numa, "uncore_groups", [])
        for core in group.cores
    ]


def _legend(canvas: _Canvas, y: int, legend: list[LegendEntry], width: int) -> None:
    cols = max(1, min(2, width // LEGEND_COL))
    canvas.add(Label(0, y + 12, "Legend", 12, bold=True), 60, y + 16)
    for i, e in enumerate(legend):
        lx = (i % cols) * LEGEND_COL
        ly = y + 20 + (i // cols) * LEGEND_ROW
        pool = POOL_TEXT.get(e.pool, e.pool)
        label = e.label if pool in e.label else f"{e.label} · {pool}"
        if len(label) > LEGEND_CHARS:
            label = label[: LEGEND_CHARS - 1] + "…"
        text = f"{label} · {e.count} CPU" + ("" if e.count == 1 else "s")
        swatch = Box(
            lx, ly, 26, 15, 2, paint_of(e.pool, e.colour), INK, 0.6, dashed=e.pool == "pod-shared"
        )
        items: list[Shape] = [
            swatch,
            Label(lx + 13, ly + 11, e.tag, 8, bold=True, anchor="middle"),
            Label(lx + 32, ly + 11, text, 11),
        ]
        entry = Group("legend-item", [("data-owner", e.owner), ("data-pool", e.pool)], items)
        canvas.add(entry, lx + LEGEND_COL, ly + LEGEND_ROW)


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


def _sockets(body: _Canvas, m: NodeMapView, y: int, labels: dict[str, str]) -> int:
    """Draws every socket with its NUMA nodes from ``y`` on; returns the y below them."""
    for socket in m.cpu_map.sockets:
        numas = [(n, _cores(n)) for n in socket.numa_nodes]
        sizes = [_numa_size([c for _, c in cores])[:2] for _, cores in numas]
        top = y
        y += SOCKET_TITLE
        socket_right = 0
        before = len(body.items)
        for row in _rows(sizes, MAX_WIDTH - 2 * SOCKET_PAD):
            x = SOCKET_PAD
            row_h = 0
            for i in row:
                numa, cores = numas[i]
                w, h = _numa(body, x, y, numa, cores, m.cells, labels)
                x += w + GAP
                row_h = max(row_h, h)
            socket_right = max(socket_right, x - GAP + SOCKET_PAD)
            y += row_h + GAP
        box = Box(0, top, socket_right, y - top, 6, Paint("solid", WHITE), INK)
        title = Label(SOCKET_PAD, top + 15, f"Socket {socket.id}", 12, bold=True)
        body.items.insert(before, Group("socket", [("data-socket", str(socket.id))], [box, title]))
        body.width = max(body.width, socket_right)
        y += GAP
    return y


def lay_out(m: NodeMapView, title: str, subtitle: str = "") -> MapPicture:
    """The map laid out as a picture (``title`` and ``subtitle`` head it)."""
    labels = {e.owner: e.label for e in m.legend}
    body = _Canvas()
    y = 8
    body.add(Label(0, y + 14, title, 16, bold=True), len(title) * 9, y + 20)
    y += 22
    if subtitle:
        body.add(Label(0, y + 12, subtitle, 11, colour=MUTED), len(subtitle) * 6, y + 16)
        y += 18
    y = _sockets(body, m, y + 6, labels)
    if m.cpu_map.memory_only_numa_nodes:
        ids = ", ".join(str(n.numa_node) for n in m.cpu_map.memory_only_numa_nodes)
        body.add(Label(0, y + 12, f"NUMA nodes with memory but no CPUs: {ids}", 11), 400, y + 16)
        y += 20
    _legend(body, y, m.legend, max(body.width, LEGEND_COL * 2))
    used = {c.colour for c in m.cells.values() if c.pool == "pod-shared"}
    used |= {e.colour for e in m.legend if e.pool == "pod-shared"}
    stripes = sorted(used, key=lambda c: -1 if c is None else c)
    return MapPicture(title, body.width + 2, body.height + 8, body.items, stripes)

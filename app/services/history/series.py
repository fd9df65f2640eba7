"""A simulated node's history as time series (issue 21 "Beyond", Grafana-style): per NUMA node,
the exclusive CPUs, the pods' shared pools, the node shared pool and the free regular memory
after every change of the node, kubelet restarts marked. One replay pass of the admission log
(``app.services.history.replay.replayed``); served as CSV (``series_csv``) and drawn as a small SVG
chart on the History page (``series_svg``: one panel per NUMA node, one line per CPU series).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from xml.sax.saxutils import escape

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.domain.explain import numa_free
from app.domain.node.model import Node
from app.services.history.replay import Builder, log_rows, replayed
from app.services.node_views import iso
from app.services.nodes.service import NodeService


class SeriesPoint(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    entry: int  # 0: as created
    at: str
    numa_node: int
    exclusive_cpus: int
    pod_shared_cpus: int
    node_shared_cpus: int  # the node shared pool (the default cpuset minus reserved CPUs)
    free_memory: int | None  # regular memory the memory manager can still hand out
    restart: bool = False  # this entry is a kubelet restart


def _points(node: Node, entry: int, at: str, restart: bool) -> list[SeriesPoint]:
    snap = node.snapshot()
    topo = snap.topology
    exclusive = pod_shared = 0
    for p in snap.pods:
        exclusive |= p.exclusive_cpus().mask
        pod_shared |= p.shared_pool().mask
    shared = (snap.default_cpuset - snap.reserved_cpus).mask
    memory = {n.numa_node: n.free_memory.get("memory") for n in numa_free(node)}
    out = []
    for n in topo.numa_node_ids():
        cpus = topo.cpus_in_numa_nodes([n]).mask
        out.append(
            SeriesPoint(
                entry=entry,
                at=at,
                numa_node=n,
                exclusive_cpus=(exclusive & cpus).bit_count(),
                pod_shared_cpus=(pod_shared & cpus).bit_count(),
                node_shared_cpus=(shared & cpus).bit_count(),
                free_memory=memory.get(n),
                restart=restart,
            )
        )
    return out


def series(service: NodeService, node: str) -> list[SeriesPoint]:
    """The points, oldest first: the node as created, then after each change."""
    rows = log_rows(service, node)
    builder = Builder(service, node)
    created = iso(builder.definition.created_at)
    out: list[SeriesPoint] = []
    for row, state in replayed(builder, rows):
        if row is None:
            out += _points(state, 0, created, False)
        else:
            out += _points(state, row.seq, iso(row.at), row.is_restart)
    return out


CSV_COLUMNS = (
    "entry",
    "at",
    "numa_node",
    "exclusive_cpus",
    "pod_shared_cpus",
    "node_shared_cpus",
    "free_memory_bytes",
    "restart",
)


def series_csv(points: list[SeriesPoint]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in points:
        writer.writerow(
            [
                p.entry,
                p.at,
                p.numa_node,
                p.exclusive_cpus,
                p.pod_shared_cpus,
                p.node_shared_cpus,
                "" if p.free_memory is None else p.free_memory,
                "yes" if p.restart else "",
            ]
        )
    return out.getvalue()


# The chart: one panel per NUMA node, x = the changes in order, y = CPUs.
LINES = (
    ("exclusive_cpus", "exclusive", "#2f6db5", ""),
    ("pod_shared_cpus", "pod shared pools", "#c27c0e", "5 3"),
    ("node_shared_cpus", "node shared pool", "#2b7a3d", "2 2"),
)
PANEL_W, PANEL_H, PAD = 300, 120, 28


def _dashed(dash: str) -> str:
    return f' stroke-dasharray="{dash}"' if dash else ""


@dataclass(frozen=True, slots=True)
class _Scale:
    """Where a point falls in a panel: x by its entry's rank among the changes, y by CPUs up
    to ``top``."""

    index: dict[int, int]
    span: int
    top: int

    def x(self, ox: int, entry: int) -> float:
        return ox + PANEL_W * self.index[entry] / self.span

    def y(self, oy: int, cpus: int) -> float:
        return oy + PANEL_H - PANEL_H * cpus / self.top


def _legend(restarts: bool) -> str:
    """The key above the panels: one sample line per series, and the restart mark if any."""
    parts = []
    lx = PAD
    for _, label, colour, dash in LINES:
        parts.append(
            f'<line x1="{lx}" y1="14" x2="{lx + 24}" y2="14" stroke="{colour}" stroke-width="2"{_dashed(dash)}/>'
            f'<text x="{lx + 28}" y="18" font-size="11">{label}</text>'
        )
        lx += 40 + len(label) * 7
    if restarts:
        parts.append(
            f'<line x1="{lx}" y1="8" x2="{lx}" y2="20" stroke="#a33" stroke-dasharray="2 2"/>'
            f'<text x="{lx + 6}" y="18" font-size="11">kubelet restart</text>'
        )
    return "".join(parts)


def _panel(
    n: int, ox: int, oy: int, mine: list[SeriesPoint], restarts: list[int], scale: _Scale
) -> str:
    """One NUMA node's panel at (``ox``, ``oy``): its frame, restart marks and series lines."""
    parts = [
        f'<g class="numa-series" data-numa="{n}">'
        f'<rect x="{ox}" y="{oy}" width="{PANEL_W}" height="{PANEL_H}" fill="#f8fafc" stroke="#c4ccd5"/>'
        f'<text x="{ox}" y="{oy - 4}" font-size="11" font-weight="700">NUMA node {n}</text>'
        f'<text x="{ox - 4}" y="{oy + 9}" font-size="9" text-anchor="end">{scale.top}</text>'
        f'<text x="{ox - 4}" y="{oy + PANEL_H}" font-size="9" text-anchor="end">0</text>'
    ]
    for e in restarts:
        x = scale.x(ox, e)
        parts.append(
            f'<line class="restart" x1="{x:.1f}" y1="{oy}" x2="{x:.1f}" y2="{oy + PANEL_H}" '
            'stroke="#a33" stroke-dasharray="2 2"/>'
        )
    for field, label, colour, dash in LINES:
        coords = " ".join(
            f"{scale.x(ox, p.entry):.1f},{scale.y(oy, getattr(p, field)):.1f}" for p in mine
        )
        parts.append(
            f'<polyline class="series" data-series="{field}" points="{coords}" fill="none" '
            f'stroke="{colour}" stroke-width="1.6"{_dashed(dash)}><title>{label}, NUMA node {n}'
            "</title></polyline>"
        )
    parts.append("</g>")
    return "".join(parts)


def series_svg(node: str, points: list[SeriesPoint]) -> str:
    """A small multiple of line charts (SVG); patterns of dashes tell the lines apart too."""
    numas = sorted({p.numa_node for p in points})
    steps = sorted({p.entry for p in points})
    restarts = sorted({p.entry for p in points if p.restart})
    top = (
        max(
            (max(p.exclusive_cpus, p.pod_shared_cpus, p.node_shared_cpus) for p in points),
            default=1,
        )
        or 1
    )
    scale = _Scale({e: i for i, e in enumerate(steps)}, max(1, len(steps) - 1), top)
    cols = min(4, max(1, len(numas)))
    rows = -(-len(numas) // cols)
    width = cols * (PANEL_W + PAD) + PAD
    height = rows * (PANEL_H + PAD + 16) + 44
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Verdana, sans-serif" '
        f'role="img" aria-label="CPUs per NUMA node over the history of {escape(node)}">'
        f"<title>CPUs per NUMA node over the history of {escape(node)}</title>"
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        _legend(bool(restarts)),
    ]
    for k, n in enumerate(numas):
        ox = PAD + (k % cols) * (PANEL_W + PAD)
        oy = 44 + (k // cols) * (PANEL_H + PAD + 16)
        mine = [p for p in points if p.numa_node == n]
        parts.append(_panel(n, ox, oy, mine, restarts, scale))
    parts.append("</svg>\n")
    return "".join(parts)

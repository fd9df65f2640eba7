"""The CPU map of a node as one standalone SVG document: the picture ``map_picture`` lays out,
each CPU a ``<g class="cpu">`` with ``data-cpu``, ``data-pool`` and ``data-owner`` and a
``<title>`` (the tooltip in a browser) naming the CPU, its pool and its owner. ``map_png``
draws the same picture as PNG.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from app.services.node_views.map_picture import (
    HATCH_BACK,
    HATCH_LINE,
    INK,
    WHITE,
    Box,
    Label,
    MapPicture,
    Paint,
    Shape,
    colour_of,
    lay_out,
)
from app.services.node_views.models import NodeMapView

FONT = "DejaVu Sans, Verdana, sans-serif"


def _n(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _fill(paint: Paint) -> str:
    if paint.kind == "stripes":
        return f"url(#ps{paint.key})"
    if paint.kind == "hatch":
        return "url(#reserved)"
    return paint.colour


def _defs(stripes: list[int | None]) -> str:
    parts = [
        '<pattern id="reserved" width="6" height="6" patternUnits="userSpaceOnUse">'
        f'<rect width="6" height="6" fill="{HATCH_BACK}"/>'
        f'<path d="M0 0L6 6M6 0L0 6" stroke="{HATCH_LINE}" stroke-width="1.2"/></pattern>'
    ]
    for colour in stripes:
        key = "n" if colour is None else str(colour % 12)
        parts.append(
            f'<pattern id="ps{key}" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)">'
            f'<rect width="6" height="6" fill="{WHITE}"/>'
            f'<rect width="3" height="6" fill="{colour_of(colour)}"/></pattern>'
        )
    return "<defs>" + "".join(parts) + "</defs>"


def _box(b: Box) -> str:
    extra = ""
    if b.stroke:
        extra += f' stroke="{b.stroke}"'
    if b.stroke_width is not None:
        extra += f' stroke-width="{_n(b.stroke_width)}"'
    if b.dashed:
        extra += ' stroke-dasharray="3 2"'
    return (
        f'<rect x="{_n(b.x)}" y="{_n(b.y)}" width="{_n(b.w)}" height="{_n(b.h)}" rx="{b.rx}" '
        f'fill="{_fill(b.paint)}"{extra}/>'
    )


def _label(t: Label) -> str:
    extra = ' font-weight="700"' if t.bold else ""
    if t.anchor != "start":
        extra += f' text-anchor="{t.anchor}"'
    if t.colour:
        extra += f' fill="{t.colour}"'
    return f'<text x="{_n(t.x)}" y="{_n(t.y)}" font-size="{t.size}"{extra}>{escape(t.text)}</text>'


def _shape(s: Shape) -> str:
    if isinstance(s, Box):
        return _box(s)
    if isinstance(s, Label):
        return _label(s)
    attrs = "".join(f" {name}={quoteattr(value)}" for name, value in s.attrs)
    title = f"<title>{escape(s.tooltip)}</title>" if s.tooltip is not None else ""
    return f'<g class="{s.cls}"{attrs}>{title}' + "".join(map(_shape, s.items)) + "</g>"


def svg_document(p: MapPicture) -> str:
    """The laid-out picture as an SVG document."""
    w, h = p.width, p.height
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="-1 0 {w} {h}" font-family="{FONT}" fill="{INK}" role="img" '
        f"aria-label={quoteattr(p.title)}>"
        f"<title>{escape(p.title)}</title>"
        f'<rect x="-1" y="0" width="{w}" height="{h}" fill="{WHITE}"/>'
        + _defs(p.stripes)
        + "".join(map(_shape, p.items))
        + "</svg>\n"
    )


def render_map_svg(m: NodeMapView, title: str, subtitle: str = "") -> str:
    """The map as an SVG document (``title`` and ``subtitle`` head the picture)."""
    return svg_document(lay_out(m, title, subtitle))

"""The CPU map of a node as a PNG image: the picture ``map_picture`` lays out (the one
``map_svg`` writes as SVG), drawn with Pillow at twice its size so the 8-point tags stay
legible. Stripes, cross-hatch and dashed outlines are drawn as in the SVG; the text uses
Pillow's own embedded font, so the image looks the same on a machine without fonts (the
slim container image has none).

Pillow is imported here only, when a PNG is asked for: the agent and the CLI never load it.
"""

from __future__ import annotations

import io
import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from app.services.node_views import map_picture as layout
from app.services.node_views.map_picture import Box, Label, MapPicture, Paint, Shape
from app.services.node_views.models import NodeMapView

if TYPE_CHECKING:
    from PIL import Image, ImageDraw

SCALE = 2
PATTERN = 6  # the SVG patterns' period, in picture units


def _xy(x: float, y: float) -> tuple[int, int]:
    # The picture's x starts at -1 (the SVG's viewBox).
    return round((x + 1) * SCALE), round(y * SCALE)


@lru_cache(maxsize=64)
def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size * SCALE)


@lru_cache(maxsize=64)
def _tile(paint: Paint, w: int, h: int) -> Image.Image:
    """A w × h image filled with ``paint``'s stripes or hatch."""
    from PIL import Image, ImageDraw

    period = PATTERN * SCALE
    if paint.kind == "hatch":
        img = Image.new("RGB", (w, h), paint.colour)
        draw = ImageDraw.Draw(img)
        width = max(1, round(1.2 * SCALE / 2))
        for o in range(-h - period, w + period, period):
            draw.line([(o, 0), (o + h, h)], fill=layout.HATCH_LINE, width=width)
            draw.line([(o + h, 0), (o, h)], fill=layout.HATCH_LINE, width=width)
        return img
    # Stripes: half of each period the owner's colour, at 45° as the SVG's rotated pattern.
    img = Image.new("RGB", (w, h), layout.WHITE)
    draw = ImageDraw.Draw(img)
    step = period * math.sqrt(2)
    for i in range(int((w + h) / step) + 3):
        left = i * step - step
        corners = [(left, 0), (left + step / 2, 0), (left + step / 2 - h, h), (left - h, h)]
        draw.polygon(corners, paint.colour)
    return img


def _dashes(draw: ImageDraw.ImageDraw, x0: int, y0: int, x1: int, y1: int, colour: str) -> None:
    on, off = 3 * SCALE, 2 * SCALE
    for ax, ay, bx, by in ((x0, y0, x1, y0), (x1, y0, x1, y1), (x1, y1, x0, y1), (x0, y1, x0, y0)):
        length = abs(bx - ax) + abs(by - ay)
        dx, dy = (bx > ax) - (bx < ax), (by > ay) - (by < ay)
        for s in range(0, length, on + off):
            e = min(s + on, length)
            draw.line([(ax + dx * s, ay + dy * s), (ax + dx * e, ay + dy * e)], fill=colour)


def _box(img: Image.Image, draw: ImageDraw.ImageDraw, b: Box) -> None:
    from PIL import Image, ImageDraw

    x0, y0 = _xy(b.x, b.y)
    x1, y1 = _xy(b.x + b.w, b.y + b.h)
    radius = b.rx * SCALE
    if b.paint.kind == "solid":
        draw.rounded_rectangle((x0, y0, x1, y1), radius, fill=b.paint.colour)
    else:
        mask = Image.new("L", (x1 - x0 + 1, y1 - y0 + 1), 0)
        ImageDraw.Draw(mask).rounded_rectangle((0, 0, x1 - x0, y1 - y0), radius, fill=255)
        img.paste(_tile(b.paint, x1 - x0 + 1, y1 - y0 + 1), (x0, y0), mask)
    if b.stroke is None:
        return
    if b.dashed:
        _dashes(draw, x0, y0, x1, y1, b.stroke)
        return
    width = max(1, round((1 if b.stroke_width is None else b.stroke_width) * SCALE))
    draw.rounded_rectangle((x0, y0, x1, y1), radius, outline=b.stroke, width=width)


def _label(draw: ImageDraw.ImageDraw, t: Label) -> None:
    colour = t.colour or layout.INK
    draw.text(
        _xy(t.x, t.y),
        t.text,
        fill=colour,
        font=_font(t.size),
        anchor="ms" if t.anchor == "middle" else "ls",
        stroke_width=1 if t.bold else 0,
        stroke_fill=colour,
    )


def _draw(img: Image.Image, draw: ImageDraw.ImageDraw, shapes: list[Shape]) -> None:
    for s in shapes:
        if isinstance(s, Box):
            _box(img, draw, s)
        elif isinstance(s, Label):
            _label(draw, s)
        else:
            _draw(img, draw, s.items)


def png_image(p: MapPicture) -> bytes:
    """The laid-out picture as PNG bytes, ``SCALE`` pixels to the picture's unit."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (p.width * SCALE, p.height * SCALE), layout.WHITE)
    _draw(img, ImageDraw.Draw(img), p.items)
    out = io.BytesIO()
    img.save(out, "PNG", optimize=False)
    return out.getvalue()


def render_map_png(m: NodeMapView, title: str, subtitle: str = "") -> bytes:
    """The map as a PNG image (``title`` and ``subtitle`` head the picture)."""
    return png_image(layout.lay_out(m, title, subtitle))

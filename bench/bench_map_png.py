"""The CPU map as a picture (issue 21 "Beyond"): CPU time to lay out the 512-CPU demo node's map
and write it as SVG (the reference) or draw it as PNG with Pillow, and the sizes.

CPU time (``time.process_time``) of the calling process, medians over the runs: the machine is
shared, wall time would measure the neighbours.
"""

from __future__ import annotations

from collections.abc import Callable

from _common import cpu_time_calls, tmp_settings
from fastapi.testclient import TestClient

from app.services.node_views.map_picture import lay_out
from app.services.node_views.map_png import png_image
from app.services.node_views.map_svg import svg_document
from app.web.app import create_app

NODE = "demo-512"
RUNS = 15


def cpu_ms(fn: Callable[[], object], runs: int = RUNS) -> float:
    """Median CPU milliseconds of ``fn`` over ``runs`` calls (after one untimed call)."""
    return cpu_time_calls(fn, runs).median_ms


def main() -> int:
    with tmp_settings(demo=True) as settings:
        app = create_app(settings)
        with TestClient(app):
            view = app.state.nodes.reads.node_view(NODE).map
    title = f"CPU map of {NODE}"
    picture = lay_out(view, title, "as it is now")
    svg, png = svg_document(picture), png_image(picture)
    layout = cpu_ms(lambda: lay_out(view, title, "as it is now"))
    write_svg = cpu_ms(lambda: svg_document(picture))
    draw_png = cpu_ms(lambda: png_image(picture))
    print(f"{NODE}: {view.cpus} CPUs, picture {picture.width}x{picture.height}")
    print(f"{'':<22}{'CPU ms (median)':>16}{'bytes':>10}")
    print(f"{'lay out':<22}{layout:>16.1f}{'':>10}")
    print(f"{'write SVG (reference)':<22}{write_svg:>16.1f}{len(svg.encode()):>10}")
    print(f"{'draw PNG (Pillow)':<22}{draw_png:>16.1f}{len(png):>10}")
    print(f"PNG / SVG CPU time: {draw_png / write_svg:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

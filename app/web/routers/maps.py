"""The node as pictures and series (issue 21 "Beyond"). ``/nodes/{node}/map.svg`` and
``map.png``: the node as it is, and ``?at=ENTRY``, the node right after entry ENTRY of its
history (0: as created; simulated nodes only). One picture laid out by
``app.services.node_views.map_picture`` from the same map view as the node page and the history
point page, written by ``map_svg`` or drawn by ``map_png``; served inline with a file name, so
a link with ``download`` saves ``<node>-map.svg`` (``<node>-map-at-<N>.png``). An unknown node
or entry is 404, a bad ``at`` 422.
``/nodes/{node}/history.csv`` and ``history.svg`` (the chart on the History page): the time
series of ``app.services.history.series``.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

from fastapi import APIRouter, Query
from starlette.responses import Response

from app.services.history import series as history_series
from app.services.history import views as history_views
from app.services.node_views.map_svg import render_map_svg
from app.services.node_views.models import NodeMapView
from app.services.nodes.service import NodeService
from app.web.deps import NodeName, NodeServiceDep

pages = APIRouter(tags=["nodes"])

At = Annotated[
    int | None,
    Query(
        ge=0,
        le=2**62,
        description="a history entry number (1, 2, 3…): the map right after it (0: as created)",
    ),
]


class _Picture(NamedTuple):
    view: NodeMapView
    title: str
    subtitle: str
    stem: str  # the file name without its extension


def _picture(service: NodeService, node: str, at: int | None) -> _Picture:
    """What the map picture of ``node`` (now, or right after entry ``at``) shows."""
    summary = service.reads.summary(node)
    if at is None:
        view = service.reads.node_view(node).map
        title, stem = f"CPU map of {node}", f"{node}-map"
        when = f"as it is now · kubelet {summary.release}"
    else:
        point = history_views.map_at(service, node, at, "at")
        view = point.map
        title, stem = f"CPU map of {node} at #{at}", f"{node}-map-at-{at}"
        when = point.label
    p = summary.policies
    subtitle = (
        f"{when} · {view.cpus} CPUs · CPU manager {p.cpu_manager_policy} · topology manager "
        f"{p.topology_manager_policy} (scope {p.topology_manager_scope})"
    )
    return _Picture(view, title, subtitle, stem)


def _image(content: str | bytes, media_type: str, filename: str) -> Response:
    return Response(
        content,
        media_type=media_type,
        headers={
            "Content-Disposition": f'inline; filename="{filename}"',
            "Cache-Control": "no-store",
        },
    )


def _map(service: NodeService, node: str, at: int | None, ext: str) -> Response:
    view, title, subtitle, stem = _picture(service, node, at)
    if ext == "png":
        from app.services.node_views.map_png import render_map_png  # Pillow: dashboard only

        return _image(render_map_png(view, title, subtitle), "image/png", f"{stem}.png")
    return _image(render_map_svg(view, title, subtitle), "image/svg+xml", f"{stem}.svg")


def _map_route(ext: str, media_type: str, summary: str) -> None:
    """``GET /nodes/{node}/map.<ext>`` (route ``map_<ext>``)."""

    def endpoint(service: NodeServiceDep, node: NodeName, at: At = None) -> Response:
        return _map(service, node, at, ext)

    endpoint.__name__ = f"map_{ext}"  # the operation's id in the OpenAPI document
    pages.add_api_route(
        f"/nodes/{{node}}/map.{ext}",
        endpoint,
        methods=["GET"],
        name=f"map_{ext}",
        summary=summary,
        response_class=Response,
        responses={
            200: {"content": {media_type: {}}},
            404: {"description": "No such node or entry"},
        },
    )


_map_route(
    "svg",
    "image/svg+xml",
    "The node's CPU map as an SVG picture (now, or after a history entry)",
)
_map_route(
    "png",
    "image/png",
    "The node's CPU map as a PNG image (now, or after a history entry): the SVG's picture at "
    "twice its size",
)


@pages.get(
    "/nodes/{node}/history.csv",
    name="history_csv",
    summary="Per NUMA node: exclusive, pod shared and node shared CPUs and free memory after "
    "each change of the node (restarts marked)",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}}, 404: {"description": "No such node"}},
)
def history_csv(service: NodeServiceDep, node: NodeName) -> Response:
    text = history_series.series_csv(history_series.series(service, node))
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{node}-history.csv"'},
    )


@pages.get("/nodes/{node}/history.svg", name="history_svg", include_in_schema=False)
def history_svg(service: NodeServiceDep, node: NodeName) -> Response:
    svg = history_series.series_svg(node, history_series.series(service, node))
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})

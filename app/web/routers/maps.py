"""The node as pictures and series (issue 21 "Beyond"). ``/nodes/{node}/map.svg``: the node
as it is, and ``/nodes/{node}/map.svg?at=ENTRY``, the node right after entry ENTRY of its
history (0: as created; simulated nodes only). Drawn by ``app.services.node_views.map_svg``
from the same map view as the node page and the history point page; served inline with a
file name, so a link with ``download`` saves ``<node>-map.svg`` (``<node>-map-at-<N>.svg``).
An unknown node or entry is 404, a bad ``at`` 422. No PNG: see the renderer's docstring.
``/nodes/{node}/history.csv`` and ``history.svg`` (the chart on the History page): the time
series of ``app.services.history_series``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from app.services import history_series, history_views
from app.services.node_views.map_svg import render_map_svg
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


@pages.get(
    "/nodes/{node}/map.svg",
    name="map_svg",
    summary="The node's CPU map as an SVG picture (now, or after a history entry)",
    response_class=Response,
    responses={
        200: {"content": {"image/svg+xml": {}}},
        404: {"description": "No such node or entry"},
    },
)
def map_svg(service: NodeServiceDep, node: NodeName, at: At = None) -> Response:
    summary = service.summary(node)
    if at is None:
        view = service.node_view(node).map
        title = f"CPU map of {node}"
        filename = f"{node}-map.svg"
        when = f"as it is now · kubelet {summary.release}"
    else:
        point = history_views.map_at(service, node, at, "at")
        view = point.map
        title = f"CPU map of {node} at #{at}"
        filename = f"{node}-map-at-{at}.svg"
        when = point.label
    p = summary.policies
    subtitle = (
        f"{when} · {view.cpus} CPUs · CPU manager {p.cpu_manager_policy} · topology manager "
        f"{p.topology_manager_policy} (scope {p.topology_manager_scope})"
    )
    svg = render_map_svg(view, title, subtitle)
    return Response(
        svg,
        media_type="image/svg+xml",
        headers={
            "Content-Disposition": f'inline; filename="{filename}"',
            "Cache-Control": "no-store",
        },
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

"""The kubelet's resource-manager metrics of a simulated node (``app.services.kubelet_metrics``).

* ``/nodes/{node}/metrics`` — the series as that node's kubelet would show them on its own
  ``/metrics`` (Prometheus text format, the kubelet's names): a Prometheus job can scrape one
  simulated node like a kubelet;
* ``/api/v1/nodes/{node}/kubelet-metrics`` — the same series as JSON.

Both are computed by replaying the node's admission log (a plain ``def`` route, so the replay
runs in the thread pool, off the event loop). An observed node has no such page: its kubelet
serves the real series (404 here, naming the simulated nodes).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.services.kubelet_metrics import CONTENT_TYPE, KubeletMetrics, KubeletMetricsView
from app.web.deps import NodeName, NodeServiceDep

router = APIRouter(tags=["nodes"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such simulated node"}}


def _metrics(request: Request, service: NodeServiceDep) -> KubeletMetrics:
    state = request.app.state
    current = getattr(state, "kubelet_metrics", None)
    if not isinstance(current, KubeletMetrics) or current.service is not service:
        current = KubeletMetrics(service)
        state.kubelet_metrics = current
    return current


@router.get(
    "/nodes/{node}/metrics",
    name="node_kubelet_metrics",
    summary="The node's kubelet resource-manager series (Prometheus text format)",
    responses={**NOT_FOUND, 200: {"content": {CONTENT_TYPE: {}}}},
)
def node_kubelet_metrics(request: Request, service: NodeServiceDep, node: NodeName) -> Response:
    return Response(_metrics(request, service).text(node), media_type=CONTENT_TYPE)


@router.get(
    "/api/v1/nodes/{node}/kubelet-metrics",
    name="api_kubelet_metrics",
    summary="The node's kubelet resource-manager series as JSON",
    responses=NOT_FOUND,
)
def api_kubelet_metrics(
    request: Request, service: NodeServiceDep, node: NodeName
) -> KubeletMetricsView:
    return _metrics(request, service).view(node)

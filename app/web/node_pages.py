"""What the node pages render besides their view: the sample texts of the create and admit
forms, the nodes page with its create form, and the node page's context. The nodes routers,
the forms and the restart panel all render these, so they live here rather than in one of them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.batch_verdicts import batch_context
from app.services.demo import config_text, pod_manifest
from app.services.node_views import NodeIndexView, NodeView
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.service import NodeService
from app.services.pod_find import pods_page
from app.services.undo import last_undoable
from app.web.rendering import render

# The forms' samples (package data, beside the demo's pods and configurations).
SAMPLE_CONFIG = config_text("sample")
SAMPLE_POD = pod_manifest("sample")


def render_nodes_page(
    request: Request,
    view: NodeIndexView,
    *,
    form: dict[str, Any] | None = None,
    error: NodeServiceError | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """The nodes page with its create form (the sample configuration, or what was sent)."""
    context = {
        "form": form or {"release": DEFAULT_RELEASE, "kubelet_config": SAMPLE_CONFIG},
        "form_error": error,
    }
    return render(
        request,
        "pages/nodes.html",
        view,
        fragment="fragments/_nodes_table.html",
        status_code=status_code,
        context=context,
    )


def node_page_context(service: NodeService, view: NodeView) -> dict[str, Any]:
    """What the node page needs beside its view (the restart panel's route renders it too)."""
    return {
        "form_text": SAMPLE_POD,
        "pods_page": pods_page(view.pods, view.summary),
        "undo": last_undoable(service, view.summary.name),
        **batch_context(
            service, view.summary.name, view.last_batch[0].batch if view.last_batch else None
        ),
    }

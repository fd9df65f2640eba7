"""The FastAPI application factory.

``create_app(settings)`` wires everything once: database engine and migrations
(``alembic upgrade head``), templates, static files, metrics, error handlers, routers and the
services the routes use. ``make_app()`` builds ``Settings`` from the environment for
``uvicorn --factory app.web.app:make_app``.

``/docs`` serves Swagger UI from the vendored copy under ``static/vendor`` (FastAPI's default
page loads it from a CDN); ReDoc is disabled for the same reason.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from app import __version__
from app.adapters.db.engine import make_engine
from app.adapters.db.migrate import upgrade_head
from app.services.nodes import NodeService
from app.services.topologies import TopologyService
from app.settings import Settings
from app.web.errors import install_error_handlers
from app.web.metrics import AppMetrics, MetricsMiddleware, NodesCollector
from app.web.rendering import STATIC_DIR, make_templates
from app.web.routers import api_nodes, checkpoints, nodes, ops, topologies

SWAGGER_UI_VERSION = "5.35.0"

DESCRIPTION = (
    "How a Kubernetes node's CPUs and memory are handed out by the kubelet's CPU, memory and "
    'topology managers. Errors are `{"error": {"reason", "message", "field"?}}`.'
)


def create_app(
    settings: Settings | None = None,
    *,
    topology_service: TopologyService | None = None,
) -> FastAPI:
    """Build the app for ``settings`` (tests may also pass their own topology service)."""
    settings = settings if settings is not None else Settings()
    logging.getLogger("app").setLevel(
        "DEBUG" if settings.log_level == "trace" else settings.log_level.upper()
    )
    app = FastAPI(
        title="Numascope",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
    )
    metrics = AppMetrics()

    engine = make_engine(settings.database_url)
    if settings.migrate_on_startup:
        upgrade_head(engine)

    if topology_service is None:
        topology_service = TopologyService(
            sysfs_root=settings.sysfs_root,
            use_cpuinfo=settings.cpuinfo,
            on_host_error=metrics.source_errors.labels("sysfs").inc,
        )

    app.state.settings = settings
    app.state.engine = engine
    app.state.migrated = settings.migrate_on_startup
    app.state.metrics = metrics
    app.state.templates = make_templates()
    app.state.topologies = topology_service

    # Simulated nodes: definitions and log in the database, state files under state_dir.
    node_service = NodeService(engine, state_dir=settings.state_dir)
    try:
        node_service.start(demo=settings.demo)
    except Exception:
        logging.getLogger("app").exception("the simulated nodes could not be loaded")
    app.state.nodes = node_service
    metrics.registry.register(NodesCollector(node_service.metric_samples))

    app.add_middleware(MetricsMiddleware, metrics=metrics)
    install_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.include_router(ops.router)
    app.include_router(nodes.pages)  # before topologies: "/" is the nodes page when there are nodes
    app.include_router(api_nodes.api)
    app.include_router(topologies.api)
    app.include_router(topologies.pages)
    app.include_router(checkpoints.pages)
    app.include_router(checkpoints.api)

    @app.get("/docs", include_in_schema=False, name="docs")
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        base = f"{root}/static/vendor/swagger-ui-{SWAGGER_UI_VERSION}"
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title="Numascope API",
            swagger_js_url=f"{base}/swagger-ui-bundle.js",
            swagger_css_url=f"{base}/swagger-ui.css",
            swagger_favicon_url=f"{root}/static/favicon.svg",
        )

    return app


def make_app() -> FastAPI:
    """Factory for ``uvicorn --factory app.web.app:make_app`` (settings from the environment)."""
    return create_app(Settings())

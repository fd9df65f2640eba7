"""The FastAPI application factory.

``create_app(settings)`` wires everything once: database engine and migrations
(``alembic upgrade head``), static files, metrics, error handlers, routers and the services the
routes use. What only some processes need is imported only there (issue 20 pt 7, the node
agent at a fraction of its former memory): the hub's machinery with ``Settings.hub``, alembic
only when this process migrates (``numascope serve`` migrates a database file in a child
process, ``migrated=True``), jinja2 and the templates on the first page
(``app.web.rendering.templates_of``). With ``--no-simulated`` (``Settings.simulated`` off: the
DaemonSet's agent) there is no database at all (``NoSimulatedNodes``), and a process that is
not a hub includes only the routes it is polled on (``AGENT_ROUTERS``), the others on the
first request for them (``app.web.lazy_routes``). ``make_app()`` builds ``Settings`` from the environment for
``uvicorn --factory app.web.app:make_app``.

With ``Settings.observe`` the node this process runs on is observed (read-only,
``app.services.observe.observer``) and listed beside the simulated nodes; its admission and removal
endpoints answer 409, a source it cannot read 503 (both mapped in ``app.web.errors``), and
``/readyz`` (``app.web.routers.ops``) waits for its first successful observation. With ``Settings.podresources_dir`` every simulated node's PodResources
is served on ``<dir>/<node>.sock`` while the app runs (``app.services.sockets``, started and
stopped by the lifespan).

``/docs`` serves Swagger UI from the vendored copy under ``static/vendor`` (FastAPI's default
page loads it from a CDN); ReDoc is disabled for the same reason. The OpenAPI document lists
only the request body types the request guard accepts (``app.web.guard.api_body_accepted``):
a route may read ``text/plain`` itself, but the guard answers 415 before it (issue 22).
"""

from __future__ import annotations

import gc
import importlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from app import __version__
from app.services.encoded_json import GZIP_LEVEL, GZIP_MINIMUM
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.no_store import NoSimulatedNodes
from app.services.observe.observer import NodeObserver
from app.services.topologies import TopologyService
from app.settings import Settings
from app.web.compression import Compression
from app.web.errors import install_error_handlers
from app.web.guard import RequestGuard, api_body_accepted
from app.web.lazy_routes import LazyRoutes
from app.web.metrics import AppMetrics, MetricsMiddleware, NodesCollector
from app.web.rendering import STATIC_DIR

if TYPE_CHECKING:
    from app.services.fleet.hub import Hub
    from app.services.nodes.service import NodeService
    from app.services.nrt_loop import NRTLoop
    from app.services.sockets import PodResourcesSockets

#: Every router, in the order the app tries them (the first route matching a path answers).
ROUTERS: tuple[tuple[str, str], ...] = (
    ("app.web.routers.ops", "router"),
    ("app.web.routers.api_nodes", "api"),  # first: its JSON answers are the hottest paths
    ("app.web.routers.node_pods", "pages"),  # the pods table a page at a time, and Find
    ("app.web.routers.nodes", "pages"),  # before topologies: "/" is the nodes page with nodes
    ("app.web.routers.node_forms", "forms"),  # POST only: no path and method is a page's
    ("app.web.routers.workflow", "pages"),  # explain, history, downloads, confirm, undo, glossary
    ("app.web.routers.restart", "api"),
    ("app.web.routers.restart", "pages"),
    ("app.web.routers.kubelet_restarts", "pages"),  # a restart's confirmation and undo
    ("app.web.routers.kubelet_restarts", "api"),
    ("app.web.routers.batches", "pages"),  # one submission's verdicts, a page at a time
    ("app.web.routers.maps", "pages"),  # the CPU map as a picture
    ("app.web.routers.search", "pages"),  # "/" on every page
    ("app.web.routers.kubelet_metrics", "router"),  # each simulated node's kubelet series
    ("app.web.routers.workflow", "api"),
    ("app.web.routers.watch", "api"),  # a node page's live refresh
    ("app.web.routers.topologies", "api"),
    ("app.web.routers.topologies", "pages"),
    ("app.web.routers.checkpoints", "pages"),
    ("app.web.routers.checkpoints", "api"),
    ("app.web.routers.agent", "api"),
    ("app.web.routers.fleet", "api"),
    ("app.web.routers.fleet", "pages"),
)
#: What a node agent that keeps no simulated nodes is polled on (probes, metrics, the
#: summaries and their watch stream): included at start, the others on first use
#: (``app.web.lazy_routes``). No route of the others serves a path of these.
AGENT_ROUTERS = (("app.web.routers.ops", "router"), ("app.web.routers.agent", "api"))
#: Only a hub answers these; such an agent leaves them out.
HUB_ROUTERS = (("app.web.routers.fleet", "api"), ("app.web.routers.fleet", "pages"))

SWAGGER_UI_VERSION = "5.35.0"

DESCRIPTION = (
    "How a Kubernetes node's CPUs and memory are handed out by the kubelet's CPU, memory and "
    'topology managers. Errors are `{"error": {"reason", "message", "field"?}}`.'
)


def create_app(
    settings: Settings | None = None,
    *,
    topology_service: TopologyService | None = None,
    migrated: bool = False,
) -> FastAPI:
    """Build the app for ``settings`` (tests may also pass their own topology service).
    ``migrated``: the caller brought the schema to head already (``numascope serve`` does it
    in a short-lived child process, ``app.commands.serve``), so alembic is not imported here."""
    settings = settings if settings is not None else Settings()
    app = _new_app(settings)
    _add_services(app, settings, topology_service=topology_service, migrated=migrated)
    _add_middleware(app, settings)
    _add_routes(app, settings)
    return app


def _new_app(settings: Settings) -> FastAPI:
    """The bare application with its settings and metrics (``app.state``), logging set."""
    logging.getLogger("app").setLevel(
        "DEBUG" if settings.log_level == "trace" else settings.log_level.upper()
    )
    app = FastAPI(
        title="Numascope",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.metrics = AppMetrics()
    # app.state.templates: built by the first page (app.web.rendering.templates_of).
    return app


def _add_services(
    app: FastAPI,
    settings: Settings,
    *,
    topology_service: TopologyService | None,
    migrated: bool,
) -> None:
    """The services the routes use, on ``app.state``: topologies, the simulated nodes, the
    observed node, the hub, the catalog of every node, the simulated nodes' PodResources
    sockets and the NodeResourceTopology publisher (the last three run by the lifespan)."""
    metrics: AppMetrics = app.state.metrics
    if topology_service is None:
        topology_service = TopologyService(
            sysfs_root=settings.sysfs_root,
            use_cpuinfo=settings.cpuinfo,
            on_host_error=metrics.source_errors.labels("sysfs").inc,
        )
    app.state.topologies = topology_service
    node_service = _simulated_nodes(app, settings, migrated=migrated)
    observer = app.state.observer = _observer(settings, metrics)
    hub = app.state.hub = _hub(settings, metrics)
    # Every node by name, whatever its kind: routes, the CLI and the hub ask the catalog.
    catalog = app.state.catalog = NodeCatalog(
        node_service,
        observer=observer,
        fleet=hub.fleet if hub is not None else None,
        remote=hub.remote_nodes if hub is not None else None,
    )
    metrics.registry.register(NodesCollector(catalog.metric_samples))
    app.state.podresources_sockets = _podresources_sockets(settings, node_service)
    app.state.nrt = _nrt_publisher(settings, observer, catalog, metrics)


def _observer(settings: Settings, metrics: AppMetrics) -> NodeObserver | None:
    """The real node this process runs on (read-only), listed beside the simulated ones."""
    if not settings.observe:
        return None
    observer = NodeObserver(
        settings, on_error=lambda source: metrics.source_errors.labels(source).inc()
    )
    metrics.registry.register(CheckpointCollector(observer.checkpoint_samples))
    return observer


def _hub(settings: Settings, metrics: AppMetrics) -> Hub | None:
    """The cluster: the hub polls agents and holds --demo-fleet nodes (built in the background
    by the hub's start); both started and stopped by the lifespan. Imported only for a hub:
    its fan-out (httpx, dnspython) is no agent's business (issue 20 pt 7)."""
    if not settings.hub:
        return None
    from app.services.fleet.hub import Hub
    from app.services.nodes.demo_fleet import DemoFleet

    return Hub(settings, metrics.registry, fleet=DemoFleet(settings.demo_fleet))


def _podresources_sockets(
    settings: Settings, node_service: NodeService | NoSimulatedNodes
) -> PodResourcesSockets | None:
    """Each simulated node's PodResources on <podresources_dir>/<node>.sock (lifespan)."""
    if settings.podresources_dir is None or isinstance(node_service, NoSimulatedNodes):
        return None
    from app.services.sockets import PodResourcesSockets

    return PodResourcesSockets(settings.podresources_dir, node_service)


def _nrt_publisher(
    settings: Settings, observer: NodeObserver | None, catalog: NodeCatalog, metrics: AppMetrics
) -> NRTLoop | None:
    """An observed agent may publish its NodeResourceTopology (started and stopped by the
    lifespan; httpx and the API client only then)."""
    if not settings.publish_nrt or observer is None:
        return None
    from app.services.nrt_loop import NRTLoop

    return NRTLoop(
        catalog.get(observer.name),
        settings.nrt_interval,
        registry=metrics.registry,
        fingerprint_method=settings.nrt_fingerprint_method,
    )


def _add_middleware(app: FastAPI, settings: Settings) -> None:
    """The middleware stack, innermost first (each ``add_middleware`` wraps the previous)."""
    if settings.simulated:
        from app.web.fast_json import CachedJSONFastPath
        from app.web.routers import api_nodes

        # Innermost: cached JSON at hand answered before the router (app.web.fast_json).
        app.add_middleware(CachedJSONFastPath, routes=api_nodes.api.routes)
    # Host, cross-site, body and CSRF checks (app.web.guard); metrics stay outermost.
    app.add_middleware(RequestGuard, bind_host=settings.host, allowed_hosts=settings.allowed_hosts)
    # Text answers gzipped when the client accepts it (issue 10 pt 2); level 6 costs a third
    # of level 9's time for nearly its size. Cached JSON comes already compressed
    # (app.web.conditional) and server-sent events are never buffered (Starlette excludes them).
    app.add_middleware(Compression, minimum_size=GZIP_MINIMUM, compresslevel=GZIP_LEVEL)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)


def _add_routes(app: FastAPI, settings: Settings) -> None:
    """Static files, the routers (the agent's others on first use), the error handlers, the
    guarded OpenAPI document and ``/docs``, in the order the router tries them."""
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    lazy = _include_routers(app, settings)
    install_error_handlers(app)  # after the routers: their modules' errors are loaded
    app.openapi = _guarded_openapi(app, lazy)  # type: ignore[method-assign]
    app.add_api_route("/docs", _swagger_ui, include_in_schema=False, name="docs")


def _swagger_ui(request: Request) -> HTMLResponse:
    """Our own Swagger UI page (not get_swagger_ui_html): its start-up script is a static
    file, so the page runs under the same CSP as every other (script-src 'self')."""
    from app.web.rendering import templates_of

    root = request.scope.get("root_path", "").rstrip("/")
    return templates_of(request.app).TemplateResponse(
        request,
        "docs.html",
        {
            "openapi_url": f"{root}{request.app.openapi_url}",
            "swagger_base": f"{root}/static/vendor/swagger-ui-{SWAGGER_UI_VERSION}",
            "root": root,
        },
    )


def _simulated_nodes(
    app: FastAPI, settings: Settings, *, migrated: bool
) -> NodeService | NoSimulatedNodes:
    """The simulated nodes (definitions and log in the database, state files under
    ``state_dir``), with ``app.state.engine`` and ``app.state.migrated``; with
    ``--no-simulated`` none, and no database (SQLAlchemy is never imported)."""
    if not settings.simulated:
        app.state.engine = None
        app.state.migrated = False
        app.state.nodes = NoSimulatedNodes()
        return app.state.nodes
    from app.adapters.db.engine import make_engine
    from app.services.demo import create_demo_nodes
    from app.services.nodes.service import NodeService

    engine = make_engine(settings.database_url)
    if settings.migrate_on_startup and not migrated:
        # Imported here: alembic (and pygments through it) is 10 MiB that a process whose
        # schema was migrated by someone else never needs.
        from app.adapters.db.migrate import upgrade_head

        upgrade_head(engine)
    app.state.engine = engine
    app.state.migrated = settings.migrate_on_startup or migrated
    node_service = NodeService(
        engine, state_dir=settings.state_dir, hint_budget=settings.hint_search_budget or None
    )
    try:
        node_service.start(seed=create_demo_nodes if settings.demo else None)
    except Exception:
        logging.getLogger("app").exception("the simulated nodes could not be loaded")
    app.state.nodes = node_service
    return node_service


def _include_routers(app: FastAPI, settings: Settings) -> LazyRoutes | None:
    """Every router of ``ROUTERS`` in order; for a node agent that keeps no simulated nodes
    (not a hub) only ``AGENT_ROUTERS`` now and the others but the hub's on first use."""
    lazy: tuple[tuple[str, str], ...] = ()
    if settings.simulated or settings.hub:
        eager = ROUTERS
    else:
        eager = AGENT_ROUTERS
        lazy = tuple(r for r in ROUTERS if r not in AGENT_ROUTERS and r not in HUB_ROUTERS)
    for module, attribute in eager:
        app.include_router(getattr(importlib.import_module(module), attribute))
    return LazyRoutes(app, lazy) if lazy else None


def _guarded_openapi(app: FastAPI, lazy: LazyRoutes | None) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` whose API request bodies are only the types the guard lets through
    (the routers loaded on first use included)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        if lazy is not None:
            lazy.load()
        schema = build()
        for path, operations in schema.get("paths", {}).items():
            if not path.startswith("/api/"):
                continue
            for operation in operations.values():
                content = (operation.get("requestBody") or {}).get("content") or {}
                for media in [m for m in content if not api_body_accepted(m, path)]:
                    del content[media]
        return schema

    return openapi


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the simulated nodes' PodResources sockets, run the hub's poller and the
    NodeResourceTopology publisher while the app runs."""
    sockets: PodResourcesSockets | None = getattr(app.state, "podresources_sockets", None)
    hub: Hub | None = getattr(app.state, "hub", None)
    nrt: NRTLoop | None = getattr(app.state, "nrt", None)
    if sockets is not None:
        sockets.start()
    if hub is not None:
        await hub.start()
    if nrt is not None:
        nrt.start()
    try:
        yield
    finally:
        if nrt is not None:
            nrt.stop()
        if hub is not None:
            await hub.stop()
        if sockets is not None:
            sockets.stop()


# The observed node's state file series of users.md §5.4: name -> (help, label names).
CHECKPOINT_SERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "checkpoint_info": (
        "An observed kubelet state file: detected format version and recorded policy (1).",
        ("node", "file", "version", "policy"),
    ),
    "checkpoint_checksum_valid": (
        "Whether every checksum of an observed kubelet state file verifies (0/1).",
        ("node", "file"),
    ),
    "stale_checkpoint_entries": (
        "Entries of an observed kubelet state file whose pod UID matches no live pod.",
        ("node", "file"),
    ),
}


class CheckpointCollector(Collector):
    """Reads the observed node's state files at scrape time (``samples`` as for
    ``NodesCollector``, with series names from ``CHECKPOINT_SERIES``)."""

    def __init__(self, samples: Callable[[], Iterable[tuple[str, dict[str, str], float]]]):
        self._samples = samples

    def _families(self) -> dict[str, GaugeMetricFamily]:
        return {
            name: GaugeMetricFamily(f"numascope_{name}", help_text, labels=list(labels))
            for name, (help_text, labels) in CHECKPOINT_SERIES.items()
        }

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return list(self._families().values())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = self._families()
        try:
            for name, labels, value in self._samples():
                family = families[name]
                family.add_metric([labels[n] for n in CHECKPOINT_SERIES[name][1]], value)
        except Exception:  # a failing observation must not break the scrape
            logging.getLogger("app").exception("observed state files: no metrics")
        yield from families.values()


#: gc thresholds of a serving process (Python's default is 700, 10, 10).
SERVING_GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc_for_serving() -> None:
    """A view rebuild after a change allocates hundreds of thousands of short-lived objects
    (rows, cells, models), which at the default thresholds set off dozens of collections that
    each walk the long-lived engine state: about a fifth of the first page after an
    admission on a 512-thread node with 1,000 containers. Almost all of it is freed by
    reference counting, so collecting cycles less often costs little memory. Called once per
    serving process (``numascope serve``, each of its workers), not by ``create_app``: tests
    and embedders keep their own settings."""
    gc.set_threshold(*SERVING_GC_THRESHOLDS)


def make_app() -> FastAPI:
    """Factory for ``uvicorn --factory app.web.app:make_app`` (settings from the environment);
    a serving process, so the gc is tuned for it."""
    tune_gc_for_serving()
    return create_app(Settings())

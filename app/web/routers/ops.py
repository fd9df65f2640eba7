"""Operations endpoints: liveness, readiness and Prometheus metrics.

``/readyz`` checks the database, if the process has one (and reports whether migrations ran at
startup) and that every
simulated node can be written now (``durability``: its state directory takes a synced write;
a node that cannot record a change makes the server unready until it can); when the app
observes the node it runs on it also waits for an observation that read the state files,
observing (at most once per TTL) while not ready so that readiness probes drive the first
observation. The kubelet's PodResources socket is reported (``checks.podresources``,
``warnings``) but does not make the agent unready: its pages and verdicts come from the files.
A hub with ``--demo-fleet N`` is ready once all N simulated nodes are built (``demoFleet``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.domain.observed import SOURCE_PODRESOURCES
from app.services.observe.observer import NodeObserver
from app.web.metrics import AppMetrics

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from app.services.nodes.no_store import NoSimulatedNodes
    from app.services.nodes.service import NodeService

log = logging.getLogger(__name__)

router = APIRouter(tags=["operations"])


@router.get("/healthz", name="healthz", summary="Liveness: the process serves requests")
async def healthz() -> dict[str, str]:
    # On the event loop itself: it answers while every worker thread is busy.
    return {"status": "ok"}


def _check_database(engine: Engine) -> str | None:
    from sqlalchemy import text  # here: a process without a database never loads SQLAlchemy

    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as err:
        return f"database: {err.__class__.__name__}: {err}".splitlines()[0]
    return None


def _check_durability(nodes: NodeService | NoSimulatedNodes) -> str | None:
    """``None`` when every simulated node can take a change now (its state directory takes a
    write, its state was loaded), else which cannot and why."""
    try:
        problems = nodes.registry.durability_problems()
    except Exception as exc:  # a failing check means: not ready
        return f"durability: {exc.__class__.__name__}: {exc}".splitlines()[0]
    return ("durability: " + "; ".join(problems)) if problems else None


def _check_observation(observer: NodeObserver) -> str | None:
    """``None`` once an observation read the state files (a snapshot was built), else what failed."""
    if observer.ready:
        return None
    try:
        observed = observer.current()
    except Exception as exc:  # a bug in an observation must not kill the probe
        log.exception("observation failed")
        return f"observation: {exc.__class__.__name__}"
    if observer.ready:
        return None
    errors = [f"{source}: {message}" for source, message in observed.errors]
    return "observation: " + ("; ".join(errors) or "not ready")


def _check_podresources(observer: NodeObserver) -> str | None:
    """``None`` while the kubelet's PodResources socket answers, else why not. Reported but not
    blocking: the node's pages, map and verdicts come from the state files, and an agent whose
    socket mount is missing should still be reachable to say so."""
    observed = observer.latest()
    if observed is None:
        return None  # nothing observed yet: the observation check says so
    errors = [message for source, message in observed.errors if source == SOURCE_PODRESOURCES]
    return ("podresources: " + "; ".join(errors)) if errors else None


def _check_demo_fleet(hub: Any) -> tuple[str | None, str | None]:
    """What is not built yet of a hub's demo fleet: in the hub, and in the worker processes
    that answer its fits and upgrade checks (``None``, ``None`` once all of it is)."""
    fleet = hub.fleet
    building = (
        None
        if fleet.ready.is_set()
        else f"demo fleet: {len(fleet.nodes)} of {fleet.count} nodes built"
    )
    return building, hub.workers.problem() if hub.workers is not None else None


@dataclass
class _Readiness:
    """The checks of one ``/readyz`` answer: each check's status, and the problems that make
    the server unready (``problems``) or are only reported (``warnings``)."""

    checks: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(
        self, name: str, problem: str | None, failed: str = "failed", blocking: bool = True
    ) -> None:
        self.checks[name] = "ok" if problem is None else failed
        if problem:
            (self.problems if blocking else self.warnings).append(problem)

    def response(self) -> JSONResponse:
        body: dict[str, Any] = {
            "status": "unready" if self.problems else "ready",
            "checks": self.checks,
        }
        if self.problems:
            body["error"] = {"reason": "ServiceUnavailable", "message": "; ".join(self.problems)}
        if self.warnings:
            body["warnings"] = self.warnings
        status = 503 if self.problems else 200
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


@router.get(
    "/readyz",
    name="readyz",
    summary="Readiness: the database answers, its schema is migrated, every simulated node "
    "can be written and (when observing) the observed node's sources were read",
    responses={503: {"description": "Not ready; the body names the failing checks"}},
)
def readyz(request: Request) -> JSONResponse:
    state = request.app.state
    readiness = _Readiness()
    engine: Engine | None = state.engine
    if engine is not None:  # None: --no-simulated, no database
        readiness.add("database", _check_database(engine))
        readiness.checks["migrations"] = "ok" if state.migrated else "skipped"
    nodes = getattr(state, "nodes", None)
    if nodes is not None:
        readiness.add("durability", _check_durability(nodes))
    hub = getattr(state, "hub", None)
    if hub is not None and hub.fleet.count:
        fleet_problem, workers_problem = _check_demo_fleet(hub)
        readiness.add("demoFleet", fleet_problem, failed="building")
        readiness.add("fleetWorkers", workers_problem, failed="building")
    observer: NodeObserver | None = getattr(state, "observer", None)
    if observer is not None:
        readiness.add("observation", _check_observation(observer))
        socket_problem = _check_podresources(observer)
        readiness.add("podresources", socket_problem, failed="unavailable", blocking=False)
    return readiness.response()


@router.get(
    "/metrics",
    name="metrics",
    summary="Prometheus metrics (text exposition format)",
    response_class=Response,
)
def metrics(request: Request) -> Response:
    app_metrics: AppMetrics = request.app.state.metrics
    return Response(app_metrics.exposition(), media_type=app_metrics.content_type)

"""Operations endpoints: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy import Engine, text
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.web.metrics import AppMetrics

router = APIRouter(tags=["operations"])


@router.get("/healthz", name="healthz", summary="Liveness: the process serves requests")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


def _check_database(engine: Engine) -> str | None:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as err:
        return f"database: {err.__class__.__name__}: {err}".splitlines()[0]
    return None


@router.get(
    "/readyz",
    name="readyz",
    summary="Readiness: the database answers and its schema is migrated",
    responses={503: {"description": "Not ready; the body names the failing checks"}},
)
def readyz(request: Request) -> JSONResponse:
    checks: dict[str, str] = {}
    problems: list[str] = []
    db_problem = _check_database(request.app.state.engine)
    checks["database"] = "ok" if db_problem is None else "failed"
    if db_problem:
        problems.append(db_problem)
    migrated: bool = request.app.state.migrated
    checks["migrations"] = "ok" if migrated else "skipped"
    if not problems:
        return JSONResponse({"status": "ready", "checks": checks})
    body: dict[str, Any] = {
        "status": "unready",
        "checks": checks,
        "error": {"reason": "ServiceUnavailable", "message": "; ".join(problems)},
    }
    return JSONResponse(body, status_code=503, headers={"Cache-Control": "no-store"})


@router.get(
    "/metrics",
    name="metrics",
    summary="Prometheus metrics (text exposition format)",
    response_class=Response,
)
def metrics(request: Request) -> Response:
    app_metrics: AppMetrics = request.app.state.metrics
    return Response(app_metrics.exposition(), media_type=app_metrics.content_type)

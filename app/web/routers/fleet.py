"""The fleet (``numascope serve --hub``): ``/fleet`` and ``/api/v1/fleet``, fleet fit and
upgrade readiness, each page with its JSON twin.

* ``GET /api/v1/fleet``: ``{"agents": [...], "nodes": [...]}`` from the last poll (ETag; never
  waits for an agent). ``/fleet`` (and ``/fleet.json``) filter, sort and page it.
* ``POST /api/v1/fleet/fit[?strategy=…]``: a Pod manifest in the formats admission takes;
  every node's own dry run, ranked by the scheduler plugin's scoring strategy.
  ``/fleet/fit``: the form and the ranked answer, filtered and paged; its JSON twin
  ``/fleet/fit.json?manifest=…``.
* ``GET /api/v1/fleet/upgrade?release=R[&podLevelResourceManagers=…]``: every node's verdict
  for a kubelet of release R. ``/fleet/upgrade``: the form and the drain plan (failing nodes
  grouped by cause, one recovery per cause, a ``kubectl drain`` line and a label selector), its
  JSON twin ``/fleet/upgrade.json`` and the nodes to drain as ``/fleet/upgrade.csv``.

Without ``--hub`` these routes answer 404 (``HubDisabledError``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from app.contracts.fleet import FitAnswer, FleetDocument, FleetView, UpgradeAnswer
from app.domain.kubelet_config import DEFAULT_RELEASE, RELEASES, KubeletConfig
from app.domain.pod.model import Pod
from app.services.fleet.hub import Hub, HubDisabledError
from app.services.fleet.ranked import RankedFit
from app.services.fleet.score import LEAST_ALLOCATED, STRATEGIES
from app.services.fleet.views import (
    FIT_LIMIT,
    FitQuery,
    FleetQuery,
    FleetQueryError,
    drain_csv,
    fit_view,
    fit_view_json,
    fleet_view,
    upgrade_view,
)
from app.services.nodes.errors import NodeInputError
from app.services.nodes.inputs import parse_manifests
from app.web.conditional import NOT_MODIFIED, model_responses, tagged_response
from app.web.inputs import (
    MAX_BODY_BYTES,
    GateQuery,
    ReleaseQuery,
    check_release,
    manifest_text,
    parse_gate,
)
from app.web.node_pages import SAMPLE_POD
from app.web.rendering import render, wants_fragment

api = APIRouter(prefix="/api/v1", tags=["fleet"])
pages = APIRouter(tags=["fleet"])


def get_hub(request: Request) -> Hub:
    hub: Hub | None = getattr(request.app.state, "hub", None)
    if hub is None:
        raise HubDisabledError()
    return hub


HubDep = Annotated[Hub, Depends(get_hub)]


def fleet_query(
    q: Annotated[str, Query(max_length=253, description="Node name contains")] = "",
    release: Annotated[str, Query(max_length=16)] = "",
    findings: Annotated[str, Query(description="any, with or without")] = "any",
    min_free: Annotated[int, Query(alias="minFree", ge=0, le=100000)] = 0,
    sort: Annotated[str, Query(description="name, release, free or findings")] = "name",
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> FleetQuery:
    try:
        return FleetQuery(q, release, findings, min_free, sort, offset, limit).check()
    except FleetQueryError as exc:
        raise NodeInputError(exc.message, exc.field) from None


FleetQueryDep = Annotated[FleetQuery, Depends(fleet_query)]


@api.get(
    "/fleet",
    name="api_fleet",
    summary="Every agent and node of the fleet (last poll; ETag / If-None-Match)",
    responses=model_responses(FleetDocument, "The fleet", (404, "Not a hub"), tagged=True),
)
def api_fleet(request: Request, hub: HubDep) -> Response:
    encoded = hub.view.encoded()
    return tagged_response(request, encoded.body, encoded.etag)


@pages.get(
    "/fleet.json",
    name="fleet_json",
    summary="The fleet page's data (filtered, sorted)",
    responses=model_responses(FleetView, "The fleet page's data"),
)
def fleet_json(hub: HubDep, query: FleetQueryDep) -> dict[str, Any]:
    # Every row was built from a summary that passed the contract (FleetView is the schema):
    # no second validation of 500 rows per request.
    return fleet_view(hub.view.document(), query)


@pages.get("/fleet", name="fleet", include_in_schema=False)
def fleet_page(request: Request, hub: HubDep, query: FleetQueryDep) -> HTMLResponse:
    view = fleet_view(hub.view.document(), query)
    drawn, encoded = hub.view.heatmap()
    return render(
        request,
        "pages/fleet.html",
        view,
        fragment="fragments/_fleet_table.html",
        context={
            "fleet_query": query,
            "demo_pending": not hub.fleet.ready.is_set(),
            "heatmap": drawn,
            "heatmap_etag": encoded.etag.strip('"')[:12],
        },
    )


@pages.get(
    "/fleet/heatmap.svg",
    name="fleet_heatmap",
    summary="The fleet heatmap: nodes × NUMA nodes coloured by free exclusive CPUs (SVG)",
    response_class=Response,
    responses={200: {"content": {"image/svg+xml": {}}}, **NOT_MODIFIED},
)
def fleet_heatmap(request: Request, hub: HubDep) -> Response:
    _, encoded = hub.view.heatmap()
    return tagged_response(request, encoded.body, encoded.etag, "image/svg+xml")


# -- fit ------------------------------------------------------------------------------------


FIT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "text/plain": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object", "description": "A v1 Pod"}},
        },
    }
}


def _first_pod(text: str) -> Pod:
    """The same checks (and 422) as admission, before anything is fanned out; the first pod
    is the one ranked."""
    return parse_manifests(text, KubeletConfig(release=DEFAULT_RELEASE))[0]


async def run_fit(hub: Hub, text: str, strategy: str = LEAST_ALLOCATED) -> RankedFit:
    pod = _first_pod(text)
    try:
        FitQuery(strategy).check()
    except FleetQueryError as exc:
        raise NodeInputError(exc.message, exc.field) from None
    return await hub.questions.fit(text.encode(), "application/yaml", text, pod, strategy)


def fit_query(
    strategy: Annotated[
        str, Query(description="Scoring strategy: " + ", ".join(STRATEGIES))
    ] = LEAST_ALLOCATED,
    show: Annotated[str, Query(description="all, fits or clean (fits without flags)")] = "all",
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = FIT_LIMIT,
) -> FitQuery:
    try:
        return FitQuery(strategy, show, offset, limit).check()
    except FleetQueryError as exc:
        raise NodeInputError(exc.message, exc.field) from None


FitQueryDep = Annotated[FitQuery, Depends(fit_query)]
StrategyQuery = Annotated[
    str,
    Query(description="The scheduler plugin's scoring strategy: " + ", ".join(STRATEGIES)),
]


@api.post(
    "/fleet/fit",
    name="api_fleet_fit",
    summary="Where a pod fits: every node's own dry run, ranked best first",
    responses=model_responses(
        FitAnswer,
        "Every node's fit, best first",
        (404, "Not a hub"),
        (422, "Not a pod manifest"),
    ),
    openapi_extra=FIT_BODY,
)
async def api_fleet_fit(
    request: Request, hub: HubDep, strategy: StrategyQuery = LEAST_ALLOCATED
) -> Response:
    text = await manifest_text(request)
    answer = await run_fit(hub, text, strategy)
    # Megabytes of JSON at 5,000 nodes: the rows' bytes joined, never encoded here.
    return Response(answer.body(), media_type="application/json")


def _fit_page(
    request: Request, text: str, query: FitQuery, result: RankedFit | None, **extra: Any
) -> HTMLResponse:
    view = {
        "manifest": text,
        "strategies": list(STRATEGIES),
        "query": {"strategy": query.strategy, "show": query.show, "limit": query.limit},
        "result": fit_view(result, query) if result is not None else None,
        "error": None,
        **extra,
    }
    return render(
        request,
        "pages/fleet_fit.html",
        view,
        fragment="fragments/_fleet_fit_results.html",
        status_code=422 if view["error"] and not wants_fragment(request) else 200,
    )


ManifestQuery = Annotated[str, Query(max_length=MAX_BODY_BYTES, description="A Pod manifest")]


@pages.get("/fleet/fit", name="fleet_fit", include_in_schema=False)
async def fleet_fit_page(
    request: Request, hub: HubDep, query: FitQueryDep, manifest: ManifestQuery = ""
) -> HTMLResponse:
    if not manifest:
        return _fit_page(request, SAMPLE_POD, query, None)
    try:
        result = await run_fit(hub, manifest, query.strategy)
    except NodeInputError as exc:
        error = {"message": exc.message, "field": exc.field}
        return _fit_page(request, manifest, query, None, error=error)
    return _fit_page(request, manifest, query, result)


@pages.get(
    "/fleet/fit.json",
    name="fleet_fit_json",
    summary="The fit page's data: every node's dry run of a pod, ranked, counted and paged",
    response_model=dict[str, Any],
)
async def fleet_fit_json(
    hub: HubDep, query: FitQueryDep, manifest: Annotated[str, Query(max_length=MAX_BODY_BYTES)]
) -> Response:
    answer = await run_fit(hub, manifest, query.strategy)
    return Response(fit_view_json(answer, query), media_type="application/json")


@pages.post("/fleet/fit", name="fleet_fit_form", include_in_schema=False)
async def fleet_fit_form(request: Request, hub: HubDep) -> HTMLResponse:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES + 4096:
        raise NodeInputError("manifest: is larger than 1 MiB", "manifest")
    form = await request.form()
    manifest = form.get("manifest")
    text = manifest if isinstance(manifest, str) else ""
    fields = {k: form.get(k) for k in ("strategy", "show")}
    strategy = fields["strategy"] if isinstance(fields["strategy"], str) else LEAST_ALLOCATED
    show = fields["show"] if isinstance(fields["show"], str) else "all"
    try:
        query = FitQuery(strategy, show).check()
        result = await run_fit(hub, text, query.strategy)
    except (NodeInputError, FleetQueryError) as exc:  # FleetQueryError: the form's choices
        # htmx swaps only 2xx answers: it gets the results fragment carrying the error.
        error = {"message": exc.message, "field": exc.field}
        return _fit_page(request, text, FitQuery(LEAST_ALLOCATED), None, error=error)
    return _fit_page(request, text, query, result)


# -- upgrade --------------------------------------------------------------------------------


async def run_upgrade(hub: Hub, release: str, gate_text: str | None) -> dict[str, Any]:
    gate = parse_gate(gate_text)
    return await hub.questions.upgrade(check_release(release), gate)


@api.get(
    "/fleet/upgrade",
    name="api_fleet_upgrade",
    summary="Upgrade readiness: what a kubelet of release R does with every node's state files",
    responses=model_responses(
        UpgradeAnswer, "Every node's verdict", (404, "Not a hub"), (422, "Bad release or gate")
    ),
)
async def api_fleet_upgrade(
    hub: HubDep, release: ReleaseQuery, gate: GateQuery = None
) -> JSONResponse:
    return JSONResponse(await run_upgrade(hub, release, gate))


def _upgrade_job(hub: Hub, release: str, gate_text: str | None) -> dict[str, Any]:
    """The fleet's upgrade check as far as it got (started if needed): pending nodes listed."""
    return hub.questions.upgrade_job(check_release(release), parse_gate(gate_text)).answer()


@pages.get("/fleet/upgrade", name="fleet_upgrade", include_in_schema=False)
async def fleet_upgrade_page(
    request: Request,
    hub: HubDep,
    release: Annotated[str, Query()] = "",
    gate: GateQuery = None,
) -> HTMLResponse:
    # Answers at once with what is checked so far; while the check runs, the plan polls.
    result = _upgrade_job(hub, release, gate) if release else None
    view = {
        "releases": list(RELEASES),
        "release": release,
        "gate": gate or "",
        "plan": upgrade_view(result) if result is not None else None,
    }
    return render(
        request, "pages/fleet_upgrade.html", view, fragment="fragments/_fleet_upgrade_plan.html"
    )


@pages.get(
    "/fleet/upgrade.json",
    name="fleet_upgrade_json",
    summary="The upgrade page's data: every node's verdict as a drain plan (grouped by cause), "
    "as far as the check got (progress; nodes not checked yet listed, never as failing)",
    responses={422: {"description": "Bad release or gate"}},
)
async def fleet_upgrade_json(
    hub: HubDep, release: ReleaseQuery, gate: GateQuery = None
) -> dict[str, Any]:
    return upgrade_view(_upgrade_job(hub, release, gate))


@pages.get(
    "/fleet/upgrade.csv",
    name="fleet_upgrade_csv",
    summary="The nodes to drain before a kubelet of release R replaces theirs (CSV)",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}}, 422: {"description": "Bad release or gate"}},
)
async def fleet_upgrade_csv(hub: HubDep, release: ReleaseQuery, gate: GateQuery = None) -> Response:
    text = drain_csv(upgrade_view(await run_upgrade(hub, release, gate)))
    name = f"drain-{release}.csv"
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )

"""Jinja2 templates and the one ``render`` helper every HTML route uses (and ``see_other``, the
303 after a form POST).

``render`` returns the full page, or only its fragment when htmx asks for one
(``HX-Request: true``, except on ``HX-History-Restore-Request`` and boosted navigation, which
need whole pages). Every response varies on ``HX-Request``.

jinja2 is imported, and the templates built, on the first page a process renders
(``templates_of``), not at import: the node agent (``serve --observe``) mostly answers JSON to
the hub and must stay small (issue 20 pt 7); its pages still work, they load the machinery
when first asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from app import __version__
from app.domain import units
from app.web import csrf
from app.web.fleet_markup import numa_bars

if TYPE_CHECKING:
    from starlette.templating import Jinja2Templates

# Inside the package (app/templates and app/static link to the project's top-level folders), so
# an installed wheel carries them as package data.
APP_DIR = Path(__file__).resolve().parents[1]
TEMPLATES_DIR = APP_DIR / "templates"
STATIC_DIR = APP_DIR / "static"

# The vendored htmx (static/vendor/htmx-<version>.min.js); bump it here and nowhere else.
HTMX_VERSION = "2.0.11"
HTMX_STATIC_PATH = f"vendor/htmx-{HTMX_VERSION}.min.js"

# Our pages load scripts and styles only from this server.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
        "script-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def format_bytes(value: int | float | None) -> str:
    """The ``bytes`` filter: ``units.format_bytes`` (0 B, 512 MiB, 1.5 GiB), ``–`` for none."""
    return "–" if value is None else units.format_bytes(value)


def percent(part: int | float, whole: int | float) -> float:
    """``part`` as a percentage of ``whole`` (0 when ``whole`` is 0), rounded to 0.1."""
    if not whole:
        return 0.0
    return round(100.0 * float(part) / float(whole), 1)


def path_for(context: Mapping[str, Any], name: str, /, **params: Any) -> str:
    """The path (not the absolute URL) of route ``name``, honouring the ASGI root path."""
    request: Request = context["request"]
    root = request.scope.get("root_path", "").rstrip("/")
    return root + str(request.app.url_path_for(name, **{k: str(v) for k, v in params.items()}))


def static_path(context: Mapping[str, Any], path: str) -> str:
    return path_for(context, "static", path=path)


def make_templates(directory: Path = TEMPLATES_DIR) -> Jinja2Templates:
    """The templates with our filters and globals (the functions taking the template context
    are registered through ``pass_context`` here, where jinja2 is imported)."""
    from jinja2 import pass_context
    from starlette.templating import Jinja2Templates

    templates = Jinja2Templates(directory=str(directory))
    env = templates.env
    env.trim_blocks = True
    env.lstrip_blocks = True
    env.filters["bytes"] = format_bytes
    env.globals["percent"] = percent
    env.filters["numa_bars"] = numa_bars  # the fleet table's bars (app.web.fleet_markup)
    env.globals["path_for"] = pass_context(path_for)
    env.globals["static_path"] = pass_context(static_path)
    env.globals["htmx_path"] = HTMX_STATIC_PATH
    env.globals["htmx_version"] = HTMX_VERSION
    env.globals["app_version"] = __version__
    # Every POST form carries {{ csrf_field() }} (app.web.csrf, checked by app.web.guard).
    env.globals["csrf_field"] = pass_context(csrf.csrf_field)
    env.globals["csrf_token"] = pass_context(csrf.csrf_token)
    return templates


_TEMPLATES_LOCK = threading.Lock()


def templates_of(app: Any) -> Jinja2Templates:
    """The app's templates, built on the first call (``app.state.templates``; a lock because
    sync page routes run in the thread pool and could race to build them)."""
    templates: Jinja2Templates | None = getattr(app.state, "templates", None)
    if templates is None:
        with _TEMPLATES_LOCK:
            templates = getattr(app.state, "templates", None)
            if templates is None:
                templates = make_templates()
                app.state.templates = templates
    return templates


def wants_fragment(request: Request) -> bool:
    """Whether htmx asked for a fragment (not a history restore, not boosted navigation)."""
    headers = request.headers
    return (
        headers.get("hx-request") == "true"
        and headers.get("hx-history-restore-request") != "true"
        and headers.get("hx-boosted") != "true"
    )


def _add_vary(response: HTMLResponse, value: str) -> None:
    existing = response.headers.get("vary")
    if existing is None:
        response.headers["Vary"] = value
    elif value.lower() not in [v.strip().lower() for v in existing.split(",")]:
        response.headers["Vary"] = f"{existing}, {value}"


def render(
    request: Request,
    template: str,
    view: Any,
    *,
    fragment: str | None = None,
    status_code: int = 200,
    context: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """Render ``template`` (or ``fragment`` for htmx) with ``view`` as ``{{ view }}``."""
    templates = templates_of(request.app)
    name = fragment if fragment is not None and wants_fragment(request) else template
    ctx: dict[str, Any] = {"request": request, "view": view}
    if context:
        ctx.update(context)
    response = templates.TemplateResponse(
        request, name, ctx, status_code=status_code, headers=dict(headers or {})
    )
    _add_vary(response, "HX-Request")
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


def see_other(request: Request, path: str) -> RedirectResponse:
    """303 to ``path`` (under the ASGI root path): where a form POST sends the browser."""
    root = request.scope.get("root_path", "").rstrip("/")
    return RedirectResponse(root + path, status_code=303)

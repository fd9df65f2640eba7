"""The request guard: Host allow-list, cross-site refusal, body types and limits, CSRF tokens,
and the security headers of every response (pure ASGI middleware, outermost but metrics).

SREs reach agents through ``kubectl port-forward`` on ``localhost``, where any web page they
visit could send requests. In order, for every HTTP request:

1. **Host** must be in the allow-list — ``localhost``, ``127.0.0.1``, ``::1``, the bind
   address and ``Settings.allowed_hosts`` (``NUMASCOPE_ALLOWED_HOSTS``, comma-separated;
   ``.example.org`` matches every subdomain, ``*`` anything) — else 400: a page on a
   rebound DNS name cannot read the API. Probes: ``GET``/``HEAD /healthz`` answers any Host
   (it says only "ok"); ``/readyz`` and ``/metrics`` (which name the database, the nodes and
   their load) also answer a Host that is an IP address literal (``10.1.2.3:8000``,
   ``[fd00::5]``), because the kubelet's probes and Prometheus send the pod IP as Host, and a
   DNS-rebinding page always sends its own DNS *name*: an IP literal cannot carry that attack.
   Any other name gets the 400 there too.
2. **Unsafe methods** (everything but GET, HEAD, OPTIONS) with ``Sec-Fetch-Site: cross-site``
   or an ``Origin`` other than the request's own host get 403. Requests without either
   header (the CLI, the hub's httpx client, curl) pass: browsers always send them.
   A POST to a path that no route serves by POST (a page-only route) then goes to the router,
   which answers 405 with ``Allow`` (not 415 or the CSRF 403 below).
3. **Body type**: API bodies (``/api/…``) only as JSON (``application/json``, ``…+json``) or
   YAML (``application/yaml``, ``application/x-yaml``, ``text/yaml``, ``text/x-yaml``); the
   inspector's upload also takes ``multipart/form-data`` and ``application/octet-stream``.
   Pages take only form bodies. Anything else is 415, so a foreign page cannot send a "simple"
   ``text/plain`` request to the API. ``api_body_accepted`` is this rule; the OpenAPI document
   advertises only the request body types it accepts (``app.web.app``).
4. **Body size**: at most ``BODY_LIMIT`` (the inspector page's upload ``UPLOAD_LIMIT``)
   bytes, checked on ``Content-Length`` and while reading: 413 (the inspector's API upload is
   streamed and capped by its route). JSON bodies are scanned for nesting depth,
   container count and number lengths (``app.domain.limits``) before any decoder runs: 422.
5. **CSRF**: a POST outside ``/api/`` (a form) must carry the token of ``app.web.csrf``
   (403 otherwise). Other unsafe methods on pages reach the router, which answers 405.

Refusals use the project's error shape (``app.web.errors``). Every response gets
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy``, and a ``Content-Security-Policy``
when it has none: the pages' policy for HTML (``/docs`` included: its script is a static
file), ``default-src 'none'`` for everything else.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.domain.limits import MAX_BODY_BYTES, InputLimitError, check_json_text
from app.web import csrf
from app.web.errors import ErrorInfo, error_response, serves
from app.web.rendering import SECURITY_HEADERS

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LIVENESS_PATH = "/healthz"
#: Probed by the kubelet and scraped by Prometheus by pod IP: IP-literal Hosts are answered.
PROBE_PATHS = frozenset({"/readyz", "/metrics"})
UPLOAD_PATHS = frozenset({"/checkpoints", "/api/v1/checkpoints/inspect"})
STREAMED_UPLOAD = "/api/v1/checkpoints/inspect"
#: Bodies of the API and the forms (a 1 MiB manifest or configuration plus framing).
BODY_LIMIT = 2 * MAX_BODY_BYTES
#: The inspector's uploads: a 16 MiB state file plus multipart framing.
UPLOAD_LIMIT = 16 * 1024 * 1024 + 64 * 1024
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

JSON_TYPES = frozenset({"application/json"})
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
UPLOAD_TYPES = frozenset({"multipart/form-data", "application/octet-stream"})
FALLBACK_CSP = "default-src 'none'; frame-ancestors 'none'"
# SECURITY_HEADERS as raw ASGI pairs, encoded once: pages get the page CSP, anything else
# (JSON, files, errors) the fallback that allows nothing.
_PAGE_HEADERS = tuple(
    (key.lower().encode("latin-1"), value.encode("latin-1"))
    for key, value in SECURITY_HEADERS.items()
)
_OTHER_HEADERS = tuple(
    (name, FALLBACK_CSP.encode("latin-1") if name == b"content-security-policy" else value)
    for name, value in _PAGE_HEADERS
)


def _media_type(headers: Headers) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


def is_json_type(media: str) -> bool:
    return media in JSON_TYPES or media.endswith("+json")


def is_yaml_type(media: str) -> bool:
    return media in YAML_TYPES or media.endswith("+yaml")


def api_body_accepted(media: str, path: str) -> bool:
    """Whether an API request to ``path`` may carry a body of type ``media`` (rule 3)."""
    if is_json_type(media) or is_yaml_type(media):
        return True
    return path in UPLOAD_PATHS and media in UPLOAD_TYPES


def is_ip_literal(host_header: str) -> bool:
    host, _ = split_host(host_header)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, str]:
    """``("example.org", "8000")`` from a Host header value (IPv6 in brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, ""
        host, rest = value[1:end], value[end + 1 :]
        return host, rest[1:] if rest.startswith(":") else ""
    host, _, port = value.partition(":") if value.count(":") == 1 else (value, "", "")
    return host.rstrip("."), port


class HostAllowList:
    """Which ``Host`` values this server answers to."""

    def __init__(self, bind_host: str | None, extra: Iterable[str]) -> None:
        names = {*LOCAL_HOSTS}
        if bind_host and not _is_wildcard(bind_host):
            names.add(split_host(bind_host)[0])
        self.any = False
        self.suffixes: list[str] = []
        for entry in extra:
            entry = entry.strip().lower()
            if not entry:
                continue
            if entry == "*":
                self.any = True
            elif entry.startswith("*."):
                self.suffixes.append(entry[1:])
            elif entry.startswith("."):
                self.suffixes.append(entry)
            else:
                names.add(split_host(entry)[0])
        self.names = frozenset(names)

    def allows(self, host_header: str) -> bool:
        if self.any:
            return True
        host, _ = split_host(host_header)
        if not host:
            return False
        if host in self.names:
            return True
        return any(host.endswith(s) or host == s[1:] for s in self.suffixes)


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _same_origin(origin: str, host_header: str, scheme: str) -> bool:
    if origin == "null":
        return False
    parts = urlsplit(origin)
    if not parts.hostname:
        return False
    default = "443" if parts.scheme == "https" else "80"
    origin_port = str(parts.port) if parts.port is not None else default
    host, port = split_host(host_header)
    port = port or ("443" if scheme in ("https", "wss") else "80")
    return parts.hostname.lower() == host and origin_port == port


class RequestGuard:
    """The middleware (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, bind_host: str | None = None, allowed_hosts: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.hosts = HostAllowList(bind_host, allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method = scope["method"]
        path = scope["path"]
        host_header = headers.get("host", "")
        token, issued, cookie_name = self._csrf_token(scope, path, host_header)
        send = self._with_headers(send, path, cookie_name if issued else None, issued)

        refusal = self._host_refusal(method, path, host_header)
        if refusal is not None:
            await self._refuse(scope, receive, send, refusal)
            return
        if method in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        refusal = self._cross_site(headers, host_header, scope.get("scheme", "http"))
        if refusal is None and not path.startswith("/api/") and not serves(Request(scope), method):
            await self.app(scope, receive, send)  # the router's 405 (with Allow)
            return
        if refusal is None:
            refusal = self._content_type(headers, path, method)
        if refusal is not None:
            await self._refuse(scope, receive, send, refusal)
            return
        if path == STREAMED_UPLOAD:
            # Read-only, streamed by the route with its own 16 MiB cap and words.
            await self.app(scope, receive, send)
            return
        body, refusal = await _read_body(headers, receive, path in UPLOAD_PATHS)
        if refusal is None:
            refusal = self._body_refusal(headers, body, method, path, None if issued else token)
        if refusal is not None:
            await self._refuse(scope, _replay(b"", receive), send, refusal)
            return
        await self.app(scope, _replay(body, receive), send)

    @staticmethod
    def _csrf_token(
        scope: Scope, path: str, host_header: str
    ) -> tuple[str | None, str | None, str | None]:
        """The browser's CSRF token (from its cookie, else a new one: then also ``issued``),
        and the cookie's name. The API renders no forms and checks no CSRF token: its clients
        get no cookie, and its hot GETs skip the cookie parsing and token generation."""
        if path.startswith("/api/"):
            return None, None, None
        _, port = split_host(host_header)
        cookie_name = csrf.cookie_name(port)
        token = Request(scope).cookies.get(cookie_name)
        issued = None
        if not csrf.usable(token):
            token = issued = csrf.new_token()
        scope.setdefault("state", {})[csrf.STATE_KEY] = token
        return token, issued, cookie_name

    @staticmethod
    def _body_refusal(
        headers: Headers, body: bytes, method: str, path: str, cookie_token: str | None
    ) -> ErrorInfo | None:
        """Why a body is refused: JSON we will not parse, or a form POST whose CSRF token is
        not the cookie's (``cookie_token`` is ``None`` when the browser brought none)."""
        if body and is_json_type(_media_type(headers)):
            refusal = _json_refusal(body)
            if refusal is not None:
                return refusal
        if method != "POST" or path.startswith("/api/"):
            return None
        given = headers.get(csrf.HEADER) or csrf.token_from_body(
            headers.get("content-type", ""), body
        )
        if cookie_token is None or not csrf.matches(cookie_token, given):
            return ErrorInfo(
                403, "Forbidden",
                "the form's CSRF token is missing or does not match this browser's cookie; "
                "reload the page and submit the form again", "csrf_token",
            )  # fmt: skip
        return None

    def _host_refusal(self, method: str, path: str, host_header: str) -> ErrorInfo | None:
        """A request for a host name the server does not answer to (probes excepted)."""
        if self.hosts.allows(host_header) or self._probe(method, path, host_header):
            return None
        shown = host_header[:100] or "(none)"
        return ErrorInfo(
            400, "BadRequest", f"Host {shown!r} is not allowed; add it to "
            "NUMASCOPE_ALLOWED_HOSTS (comma-separated) to reach this server by that name", "Host",
        )  # fmt: skip

    @staticmethod
    def _probe(method: str, path: str, host_header: str) -> bool:
        """A probe answered whatever the allow-list says (rule 1)."""
        if method not in ("GET", "HEAD"):
            return False
        return path == LIVENESS_PATH or (path in PROBE_PATHS and is_ip_literal(host_header))

    def _cross_site(self, headers: Headers, host_header: str, scheme: str) -> ErrorInfo | None:
        if headers.get("sec-fetch-site", "").lower() == "cross-site":
            return ErrorInfo(
                403, "Forbidden", "cross-site requests may not change anything here "
                "(Sec-Fetch-Site: cross-site)",
            )  # fmt: skip
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin.strip(), host_header, scheme):
            return ErrorInfo(
                403, "Forbidden", f"requests from origin {origin[:100]!r} may not change "
                "anything here (the Origin must be this server)",
            )  # fmt: skip
        return None

    def _content_type(self, headers: Headers, path: str, method: str) -> ErrorInfo | None:
        if headers.get("content-length") == "0" or (
            "content-length" not in headers and "transfer-encoding" not in headers
        ):
            return None  # no body: nothing to parse
        media = _media_type(headers)
        if path.startswith("/api/"):
            if api_body_accepted(media, path):
                return None
            allowed = "application/json or application/yaml"
            if path in UPLOAD_PATHS:
                allowed += ", multipart/form-data or application/octet-stream"
        else:
            if method != "POST" or media in FORM_TYPES:
                return None  # pages take forms; other methods get the router's 405
            allowed = "a form (application/x-www-form-urlencoded or multipart/form-data)"
        return ErrorInfo(
            415, "UnsupportedMediaType",
            f"Content-Type {media or '(none)'!r} is not accepted here; send {allowed}",
            "Content-Type",
        )  # fmt: skip

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, info: ErrorInfo) -> None:
        response = error_response(Request(scope, receive), info)
        await response(scope, receive, send)

    def _with_headers(
        self, send: Send, path: str, cookie_name: str | None, token: str | None
    ) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                html = any(
                    k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in raw
                )
                for name, value in _PAGE_HEADERS if html else _OTHER_HEADERS:
                    if name not in present:
                        raw.append((name, value))
                if cookie_name is not None and token is not None and html:
                    raw.append(csrf.set_cookie_header(cookie_name, token))
                message = {**message, "headers": raw}
            await send(message)

        return wrapped


def _json_refusal(body: bytes) -> ErrorInfo | None:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None  # the route says the body is not UTF-8
    try:
        check_json_text("body", text)
    except InputLimitError as err:
        return ErrorInfo(422, "Invalid", err.message, "body")
    return None


async def _read_body(
    headers: Headers, receive: Receive, upload: bool
) -> tuple[bytes, ErrorInfo | None]:
    limit = UPLOAD_LIMIT if upload else BODY_LIMIT
    declared = headers.get("content-length")
    if upload:
        too_large = ErrorInfo(
            413, "RequestEntityTooLarge", "the uploaded file is more than 16 MiB; state files "
            "larger than 16 MiB are refused", "file",
        )  # fmt: skip
    else:
        too_large = ErrorInfo(
            413, "RequestEntityTooLarge",
            f"the request body is larger than {limit // (1024 * 1024)} MiB", "body",
        )  # fmt: skip
    if declared is not None and declared.isdigit() and len(declared) < 20 and int(declared) > limit:
        return b"", too_large
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", too_large
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay

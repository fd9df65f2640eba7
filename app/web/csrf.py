"""CSRF tokens for the HTML forms (double-submit cookie), and the ``csrf_field()`` Jinja global.

Every form of the dashboard works without JavaScript (POST, then 303), so a cross-site page
could post one too; ``app.web.guard`` refuses such requests by their ``Origin`` and
``Sec-Fetch-Site`` headers, and a form must also carry a token:

* the first response of a browser session sets a random token in the cookie
  ``numascope_csrf_<port>`` (``SameSite=Strict``, ``HttpOnly``; the port is part of the name
  because cookies are shared by every port of a host, so two servers on ``localhost`` would
  otherwise overwrite each other's token);
* every form includes ``{{ csrf_field() }}``, a hidden ``csrf_token`` input with the same value;
* a form POST (any unsafe request outside ``/api/``) is accepted only when the submitted value
  (the ``csrf_token`` field, or an ``X-CSRF-Token`` header for scripts) equals the cookie.

A foreign page can neither read the cookie nor set it, so it cannot produce a matching pair.
No server-side secret is needed, so several worker processes accept each other's tokens.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from markupsafe import Markup, escape
from python_multipart.multipart import MultipartParseError, parse_options_header

from app.web.multipart import MultipartParts

FIELD = "csrf_token"
HEADER = "x-csrf-token"
STATE_KEY = "csrf_token"
_COOKIE_PREFIX = "numascope_csrf_"
_TOKEN_BYTES = 32


def cookie_name(port: str) -> str:
    return f"{_COOKIE_PREFIX}{port or 'default'}"


def new_token() -> str:
    return secrets.token_urlsafe(_TOKEN_BYTES)


def usable(token: str | None) -> bool:
    """A cookie value we could have issued (anything else is replaced)."""
    return token is not None and 20 <= len(token) <= 100 and token.isascii()


def matches(expected: str | None, given: str | None) -> bool:
    if not usable(expected) or given is None:
        return False
    assert expected is not None
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


def set_cookie_header(name: str, token: str, path: str = "/") -> tuple[bytes, bytes]:
    value = f"{name}={token}; Path={path}; SameSite=Strict; HttpOnly"
    return b"set-cookie", value.encode("latin-1")


def token_from_body(content_type: str, body: bytes) -> str | None:
    """The ``csrf_token`` field of a urlencoded or multipart form body (``None``: absent)."""
    ctype, params = parse_options_header(content_type)
    if ctype == b"application/x-www-form-urlencoded":
        try:
            text = body.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
            return None
        for key, value in parse_qsl(text, keep_blank_values=True, max_num_fields=1000):
            if key == FIELD:
                return value
        return None
    if ctype == b"multipart/form-data" and params.get(b"boundary"):
        return _multipart_token(params[b"boundary"], body)
    return None


class _TokenPart(MultipartParts):
    """The first ``csrf_token`` part of a form body (its first 200-odd bytes are plenty)."""

    def __init__(self, boundary: bytes) -> None:
        super().__init__(boundary)
        self.data = bytearray()
        self.value: str | None = None

    def part_started(self) -> None:
        self.data = bytearray()

    def part_data(self, data: bytes) -> None:
        if self.name == FIELD and len(self.data) <= 200:
            self.data += data

    def part_ended(self) -> None:
        if self.name == FIELD and self.value is None:
            self.value = bytes(self.data).decode("utf-8", "replace")


def _multipart_token(boundary: bytes, body: bytes) -> str | None:
    parts = _TokenPart(boundary)
    try:
        parts.write(body)
        parts.finalize()
    except MultipartParseError:
        pass  # the route reports the malformed body; a token found so far still counts
    return parts.value


def csrf_field(context: Mapping[str, Any]) -> Markup:
    """``{{ csrf_field() }}``: the hidden input every POST form of the dashboard carries
    (registered with jinja2's ``pass_context`` by ``app.web.rendering``, so that a process
    serving no page never imports jinja2)."""
    request = context["request"]
    token = getattr(request.state, STATE_KEY, None) or ""
    return Markup(f'<input type="hidden" name="{FIELD}" value="{escape(token)}">')


def csrf_token(context: Mapping[str, Any]) -> str:
    """``{{ csrf_token() }}``: the bare token (for ``hx-headers`` on elements outside forms)."""
    request = context["request"]
    return str(getattr(request.state, STATE_KEY, None) or "")

"""Responses of JSON encoded once (``app.services.encoded_json``): ETag, 304, gzip.

``encoded_response`` answers ``304 Not Modified`` (no body, the same ``ETag``) when the
request's ``If-None-Match`` names the body, else the cached bytes — gzipped, with their own
tag, when the client accepts gzip (``GZipMiddleware`` leaves a response that already has a
``Content-Encoding`` alone, so nothing is compressed twice). ``Cache-Control: no-cache``
makes browsers and proxies ask again each time, which the 304 makes cheap. Answers vary on
``Accept-Encoding`` (plain bodies get the header from ``app.web.compression``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from app.services.encoded_json import GZIP_MINIMUM, EncodedJSON
from app.services.fleet.agent_summary import etag_matches
from app.web.compression import accepts_gzip

JSON_MEDIA_TYPE = "application/json"
#: The OpenAPI words for the 304 of ``encoded_response``.
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not modified (If-None-Match)"}
}


def model_responses(
    model: Any, description: str, *errors: tuple[int, str], tagged: bool = False
) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI responses of a route that answers ``model``, with ``errors`` as (status,
    description); ``tagged``: it answers with a strong ETag, so a 304 too."""
    responses: dict[int | str, dict[str, Any]] = {
        200: {"model": model, "description": description},
        **(NOT_MODIFIED if tagged else {}),
    }
    for status, text in errors:
        responses[status] = {"description": text} if text else {}
    return responses


def encoded_response(
    request: Request,
    encoded: EncodedJSON,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The cached JSON ``encoded`` as the answer to ``request`` (see the module docstring)."""
    gz = accepts_gzip(request.headers) and len(encoded.body) >= GZIP_MINIMUM
    out = {
        "ETag": encoded.gzip_etag if gz else encoded.etag,
        "Cache-Control": "no-cache",
        **(headers or {}),
    }
    wanted = request.headers.get("if-none-match")
    if wanted is not None and status_code == 200 and encoded.matches(wanted):
        return Response(status_code=304, headers={**out, "Vary": "Accept-Encoding"})
    if gz:  # the compression middleware passes it through untouched: say Vary here
        out["Content-Encoding"] = "gzip"
        out["Vary"] = "Accept-Encoding"
        return Response(encoded.gzipped(), status_code, out, media_type=JSON_MEDIA_TYPE)
    return Response(encoded.body, status_code, out, media_type=JSON_MEDIA_TYPE)


def tagged_response(
    request: Request, body: bytes, etag: str, media_type: str = JSON_MEDIA_TYPE
) -> Response:
    """``body`` under its strong ``etag``, uncompressed: ``304`` (no body) when the request's
    ``If-None-Match`` names it (the agent summary, the hub's fleet document and heatmap)."""
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)

"""Reading an upload of the checkpoint inspector (``app.web.routers.checkpoints``) into memory:
``read_upload`` takes ``multipart/form-data`` (the file in the ``file`` field, a few small form
fields beside it) or the raw file as the body.

Uploads are read as a stream and never reach the disk (Starlette's form parser would spool
files above 1 MiB to a temporary file, so the body is parsed here with python-multipart's
streaming parser). Reading stops one byte past the limit (16 MiB of file:
``UploadTooLargeError``, 413), before the body is read when ``Content-Length`` already says
so. A malformed or truncated body, too many or too long form fields: ``BadUploadError`` (400).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from python_multipart.multipart import MultipartParseError, MultipartParser, parse_options_header
from starlette.requests import Request

from app.services.checkpoints import CheckpointServiceError, UploadTooLargeError

MAX_UPLOAD_BYTES = 16 * 1024 * 1024
# Multipart framing and the small form fields on top of the file.
_MULTIPART_OVERHEAD = 64 * 1024
_MAX_FIELD_BYTES = 1024
_MAX_FIELDS = 16


class BadUploadError(CheckpointServiceError):
    """The request body is not a usable upload (malformed multipart, too many fields)."""


@dataclass
class Upload:
    """A request body read into memory: form fields, and the file (``None``: no file part)."""

    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    content: bytes | None = None


def _declared_length(request: Request) -> int | None:
    value = request.headers.get("content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise BadUploadError("the Content-Length header is not a number") from None


async def read_upload(request: Request, limit: int = MAX_UPLOAD_BYTES) -> Upload:
    """Read the body: multipart/form-data (file in the ``file`` field) or the raw file.
    Raises ``UploadTooLargeError`` past ``limit`` bytes of file, ``BadUploadError``."""
    ctype, params = parse_options_header(request.headers.get("content-type"))
    multipart = ctype == b"multipart/form-data"
    declared = _declared_length(request)
    if declared is not None and declared > limit + (_MULTIPART_OVERHEAD if multipart else 0):
        raise UploadTooLargeError(None if multipart else declared)
    if not multipart:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise UploadTooLargeError()
        return Upload(content=bytes(body))
    boundary = params.get(b"boundary")
    if not boundary:
        raise BadUploadError("multipart/form-data without a boundary")
    return await _read_multipart(request, boundary, limit)


async def _read_multipart(request: Request, boundary: bytes, limit: int) -> Upload:
    upload = Upload()
    part: dict[str, Any] = {}
    header_field = bytearray()
    header_value = bytearray()

    def on_part_begin() -> None:
        part.clear()
        part.update(headers={}, data=bytearray(), open=True)

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header_field.extend(data[start:end])

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header_value.extend(data[start:end])

    def on_header_end() -> None:
        part["headers"][bytes(header_field).lower()] = bytes(header_value)
        header_field.clear()
        header_value.clear()

    def on_headers_finished() -> None:
        disposition = part["headers"].get(b"content-disposition", b"")
        _, opts = parse_options_header(disposition)
        part["name"] = opts.get(b"name", b"").decode("utf-8", "replace")
        filename = opts.get(b"filename")
        part["filename"] = filename.decode("utf-8", "replace") if filename is not None else None
        part["is_file"] = part["name"] == "file"
        if len(upload.fields) >= _MAX_FIELDS:
            raise BadUploadError(f"too many form fields (at most {_MAX_FIELDS})")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        buf: bytearray = part["data"]
        buf.extend(data[start:end])
        if part.get("is_file"):
            if len(buf) > limit:
                raise UploadTooLargeError()
        elif len(buf) > _MAX_FIELD_BYTES:
            raise BadUploadError(f"form field {part.get('name')!r} is longer than 1 KiB")

    def on_part_end() -> None:
        part["open"] = False
        if part.get("is_file"):
            upload.filename = part.get("filename") or None
            upload.content = bytes(part["data"])
        elif part.get("name"):
            upload.fields[part["name"]] = bytes(part["data"]).decode("utf-8", "replace")

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
        },
    )
    try:
        async for chunk in request.stream():
            if chunk:
                parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise BadUploadError(f"the multipart body is malformed: {exc}") from None
    if part.get("open"):
        raise BadUploadError("the multipart body ends inside a part (truncated upload?)")
    return upload

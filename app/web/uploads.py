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

from python_multipart.multipart import MultipartParseError, parse_options_header
from starlette.requests import Request

from app.services.checkpoints import CheckpointServiceError, UploadTooLargeError
from app.web.multipart import MultipartParts

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


class _UploadParts(MultipartParts):
    """The parts of an upload: the ``file`` part's content (at most ``limit`` bytes) and up to
    ``_MAX_FIELDS`` small form fields."""

    def __init__(self, boundary: bytes, limit: int) -> None:
        super().__init__(boundary)
        self.upload = Upload()
        self.limit = limit
        self.data = bytearray()

    def part_started(self) -> None:
        self.data = bytearray()
        if len(self.upload.fields) >= _MAX_FIELDS:
            raise BadUploadError(f"too many form fields (at most {_MAX_FIELDS})")

    def part_data(self, data: bytes) -> None:
        self.data.extend(data)
        if self.name == "file":
            if len(self.data) > self.limit:
                raise UploadTooLargeError()
        elif len(self.data) > _MAX_FIELD_BYTES:
            raise BadUploadError(f"form field {self.name!r} is longer than 1 KiB")

    def part_ended(self) -> None:
        if self.name == "file":
            self.upload.filename = self.filename or None
            self.upload.content = bytes(self.data)
        elif self.name:
            self.upload.fields[self.name] = bytes(self.data).decode("utf-8", "replace")


async def _read_multipart(request: Request, boundary: bytes, limit: int) -> Upload:
    parts = _UploadParts(boundary, limit)
    try:
        async for chunk in request.stream():
            if chunk:
                parts.write(chunk)
        parts.finalize()
    except MultipartParseError as exc:
        raise BadUploadError(f"the multipart body is malformed: {exc}") from None
    if parts.open:
        raise BadUploadError("the multipart body ends inside a part (truncated upload?)")
    return parts.upload

"""Reading a ``multipart/form-data`` body part by part with python-multipart's streaming
parser: ``MultipartParts`` gathers each part's headers and says its field name and file name;
a subclass takes the data. Both readers of form bodies use it: the inspector's upload
(``app.web.uploads``) and the CSRF check's token (``app.web.csrf``).
"""

from __future__ import annotations

from python_multipart.multipart import MultipartParser, parse_options_header


class MultipartParts:
    """Feed ``write`` the body's bytes, then ``finalize``; ``part_started``, ``part_data``
    and ``part_ended`` are called for each part (``MultipartParseError`` on a malformed
    body). While a part is read, ``name`` and ``filename`` are those of its
    ``Content-Disposition``; ``open`` is true inside a part."""

    def __init__(self, boundary: bytes) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.name = ""
        self.filename: str | None = None
        self.open = False
        self._field = bytearray()
        self._value = bytearray()
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._data,
                "on_part_end": self._end,
            },
        )

    def write(self, chunk: bytes) -> None:
        self._parser.write(chunk)

    def finalize(self) -> None:
        self._parser.finalize()

    def part_started(self) -> None:
        """The part's headers are read."""

    def part_data(self, data: bytes) -> None:
        """The next bytes of the part's content."""

    def part_ended(self) -> None:
        """The part's content is complete."""

    def _begin(self) -> None:
        self.headers = {}
        self.name, self.filename, self.open = "", None, True

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field.extend(data[start:end])

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value.extend(data[start:end])

    def _header_end(self) -> None:
        self.headers[bytes(self._field).lower()] = bytes(self._value)
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        _, opts = parse_options_header(self.headers.get(b"content-disposition", b""))
        self.name = opts.get(b"name", b"").decode("utf-8", "replace")
        filename = opts.get(b"filename")
        self.filename = filename.decode("utf-8", "replace") if filename is not None else None
        self.part_started()

    def _data(self, data: bytes, start: int, end: int) -> None:
        self.part_data(data[start:end])

    def _end(self) -> None:
        self.open = False
        self.part_ended()

"""Go's view of a file's text (follows Go's unicode/utf8 ``DecodeRune`` as used by
encoding/json decode.go, as of Go 1.22-1.24).

``go_text`` turns a file's bytes into the text Go's decoder sees (each invalid UTF-8 byte
becomes one U+FFFD) and enforces the 16 MiB limit.
"""

from __future__ import annotations

import codecs

from app.domain.checkpoint.errors import MAX_CHECKPOINT_BYTES, CheckpointTooLargeError

# -- text: Go's view of the bytes --------------------------------------------------------------


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    # utf8.DecodeRune yields (RuneError, 1) for every byte that does not start a valid
    # sequence, so each such byte becomes one U+FFFD (Python's "replace" would merge them).
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd", err.start + 1


codecs.register_error("numascope-go-utf8", _go_replace)


def go_text(data: bytes | bytearray | str) -> str:
    """The file's bytes as the text Go's decoder sees (invalid UTF-8 -> U+FFFD per byte).

    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """
    if isinstance(data, str):
        if len(data) > MAX_CHECKPOINT_BYTES // 4:
            size = len(data.encode("utf-8", "surrogatepass"))
            if size > MAX_CHECKPOINT_BYTES:
                raise CheckpointTooLargeError(size)
        try:
            data.encode("utf-8")
            return data
        except UnicodeEncodeError:
            data = data.encode("utf-8", "surrogatepass")
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise CheckpointTooLargeError(len(data))
    return bytes(data).decode("utf-8", "numascope-go-utf8")

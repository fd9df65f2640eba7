"""Go's view of a file's text (follows Go's unicode/utf8 ``DecodeRune`` as used by
encoding/json decode.go, and strconv/quote.go ``Quote``, as of Go 1.22-1.24).

``go_text`` turns a file's bytes into the text Go's decoder sees (each invalid UTF-8 byte
becomes one U+FFFD) and enforces the 16 MiB limit; ``go_quote`` is ``strconv.Quote`` (and
fmt's ``%q``), the quoting of every Go error text that names a value or a path.
"""

from __future__ import annotations

import codecs
import unicodedata

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


# -- strconv.Quote ---------------------------------------------------------------------------


def _go_is_print(ch: str) -> bool:
    if ch == " ":
        return True
    return unicodedata.category(ch)[0] in "LMNPS"


_SHORT_QUOTE = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SHORT_QUOTE["\v"] = "\\v"


def go_quote(s: str) -> str:
    """``strconv.Quote`` (and fmt's ``%q`` for strings)."""
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif " " <= ch < "\x7f":
            out.append(ch)
        elif ch in _SHORT_QUOTE:
            out.append(_SHORT_QUOTE[ch])
        elif ch >= "\x80" and _go_is_print(ch):
            out.append(ch)
        else:
            cp = ord(ch)
            if cp < 0x80 or 0xD800 <= cp <= 0xDFFF:
                out.append(f"\\x{cp:02x}" if cp < 0x100 else "\\ufffd")
            elif cp < 0x10000:
                out.append(f"\\u{cp:04x}")
            else:
                out.append(f"\\U{cp:08x}")
    out.append('"')
    return "".join(out)

"""Go's ``strconv`` as the kubelet's error texts use it (follows Go's strconv/quote.go ``Quote``
and ``appendEscapedRune``, strconv/atob.go ``ParseBool``, strconv/atoi.go ``Atoi``; Go 1.22-1.25).

``go_quote`` is ``strconv.Quote`` and fmt's ``%q`` for strings: every Go error text that names
a value or a path quotes it this way. Printable runes are Go's ``unicode.IsPrint``: letters,
marks, numbers, punctuation, symbols and the ASCII space; everything else is escaped.
"""

from __future__ import annotations

import re
import unicodedata

_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _is_print(ch: str) -> bool:
    """``unicode.IsPrint`` for a rune at or above U+0080."""
    return unicodedata.category(ch)[0] in "LMNPS"


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        # A Go string holds no surrogates; utf8.ValidRune fails and Go writes U+FFFD.
        return "\\ufffd"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def go_quote(text: str) -> str:
    """``strconv.Quote(text)``."""
    out = ['"']
    for ch in text:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif " " <= ch < "\x7f" or (ch >= "\x80" and _is_print(ch)):
            out.append(ch)
        else:
            out.append(_escape(ch))
    out.append('"')
    return "".join(out)


def parse_go_bool(value: str) -> bool:
    """``strconv.ParseBool``; raises ``ValueError`` with Go's error text."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"strconv.ParseBool: parsing {go_quote(value)}: invalid syntax")


def go_atoi(value: str) -> int:
    """``strconv.Atoi`` (base 10, optional sign, int64); raises ``ValueError`` with Go's text."""
    if not _DECIMAL.fullmatch(value):
        raise ValueError(f"strconv.Atoi: parsing {go_quote(value)}: invalid syntax")
    n = int(value)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise ValueError(f"strconv.Atoi: parsing {go_quote(value)}: value out of range")
    return n

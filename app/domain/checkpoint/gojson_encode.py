"""Go ``encoding/json`` encoding, what the kubelet's checksums and files are made of
(follows Go's encoding/json encode.go as of Go 1.22-1.24).

``marshal`` writes what ``json.Marshal`` writes: compact, struct fields in declaration order,
``omitempty``, map keys sorted by their text, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped,
``\\b \\f \\n \\r \\t`` short escapes, other control characters ``\\u00XX``, raw UTF-8 otherwise.
``encode_fragment`` lets a writer encode a field once and reuse it in two documents;
``encode_fragment`` and ``go_escape`` together encode one item of a map (the incremental writers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from typing import Any

from app.domain.checkpoint.gotypes import GoType, Kind, type_compiler

_HTML_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
_NEEDS_HTML = re.compile("[<>&\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")


_go_string = encode_basestring


def encode_fragment(value: Any, t: GoType) -> str:
    """The JSON of ``value`` as it appears inside a ``marshal`` document, before the
    document-wide escaping pass: reusable as a ``fragments`` entry of ``marshal``."""
    text: str = _encoder(t)(value)
    return text


def marshal(value: Any, t: GoType, *, fragments: Mapping[str, str] | None = None) -> str:
    """``json.Marshal(value)`` for a value of Go type ``t``.

    ``fragments`` (structs only) maps Go field names to ``encode_fragment`` of that field's
    value, already computed for another document: they are used as they are instead of being
    encoded again (the checkpoint writers put the same maps in ``data`` and inline).
    """
    text: str = _encoder(t)(value) if not fragments else _encode_struct_with(value, t, fragments)
    return go_escape(text)


def go_escape(text: str) -> str:
    """The document-wide pass of ``marshal`` (HTML characters, U+2028/9, surrogates): per
    character, so applying it to the parts of a document is applying it to the document."""
    if text.isascii():
        # The common case, checked in C: no U+2028/U+2029 and no surrogates, so only the
        # HTML characters can need escaping (``in`` is much faster than a regex scan).
        if "<" in text or ">" in text or "&" in text:
            text = text.translate(_HTML_ESCAPES)
        return text
    if _NEEDS_HTML.search(text):
        text = text.translate(_HTML_ESCAPES)
    if _SURROGATE.search(text):
        # A Go string cannot hold them; Go writes invalid UTF-8 as \\ufffd. Only strings can
        # contain them, so replacing in the document is the same as in each string.
        text = _SURROGATE.sub("\\\\ufffd", text)
    return text


def _encode_struct_with(value: Any, t: GoType, fragments: Mapping[str, str]) -> str:
    """The struct encoder of ``_compile_struct`` with some field values pre-encoded."""
    if t.kind != Kind.STRUCT or t.marshal is not None:
        raise TypeError(f"fragments are for plain structs, not {t.name}")
    out = []
    for f in t.fields:
        if f.json_name is None:
            continue
        v = value[f.go_name]
        if f.omitempty and is_empty(v, f.type):
            continue
        text = fragments.get(f.go_name)
        out.append(_go_string(f.json_name) + ":" + (_encoder(f.type)(v) if text is None else text))
    return "{" + ",".join(out) + "}"


def is_empty(value: Any, t: GoType) -> bool:
    """Go's ``isEmptyValue`` (what ``omitempty`` drops)."""
    k = t.kind
    if k in (Kind.MAP, Kind.SLICE):
        return not value
    if k == Kind.STRING:
        return value == ""
    if k in (Kind.INT, Kind.UINT):
        return value == 0
    if k == Kind.PTR:
        return value is None
    return False


# One closure per Go type, built once: value -> its JSON text.
_Encoder = Callable[[Any], str]


def _compile_struct(t: GoType) -> _Encoder:
    """Fields in declaration order, ``json:"-"`` left out, ``omitempty`` honoured."""
    parts = [
        (f.go_name, _go_string(f.json_name) + ":", _encoder(f.type), f.omitempty, f.type)
        for f in t.fields
        if f.json_name is not None
    ]

    def enc_struct(value: Any) -> str:
        out = []
        for name, prefix, enc, omitempty, ft in parts:
            v = value[name]
            if omitempty and is_empty(v, ft):
                continue
            out.append(prefix + enc(v))
        return "{" + ",".join(out) + "}"

    return enc_struct


def _compile_map(t: GoType) -> _Encoder:
    """Keys sorted by their text (integer keys too); nil is ``null``."""
    assert t.elem is not None and t.key is not None
    elem_enc = _encoder(t.elem)
    int_keys = t.key.kind != Kind.STRING

    def enc_map(value: Any) -> str:
        if value is None:
            return "null"
        if int_keys:
            items = sorted((str(key), v) for key, v in value.items())
        else:
            items = sorted(value.items())
        return "{" + ",".join(_go_string(key) + ":" + elem_enc(v) for key, v in items) + "}"

    return enc_map


def _compile_slice(t: GoType) -> _Encoder:
    assert t.elem is not None
    elem_enc = _encoder(t.elem)

    def enc_slice(value: Any) -> str:
        if value is None:
            return "null"
        return "[" + ",".join(map(elem_enc, value)) + "]"

    return enc_slice


def _compile_ptr(t: GoType) -> _Encoder:
    assert t.elem is not None
    pointee_enc = _encoder(t.elem)

    def enc_ptr(value: Any) -> str:
        return "null" if value is None else str(pointee_enc(value))

    return enc_ptr


_encoder: Callable[[GoType], _Encoder] = type_compiler(
    {
        Kind.STRING: lambda t: _go_string,
        **dict.fromkeys((Kind.INT, Kind.UINT), lambda t: str),
        Kind.STRUCT: _compile_struct,
        Kind.MAP: _compile_map,
        Kind.SLICE: _compile_slice,
        Kind.PTR: _compile_ptr,
        Kind.EMPTY_STRUCT: lambda t: lambda value: "{}",
    },
    hook=lambda t: t.marshal,
)

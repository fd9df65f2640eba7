"""Go ``encoding/json`` semantics for checkpoint files (follows Go's encoding/json decode.go,
scanner.go and encode.go as of Go 1.22-1.24).

Decoding happens in two steps, as in Go:

1. ``parse`` checks the syntax of the whole text and builds a generic tree. Objects become
   ``JObj`` (a list of ``(key, value)`` pairs, so repeated keys survive), numbers ``GoNumber``
   (the literal text, so ``1.0`` stays distinguishable from ``1``), strings ``str`` (unquoted the
   way Go does: invalid UTF-8 and lone surrogate escapes become U+FFFD). A syntax error is
   reported with Go's text (``unexpected end of JSON input``,
   ``invalid character 'x' looking for beginning of value``...). Nothing is decoded then.
2. ``unmarshal`` walks the tree into a Go value described by ``gotypes``: exact key match
   first, then case-insensitive; unknown keys ignored; repeated keys processed in order (last
   scalar wins, map contents merge); ``null`` sets maps/slices/pointers to nil and leaves other
   values alone; type errors are recorded (the first one is returned) while decoding continues,
   so a failed attempt can leave a partly filled value, exactly like Go.

The fast path uses the C-accelerated ``json`` module; anything it refuses or could treat
differently from Go (NaN, lone surrogates, deep nesting) goes through a small iterative scanner
that mirrors Go's scanner and its messages. Nothing here recurses on the input's depth.

``marshal`` writes what ``json.Marshal`` writes: compact, struct fields in declaration order,
``omitempty``, map keys sorted by their text, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped,
``\\b \\f \\n \\r \\t`` short escapes, other control characters ``\\u00XX``, raw UTF-8 otherwise.
"""

from __future__ import annotations

import codecs
import copy
import json
import re
import unicodedata
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from app.domain.checkpoint.errors import (
    MAX_CHECKPOINT_BYTES,
    MAX_NESTING_DEPTH,
    CheckpointTooLargeError,
)
from app.domain.checkpoint.gotypes import (
    CPUSET,
    EMPTY_STRUCT,
    INT,
    MAP,
    PTR,
    SLICE,
    STRING,
    STRUCT,
    UINT,
    GoType,
    zero,
)

# -- values of the generic tree ------------------------------------------------------------


class JObj(list):
    """A JSON object as the ordered list of its ``(key, value)`` pairs (duplicates kept)."""

    __slots__ = ()


class GoNumber(str):
    """A JSON number kept as its literal text."""

    __slots__ = ()


# -- errors ----------------------------------------------------------------------------------


class GoJSONError(Exception):
    """An error ``json.Unmarshal`` returns; ``str(err)`` is Go's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class GoSyntaxError(GoJSONError):
    """``*json.SyntaxError``."""


class UnmarshalTypeError(GoJSONError):
    """``*json.UnmarshalTypeError``: a JSON value of the wrong kind for the Go type."""

    def __init__(self, value: str, type_name: str, struct: str = "", field: str = "") -> None:
        if struct or field:
            text = (
                f"json: cannot unmarshal {value} into Go struct field {struct}.{field} "
                f"of type {type_name}"
            )
        else:
            text = f"json: cannot unmarshal {value} into Go value of type {type_name}"
        super().__init__(text)
        self.value = value
        self.type_name = type_name
        self.struct = struct
        self.field = field


class _Abort(Exception):
    """An error returned by an ``UnmarshalJSON`` method: it stops the decoder at once."""

    def __init__(self, error: GoJSONError) -> None:
        super().__init__(error.message)
        self.error = error


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


def _quote_char(ch: str) -> str:
    """encoding/json's ``quoteChar`` of the byte Go's scanner stopped at."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    if ch >= "\x80":
        # Go looks at the first byte of the UTF-8 sequence and shows it as a Latin-1 rune.
        ch = chr(ch.encode("utf-8", "surrogatepass")[0])
    return "'" + go_quote(ch)[1:-1] + "'"


# -- parsing -------------------------------------------------------------------------------------

_EOF = "unexpected end of JSON input"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def parse(text: str) -> Any:
    """Check the syntax like Go's ``checkValid`` and return the generic tree.

    Raises ``GoSyntaxError`` with Go's message.
    """
    if not _SURROGATE_ESCAPE.search(text):
        try:
            return json.loads(
                text,
                object_pairs_hook=JObj,
                parse_float=GoNumber,
                parse_int=GoNumber,
                parse_constant=_reject_constant,
            )
        except (ValueError, RecursionError):
            pass
    return _Scanner(text).parse()


_WS = frozenset(" \t\n\r")
_SIMPLE_STRING = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}

# scanner states
_VALUE, _KEY_OR_END, _KEY, _COLON, _OBJ_NEXT, _ARR_FIRST, _ARR_NEXT, _END = range(8)


class _Scanner:
    """An iterative JSON parser with Go's error messages (encoding/json scanner.go)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)

    def error(self, i: int, context: str) -> GoSyntaxError:
        # At the end of the input Go's scanner is fed one ' ' (scanner.eof), so a literal,
        # number or escape cut short reports "invalid character ' ' <context>".
        ch = self.s[i] if i < self.n else " "
        return GoSyntaxError(f"invalid character {_quote_char(ch)} {context}")

    def parse(self) -> Any:
        s, n = self.s, self.n
        stack: list[Any] = []  # JObj / list under construction
        keys: list[str] = []  # pending keys of the open objects
        state = _VALUE
        i = 0
        result: Any = None
        while True:
            while i < n and s[i] in _WS:
                i += 1
            if state == _END:
                if i < n:
                    raise self.error(i, "after top-level value")
                return result
            if i >= n:
                raise GoSyntaxError(_EOF)
            c = s[i]
            if state == _COLON:
                if c != ":":
                    raise self.error(i, "after object key")
                i += 1
                state = _VALUE
                continue
            if state in (_OBJ_NEXT, _ARR_NEXT):
                closer = "}" if state == _OBJ_NEXT else "]"
                if c == ",":
                    i += 1
                    state = _KEY if state == _OBJ_NEXT else _VALUE
                    continue
                if c != closer:
                    ctx = "after object key:value pair" if closer == "}" else "after array element"
                    raise self.error(i, ctx)
                i += 1
                value = stack.pop()
                state, result = self._finish(stack, keys, value)
                continue
            if state in (_KEY_OR_END, _KEY):
                if state == _KEY_OR_END and c == "}":
                    i += 1
                    value = stack.pop()
                    state, result = self._finish(stack, keys, value)
                    continue
                if c != '"':
                    raise self.error(i, "looking for beginning of object key string")
                key, i = self._string(i)
                keys.append(key)
                state = _COLON
                continue
            # _VALUE or _ARR_FIRST
            if state == _ARR_FIRST and c == "]":
                i += 1
                value = stack.pop()
                state, result = self._finish(stack, keys, value)
                continue
            if c == "{" or c == "[":
                if len(stack) + 1 > MAX_NESTING_DEPTH:
                    raise self.error(i, "exceeded max depth")
                stack.append(JObj() if c == "{" else [])
                state = _KEY_OR_END if c == "{" else _ARR_FIRST
                i += 1
                continue
            if c == '"':
                value, i = self._string(i)
            elif c == "-" or "0" <= c <= "9":
                value, i = self._number(i)
            elif c == "t":
                value, i = self._literal(i, "true", True)
            elif c == "f":
                value, i = self._literal(i, "false", False)
            elif c == "n":
                value, i = self._literal(i, "null", None)
            else:
                raise self.error(i, "looking for beginning of value")
            state, result = self._finish(stack, keys, value)

    @staticmethod
    def _finish(stack: list[Any], keys: list[str], value: Any) -> tuple[int, Any]:
        if not stack:
            return _END, value
        top = stack[-1]
        if type(top) is JObj:
            top.append((keys.pop(), value))
            return _OBJ_NEXT, None
        top.append(value)
        return _ARR_NEXT, None

    def _literal(self, i: int, word: str, value: Any) -> tuple[Any, int]:
        s = self.s
        for k in range(1, len(word)):
            j = i + k
            if j >= self.n or s[j] != word[k]:
                raise self.error(j, f"in literal {word} (expecting {_quote_char(word[k])})")
        return value, i + len(word)

    def _number(self, i: int) -> tuple[GoNumber, int]:
        s, n = self.s, self.n
        m = _NUMBER.match(s, i)
        if m is not None:
            end = m.end()
            lit = m.group(0)
            # Go's scanner would continue into a '.' or an exponent that the match stopped
            # short of ("1." or "1e" need digits): walk the literal for its error instead.
            dangling = end < n and (
                (s[end] == "." and "." not in lit and "e" not in lit and "E" not in lit)
                or (s[end] in "eE" and "e" not in lit and "E" not in lit)
            )
            if not dangling:
                return GoNumber(lit), end
        # Walk the literal to find Go's error position and context.
        j = i
        if s[j] == "-":
            j += 1
            if j >= n or not ("0" <= s[j] <= "9"):
                raise self.error(j, "in numeric literal")
        if s[j] == "0":
            j += 1
        else:
            while j < n and "0" <= s[j] <= "9":
                j += 1
        if j < n and s[j] == ".":
            j += 1
            if j >= n or not ("0" <= s[j] <= "9"):
                raise self.error(j, "after decimal point in numeric literal")
            while j < n and "0" <= s[j] <= "9":
                j += 1
        if j < n and s[j] in "eE":
            j += 1
            if j < n and s[j] in "+-":
                j += 1
            if j >= n or not ("0" <= s[j] <= "9"):
                raise self.error(j, "in exponent of numeric literal")
            while j < n and "0" <= s[j] <= "9":
                j += 1
        return GoNumber(s[i:j]), j

    def _string(self, i: int) -> tuple[str, int]:
        s, n = self.s, self.n
        j = i + 1
        m = _SIMPLE_STRING.match(s, j)
        end = m.end() if m else j
        if end < n and s[end] == '"':
            return s[j:end], end + 1
        out = [s[j:end]]
        k = end
        while True:
            if k >= n:
                raise GoSyntaxError(_EOF)
            c = s[k]
            if c == '"':
                return "".join(out), k + 1
            if c < " ":
                raise self.error(k, "in string literal")
            if c != "\\":
                m = _SIMPLE_STRING.match(s, k)
                stop = m.end() if m and m.end() > k else k + 1
                out.append(s[k:stop])
                k = stop
                continue
            k += 1
            e = s[k] if k < n else " "
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                k += 1
                continue
            if e != "u":
                raise self.error(k, "in string escape code")
            r, k = self._hex4(k + 1)
            if 0xD800 <= r < 0xE000:
                # utf16.DecodeRune with the next \uXXXX, else U+FFFD (Go's unquote).
                if r < 0xDC00 and s.startswith("\\u", k) and k + 6 <= n:
                    hx = s[k + 2 : k + 6]
                    if all(h in _HEX for h in hx):
                        r2 = int(hx, 16)
                        if 0xDC00 <= r2 < 0xE000:
                            out.append(chr(0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00)))
                            k += 6
                            continue
                out.append("\ufffd")
                continue
            out.append(chr(r))

    def _hex4(self, k: int) -> tuple[int, int]:
        s = self.s
        for j in range(k, k + 4):
            if j >= self.n or s[j] not in _HEX:
                raise self.error(j, "in \\u hexadecimal character escape")
        return int(s[k : k + 4], 16), k + 4


# -- typed decoding -----------------------------------------------------------------------------

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
_DIGITS = re.compile(r"[+-]?[0-9]+\Z")


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, ``None`` on any error."""
    if not _DIGITS.match(text) or len(text.lstrip("+-").lstrip("0")) > 19:
        return None  # also keeps int() clear of its 4,300-digit limit
    sign, digits = (text[0], text[1:]) if text[0] in "+-" else ("", text)
    v = int(sign + (digits.lstrip("0") or "0"))
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def _parse_uint64(text: str) -> int | None:
    if not _DIGITS.match(text) or text[0] in "+-" or len(text.lstrip("0")) > 20:
        return None
    v = int(text.lstrip("0") or "0")
    return v if v <= _UINT64_MAX else None


def _kind_of(node: Any) -> str:
    t = type(node)
    if t is JObj:
        return "object"
    if t is list:
        return "array"
    if t is GoNumber:
        return "number"
    if t is bool:
        return "bool"
    return "string"


class Decoder:
    """One ``json.Unmarshal`` call: saved first type error and the error context.

    Without ``track`` the decoder does not maintain Go's error context (the struct and field
    path named in type-error texts); ``unmarshal`` decodes fast that way and, only when an
    error occurs, decodes again with ``track`` to produce Go's exact text.
    """

    __slots__ = ("fields", "saved", "struct", "track")

    def __init__(self, track: bool = True) -> None:
        self.saved: GoJSONError | None = None
        self.fields: list[str] = []
        self.struct: GoType | None = None
        self.track = track

    def type_error(self, value: str, t: GoType) -> None:
        if self.saved is None:
            if not self.track:
                self.saved = _UNTRACKED
            elif self.struct is not None or self.fields:
                name = self.struct.bare_name if self.struct is not None else ""
                self.saved = UnmarshalTypeError(value, t.name, name, ".".join(self.fields))
            else:
                self.saved = UnmarshalTypeError(value, t.name)

    def add_error_context(self, err: GoJSONError) -> GoJSONError:
        """Go's ``addErrorContext`` for an error returned (not saved) while decoding."""
        if isinstance(err, UnmarshalTypeError) and (self.struct is not None or self.fields):
            fields = list(self.fields)
            if err.field:
                fields.append(err.field)
            name = self.struct.bare_name if self.struct is not None else ""
            return UnmarshalTypeError(err.value, err.type_name, name, ".".join(fields))
        return err

    def decode(self, node: Any, t: GoType, cur: Any) -> Any:
        """Decode ``node`` into a Go value of type ``t`` whose current value is ``cur``."""
        return _decoder(t)(self, node, cur)


_UNTRACKED = GoJSONError("json: error (context not tracked)")


# Decoding is driven by one closure per Go type, built once: the kind dispatch, field tables
# and zero values are resolved up front, which keeps a 250-pod file well under 10 ms.
_DecodeFn = Any
_DECODERS: dict[GoType, _DecodeFn] = {}


def _decoder(t: GoType) -> _DecodeFn:
    fn = _DECODERS.get(t)
    if fn is None:
        fn = _DECODERS[t] = _compile_decoder(t)
    return fn


def _zero_factory(t: GoType) -> Any:
    if t.kind == STRUCT:
        template = zero(t)
        if all(not isinstance(v, dict | list) for v in template.values()):
            return template.copy
        return lambda: zero(t)
    value = zero(t)
    if isinstance(value, dict):
        return dict
    return lambda: value


def _compile_decoder(t: GoType) -> _DecodeFn:
    k = t.kind
    if t.unmarshal is not None:
        hook = t.unmarshal
        return lambda d, node, cur: hook(d, node, cur)
    if k == STRING:

        def dec_string(d: Decoder, node: Any, cur: Any) -> Any:
            tn = type(node)
            if tn is str:
                return node
            if node is not None:
                d.type_error("number" if tn is GoNumber else _kind_of(node), t)
            return cur

        return dec_string
    if k in (INT, UINT):
        signed = k == INT

        def dec_int(d: Decoder, node: Any, cur: Any) -> Any:
            if type(node) is GoNumber:
                # Fast path: plain decimal digits that cannot overflow.
                if node.isdigit() and len(node) < 19:
                    return int(node)
                v = parse_int64(node) if signed else _parse_uint64(node)
                if v is None:
                    d.type_error("number " + node, t)
                    return cur
                return v
            if node is not None:
                d.type_error(_kind_of(node), t)
            return cur

        return dec_int
    if k == STRUCT:
        return _compile_struct(t)
    if k == MAP:
        return _compile_map(t)
    if k == SLICE:
        slice_elem = t.elem
        assert slice_elem is not None
        new_elem = _zero_factory(slice_elem)
        slice_dec = _decoder(slice_elem)
        scalar = slice_elem.kind in (INT, UINT)

        def dec_slice(d: Decoder, node: Any, cur: Any) -> Any:
            if type(node) is not list:
                if node is None:
                    return None
                d.type_error(_kind_of(node), t)
                return cur
            elem_dec = slice_dec
            if scalar and not cur:
                return [elem_dec(d, item, 0) for item in node]
            old = cur or ()
            n_old = len(old)
            return [
                elem_dec(d, item, old[i] if i < n_old else new_elem())
                for i, item in enumerate(node)
            ]

        return dec_slice
    if k == PTR:
        ptr_elem = t.elem
        assert ptr_elem is not None
        new_pointee = _zero_factory(ptr_elem)
        pointee_dec = _decoder(ptr_elem)

        def dec_ptr(d: Decoder, node: Any, cur: Any) -> Any:
            if node is None:
                return None
            return pointee_dec(d, node, cur if cur is not None else new_pointee())

        return dec_ptr
    if k == EMPTY_STRUCT:

        def dec_empty(d: Decoder, node: Any, cur: Any) -> Any:
            if node is None:
                return cur
            if type(node) is not JObj:
                d.type_error(_kind_of(node), t)
            return {}

        return dec_empty
    if k == CPUSET:  # only reached through PodEntry.UnmarshalJSON

        def dec_cpuset(d: Decoder, node: Any, cur: Any) -> Any:
            if node is not None:
                d.type_error(_kind_of(node), t)
            return cur

        return dec_cpuset
    raise AssertionError(f"unknown kind {k}")


def _compile_struct(t: GoType) -> _DecodeFn:
    new_obj = _zero_factory(t)
    # key -> (Go name, JSON name, decoder, kind needing in-place allocation, pointee type)
    plan: dict[str, tuple[str, str, _DecodeFn, str | None, GoType | None]] = {}
    for f in t.fields:
        if f.json_name is None:
            continue
        ft = f.type
        prealloc = ft.kind if ft.unmarshal is None and ft.kind in (MAP, PTR) else None
        plan[f.json_name] = (f.go_name, f.json_name, _decoder(ft), prealloc, ft.elem)
    json_names = {f: f.json_name for f in t.fields}

    def field_plan(key: str) -> tuple[str, str, _DecodeFn, str | None, GoType | None] | None:
        entry = plan.get(key)
        if entry is None:
            f = t.lookup(key)
            if f is None:
                return None
            entry = plan[json_names[f] or ""]
        return entry

    def dec_struct(d: Decoder, node: Any, cur: Any) -> Any:
        if type(node) is not JObj:
            if node is not None:
                d.type_error(_kind_of(node), t)
            return cur
        obj = cur if cur is not None else new_obj()
        track = d.track
        for key, value in node:
            entry = plan.get(key) or field_plan(key)
            if entry is None:
                continue
            name, json_name, dec, prealloc, pointee = entry
            current = obj[name]
            # Go makes a nil map (or allocates a nil pointer) in place before decoding its
            # elements, so an aborted element leaves the partly filled map in the struct.
            if prealloc is not None and current is None and value is not None:
                if prealloc == MAP:
                    if type(value) is JObj:
                        current = obj[name] = {}
                elif pointee is not None:
                    current = obj[name] = zero(pointee)
            if track:
                outer = d.struct
                d.fields.append(json_name)
                d.struct = t
                obj[name] = dec(d, value, current)
                d.fields.pop()
                d.struct = outer
            else:
                obj[name] = dec(d, value, current)
        return obj

    return dec_struct


def _compile_map(t: GoType) -> _DecodeFn:
    key_t = t.key
    elem = t.elem
    assert key_t is not None and elem is not None
    int_keys = key_t.kind == INT
    new_elem = _zero_factory(elem)
    string_elems = elem.kind == STRING
    elem_dec = _decoder(elem)

    def dec_map(d: Decoder, node: Any, cur: Any) -> Any:
        if type(node) is not JObj:
            if node is None:
                return None
            d.type_error(_kind_of(node), t)
            return cur
        m = cur if cur is not None else {}
        if string_elems and not int_keys:
            for key, value in node:
                if type(value) is str:
                    m[key] = value
                else:
                    m[key] = elem_dec(d, value, "")
            return m
        for key, value in node:
            v = elem_dec(d, value, new_elem())
            if int_keys:
                ik = parse_int64(key)
                if ik is None:
                    d.type_error("number " + key, key_t)
                    continue
                m[ik] = v
            else:
                m[key] = v
        return m

    return dec_map


def unmarshal(tree: Any, t: GoType, into: Any) -> GoJSONError | None:
    """Decode an already parsed tree into ``into`` (a struct dict, mutated in place).

    Returns the error ``json.Unmarshal`` would return, or ``None``.
    """
    snapshot = copy.deepcopy(into)
    if _run(Decoder(track=False), tree, t, into) is None:
        return None
    # An error: decode again, tracking the context Go names in its messages. Decoding is
    # deterministic, so the partly filled value comes out the same.
    into.clear()
    into.update(snapshot)
    return _run(Decoder(track=True), tree, t, into)


def _run(d: Decoder, tree: Any, t: GoType, into: Any) -> GoJSONError | None:
    try:
        d.decode(tree, t, into)
    except _Abort as abort:
        return d.add_error_context(abort.error)
    return d.saved


def unmarshal_text(text: str, t: GoType, into: Any) -> GoJSONError | None:
    """``json.Unmarshal([]byte(text), into)``: syntax check, then decode."""
    try:
        tree = parse(text)
    except GoSyntaxError as err:
        return err
    return unmarshal(tree, t, into)


def abort(error: GoJSONError) -> _Abort:
    """The exception an ``UnmarshalJSON`` hook raises to stop the outer decoder."""
    return _Abort(error)


# -- encoding -----------------------------------------------------------------------------------

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
    """The struct encoder of ``_compile_encoder`` with some field values pre-encoded."""
    if t.kind != STRUCT or t.marshal is not None:
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
    if k in (MAP, SLICE):
        return not value
    if k == STRING:
        return value == ""
    if k in (INT, UINT):
        return value == 0
    if k == PTR:
        return value is None
    return False


_ENCODERS: dict[GoType, Any] = {}


def _encoder(t: GoType) -> Any:
    fn = _ENCODERS.get(t)
    if fn is None:
        fn = _ENCODERS[t] = _compile_encoder(t)
    return fn


def _compile_encoder(t: GoType) -> Any:
    if t.marshal is not None:
        return t.marshal
    k = t.kind
    if k == STRING:
        return _go_string
    if k in (INT, UINT):
        return str
    if k == STRUCT:
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
    if k == MAP:
        assert t.elem is not None and t.key is not None
        elem_enc = _encoder(t.elem)
        int_keys = t.key.kind != STRING

        def enc_map(value: Any) -> str:
            if value is None:
                return "null"
            if int_keys:
                items = sorted((str(key), v) for key, v in value.items())
            else:
                items = sorted(value.items())
            return "{" + ",".join(_go_string(key) + ":" + elem_enc(v) for key, v in items) + "}"

        return enc_map
    if k == SLICE:
        assert t.elem is not None
        elem_enc = _encoder(t.elem)

        def enc_slice(value: Any) -> str:
            if value is None:
                return "null"
            return "[" + ",".join(map(elem_enc, value)) + "]"

        return enc_slice
    if k == PTR:
        assert t.elem is not None
        pointee_enc = _encoder(t.elem)

        def enc_ptr(value: Any) -> str:
            return "null" if value is None else str(pointee_enc(value))

        return enc_ptr
    if k == EMPTY_STRUCT:
        return lambda value: "{}"
    raise AssertionError(f"cannot encode kind {k}")

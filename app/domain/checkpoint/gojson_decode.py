"""Go ``encoding/json`` decoding of a parsed tree into Go values (follows Go's encoding/json
decode.go as of Go 1.22-1.24).

``unmarshal`` walks the tree ``gojson_scan.parse`` built into a Go value described by
``gotypes``: exact key match first, then case-insensitive; unknown keys ignored; repeated keys
processed in order (last scalar wins, map contents merge); ``null`` sets maps/slices/pointers to
nil and leaves other values alone; type errors are recorded (the first one is returned) while
decoding continues, so a failed attempt can leave a partly filled value, exactly like Go. An
``UnmarshalJSON`` hook (``GoType.unmarshal``) stops the decoder at once with ``abort``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from app.domain.checkpoint.gojson_scan import (
    FORGET,
    GoJSONError,
    GoNumber,
    GoSyntaxError,
    JObj,
    TreeMemo,
    parse,
)
from app.domain.checkpoint.gotypes import GoType, Kind, type_compiler, zero

# -- errors ----------------------------------------------------------------------------------


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


#: The value of each short run of digits decoded lately (a state file repeats a few sizes and
#: NUMA ids by the thousand): a look-up instead of checking and converting the text each time.
_DIGIT_VALUES: dict[str, int] = {}
_DIGIT_VALUES_KEPT = 4096
FORGET.append(_DIGIT_VALUES.clear)


def _digits_value(text: str) -> int | None:
    """The value of ``text`` (a JSON number's text) when it is a run of fewer than 19 digits
    (no sign, no fraction: it cannot overflow an ``int64``), else ``None``."""
    if not (text.isdigit() and len(text) < 19):
        return None
    if len(_DIGIT_VALUES) >= _DIGIT_VALUES_KEPT:
        _DIGIT_VALUES.clear()
    v = _DIGIT_VALUES[text] = int(text)
    return v


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


def _zero_factory(t: GoType) -> Any:
    if t.kind == Kind.STRUCT:
        template = zero(t)
        if all(not isinstance(v, dict | list) for v in template.values()):
            return template.copy
        return lambda: zero(t)
    value = zero(t)
    if isinstance(value, dict):
        return dict
    return lambda: value


def _compile_string(t: GoType) -> _DecodeFn:
    def dec_string(d: Decoder, node: Any, cur: Any) -> Any:
        tn = type(node)
        if tn is str:
            return node
        if node is not None:
            d.type_error("number" if tn is GoNumber else _kind_of(node), t)
        return cur

    return dec_string


def _compile_int(t: GoType) -> _DecodeFn:
    """``int``/``uint64``: a number within range (``strconv.ParseInt``/``ParseUint``)."""
    parse_number = parse_int64 if t.kind == Kind.INT else _parse_uint64

    def dec_int(d: Decoder, node: Any, cur: Any) -> Any:
        if type(node) is GoNumber:
            # Fast path: plain decimal digits that cannot overflow.
            v = _DIGIT_VALUES.get(node)
            if v is None:
                v = _digits_value(node)
            if v is not None:
                return v
            v = parse_number(node)
            if v is None:
                d.type_error("number " + node, t)
                return cur
            return v
        if node is not None:
            d.type_error(_kind_of(node), t)
        return cur

    return dec_int


def _element(t: GoType) -> tuple[GoType, Any, _DecodeFn]:
    """A slice's, map's or pointer's element type, its zero-value factory and its decoder."""
    elem = t.elem
    assert elem is not None
    return elem, _zero_factory(elem), _decoder(elem)


def _nil_or_mismatch(d: Decoder, node: Any, t: GoType, cur: Any) -> Any:
    """A map or slice given another kind of value: ``null`` sets nil, anything else is a type
    error that leaves the value."""
    if node is None:
        return None
    d.type_error(_kind_of(node), t)
    return cur


def _compile_slice(t: GoType) -> _DecodeFn:
    """A new slice of the array's length; existing elements are decoded into in place."""
    slice_elem, new_elem, elem_dec = _element(t)
    scalar = slice_elem.kind in (Kind.INT, Kind.UINT)
    # A flat struct element decodes an object into ``None`` as into a fresh zero value.
    flat = slice_elem.kind == Kind.STRUCT and slice_elem.unmarshal is None and _is_flat(slice_elem)

    def dec_slice(d: Decoder, node: Any, cur: Any) -> Any:
        if type(node) is not list:
            return _nil_or_mismatch(d, node, t, cur)
        if scalar and not cur:
            return _ints(d, node, elem_dec)
        if flat and not cur and not d.track:
            out = []  # a loop: a comprehension's own call dominates for one or two blocks
            for item in node:
                out.append(elem_dec(d, item, None if type(item) is JObj else new_elem()))
            return out
        old = cur or ()
        n_old = len(old)
        return [
            elem_dec(d, item, old[i] if i < n_old else new_elem()) for i, item in enumerate(node)
        ]

    return dec_slice


def _compile_ptr(t: GoType) -> _DecodeFn:
    """``null`` sets nil; otherwise decode into the pointee, allocated when nil."""
    _, new_pointee, pointee_dec = _element(t)

    def dec_ptr(d: Decoder, node: Any, cur: Any) -> Any:
        if node is None:
            return None
        return pointee_dec(d, node, cur if cur is not None else new_pointee())

    return dec_ptr


def _compile_empty(t: GoType) -> _DecodeFn:
    def dec_empty(d: Decoder, node: Any, cur: Any) -> Any:
        if node is None:
            return cur
        if type(node) is not JObj:
            d.type_error(_kind_of(node), t)
        return {}

    return dec_empty


def _compile_cpuset(t: GoType) -> _DecodeFn:
    """Only reached through ``PodEntry.UnmarshalJSON``: any JSON value but ``null`` is a type
    error (the struct's only field is unexported)."""

    def dec_cpuset(d: Decoder, node: Any, cur: Any) -> Any:
        if node is not None:
            d.type_error(_kind_of(node), t)
        return cur

    return dec_cpuset


# A struct field's decoding plan: Go name, JSON name, decoder, kind needing in-place
# allocation, pointee type.
_FieldPlan = tuple[str, str, _DecodeFn, str | None, GoType | None]


def _field_plans(t: GoType) -> dict[str, _FieldPlan]:
    plan: dict[str, _FieldPlan] = {}
    for f in t.fields:
        if f.json_name is None:
            continue
        ft = f.type
        prealloc = ft.kind if ft.unmarshal is None and ft.kind in (Kind.MAP, Kind.PTR) else None
        plan[f.json_name] = (f.go_name, f.json_name, _decoder(ft), prealloc, ft.elem)
    return plan


def _is_plain(t: GoType, kinds: tuple[str, ...]) -> bool:
    return t.unmarshal is None and t.kind in kinds


def _is_flat(t: GoType) -> bool:
    """A struct of strings, integers and slices of integers only (a memory block): it needs no
    in-place allocation, its fields decode straight into the fresh value."""
    return all(
        _is_plain(f.type, (Kind.STRING, Kind.INT, Kind.UINT))
        or (
            _is_plain(f.type, (Kind.SLICE,))
            and f.type.elem is not None
            and _is_plain(f.type.elem, (Kind.INT, Kind.UINT))
        )
        for f in t.fields
        if f.json_name is not None
    )


def _compile_struct(t: GoType) -> _DecodeFn:
    """Keys matched exactly, then case-insensitively; unknown keys ignored, repeated keys
    decoded in order."""
    new_obj = _zero_factory(t)
    plan = _field_plans(t)
    field_plan = _folded_lookup(t, plan)

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
                current = obj[name] = _allocated(prealloc, pointee, value)
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

    if not _is_flat(t):
        return dec_struct
    return _flat_struct_decoder(t, new_obj, plan, field_plan, dec_struct)


def _folded_lookup(t: GoType, plan: dict[str, _FieldPlan]) -> Any:
    """The plan of a key that is not a field's exact JSON name: case-insensitive match."""
    json_names = {f: f.json_name for f in t.fields}

    def field_plan(key: str) -> _FieldPlan | None:
        entry = plan.get(key)
        if entry is None:
            f = t.lookup(key)
            if f is None:
                return None
            entry = plan[json_names[f] or ""]
        return entry

    return field_plan


def _decode_folded(d: Decoder, obj: Any, entry: _FieldPlan | None, value: Any) -> None:
    """Untracked, ``value`` into the field of ``entry`` (the case-insensitive match of a key
    that is no field's exact JSON name); an unknown key (no entry) is ignored."""
    if entry is not None:
        obj[entry[0]] = entry[2](d, value, obj[entry[0]])


def _allocated(prealloc: str, pointee: GoType | None, value: Any) -> Any:
    """What a nil map (for an object) or a nil pointer holds once Go made it in place."""
    if prealloc == Kind.MAP:
        return {} if type(value) is JObj else None
    return zero(pointee) if pointee is not None else None


def _flat_struct_decoder(
    t: GoType, new_obj: Any, plan: dict[str, _FieldPlan], field_plan: Any, tracked: _DecodeFn
) -> _DecodeFn:
    """The untracked decoder of a flat struct (``_is_flat``): what the field decoders return
    for a plain string, a short run of digits or a list of them, without the calls;
    ``tracked`` otherwise."""
    fast = _flat_fields(t, plan)

    def dec_flat_struct(d: Decoder, node: Any, cur: Any) -> Any:
        if d.track or type(node) is not JObj:
            return tracked(d, node, cur)
        obj = cur if cur is not None else new_obj()
        for key, value in node:
            entry = fast.get(key)
            if entry is None:
                _decode_folded(d, obj, field_plan(key), value)
                continue
            name, shape, dec, elem_dec = entry
            tv = value.__class__
            if tv is str:
                if shape == _TEXT:
                    obj[name] = value
                    continue
            elif tv is GoNumber:
                if shape == _COUNT:
                    n = _DIGIT_VALUES.get(value)
                    if n is None:
                        n = _digits_value(value)
                    if n is not None:
                        obj[name] = n
                        continue
            elif tv is list and shape == _COUNTS and not obj[name]:
                obj[name] = _ints(d, value, elem_dec)
                continue
            obj[name] = dec(d, value, obj[name])
        return obj

    return dec_flat_struct


_OTHER, _TEXT, _COUNT, _COUNTS = range(4)
# A flat struct field's decoding plan: Go name, what the value is (_TEXT, _COUNT, _COUNTS or
# _OTHER), the field decoder, the element decoder of a _COUNTS slice.
_FlatField = tuple[str, int, _DecodeFn, _DecodeFn | None]


def _flat_fields(t: GoType, plan: dict[str, _FieldPlan]) -> dict[str, _FlatField]:
    """The plan of each field of a flat struct, by JSON name."""
    fields: dict[str, _FlatField] = {}
    for f in t.fields:
        if f.json_name is None:
            continue
        ft = f.type
        shape, elem_dec = _OTHER, None
        if _is_plain(ft, (Kind.STRING,)):
            shape = _TEXT
        elif _is_plain(ft, (Kind.INT, Kind.UINT)):
            shape = _COUNT
        elif _is_plain(ft, (Kind.SLICE,)) and ft.elem is not None:
            shape, elem_dec = _COUNTS, _decoder(ft.elem)
        fields[f.json_name] = (f.go_name, shape, plan[f.json_name][2], elem_dec)
    return fields


def _ints(d: Decoder, node: list[Any], elem_dec: _DecodeFn) -> list[Any]:
    """A JSON array decoded into a fresh integer slice: short runs of digits read in place,
    anything else by the element decoder (into a zero)."""
    # A loop, not a comprehension: these arrays are short (a NUMA affinity), and a
    # comprehension's own call costs more than the loop here.
    out = []
    known = _DIGIT_VALUES.get
    for v in node:
        n = known(v) if type(v) is GoNumber else None
        if n is None:
            n = elem_dec(d, v, 0)
        out.append(n)
    return out


def _compile_map(t: GoType) -> _DecodeFn:
    """Map contents merge into an existing map; integer keys parsed as ``int64``."""
    key_t = t.key
    assert key_t is not None
    int_keys = key_t.kind == Kind.INT
    elem, new_elem, elem_dec = _element(t)
    string_elems = elem.kind == Kind.STRING
    # An immutable zero (nil, "", 0) is passed as it is, without a call per element.
    shared = zero(elem)
    fresh = isinstance(shared, dict | list)

    def dec_map(d: Decoder, node: Any, cur: Any) -> Any:
        if type(node) is not JObj:
            return _nil_or_mismatch(d, node, t, cur)
        m = cur if cur is not None else {}
        if string_elems and not int_keys:
            for key, value in node:
                m[key] = value if type(value) is str else elem_dec(d, value, "")
            return m
        for key, value in node:
            v = elem_dec(d, value, new_elem() if fresh else shared)
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


_decoder: Callable[[GoType], _DecodeFn] = type_compiler(
    {
        Kind.STRING: _compile_string,
        **dict.fromkeys((Kind.INT, Kind.UINT), _compile_int),
        Kind.STRUCT: _compile_struct,
        Kind.MAP: _compile_map,
        Kind.SLICE: _compile_slice,
        Kind.PTR: _compile_ptr,
        Kind.EMPTY_STRUCT: _compile_empty,
        Kind.CPUSET: _compile_cpuset,
    },
    hook=lambda t: t.unmarshal,
)


def unmarshal(tree: Any, t: GoType, into: Any) -> GoJSONError | None:
    """Decode an already parsed tree into ``into`` (a struct dict, mutated in place).

    Returns the error ``json.Unmarshal`` would return, or ``None``.
    """
    snapshot = _clone(into)
    if _run(Decoder(track=False), tree, t, into) is None:
        return None
    # An error: decode again, tracking the context Go names in its messages. Decoding is
    # deterministic, so the partly filled value comes out the same.
    into.clear()
    into.update(snapshot)
    return _run(Decoder(track=True), tree, t, into)


#: A file's tree is decoded as each version and struct name by every check that reads it
#: (about 30 decodes per node in a fleet upgrade check, of a few distinct ones).
_decoded = TreeMemo()
_ONCE = object()


def unmarshal_new(
    tree: Any, t: GoType, new: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], GoJSONError | None]:
    """``unmarshal`` of ``tree`` (a shared tree of ``parse``) into a fresh ``new()`` value:
    ``(value, error or None)``. The value depends only on the tree and the type: a decode
    asked for again is kept (each caller gets its own copy); one asked for once (a single
    read of a file) costs no copy."""
    known, hit = _decoded.get(tree, t)
    if known and hit is not _ONCE:
        return _clone(hit[0]), hit[1]
    obj = new()
    err = unmarshal(tree, t, obj)
    _decoded.put(tree, _ONCE if not known else (_clone(obj), err), t)
    return obj, err


def _clone(value: Any) -> Any:
    """A copy of a decoded value deep enough to restore it: its dicts and lists copied, the
    rest (strings, numbers, ``CPUSet``, tuples, parsed trees) immutable and shared. ``copy.deepcopy`` did
    the same at 5x the cost, and it ran on every decode."""
    t = type(value)
    if t is dict:
        return {k: _clone(v) for k, v in value.items()}
    if t is list:
        return [_clone(v) for v in value]
    return value  # a parsed tree's own values (``JObj``...) are shared as they are


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

"""go-spew ``%#v`` rendering with the ``k8s.io/utils/dump.ForHash`` configuration (follows
github.com/davecgh/go-spew/spew format.go and common.go, v1.1.1, and k8s.io/utils/dump).

``ForHash`` is ``spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true,
SpewKeys: true, DisablePointerAddresses: true, DisableCapacities: true}`` printing ``%#v``:

* a top-level pointer to a struct prints ``(*pkg.Type){...}``;
* struct fields print ``Name:(type)value`` in declaration order, separated by one space;
  unexported fields are included and ``String()`` methods are never called;
* values inside maps and slices carry no ``(type)`` prefix; map keys are sorted (strings
  bytewise, integers numerically); nil maps/slices/pointers print ``<nil>``, empty ones ``map[]``
  / ``[]``; a non-nil pointer inside a map prints ``<*>`` then the pointee;
* strings print raw, integers in decimal, ``struct{}`` as ``{}``.

spew keeps an ``ignoreNextType`` flag. Printing a nil pointer while the flag is set returns
early without clearing it, so when such a pointer is the last value of a map the next struct
field loses its ``(type)`` prefix. The renderer reproduces that quirk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from app.domain.checkpoint.gotypes import CPUSET_ELEMS_NAME, GoType, Kind, type_compiler


class _State:
    __slots__ = ("ignore",)

    def __init__(self) -> None:
        self.ignore = False


def sdump_for_hash(value: Any, t: GoType, header: str | None = None) -> str:
    """``dump.ForHash(&value)`` for a struct ``value`` of type ``t``.

    ``header`` replaces the struct's type name in ``(*header)`` (the legacy-name rewrite).
    """
    out = ["(*", header if header is not None else t.name, ")"]
    st = _State()
    st.ignore = True
    _formatter(t)(out, value, st)
    return "".join(out)


def sdump_item(value: Any, t: GoType) -> str:
    """``value`` of type ``t`` as spew prints it as a map value (no ``(type)`` prefix). A value
    that leaves spew's ignoreNextType flag set (a nil pointer) changes what follows it, so it
    cannot be printed on its own: ``ValueError``."""
    out: list[str] = []
    st = _State()
    st.ignore = True
    _formatter(t)(out, value, st)
    if st.ignore:
        raise ValueError(f"a {t.name} value that ends with a nil pointer depends on what follows")
    return "".join(out)


def sdump_string(value: str) -> str:
    """``dump.ForHash(s)`` for a Go string: ``(string)`` followed by the raw text."""
    return "(string)" + value


# One closure per Go type, built once (same output as a generic walk, less dispatch); each
# writes the value, preceded by its ``(type)`` unless the ignoreNextType flag is set.
_Formatter = Callable[[list[str], Any, _State], None]


def _prefix(t: GoType) -> str:
    return "(" + t.name + ")"


def _type_once(out: list[str], prefix: str, st: _State) -> None:
    """A value's ``(type)`` prefix, unless the value holding it printed it already (spew's
    ``ignoreNextType``); either way the flag is cleared for what follows."""
    if not st.ignore:
        out.append(prefix)
    st.ignore = False


def _compile_ptr(t: GoType) -> _Formatter:
    """formatPtr: ``<*>`` (or the type) then the pointee; a nil pointer keeps the flag set."""
    assert t.elem is not None
    pointee = _formatter(t.elem)
    prefix = _prefix(t)

    def fmt_ptr(out: list[str], v: Any, st: _State) -> None:
        if v is None:
            # formatPtr returns here and leaves ignoreNextType set.
            out.append("<nil>" if st.ignore else prefix + "<nil>")
            return
        out.append("<*>" if st.ignore else prefix)
        st.ignore = True
        pointee(out, v, st)

    return fmt_ptr


def _compile_scalar(t: GoType) -> _Formatter:
    """Strings raw, integers in decimal."""
    conv = (lambda v: v) if t.kind == Kind.STRING else str
    prefix = _prefix(t)

    def fmt_scalar(out: list[str], v: Any, st: _State) -> None:
        if st.ignore:
            st.ignore = False
            out.append(conv(v))
        else:
            out.append(prefix + conv(v))

    return fmt_scalar


def _compile_struct(t: GoType) -> _Formatter:
    """``{Name:(type)value Name:(type)value}`` in declaration order, unexported fields too."""
    fields = [(f.go_name, f.go_name + ":", _formatter(f.type)) for f in t.fields]
    prefix = _prefix(t)

    def fmt_struct(out: list[str], v: Any, st: _State) -> None:
        _type_once(out, prefix, st)
        out.append("{")
        first = True
        for name, label, fmt in fields:
            if first:
                first = False
                out.append(label)
            else:
                out.append(" " + label)
            fmt(out, v[name], st)
        out.append("}")

    return fmt_struct


def _untyped_items(
    out: list[str], items: Iterable[tuple[str, Any]], fmt: _Formatter, st: _State
) -> None:
    """A map's or slice's items, one space apart: each its label (``key:`` or nothing), then
    its value without the ``(type)`` prefix (spew sets ``ignoreNextType`` for each)."""
    sep = ""
    for label, value in items:
        out.append(sep + label)
        sep = " "
        st.ignore = True
        fmt(out, value, st)


def _compile_map(t: GoType) -> _Formatter:
    """``map[k:v k:v]`` with sorted keys, values without their type; nil is ``<nil>``."""
    elem = t.elem
    assert t.key is not None and elem is not None
    elem_fmt = _formatter(elem)
    simple = elem.kind == Kind.STRING
    prefix = _prefix(t)

    def fmt_map(out: list[str], v: Any, st: _State) -> None:
        _type_once(out, prefix, st)
        if v is None:
            out.append("<nil>")
        elif simple:
            # No pointers below: the flag always ends cleared.
            out.append("map[" + " ".join(f"{key}:{v[key]}" for key in sorted(v)) + "]")
        else:
            out.append("map[")
            _untyped_items(out, ((f"{key}:", v[key]) for key in sorted(v)), elem_fmt, st)
            out.append("]")

    return fmt_map


def _compile_slice(t: GoType) -> _Formatter:
    """``[v v]``, items without their type; nil is ``<nil>``."""
    elem = t.elem
    assert elem is not None
    elem_fmt = _formatter(elem)
    numbers = elem.kind in (Kind.INT, Kind.UINT)
    prefix = _prefix(t)

    def fmt_slice(out: list[str], v: Any, st: _State) -> None:
        _type_once(out, prefix, st)
        if v is None:
            out.append("<nil>")
        elif numbers:
            out.append("[" + " ".join(map(str, v)) + "]")
        else:
            out.append("[")
            _untyped_items(out, (("", item) for item in v), elem_fmt, st)
            out.append("]")

    return fmt_slice


def _compile_empty(t: GoType) -> _Formatter:
    """``struct{}`` prints ``{}``."""
    prefix = _prefix(t)

    def fmt_empty(out: list[str], v: Any, st: _State) -> None:
        out.append("{}" if st.ignore else prefix + "{}")
        st.ignore = False

    return fmt_empty


def _compile_cpuset(t: GoType) -> _Formatter:
    """``cpuset.CPUSet{elems map[int]struct{}}``: ``{elems:(map[int]struct {})map[0:{} 1:{}]}``."""
    prefix = _prefix(t)

    def fmt_cpuset(out: list[str], v: Any, st: _State) -> None:
        _type_once(out, prefix, st)
        out.append("{elems:(" + CPUSET_ELEMS_NAME + ")")
        if v is None:
            out.append("<nil>}")
        else:
            out.append("map[" + " ".join(f"{cpu}:{{}}" for cpu in v) + "]}")

    return fmt_cpuset


_formatter: Callable[[GoType], _Formatter] = type_compiler(
    {
        **dict.fromkeys((Kind.STRING, Kind.INT, Kind.UINT), _compile_scalar),
        Kind.PTR: _compile_ptr,
        Kind.STRUCT: _compile_struct,
        Kind.MAP: _compile_map,
        Kind.SLICE: _compile_slice,
        Kind.EMPTY_STRUCT: _compile_empty,
        Kind.CPUSET: _compile_cpuset,
    }
)

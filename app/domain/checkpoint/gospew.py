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

from typing import Any

from app.domain.checkpoint.gotypes import (
    CPUSET,
    CPUSET_ELEMS_NAME,
    EMPTY_STRUCT,
    INT,
    MAP,
    PTR,
    SLICE,
    STRING,
    STRUCT,
    UINT,
    GoType,
)


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


def sdump_string(value: str) -> str:
    """``dump.ForHash(s)`` for a Go string: ``(string)`` followed by the raw text."""
    return "(string)" + value


# One closure per Go type, built once (same output as a generic walk, less dispatch).
_FORMATTERS: dict[GoType, Any] = {}


def _formatter(t: GoType) -> Any:
    fn = _FORMATTERS.get(t)
    if fn is None:
        fn = _FORMATTERS[t] = _compile(t)
    return fn


def _compile(t: GoType) -> Any:
    k = t.kind
    prefix = "(" + t.name + ")"
    if k == PTR:
        assert t.elem is not None
        pointee = _formatter(t.elem)

        def fmt_ptr(out: list[str], v: Any, st: _State) -> None:
            if v is None:
                # formatPtr returns here and leaves ignoreNextType set.
                out.append("<nil>" if st.ignore else prefix + "<nil>")
                return
            out.append("<*>" if st.ignore else prefix)
            st.ignore = True
            pointee(out, v, st)

        return fmt_ptr
    if k in (STRING, INT, UINT):
        conv = (lambda v: v) if k == STRING else str

        def fmt_scalar(out: list[str], v: Any, st: _State) -> None:
            if st.ignore:
                st.ignore = False
                out.append(conv(v))
            else:
                out.append(prefix + conv(v))

        return fmt_scalar
    if k == STRUCT:
        fields = [(f.go_name, f.go_name + ":", _formatter(f.type)) for f in t.fields]

        def fmt_struct(out: list[str], v: Any, st: _State) -> None:
            if not st.ignore:
                out.append(prefix)
            st.ignore = False
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
    if k == MAP:
        key_t, elem = t.key, t.elem
        assert key_t is not None and elem is not None
        elem_fmt = _formatter(elem)
        simple = elem.kind == STRING

        def fmt_map(out: list[str], v: Any, st: _State) -> None:
            if not st.ignore:
                out.append(prefix)
            st.ignore = False
            if v is None:
                out.append("<nil>")
                return
            if simple:
                # No pointers below: the flag always ends cleared.
                out.append("map[" + " ".join(f"{key}:{v[key]}" for key in sorted(v)) + "]")
                return
            out.append("map[")
            first = True
            for key in sorted(v):
                if first:
                    first = False
                    out.append(f"{key}:")
                else:
                    out.append(f" {key}:")
                st.ignore = True
                elem_fmt(out, v[key], st)
            out.append("]")

        return fmt_map
    if k == SLICE:
        elem = t.elem
        assert elem is not None
        elem_fmt = _formatter(elem)
        numbers = elem.kind in (INT, UINT)

        def fmt_slice(out: list[str], v: Any, st: _State) -> None:
            if not st.ignore:
                out.append(prefix)
            st.ignore = False
            if v is None:
                out.append("<nil>")
                return
            if numbers:
                out.append("[" + " ".join(map(str, v)) + "]")
                return
            out.append("[")
            first = True
            for item in v:
                if first:
                    first = False
                else:
                    out.append(" ")
                st.ignore = True
                elem_fmt(out, item, st)
            out.append("]")

        return fmt_slice
    if k == EMPTY_STRUCT:

        def fmt_empty(out: list[str], v: Any, st: _State) -> None:
            out.append("{}" if st.ignore else prefix + "{}")
            st.ignore = False

        return fmt_empty
    if k == CPUSET:

        def fmt_cpuset(out: list[str], v: Any, st: _State) -> None:
            # cpuset.CPUSet{elems map[int]struct{}}
            if not st.ignore:
                out.append(prefix)
            st.ignore = False
            out.append("{elems:(" + CPUSET_ELEMS_NAME + ")")
            if v is None:
                out.append("<nil>}")
            else:
                out.append("map[" + " ".join(f"{cpu}:{{}}" for cpu in v) + "]}")

        return fmt_cpuset
    raise AssertionError(f"cannot render kind {k}")

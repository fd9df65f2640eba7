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
    _format(out, value, t, st)
    return "".join(out)


def sdump_string(value: str) -> str:
    """``dump.ForHash(s)`` for a Go string: ``(string)`` followed by the raw text."""
    return "(string)" + value


def _format(out: list[str], v: Any, t: GoType, st: _State) -> None:
    k = t.kind
    if k == PTR:
        if v is None:
            if st.ignore:
                # formatPtr returns here and leaves ignoreNextType set.
                out.append("<nil>")
                return
            out.append("(" + t.name + ")<nil>")
            return
        out.append("<*>" if st.ignore else "(" + t.name + ")")
        st.ignore = True
        assert t.elem is not None
        _format(out, v, t.elem, st)
        return
    if not st.ignore:
        out.append("(" + t.name + ")")
    st.ignore = False
    if k == STRING:
        out.append(v)
    elif k in (INT, UINT):
        out.append(str(v))
    elif k == STRUCT:
        out.append("{")
        first = True
        for f in t.fields:
            if not first:
                out.append(" ")
            first = False
            out.append(f.go_name)
            out.append(":")
            _format(out, v[f.go_name], f.type, st)
        out.append("}")
    elif k == MAP:
        if v is None:
            out.append("<nil>")
            return
        key_t, elem = t.key, t.elem
        assert key_t is not None and elem is not None
        if elem.kind == STRING and key_t.kind == STRING:
            # Fast path: no pointers, so the flag always ends cleared.
            out.append("map[")
            out.append(" ".join(f"{key}:{v[key]}" for key in sorted(v)))
            out.append("]")
            return
        out.append("map[")
        first = True
        for key in sorted(v):
            if not first:
                out.append(" ")
            first = False
            out.append(str(key))
            st.ignore = False
            out.append(":")
            st.ignore = True
            _format(out, v[key], elem, st)
        out.append("]")
    elif k == SLICE:
        if v is None:
            out.append("<nil>")
            return
        elem = t.elem
        assert elem is not None
        if elem.kind in (INT, UINT):
            out.append("[" + " ".join(map(str, v)) + "]")
            return
        out.append("[")
        first = True
        for item in v:
            if not first:
                out.append(" ")
            first = False
            st.ignore = True
            _format(out, item, elem, st)
        out.append("]")
    elif k == EMPTY_STRUCT:
        out.append("{}")
    elif k == CPUSET:
        # cpuset.CPUSet{elems map[int]struct{}}
        out.append("{elems:(" + CPUSET_ELEMS_NAME + ")")
        if v is None:
            out.append("<nil>}")
        else:
            out.append("map[" + " ".join(f"{cpu}:{{}}" for cpu in v) + "]}")
    else:
        raise AssertionError(f"cannot render kind {k}")

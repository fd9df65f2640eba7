"""Descriptors of the Go types stored in checkpoint files.

The codecs (``gojson_decode`` and ``gojson_encode``) and the go-spew renderer (``gospew``) are
driven by these descriptors, so one description of each kubelet struct serves decoding,
encoding and hashing.

Decoded Go values are plain Python values:

* Go ``string`` -> ``str``; ``int``/``uint64``/``checksum.Checksum`` -> ``int``;
* Go struct -> ``dict`` keyed by the Go field name (unexported fields included);
* Go map -> ``dict`` or ``None`` (nil map); Go slice -> ``list`` or ``None`` (nil slice);
* Go pointer -> the pointee value or ``None`` (nil pointer);
* ``cpuset.CPUSet`` -> ``app.domain.cpuset.CPUSet`` or ``None`` (a zero ``CPUSet{}``, nil map).

Type names are those of Go's ``reflect.Type.String()`` (last package path element + name),
which is what go-spew prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar


class Kind:
    """What a Go type is (``GoType.kind``): what the codecs and the renderer dispatch on."""

    STRING = "string"
    INT = "int"
    UINT = "uint"
    MAP = "map"
    SLICE = "slice"
    PTR = "ptr"
    STRUCT = "struct"
    EMPTY_STRUCT = "emptystruct"
    CPUSET = "cpuset"


# Characters that Go's case folding maps onto ASCII letters (encoding/json foldName):
# KELVIN SIGN folds with 'k', LATIN SMALL LETTER LONG S with 's'.
_NON_ASCII_FOLDS = str.maketrans({"\u212a": "K", "\u017f": "S"})


def fold_name(name: str) -> str:
    """encoding/json's ``foldName`` restricted to what can equal an ASCII field name."""
    return name.upper().translate(_NON_ASCII_FOLDS) if name.isascii() else _fold_slow(name)


def _fold_slow(name: str) -> str:
    out = []
    for ch in name:
        if ch < "\x80":
            out.append(ch.upper())
        elif ch in "\u212a\u017f":
            out.append(ch.translate(_NON_ASCII_FOLDS))
        else:
            # Any other non-ASCII rune can never fold onto an ASCII field name; keep it so
            # the folded key cannot collide with one.
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True, slots=True, eq=False)
class GoType:
    """A Go type: ``kind`` drives behaviour, ``name`` is ``reflect.Type.String()``."""

    kind: str
    name: str
    key: GoType | None = None  # maps
    elem: GoType | None = None  # maps, slices, pointers
    fields: tuple[Field, ...] = ()  # structs
    # A type with UnmarshalJSON/MarshalJSON methods (cpumanager state.PodEntry).
    unmarshal: Callable[[Any, Any, Any], Any] | None = None
    marshal: Callable[[Any], str] | None = None
    by_exact: dict[str, Field] = field(default_factory=dict, repr=False)
    by_fold: dict[str, Field] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for f in self.fields:
            if f.json_name is None:
                continue
            self.by_exact.setdefault(f.json_name, f)
            self.by_fold.setdefault(fold_name(f.json_name), f)

    @property
    def bare_name(self) -> str:
        """``reflect.Type.Name()``: the name without the package (``CPUManagerCheckpointV1``)."""
        return self.name.rsplit(".", 1)[-1]

    def lookup(self, key: str) -> Field | None:
        """The struct field a JSON key decodes into: exact name first, then case-insensitive."""
        f = self.by_exact.get(key)
        if f is None:
            f = self.by_fold.get(fold_name(key))
        return f


@dataclass(frozen=True, slots=True)
class Field:
    """A struct field: Go name, JSON key (``None`` for ``json:"-"``), type, ``omitempty``."""

    go_name: str
    json_name: str | None
    type: GoType
    omitempty: bool = False


def string_type(name: str = "string") -> GoType:
    return GoType(Kind.STRING, name)


def int_type(name: str = "int") -> GoType:
    return GoType(Kind.INT, name)


def uint_type(name: str = "uint64") -> GoType:
    return GoType(Kind.UINT, name)


def map_type(name: str, key: GoType, elem: GoType) -> GoType:
    return GoType(Kind.MAP, name, key=key, elem=elem)


def slice_type(name: str, elem: GoType) -> GoType:
    return GoType(Kind.SLICE, name, elem=elem)


def ptr_type(elem: GoType) -> GoType:
    return GoType(Kind.PTR, "*" + elem.name, elem=elem)


def struct_type(name: str, *fields: Field, **hooks: Any) -> GoType:
    return GoType(Kind.STRUCT, name, fields=tuple(fields), **hooks)


STRING_T = string_type()
INT_T = int_type()
UINT64_T = uint_type()
CHECKSUM_T = uint_type("checksum.Checksum")
RESOURCE_NAME_T = string_type("v1.ResourceName")
EMPTY_STRUCT_T = GoType(Kind.EMPTY_STRUCT, "struct {}")
#: ``cpuset.CPUSet`` = ``struct{ elems map[int]struct{} }``; values are CPUSet objects.
CPUSET_T = GoType(Kind.CPUSET, "cpuset.CPUSet")
CPUSET_ELEMS_NAME = "map[int]struct {}"

#: Fields every checkpoint struct of both managers declares.
POLICY_NAME_FIELD = Field("PolicyName", "policyName", STRING_T)
CHECKSUM_FIELD = Field("Checksum", "checksum", CHECKSUM_T)
#: What the 1.37 formats (CPU V4, memory V3) add after the inline fields.
DATA_FIELDS = (Field("Data", "data", STRING_T), Field("DataChecksum", "dataChecksum", CHECKSUM_T))


def zero(t: GoType) -> Any:
    """Go's zero value of ``t`` in the Python representation."""
    k = t.kind
    if k == Kind.STRING:
        return ""
    if k in (Kind.INT, Kind.UINT):
        return 0
    if k == Kind.STRUCT:
        return {f.go_name: zero(f.type) for f in t.fields}
    if k == Kind.EMPTY_STRUCT:
        return {}
    return None  # map, slice, pointer, cpuset (nil elems)


def constructed(t: GoType) -> dict[str, Any]:
    """What a kubelet's ``newXxxCheckpoint`` constructor returns for struct ``t``: the zero
    value with its maps made (empty, not nil)."""
    return {f.go_name: {} if f.type.kind == Kind.MAP else zero(f.type) for f in t.fields}


_Fn = TypeVar("_Fn")


def type_compiler(
    compilers: Mapping[str, Callable[[GoType], _Fn]],
    hook: Callable[[GoType], _Fn | None] = lambda t: None,
) -> Callable[[GoType], _Fn]:
    """The function giving one closure per Go type, built once by ``compilers[t.kind]`` (or
    ``hook(t)``, a type's own JSON method, when it has one) and reused: the codecs and the spew
    renderer resolve the kind dispatch and the field tables up front this way."""
    cache: dict[GoType, _Fn] = {}

    def compiled(t: GoType) -> _Fn:
        fn = cache.get(t)
        if fn is None:
            fn = hook(t)
            if fn is None:
                compile_kind = compilers.get(t.kind)
                if compile_kind is None:
                    raise AssertionError(f"no compiler for kind {t.kind}")
                fn = compile_kind(t)
            cache[t] = fn
        return fn

    return compiled

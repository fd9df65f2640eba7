"""A 1.37 data-carrying file (CPU V4, memory V3) read in one decode when its inline part is
the text of its own ``data`` (what a kubelet writes: pkg/kubelet/cm/cpumanager/state/
checkpoint.go and pkg/kubelet/cm/memorymanager/state/checkpoint.go marshal the same state
twice, inline and as the ``data`` string).

``GetCheckpoint`` of such a file decodes the whole file into the version's struct, then the
``data`` string into the data struct. When the file's text is exactly ``P`` + ``,"checksum":N,
"data":"D","dataChecksum":M}`` (``D`` escaped any way) and ``D`` starts with ``P`` (the inline
fields are ``D``'s own first members, as text), both decodes read the same members: decoding
``D``'s tree (the file's own members for ``P``, and ``D``'s rest) gives the data, and, when
that has no error, the inline fields are the data's same fields and the file decodes without
error too. Anything else
(another layout, a case-folded or repeated key, a type error) returns ``None``: the caller
decodes the usual way, with Go's error texts.
"""

from __future__ import annotations

from typing import Any

from app.domain.checkpoint.formats import FormatVersions
from app.domain.checkpoint.gojson_decode import unmarshal
from app.domain.checkpoint.gojson_scan import GoNumber, GoSyntaxError, JObj, parse
from app.domain.checkpoint.gotypes import fold_name

_TAIL = ("checksum", "data", "dataChecksum")
_TAIL_FOLDED = {fold_name(k) for k in _TAIL}


def read_twin(
    tree: Any, text: str, formats: FormatVersions, version: str, name: str | None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(file object, data object)`` as ``GetCheckpoint``'s two decodes give them, without
    error, or ``None`` (decode the usual way)."""
    layout = _twin_layout(tree, text)
    if layout is None:
        return None
    inline, checksum, data_text, data_checksum, rest = layout
    fields = _shared_fields(formats, version, name)
    if fields is None:
        return None
    inline_names, extra = fields
    more = _rest_members(rest, extra)
    if more is None:
        return None
    data = formats.new("data")
    if unmarshal(JObj([*inline, *more]), formats.data_t, data) is not None:
        return None
    obj = formats.new(version)
    for go_name in inline_names:
        obj[go_name] = data[go_name]
    obj.update(Checksum=int(checksum), Data=data_text, DataChecksum=int(data_checksum))
    obj["CheckpointData"] = data  # the inline fields share its values: read, never changed
    return obj, data


def _twin_layout(tree: Any, text: str) -> tuple[list[Any], GoNumber, str, GoNumber, str] | None:
    """The inline members, the checksum, the data text, its checksum and the data's text after
    the inline part, when the file is laid out as the module docstring says; else ``None``."""
    if type(tree) is not JObj or len(tree) < 3 or tuple(k for k, _ in tree[-3:]) != _TAIL:
        return None
    inline = tree[:-3]
    if any(fold_name(k) in _TAIL_FOLDED for k, _ in inline):
        return None
    checksum, data_text, data_checksum = (v for _, v in tree[-3:])
    if not (_is_count(checksum) and type(data_text) is str and _is_count(data_checksum)):
        return None
    # The tail's members hold no object, and a quote inside a string is escaped: the last
    # ',"checksum":' of the text is the tail's. How the data string is escaped does not
    # matter (the parse read it); the rest is matched as text.
    cut = text.rfind(',"checksum":')
    if cut < 0 or not (
        text.startswith(f',"checksum":{checksum},"data":"', cut)
        and text.endswith(f'","dataChecksum":{data_checksum}}}')
    ):
        return None
    head = text[:cut]
    rest = data_text[len(head) :]
    if not data_text.startswith(head) or not rest or rest[0] not in ",}":
        return None
    return inline, checksum, data_text, data_checksum, rest


def _is_count(value: Any) -> bool:
    """A JSON number a ``uint64`` decodes without error, written as Go writes it."""
    return type(value) is GoNumber and value.isdigit() and len(value) < 20 and int(value) < 2**64


def _shared_fields(
    formats: FormatVersions, version: str, name: str | None
) -> tuple[list[str], set[str]] | None:
    """The version's inline fields (each the data struct's own field) and the JSON names of
    the data's other fields; ``None`` when the structs do not line up so."""
    data_fields = {f.go_name: f for f in formats.data_t.fields}
    inline = [f for f in formats.struct(version, name).fields if f.go_name not in _GO_TAIL]
    if any(data_fields.get(f.go_name) != f for f in inline):
        return None
    names = {f.go_name for f in inline}
    extra = {f.json_name for f in data_fields.values() if f.go_name not in names and f.json_name}
    return [f.go_name for f in inline], extra


_GO_TAIL = {"Checksum", "Data", "DataChecksum"}


def _rest_members(rest: str, extra: set[str]) -> list[tuple[str, Any]] | None:
    """The data's members after the inline ones (``rest`` is ``}`` or ``,...}``): only fields
    the inline part does not have, each named exactly once."""
    if rest == "}":
        return []
    try:
        members = parse("{" + rest[1:])
    except GoSyntaxError:
        return None
    keys = [k for k, _ in members]
    if len(set(keys)) != len(keys) or not set(keys) <= extra:
        return None
    return list(members)

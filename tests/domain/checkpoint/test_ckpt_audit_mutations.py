"""Checkpoint audit: files that Go's ``encoding/json`` decodes to the same value must hash and
read the same (follows pkg/kubelet/cm/{cpu,memory}manager/state/checkpoint.go and Go's
encoding/json decode.go).

Files written by the project are rewritten into other texts of the same decoded Go value:
struct keys in other letter cases (also the Kelvin sign and the long s, which Go's key folding
maps onto ``k`` and ``s``), object members shuffled, whitespace, ``\\uXXXX`` escapes, unknown
keys, earlier duplicates of struct fields that the last one overrides (a scalar, ``null`` or
``{}`` before a map, a longer array before an array), NUMA ids spelled ``01``/``+1``/``-0``.
``detect_version``, every checksum algorithm and every release's reader must answer exactly as
for the original. Then the opposite: a change of the decoded value that keeps the text's
meaning for a person (``2-3`` written ``2,3`` in a CPU V2 ``entries`` value, which is hashed as
a raw string) breaks the struct checksum, while the same change in a ``podEntries`` cpuset
(parsed before hashing) does not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint import (
    ALGORITHMS,
    CheckpointError,
    CPUCheckpointState,
    MemoryCheckpointState,
    Reader,
    compute_checksum,
    detect_version,
    load_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.cpuset import CPUSet
from tests.domain.checkpoint.test_ckpt_codecs import cpu_states, memory_states

# -- the decoded shape of each file (JSON member name -> schema) -------------------------------

STR = ("str",)
INT = ("int",)


def struct(**fields: Any) -> tuple[str, dict[str, Any]]:
    return ("struct", fields)


def mapping(key: str, elem: Any) -> tuple[str, str, Any]:
    return ("map", key, elem)


def array(elem: Any) -> tuple[str, Any]:
    return ("list", elem)


CPU_ENTRIES_V1 = mapping("str", STR)
CPU_ENTRIES = mapping("str", mapping("str", STR))
CPU_POD_ENTRIES = mapping("str", struct(cpuSet=STR))
CPU_SCHEMA = {
    "V1": struct(policyName=STR, defaultCpuSet=STR, entries=CPU_ENTRIES_V1, checksum=INT),
    "V2": struct(policyName=STR, defaultCpuSet=STR, entries=CPU_ENTRIES, checksum=INT),
    "V3": struct(
        policyName=STR,
        defaultCpuSet=STR,
        entries=CPU_ENTRIES,
        podEntries=CPU_POD_ENTRIES,
        checksum=INT,
    ),
    "V4": struct(
        policyName=STR,
        defaultCpuSet=STR,
        entries=CPU_ENTRIES,
        checksum=INT,
        data=STR,
        dataChecksum=INT,
    ),
}
TABLE = struct(total=INT, systemReserved=INT, allocatable=INT, reserved=INT, free=INT)
NODE = struct(numberOfAssignments=INT, memoryMap=mapping("str", TABLE), cells=array(INT))
BLOCKS = array(struct(numaAffinity=array(INT), type=STR, size=INT))
MEM_COMMON = {
    "policyName": STR,
    "machineState": mapping("int", NODE),
    "entries": mapping("str", mapping("str", BLOCKS)),
    "checksum": INT,
}
MEM_SCHEMA = {
    "V1": struct(**MEM_COMMON),
    "V2": struct(**MEM_COMMON, podEntries=mapping("str", struct(memoryBlocks=BLOCKS))),
    "V3": struct(**MEM_COMMON, data=STR, dataChecksum=INT),
}

# -- rewriting a document into another text of the same Go value ---------------------------------


def _ws(data: st.DataObject) -> str:
    return data.draw(st.sampled_from(["", "", " ", "\n\t", "\r\n  "]))


def _string(data: st.DataObject, s: str) -> str:
    """The JSON text of ``s``, with some characters written as ``\\uXXXX``."""
    out = ['"']
    for ch in s:
        plain = json.dumps(ch, ensure_ascii=False)[1:-1]
        if ord(ch) < 0x10000 and data.draw(st.integers(0, 4)) == 0:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(plain)
    out.append('"')
    return "".join(out)


_FOLDS = {"k": "\u212a", "K": "\u212a", "s": "\u017f", "S": "\u017f"}


def _key_spelling(data: st.DataObject, name: str) -> str:
    """A key Go's case-insensitive field match maps onto ``name``."""
    style = data.draw(st.sampled_from(["same", "upper", "lower", "swap", "fold"]))
    if style == "upper":
        return name.upper()
    if style == "lower":
        return name.lower()
    if style == "swap":
        return name.swapcase()
    if style == "fold":
        return "".join(_FOLDS.get(ch, ch) for ch in name)
    return name


def _int_key(data: st.DataObject, key: str) -> str:
    n = int(key)
    if n == 0:
        return data.draw(st.sampled_from(["0", "-0", "+0", "00"]))
    sign = "-" if n < 0 else data.draw(st.sampled_from(["", "+"]))
    return sign + "0" * data.draw(st.integers(0, 2)) + str(abs(n))


def _junk(data: st.DataObject, schema: Any) -> str:
    """A value of the right JSON kind that a later duplicate key fully overrides."""
    kind = schema[0]
    if kind == "str":
        return '"junk"'
    if kind == "int":
        return "7"
    if kind == "map":
        return data.draw(st.sampled_from(["null", "{}"]))
    if kind == "list":
        item = "7" if schema[1][0] == "int" else '{"size":7}'
        return data.draw(st.sampled_from(["null", "[]", "[" + ",".join([item] * 5) + "]"]))
    return "null"


def rewrite(data: st.DataObject, node: Any, schema: Any) -> str:
    kind = schema[0]
    ws = _ws(data)
    if node is None:
        return "null"
    if kind == "str":
        return _string(data, node)
    if kind == "int":
        return json.dumps(node)
    if kind == "list":
        items = [rewrite(data, item, schema[1]) for item in node]
        return "[" + ws + ("," + _ws(data)).join(items) + ws + "]"
    if kind == "map":
        items = list(node)
        items = data.draw(st.permutations(items))
        parts = []
        for key, value in items:
            text_key = _int_key(data, key) if schema[1] == "int" else key
            parts.append(
                _string(data, text_key) + ws + ":" + _ws(data) + rewrite(data, value, schema[2])
            )
        return "{" + ws + ("," + _ws(data)).join(parts) + ws + "}"
    fields = schema[1]
    members = data.draw(st.permutations(list(node)))
    parts = []
    for key, value in members:
        sub = fields[key]
        if data.draw(st.integers(0, 3)) == 0 and sub[0] != "struct":
            # An earlier duplicate (another spelling) that the real member overrides.
            parts.append(_string(data, _key_spelling(data, key)) + ":" + _junk(data, sub))
        if data.draw(st.integers(0, 5)) == 0:
            parts.append(
                '"zzUnknown":' + data.draw(st.sampled_from(['{"a":[1,{}]}', "null", "1.5"]))
            )
        parts.append(
            _string(data, _key_spelling(data, key))
            + ws
            + ":"
            + _ws(data)
            + rewrite(data, value, sub)
        )
    return "{" + ws + ("," + _ws(data)).join(parts) + ws + "}"


def _pairs(text: str) -> Any:
    return json.loads(text, object_pairs_hook=list)


READERS = [
    ("1.35", False),
    ("1.36", False),
    ("1.36", True),
    ("1.37", False),
    ("1.37", True),
]


def _outcome(content: str, manager: str, policy: str) -> list[Any]:
    out: list[Any] = []
    for release, gate in READERS:
        r = load_checkpoint(content, manager, Reader(release, gate, policy))
        out.append(
            (
                release,
                gate,
                r.accepted,
                r.loaded_as if r.accepted else None,
                None if r.state is None else r.state.to_dict(),
                r.error,
            )
        )
    for algorithm in ALGORITHMS:
        try:
            out.append((algorithm, compute_checksum(content, algorithm)))
        except CheckpointError as exc:
            out.append((algorithm, type(exc).__name__))
    out.append(detect_version(content, manager).to_dict())
    return out


def _check(content: str, manager: str, schema: Any, policy: str, data: st.DataObject) -> None:
    mutated = rewrite(data, _pairs(content), schema)
    assert _outcome(mutated, manager, policy) == _outcome(content, manager, policy), mutated


@settings(max_examples=35, deadline=None)
@given(cpu_states(pod_entries=True), st.sampled_from(["V2", "V3", "V4"]), st.data())
def test_cpu_files_of_the_same_go_value_read_the_same(
    state: CPUCheckpointState, version: str, data: st.DataObject
) -> None:
    content = write_cpu_checkpoint(state, version)
    _check(content, "cpu", CPU_SCHEMA[version], state.policy_name, data)


@settings(max_examples=20, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.just(CPUSet.parse("1-3")), max_size=3), st.data())
def test_cpu_v1_files_of_the_same_go_value_read_the_same(
    containers: dict[str, CPUSet], data: st.DataObject
) -> None:
    state = CPUCheckpointState("none", CPUSet.parse("0"), {}, None, containers)
    content = write_cpu_checkpoint(state, "V1")
    _check(content, "cpu", CPU_SCHEMA["V1"], "none", data)


@settings(max_examples=30, deadline=None)
@given(memory_states(pod_entries=True), st.sampled_from(["V1", "V2", "V3"]), st.data())
def test_memory_files_of_the_same_go_value_read_the_same(
    state: MemoryCheckpointState, version: str, data: st.DataObject
) -> None:
    content = write_memory_checkpoint(state, version)
    _check(content, "memory", MEM_SCHEMA[version], state.policy_name, data)


# -- value changes --------------------------------------------------------------------------------

V3_FILE = write_cpu_checkpoint(
    CPUCheckpointState.from_dict(
        {
            "policyName": "static",
            "defaultCpuSet": "0-1",
            "entries": {"pod": {"c": "2-3"}},
            "podEntries": {"pod": "2-5"},
        }
    ),
    "V3",
)


@pytest.mark.parametrize(
    ("old", "new", "same_checksum"),
    [
        ('"c":"2-3"', '"c":"2,3"', False),
        ('"cpuSet":"2-5"', '"cpuSet":"2,3,4-5"', True),
        ('"cpuSet":"2-5"', '"cpuSet":"+2-05"', True),
        ('"defaultCpuSet":"0-1"', '"defaultCpuSet":"0,1"', False),
    ],
    ids=["entries-raw-string", "pod-cpuset-parsed", "pod-cpuset-atoi", "default-raw-string"],
)
def test_only_parsed_cpusets_hash_by_value(old: str, new: str, same_checksum: bool) -> None:
    """``entries`` and ``defaultCpuSet`` are hashed as the strings stored; a ``podEntries``
    cpuset goes through ``cpuset.Parse`` (``PodEntry.UnmarshalJSON``) before hashing."""
    assert old in V3_FILE
    mutated = V3_FILE.replace(old, new)
    stored = json.loads(V3_FILE)["checksum"]
    assert (compute_checksum(mutated, "cpu_v3_legacy") == stored) is same_checksum
    # 1.37 tries V3 then V2 and returns the V2 error (1.36 would report its V1 attempt's).
    result = load_checkpoint(mutated, "cpu", Reader("1.37", True, "static"))
    assert result.accepted is same_checksum
    if not same_checksum:
        assert result.error == "checkpoint is corrupted"

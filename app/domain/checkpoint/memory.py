"""``memory_manager_state``: Go structs of every format version, decoding, writers (follows
pkg/kubelet/cm/memorymanager/state/checkpoint.go and state.go, v1.21 to v1.37). The normalised
state the Go values map to is ``memory_state``.

Versions (memory numbers its formats on its own; spec ``checkpoints.md`` §1, §6):

* **V1** (1.21-1.35; 1.36 gate off): ``policyName``, ``machineState`` (NUMA id -> node state,
  never omitted), ``entries`` (pod UID -> container -> blocks), ``checksum``;
* **V2** (1.36 gate on): V1 + ``podEntries`` (pod UID -> ``{"memoryBlocks": [...]}``);
* **V3** (1.37): the V1 fields inline (with the V1 checksum), then ``data`` (the JSON of
  ``{policyName, machineState, entries, podEntries}``) and ``dataChecksum``.

Every struct checksum is hashed under ``state.MemoryManagerCheckpoint``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.cpu import normalise_version
from app.domain.checkpoint.formats import FormatVersions, fixed, struct_factory
from app.domain.checkpoint.gojson_encode import encode_fragment, marshal
from app.domain.checkpoint.gotypes import (
    CHECKSUM_FIELD,
    DATA_FIELDS,
    INT_T,
    POLICY_NAME_FIELD,
    RESOURCE_NAME_T,
    STRING_T,
    UINT64_T,
    Field,
    GoType,
    map_type,
    ptr_type,
    slice_type,
    struct_type,
)
from app.domain.checkpoint.memory_state import (
    ZERO_TABLE,
    Block,
    MemoryCheckpointState,
    MemoryTable,
    NUMANodeState,
)

MEMORY_FILE_NAME = "memory_manager_state"
MEMORY_VERSIONS = ("V1", "V2", "V3")

LEGACY_HEADER = "state.MemoryManagerCheckpoint"
V1_HEADER = "state.MemoryManagerCheckpointV1"
V2_HEADER = "state.MemoryManagerCheckpointV2"

# -- Go types ------------------------------------------------------------------------------------

MEMORY_TABLE_T = struct_type(
    "state.MemoryTable",
    Field("TotalMemSize", "total", UINT64_T),
    Field("SystemReserved", "systemReserved", UINT64_T),
    Field("Allocatable", "allocatable", UINT64_T),
    Field("Reserved", "reserved", UINT64_T),
    Field("Free", "free", UINT64_T),
)
NUMA_NODE_STATE_T = struct_type(
    "state.NUMANodeState",
    Field("NumberOfAssignments", "numberOfAssignments", INT_T),
    Field(
        "MemoryMap",
        "memoryMap",
        map_type(
            "map[v1.ResourceName]*state.MemoryTable", RESOURCE_NAME_T, ptr_type(MEMORY_TABLE_T)
        ),
    ),
    Field("Cells", "cells", slice_type("[]int", INT_T)),
)
NUMA_NODE_MAP_T = map_type("state.NUMANodeMap", INT_T, ptr_type(NUMA_NODE_STATE_T))
BLOCK_T = struct_type(
    "state.Block",
    Field("NUMAAffinity", "numaAffinity", slice_type("[]int", INT_T)),
    Field("Type", "type", RESOURCE_NAME_T),
    Field("Size", "size", UINT64_T),
)
BLOCKS_T = slice_type("[]state.Block", BLOCK_T)
ENTRIES_T = map_type(
    "state.ContainerMemoryAssignments",
    STRING_T,
    map_type("map[string][]state.Block", STRING_T, BLOCKS_T),
)
POD_ENTRY_T = struct_type(
    "state.PodEntry", Field("MemoryBlocks", "memoryBlocks", BLOCKS_T, omitempty=True)
)
POD_ENTRIES_T = map_type("state.PodMemoryAssignments", STRING_T, POD_ENTRY_T)


_V1_FIELDS = (
    POLICY_NAME_FIELD,
    Field("MachineState", "machineState", NUMA_NODE_MAP_T),
    Field("Entries", "entries", ENTRIES_T, omitempty=True),
)
_POD_ENTRIES_FIELD = Field("PodEntries", "podEntries", POD_ENTRIES_T, omitempty=True)


memory_v1_type = struct_factory(V1_HEADER, *_V1_FIELDS, CHECKSUM_FIELD)
memory_v2_type = struct_factory(V2_HEADER, *_V1_FIELDS, _POD_ENTRIES_FIELD, CHECKSUM_FIELD)
memory_v3_type = struct_factory(LEGACY_HEADER, *_V1_FIELDS, CHECKSUM_FIELD, *DATA_FIELDS)


MEMORY_DATA_T = struct_type("state.MemoryManagerCheckpointData", *_V1_FIELDS, _POD_ENTRIES_FIELD)

MEMORY_V1_T = memory_v1_type()
MEMORY_V2_T = memory_v2_type()
MEMORY_V3_T = memory_v3_type()


MEMORY_FORMATS = FormatVersions(
    MEMORY_FILE_NAME,
    "memory manager",
    {
        "V1": memory_v1_type,
        "V2": memory_v2_type,
        "V3": memory_v3_type,
        "data": fixed(MEMORY_DATA_T),
    },
    "V3",
    {"mem_v1": ("V1", LEGACY_HEADER), "mem_v2_legacy": ("V2", LEGACY_HEADER)},
)
new_memory_checkpoint = MEMORY_FORMATS.new
decode_memory = MEMORY_FORMATS.decode
memory_struct_checksum = MEMORY_FORMATS.algorithm_checksum


# -- Go values <-> normalised state ---------------------------------------------------------------


def _table_from_go(v: Any) -> MemoryTable:
    if v is None:
        return ZERO_TABLE
    return MemoryTable(
        v["TotalMemSize"], v["SystemReserved"], v["Allocatable"], v["Reserved"], v["Free"]
    )


_BlockKey = tuple[tuple[int, ...], str, int]


def _blocks_from_go(v: Any, seen: dict[_BlockKey, tuple[Block]] | None = None) -> tuple[Block, ...]:
    """The blocks of ``v``; ``seen`` holds each distinct block of one file once, as a 1-tuple
    (immutable, equal: shared), which spares the frozen dataclass's slow constructor and,
    for the usual container of one block, building its tuple."""
    if not v:
        return ()
    if seen is None:
        seen = {}
    out = []
    for b in v:
        key = (tuple(b["NUMAAffinity"] or ()), b["Type"], b["Size"])
        one = seen.get(key)
        if one is None:
            one = seen[key] = (Block(*key),)
        if len(v) == 1:
            return one
        out.append(one[0])
    return tuple(out)


def machine_state_from_go(ms: Any) -> dict[int, NUMANodeState]:
    out: dict[int, NUMANodeState] = {}
    for node, s in (ms or {}).items():
        if s is None:
            out[node] = NUMANodeState()
            continue
        out[node] = NUMANodeState(
            number_of_assignments=s["NumberOfAssignments"],
            memory_map={res: _table_from_go(t) for res, t in (s["MemoryMap"] or {}).items()},
            cells=tuple(s["Cells"] or ()),
        )
    return out


def entries_from_go(
    entries: Any, seen: dict[_BlockKey, tuple[Block]] | None = None
) -> dict[str, dict[str, tuple[Block, ...]]]:
    seen = {} if seen is None else seen
    out: dict[str, dict[str, tuple[Block, ...]]] = {}
    # Loops, not comprehensions: a pod has a few containers, and a comprehension's own call
    # per pod costs more than its loop.
    for pod, containers in (entries or {}).items():
        inner = {}
        for name, blocks in (containers or {}).items():
            inner[name] = _blocks_from_go(blocks, seen)
        out[pod] = inner
    return out


def pod_entries_from_go(
    pod_entries: Any, seen: dict[_BlockKey, tuple[Block]] | None = None
) -> dict[str, tuple[Block, ...]]:
    seen = {} if seen is None else seen
    return {pod: _blocks_from_go(e["MemoryBlocks"], seen) for pod, e in (pod_entries or {}).items()}


def memory_state_from_go(data: dict[str, Any], pod_entries: Any) -> MemoryCheckpointState:
    """The state of a decoded V1/V2 value or V3 data (``pod_entries``: ``None`` for a read
    without them)."""
    return MemoryCheckpointState(
        data["PolicyName"],
        machine_state_from_go(data["MachineState"]),
        entries_from_go(data["Entries"]),
        None if pod_entries is None else pod_entries_from_go(pod_entries),
    )


def _blocks_to_go(blocks: Iterable[Block]) -> list[dict[str, Any]]:
    return [{"NUMAAffinity": list(b.numa_affinity), "Type": b.type, "Size": b.size} for b in blocks]


def machine_state_to_go(ms: Mapping[int, NUMANodeState]) -> dict[int, Any]:
    # NUMANodeMap.Clone(): cells always non-nil.
    return {
        node: {
            "NumberOfAssignments": s.number_of_assignments,
            "MemoryMap": {
                res: {
                    "TotalMemSize": t.total,
                    "SystemReserved": t.system_reserved,
                    "Allocatable": t.allocatable,
                    "Reserved": t.reserved,
                    "Free": t.free,
                }
                for res, t in s.memory_map.items()
            },
            "Cells": list(s.cells),
        }
        for node, s in ms.items()
    }


def memory_go_value(state: MemoryCheckpointState, version: str) -> dict[str, Any]:
    """The Go value the kubelet marshals for ``state`` (checksums not yet set)."""
    version = normalise_version(version, MEMORY_VERSIONS)
    obj = new_memory_checkpoint("V2" if version == "V2" else "V1")
    obj["PolicyName"] = state.policy_name
    obj["MachineState"] = machine_state_to_go(state.machine_state)
    obj["Entries"] = {
        pod: {name: _blocks_to_go(blocks) for name, blocks in containers.items()}
        for pod, containers in state.entries.items()
    }
    if version == "V2":
        obj["PodEntries"] = _pod_entries_to_go(state)
    return obj


def _pod_entries_to_go(state: MemoryCheckpointState) -> dict[str, Any]:
    # An empty block list is kept nil so the written file hashes the same when read back
    # ("memoryBlocks" is omitempty and decodes to nil).
    return {
        pod: {"MemoryBlocks": _blocks_to_go(blocks) if blocks else None}
        for pod, blocks in (state.pod_entries or {}).items()
    }


def memory_data_value(state: MemoryCheckpointState) -> dict[str, Any]:
    data = memory_go_value(state, "V1")
    del data["Checksum"]
    data["PodEntries"] = _pod_entries_to_go(state)
    return data


def write_memory_checkpoint(state: MemoryCheckpointState, version: str | int) -> str:
    """The exact text a kubelet writes for ``state`` in ``version`` (no trailing newline)."""
    version = normalise_version(version, MEMORY_VERSIONS)
    if version in ("V1", "V2"):
        obj = memory_go_value(state, version)
        t = MEMORY_V1_T if version == "V1" else MEMORY_V2_T
        obj["Checksum"] = struct_checksum(obj, t, LEGACY_HEADER)
        return marshal(obj, t)
    inline = memory_go_value(state, "V1")
    # ``data`` holds the same machine state and entries as the inline part: build and encode
    # them once (``memory_data_value`` would build the same values again).
    data_value = {k: inline[k] for k in ("PolicyName", "MachineState", "Entries")}
    data_value["PodEntries"] = _pod_entries_to_go(state)
    fragments = {name: encode_fragment(inline[name], t) for name, t in _SHARED_WITH_DATA.items()}
    data = marshal(data_value, MEMORY_DATA_T, fragments=fragments)
    inline["Checksum"] = struct_checksum(inline, MEMORY_V1_T, LEGACY_HEADER)
    inline["Data"] = data
    inline["DataChecksum"] = string_checksum(data)
    return marshal(inline, MEMORY_V3_T, fragments=fragments)


def _field_types(t: GoType) -> dict[str, GoType]:
    return {f.go_name: f.type for f in t.fields}


# Fields V3's inline part and its data share, with the same Go type in both.
_SHARED_WITH_DATA = {
    name: _field_types(MEMORY_DATA_T)[name] for name in ("MachineState", "Entries")
}
assert all(_field_types(MEMORY_V3_T)[n] == t for n, t in _SHARED_WITH_DATA.items())

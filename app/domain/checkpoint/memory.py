"""``memory_manager_state``: Go structs of every format version, the normalised state, writers
(follows pkg/kubelet/cm/memorymanager/state/checkpoint.go and state.go, v1.21 to v1.37).

Versions (memory numbers its formats on its own; spec ``checkpoints.md`` §1, §6):

* **V1** (1.21-1.35; 1.36 gate off): ``policyName``, ``machineState`` (NUMA id -> node state,
  never omitted), ``entries`` (pod UID -> container -> blocks), ``checksum``;
* **V2** (1.36 gate on): V1 + ``podEntries`` (pod UID -> ``{"memoryBlocks": [...]}``);
* **V3** (1.37): the V1 fields inline (with the V1 checksum), then ``data`` (the JSON of
  ``{policyName, machineState, entries, podEntries}``) and ``dataChecksum``.

Every struct checksum is hashed under ``state.MemoryManagerCheckpoint``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.cpu import normalise_version
from app.domain.checkpoint.errors import CheckpointInputError, CheckpointStateError
from app.domain.checkpoint.gojson_decode import unmarshal
from app.domain.checkpoint.gojson_encode import encode_fragment, marshal
from app.domain.checkpoint.gotypes import (
    CHECKSUM_T,
    INT_T,
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


@functools.cache
def memory_v1_type(name: str = V1_HEADER) -> GoType:
    return struct_type(
        name,
        Field("PolicyName", "policyName", STRING_T),
        Field("MachineState", "machineState", NUMA_NODE_MAP_T),
        Field("Entries", "entries", ENTRIES_T, omitempty=True),
        Field("Checksum", "checksum", CHECKSUM_T),
    )


@functools.cache
def memory_v2_type(name: str = V2_HEADER) -> GoType:
    return struct_type(
        name,
        Field("PolicyName", "policyName", STRING_T),
        Field("MachineState", "machineState", NUMA_NODE_MAP_T),
        Field("Entries", "entries", ENTRIES_T, omitempty=True),
        Field("PodEntries", "podEntries", POD_ENTRIES_T, omitempty=True),
        Field("Checksum", "checksum", CHECKSUM_T),
    )


@functools.cache
def memory_v3_type(name: str = LEGACY_HEADER) -> GoType:
    return struct_type(
        name,
        *memory_v1_type().fields,
        Field("Data", "data", STRING_T),
        Field("DataChecksum", "dataChecksum", CHECKSUM_T),
    )


MEMORY_DATA_T = struct_type(
    "state.MemoryManagerCheckpointData",
    Field("PolicyName", "policyName", STRING_T),
    Field("MachineState", "machineState", NUMA_NODE_MAP_T),
    Field("Entries", "entries", ENTRIES_T, omitempty=True),
    Field("PodEntries", "podEntries", POD_ENTRIES_T, omitempty=True),
)

MEMORY_V1_T = memory_v1_type()
MEMORY_V2_T = memory_v2_type()
MEMORY_V3_T = memory_v3_type()


def new_memory_checkpoint(version: str) -> dict[str, Any]:
    """The Go value of ``newMemoryManagerCheckpointVn`` (maps start empty, not nil)."""
    if version == "V1":
        return {"PolicyName": "", "MachineState": {}, "Entries": {}, "Checksum": 0}
    if version == "V2":
        return {
            "PolicyName": "",
            "MachineState": {},
            "Entries": {},
            "PodEntries": {},
            "Checksum": 0,
        }
    if version == "V3":
        return {
            "PolicyName": "",
            "MachineState": {},
            "Entries": {},
            "Checksum": 0,
            "Data": "",
            "DataChecksum": 0,
        }
    if version == "data":
        return {"PolicyName": "", "MachineState": {}, "Entries": {}, "PodEntries": {}}
    raise CheckpointInputError(f"unknown memory_manager_state version {version!r}")


MEMORY_STRUCT_ALGORITHMS: dict[str, tuple[str, GoType, str]] = {
    "mem_v1": ("V1", MEMORY_V1_T, LEGACY_HEADER),
    "mem_v2_legacy": ("V2", MEMORY_V2_T, LEGACY_HEADER),
}


def memory_struct_checksum(value: dict[str, Any], algorithm: str) -> int:
    _, t, header = MEMORY_STRUCT_ALGORITHMS[algorithm]
    return struct_checksum(value, t, header)


def decode_memory(tree: Any, version: str, name: str | None = None) -> tuple[dict[str, Any], Any]:
    """Decode a parsed file into a fresh object of ``version`` (``V1``..``V3``, ``data``)."""
    obj = new_memory_checkpoint(version)
    factory = {"V1": memory_v1_type, "V2": memory_v2_type, "V3": memory_v3_type}.get(version)
    if factory is not None:
        gt = factory(name) if name else factory()
    else:
        gt = MEMORY_DATA_T
    return obj, unmarshal(tree, gt, obj)


# -- the normalised state ----------------------------------------------------------------------

_TABLE_KEYS = ("total", "systemReserved", "allocatable", "reserved", "free")


@dataclass(frozen=True, slots=True)
class MemoryTable:
    """``state.MemoryTable`` (bytes)."""

    total: int = 0
    system_reserved: int = 0
    allocatable: int = 0
    reserved: int = 0
    free: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "systemReserved": self.system_reserved,
            "allocatable": self.allocatable,
            "reserved": self.reserved,
            "free": self.free,
        }


@dataclass(frozen=True, slots=True)
class NUMANodeState:
    """``state.NUMANodeState``."""

    number_of_assignments: int = 0
    memory_map: Mapping[str, MemoryTable] = field(default_factory=dict)
    cells: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "numberOfAssignments": self.number_of_assignments,
            "memoryMap": {res: t.to_dict() for res, t in sorted(self.memory_map.items())},
            "cells": list(self.cells),
        }


@dataclass(frozen=True, slots=True)
class Block:
    """``state.Block``: ``size`` bytes of ``type`` on the NUMA nodes ``numa_affinity``."""

    numa_affinity: tuple[int, ...]
    type: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return {"numaAffinity": list(self.numa_affinity), "type": self.type, "size": self.size}


@dataclass(frozen=True, slots=True)
class MemoryCheckpointState:
    """What a ``memory_manager_state`` holds, in the form every version maps to.

    ``pod_entries`` (pod UID -> pod-level blocks, KEP-5526) is ``None`` when absent. Nil maps
    and slices of the file become empty ones; a ``null`` node state becomes a zero state.
    Treat the mappings as read-only.
    """

    policy_name: str
    machine_state: Mapping[int, NUMANodeState] = field(default_factory=dict)
    entries: Mapping[str, Mapping[str, tuple[Block, ...]]] = field(default_factory=dict)
    pod_entries: Mapping[str, tuple[Block, ...]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The conformance normalised form (README §4.2)."""
        out: dict[str, Any] = {
            "policyName": self.policy_name,
            "machineState": {
                str(node): s.to_dict() for node, s in sorted(self.machine_state.items())
            },
            "entries": {
                pod: {name: [b.to_dict() for b in blocks] for name, blocks in sorted(c.items())}
                for pod, c in sorted(self.entries.items())
            },
        }
        if self.pod_entries is not None:
            out["podEntries"] = {
                pod: [b.to_dict() for b in blocks]
                for pod, blocks in sorted(self.pod_entries.items())
            }
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryCheckpointState:
        """Build from the normalised form (file spellings such as ``{"memoryBlocks": [...]}``
        pod entries are accepted too). Raises ``CheckpointStateError`` naming the bad field."""
        if not isinstance(d, Mapping):
            raise CheckpointStateError("a memory_manager_state must be an object")
        policy = d.get("policyName", "")
        _text(policy, "policyName")
        machine: dict[int, NUMANodeState] = {}
        raw_ms = d.get("machineState") or {}
        if not isinstance(raw_ms, Mapping):
            raise CheckpointStateError("machineState must be an object")
        for key, node in raw_ms.items():
            node_id = _numa_id(key, "machineState key")
            machine[node_id] = _node_state(node, f"machineState[{key!r}]")
        entries: dict[str, dict[str, tuple[Block, ...]]] = {}
        raw_entries = d.get("entries") or {}
        if not isinstance(raw_entries, Mapping):
            raise CheckpointStateError("entries must be an object")
        for pod, containers in raw_entries.items():
            _text(pod, "entries key")
            if containers is None:
                containers = {}
            if not isinstance(containers, Mapping):
                raise CheckpointStateError(f"entries[{pod!r}] must be an object")
            inner: dict[str, tuple[Block, ...]] = {}
            for name, blocks in containers.items():
                _text(name, f"entries[{pod!r}] key")
                inner[name] = _blocks(blocks, f"entries[{pod!r}][{name!r}]")
            entries[pod] = inner
        pod_entries: dict[str, tuple[Block, ...]] | None = None
        raw_pod = d.get("podEntries")
        if raw_pod is not None:
            if not isinstance(raw_pod, Mapping):
                raise CheckpointStateError("podEntries must be an object")
            pod_entries = {}
            for pod, blocks in raw_pod.items():
                _text(pod, "podEntries key")
                if isinstance(blocks, Mapping):
                    blocks = blocks.get("memoryBlocks") or []
                pod_entries[pod] = _blocks(blocks, f"podEntries[{pod!r}]")
        return cls(policy, machine, entries, pod_entries)


def _text(s: Any, what: str) -> None:
    if not isinstance(s, str):
        raise CheckpointStateError(f"{what} must be a string, got {type(s).__name__}")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise CheckpointStateError(f"{what} {s!r} is not valid Unicode text") from None


def _uint(v: Any, what: str, bits: int = 64) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise CheckpointStateError(f"{what} must be an integer, got {v!r}")
    if not 0 <= v < (1 << bits):
        raise CheckpointStateError(f"{what} must be between 0 and {(1 << bits) - 1}, got {v}")
    return v


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise CheckpointStateError(f"{what} must be an integer, got {v!r}")
    if not -(1 << 63) <= v < (1 << 63):
        raise CheckpointStateError(f"{what} is out of the int64 range: {v}")
    return v


def _numa_id(key: Any, what: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        return _int(key, what)
    if isinstance(key, str):
        text = key.strip()
        if text.lstrip("-").isdigit() and text.isascii():
            return _int(int(text), what)
    raise CheckpointStateError(f"{what} {key!r} is not a NUMA node id")


def _ints(v: Any, what: str) -> tuple[int, ...]:
    if v is None:
        return ()
    if not isinstance(v, list | tuple):
        raise CheckpointStateError(f"{what} must be a list of integers")
    return tuple(_int(x, f"{what}[{i}]") for i, x in enumerate(v))


def _table(v: Any, what: str) -> MemoryTable:
    if v is None:
        return MemoryTable()
    if isinstance(v, MemoryTable):
        return v
    if not isinstance(v, Mapping):
        raise CheckpointStateError(f"{what} must be an object")
    snake = {"systemReserved": "system_reserved"}
    vals = {}
    for key in _TABLE_KEYS:
        raw = v.get(key, v.get(snake.get(key, key), 0))
        vals[snake.get(key, key)] = _uint(raw, f"{what}.{key}")
    return MemoryTable(**vals)


def _node_state(v: Any, what: str) -> NUMANodeState:
    if v is None:
        return NUMANodeState()
    if isinstance(v, NUMANodeState):
        return v
    if not isinstance(v, Mapping):
        raise CheckpointStateError(f"{what} must be an object")
    mm = v.get("memoryMap", v.get("memory_map")) or {}
    if not isinstance(mm, Mapping):
        raise CheckpointStateError(f"{what}.memoryMap must be an object")
    tables = {}
    for res, t in mm.items():
        _text(res, f"{what}.memoryMap key")
        tables[res] = _table(t, f"{what}.memoryMap[{res!r}]")
    count = v.get("numberOfAssignments", v.get("number_of_assignments", 0))
    return NUMANodeState(
        number_of_assignments=_int(count, f"{what}.numberOfAssignments"),
        memory_map=tables,
        cells=_ints(v.get("cells"), f"{what}.cells"),
    )


def _blocks(v: Any, what: str) -> tuple[Block, ...]:
    if v is None:
        return ()
    if not isinstance(v, list | tuple):
        raise CheckpointStateError(f"{what} must be a list of blocks")
    out = []
    for i, b in enumerate(v):
        if isinstance(b, Block):
            out.append(b)
            continue
        if not isinstance(b, Mapping):
            raise CheckpointStateError(f"{what}[{i}] must be a block object")
        kind = b.get("type", "")
        _text(kind, f"{what}[{i}].type")
        numa = b.get("numaAffinity", b.get("numa"))
        out.append(
            Block(
                numa_affinity=_ints(numa, f"{what}[{i}].numaAffinity"),
                type=kind,
                size=_uint(b.get("size", 0), f"{what}[{i}].size"),
            )
        )
    return tuple(out)


# -- Go values <-> normalised state ---------------------------------------------------------------


def _table_from_go(v: Any) -> MemoryTable:
    if v is None:
        return MemoryTable()
    return MemoryTable(
        v["TotalMemSize"], v["SystemReserved"], v["Allocatable"], v["Reserved"], v["Free"]
    )


def _blocks_from_go(v: Any) -> tuple[Block, ...]:
    if not v:
        return ()
    return tuple(Block(tuple(b["NUMAAffinity"] or ()), b["Type"], b["Size"]) for b in v)


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


def entries_from_go(entries: Any) -> dict[str, dict[str, tuple[Block, ...]]]:
    return {
        pod: {name: _blocks_from_go(blocks) for name, blocks in (containers or {}).items()}
        for pod, containers in (entries or {}).items()
    }


def pod_entries_from_go(pod_entries: Any) -> dict[str, tuple[Block, ...]]:
    return {pod: _blocks_from_go(e["MemoryBlocks"]) for pod, e in (pod_entries or {}).items()}


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

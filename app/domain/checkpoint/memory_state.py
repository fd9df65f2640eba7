"""The normalised ``memory_manager_state``: what every format version maps to, and its
conformance form (follows the fields of pkg/kubelet/cm/memorymanager/state/state.go and
checkpoint.go, v1.21 to v1.37; spec ``checkpoints.md`` §6 and the conformance README §4.2).

``MemoryCheckpointState.from_dict`` validates a state given by a user or a test case and names
the bad field (``CheckpointStateError``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.domain.checkpoint.errors import (
    CheckpointStateError,
    check_text,
    object_field,
    pod_entries_field,
)

# ``state.Block`` is one value for the checkpoint and the memory manager's live state, and
# ``state.MemoryTable`` one for the checkpoint and a node snapshot.
from app.domain.memorymanager.state import Block
from app.domain.snapshot import MemoryTable

_TABLE_KEYS = ("total", "systemReserved", "allocatable", "reserved", "free")


#: ``state.MemoryTable`` of nothing (a ``null`` table in a file).
ZERO_TABLE = MemoryTable(0, 0, 0, 0, 0)


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
        check_text(policy, "policyName")
        machine = {
            _numa_id(key, "machineState key"): _node_state(node, f"machineState[{key!r}]")
            for key, node in object_field(d, "machineState").items()
        }
        entries = _entries(object_field(d, "entries"))
        pod_entries = pod_entries_field(d, lambda v: v.get("memoryBlocks") or [], _blocks)
        return cls(policy, machine, entries, pod_entries)


def _entries(raw: Mapping[str, Any]) -> dict[str, dict[str, tuple[Block, ...]]]:
    """``entries``: pod -> container -> blocks."""
    entries: dict[str, dict[str, tuple[Block, ...]]] = {}
    for pod, containers in raw.items():
        check_text(pod, "entries key")
        if containers is None:
            containers = {}
        if not isinstance(containers, Mapping):
            raise CheckpointStateError(f"entries[{pod!r}] must be an object")
        inner: dict[str, tuple[Block, ...]] = {}
        for name, blocks in containers.items():
            check_text(name, f"entries[{pod!r}] key")
            inner[name] = _blocks(blocks, f"entries[{pod!r}][{name!r}]")
        entries[pod] = inner
    return entries


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


_R = TypeVar("_R", MemoryTable, NUMANodeState)


def _given(v: Any, cls: type[_R], zero: Callable[[], _R], what: str) -> _R | None:
    """``v`` when it already is a ``cls`` (absent: ``zero()``), ``None`` when it is an object
    to read one from; anything else is a ``CheckpointStateError``."""
    if v is None:
        return zero()
    if isinstance(v, cls):
        return v
    if not isinstance(v, Mapping):
        raise CheckpointStateError(f"{what} must be an object")
    return None


def _table(v: Any, what: str) -> MemoryTable:
    given = _given(v, MemoryTable, lambda: ZERO_TABLE, what)
    if given is not None:
        return given
    snake = {"systemReserved": "system_reserved"}
    vals = {}
    for key in _TABLE_KEYS:
        raw = v.get(key, v.get(snake.get(key, key), 0))
        vals[snake.get(key, key)] = _uint(raw, f"{what}.{key}")
    return MemoryTable(**vals)


def _node_state(v: Any, what: str) -> NUMANodeState:
    given = _given(v, NUMANodeState, NUMANodeState, what)
    if given is not None:
        return given
    mm = v.get("memoryMap", v.get("memory_map")) or {}
    if not isinstance(mm, Mapping):
        raise CheckpointStateError(f"{what}.memoryMap must be an object")
    tables = {}
    for res, t in mm.items():
        check_text(res, f"{what}.memoryMap key")
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
        check_text(kind, f"{what}[{i}].type")
        numa = b.get("numaAffinity", b.get("numa"))
        out.append(
            Block(
                numa_affinity=_ints(numa, f"{what}[{i}].numaAffinity"),
                type=kind,
                size=_uint(b.get("size", 0), f"{what}[{i}].size"),
            )
        )
    return tuple(out)

"""Memory manager state (follows pkg/kubelet/cm/memorymanager/state/state.go and state_mem.go,
v1.37).

* ``MemoryTable``: one NUMA node's bytes of one resource (``memory``, ``hugepages-<size>``):
  ``total_mem_size`` (JSON ``total``), ``system_reserved``, ``allocatable``, ``reserved``,
  ``free``.
* ``NUMANodeState``: a node's ``memory_map``, its NUMA group ``cells`` and
  ``number_of_assignments``.
* ``Block``: ``size`` bytes of ``type`` on the nodes ``numa_affinity`` (a frozen value).
* ``MemoryManagerState``: the machine state (``NUMANodeMap``: node id -> ``NUMANodeState``),
  container assignments (pod uid -> container name -> blocks) and pod entries (pod uid ->
  blocks, KEP-5526).

``MemoryTable`` and ``NUMANodeState`` are mutable records: the policy mutates a *copy* of the
machine state (``get_machine_state`` returns one, like upstream's ``Clone``) and stores it back
only when an allocation succeeds, so a failed admission leaves the state untouched.
``MemoryManagerState.copy`` is cheap: a few small tables per NUMA node plus shallow copies of
the assignment maps (blocks are immutable tuples, and a pod's map of containers is replaced by
its writers, never changed in place, so copies share them).

Copy-on-write for the hot paths: ``machine_state_for_update(nodes)`` gives a new map that
shares every node state except ``nodes`` (cloned, free to change), and
``replace_machine_state`` stores such a map without cloning it again. Node states held by a
``MemoryManagerState`` are therefore never changed in place by the policy, which is what makes
``snapshot`` (a rollback copy that shares them and the pods' container maps) safe, and lets the
state-file writer keep what it made of each by identity.

Byte counts are Python ints. Upstream keeps ``uint64``; values here may be negative when a
caller hands in an over-reserved node (the conformance cases do), and they are then compared
as signed numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class MemoryStateError(ValueError):
    """A machine state or assignment description is malformed."""


@dataclass(frozen=True, slots=True)
class Block:
    """``state.Block``."""

    numa_affinity: tuple[int, ...]
    type: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint form: ``{numaAffinity, type, size}``."""
        return {"numaAffinity": list(self.numa_affinity), "type": self.type, "size": self.size}


@dataclass(slots=True)
class MemoryTable:
    """``state.MemoryTable`` (bytes)."""

    total_mem_size: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int

    @property
    def total(self) -> int:
        return self.total_mem_size

    def clone(self) -> MemoryTable:
        return MemoryTable(
            self.total_mem_size, self.system_reserved, self.allocatable, self.reserved, self.free
        )

    def to_dict(self) -> dict[str, int]:
        """The checkpoint form (keys in the order the kubelet writes them)."""
        return {
            "total": self.total_mem_size,
            "systemReserved": self.system_reserved,
            "allocatable": self.allocatable,
            "reserved": self.reserved,
            "free": self.free,
        }


@dataclass(slots=True)
class NUMANodeState:
    """``state.NUMANodeState``."""

    number_of_assignments: int
    memory_map: dict[str, MemoryTable]
    cells: list[int]

    def clone(self) -> NUMANodeState:
        return NUMANodeState(
            self.number_of_assignments,
            {k: v.clone() for k, v in self.memory_map.items()},
            list(self.cells),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "numberOfAssignments": self.number_of_assignments,
            "memoryMap": {k: v.to_dict() for k, v in self.memory_map.items()},
            "cells": list(self.cells),
        }


NUMANodeMap = dict[int, NUMANodeState]
ContainerMemoryAssignments = dict[str, dict[str, tuple[Block, ...]]]
PodMemoryAssignments = dict[str, tuple[Block, ...]]


def clone_machine_state(machine_state: Mapping[int, NUMANodeState]) -> NUMANodeMap:
    """``NUMANodeMap.Clone``."""
    return {n: s.clone() for n, s in machine_state.items()}


@dataclass(slots=True)
class MemoryManagerState:
    """``state.State`` kept in memory (``stateMemory``)."""

    machine_state: NUMANodeMap = field(default_factory=dict)
    assignments: ContainerMemoryAssignments = field(default_factory=dict)
    pod_entries: PodMemoryAssignments = field(default_factory=dict)

    def copy(self) -> MemoryManagerState:
        return MemoryManagerState(
            clone_machine_state(self.machine_state), dict(self.assignments), dict(self.pod_entries)
        )

    def snapshot(self) -> MemoryManagerState:
        """A rollback copy, in time independent of the number of pods: it shares the node
        states and the pods' container maps (writers replace them, see the module
        docstring)."""
        return MemoryManagerState(
            self.machine_state, dict(self.assignments), dict(self.pod_entries)
        )

    # -- Reader -------------------------------------------------------------------------
    def get_machine_state(self) -> NUMANodeMap:
        """A copy of the machine state (``GetMachineState`` clones)."""
        return clone_machine_state(self.machine_state)

    def get_memory_blocks(self, pod_uid: str, container_name: str) -> tuple[Block, ...] | None:
        """The container's blocks; ``None`` when it has no entry (an empty tuple is an entry)."""
        return self.assignments.get(pod_uid, {}).get(container_name)

    def get_memory_assignments(self) -> ContainerMemoryAssignments:
        return {pod: dict(containers) for pod, containers in self.assignments.items()}

    def get_pod_memory_blocks(self, pod_uid: str) -> tuple[Block, ...] | None:
        return self.pod_entries.get(pod_uid)

    # -- Writer -------------------------------------------------------------------------
    def set_machine_state(self, machine_state: Mapping[int, NUMANodeState]) -> None:
        self.machine_state = clone_machine_state(machine_state)

    def machine_state_for_update(self, nodes: Iterable[int]) -> NUMANodeMap:
        """Copy-on-write: a new map sharing every node state but those of ``nodes`` (unknown
        ids are skipped), which are clones the caller may change; store the result back with
        ``replace_machine_state``."""
        out = dict(self.machine_state)
        for n in set(nodes):
            node = out.get(n)
            if node is not None:
                out[n] = node.clone()
        return out

    def replace_machine_state(self, machine_state: NUMANodeMap) -> None:
        """Take ``machine_state`` over without cloning it (the caller built it for this, with
        ``machine_state_for_update`` or a clone, and keeps no other use of it)."""
        self.machine_state = machine_state

    def set_memory_blocks(self, pod_uid: str, container_name: str, blocks: Iterable[Block]) -> None:
        # A new map for the pod: copies of this state may share the old one.
        containers = dict(self.assignments.get(pod_uid, ()))
        containers[container_name] = tuple(blocks)
        self.assignments[pod_uid] = containers

    def set_pod_memory_blocks(self, pod_uid: str, blocks: Iterable[Block]) -> None:
        self.pod_entries[pod_uid] = tuple(blocks)

    def delete(self, pod_uid: str, container_name: str) -> None:
        """Drop a container's blocks (and the pod's map once empty)."""
        containers = self.assignments.get(pod_uid)
        if containers is None:
            return
        containers = {name: b for name, b in containers.items() if name != container_name}
        if containers:
            self.assignments[pod_uid] = containers  # a new map, as set_memory_blocks
        else:
            del self.assignments[pod_uid]

    def delete_pod(self, pod_uid: str) -> None:
        """Drop every container entry and the pod entry of a pod."""
        self.assignments.pop(pod_uid, None)
        self.pod_entries.pop(pod_uid, None)

    def clear_state(self) -> None:
        self.machine_state = {}
        self.assignments = {}
        self.pod_entries = {}

    # -- views --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The normalised checkpoint form (conformance README §4.2), without ``policyName``."""
        return {
            "machineState": {str(n): s.to_dict() for n, s in sorted(self.machine_state.items())},
            "entries": {
                pod: {c: [b.to_dict() for b in blocks] for c, blocks in containers.items()}
                for pod, containers in self.assignments.items()
            },
            "podEntries": {
                pod: [b.to_dict() for b in blocks] for pod, blocks in self.pod_entries.items()
            },
        }


def block_from_dict(d: Mapping[str, Any]) -> Block:
    """A block from ``{numaAffinity|numa, type, size}``."""
    try:
        numa = d["numaAffinity"] if "numaAffinity" in d else d["numa"]
        return Block(tuple(int(n) for n in numa or ()), str(d["type"]), int(d["size"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise MemoryStateError(f"a memory block needs numaAffinity, type and size: {d!r}") from exc


_TABLE_KEYS = {
    "total": ("total", "totalMemSize", "total_mem_size"),
    "system_reserved": ("systemReserved", "system_reserved"),
    "allocatable": ("allocatable",),
    "reserved": ("reserved",),
    "free": ("free",),
}


def memory_table_from_dict(d: Mapping[str, Any]) -> MemoryTable:
    """A table from the checkpoint (camelCase) or conformance (snake_case) spelling."""
    values: dict[str, int] = {}
    for name, keys in _TABLE_KEYS.items():
        for key in keys:
            if key in d:
                try:
                    values[name] = int(d[key])
                except (TypeError, ValueError) as exc:
                    raise MemoryStateError(f"memory table {key} must be an integer") from exc
                break
        else:
            values[name] = 0
    return MemoryTable(
        values["total"],
        values["system_reserved"],
        values["allocatable"],
        values["reserved"],
        values["free"],
    )


def numa_node_state_from_dict(d: Mapping[str, Any]) -> NUMANodeState:
    memory_map = d.get("memoryMap", d.get("memory_map")) or {}
    try:
        count = int(d.get("numberOfAssignments", d.get("number_of_assignments", 0)) or 0)
        cells = [int(c) for c in d.get("cells") or ()]
    except (TypeError, ValueError) as exc:
        raise MemoryStateError(f"bad NUMA node state {d!r}") from exc
    return NUMANodeState(
        count, {str(k): memory_table_from_dict(v) for k, v in memory_map.items()}, cells
    )


def machine_state_from_dict(d: Mapping[str, Any]) -> NUMANodeMap:
    """``{"<numa id>": node state}`` in either spelling."""
    out: NUMANodeMap = {}
    for key, value in d.items():
        try:
            node = int(key)
        except ValueError as exc:
            raise MemoryStateError(f"NUMA node ids are integers, got {key!r}") from exc
        out[node] = numa_node_state_from_dict(value)
    return out


def assignments_from_dict(d: Mapping[str, Any]) -> ContainerMemoryAssignments:
    return {
        pod: {c: tuple(block_from_dict(b) for b in blocks or ()) for c, blocks in cs.items()}
        for pod, cs in d.items()
    }

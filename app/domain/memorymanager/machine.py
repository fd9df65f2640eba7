"""The machine's NUMA memory as the static policy books it (follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38).

It owns:

* ``NUMANodeInfo`` - one NUMA node as cAdvisor reports it, and ``machine_nodes_from_topology``;
* ``default_machine_state`` (``getDefaultMachineState``): per NUMA node, ``hugepages-<size>``
  tables (total = pages × size, allocatable = free = total − reserved) and a ``memory`` table
  whose allocatable also excludes every hugepage pool of the node (§3.1);
* ``update_machine_state`` / ``release_blocks``: moving bytes between free and reserved when a
  block is booked or given back, with the NUMA grouping (``cells``) that goes with it
  (``are_groups_equal``: ``areGroupsEqual``).

Upstream dereferences a missing ``MemoryMap`` entry (a request for a hugepage size the node does
not have) and panics; here a missing table counts as 0 bytes (``free_bytes`` and
``allocatable_bytes``), so no hint covers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.state import Block, MemoryTable, NUMANodeMap, NUMANodeState
from app.domain.pod.model import RESOURCE_MEMORY
from app.domain.quantity import BINARY_SI, Quantity, canonicalize
from app.domain.topology.model import CPUTopology

__all__ = [
    "NUMANodeInfo",
    "allocatable_bytes",
    "are_groups_equal",
    "default_machine_state",
    "free_bytes",
    "hugepage_resource_name",
    "machine_nodes_from_topology",
    "release_blocks",
    "table_of",
    "update_machine_state",
]


@dataclass(frozen=True, slots=True)
class NUMANodeInfo:
    """One NUMA node as cAdvisor reports it to the memory manager: total memory (bytes,
    hugepage pools included) and hugepage pools as ``(page size in bytes, pages)``."""

    numa_id: int
    memory: int
    hugepages: tuple[tuple[int, int], ...] = field(default_factory=tuple)


def machine_nodes_from_topology(topology: CPUTopology) -> tuple[NUMANodeInfo, ...]:
    """The memory manager's view of a ``CPUTopology``'s per-NUMA memory."""
    return tuple(
        NUMANodeInfo(m.numa_id, m.memory_bytes, tuple(sorted(m.hugepages.items())))
        for m in topology.memory
    )


def hugepage_resource_name(page_size_bytes: int) -> str:
    """``HugePageResourceName``: ``hugepages-`` + the page size as a binary-SI quantity."""
    return "hugepages-" + canonicalize(Quantity.from_int(page_size_bytes).amount, BINARY_SI)


def table_of(state: NUMANodeState | None, resource: str) -> MemoryTable | None:
    return None if state is None else state.memory_map.get(resource)


def free_bytes(machine_state: Mapping[int, NUMANodeState], node: int, resource: str) -> int:
    table = table_of(machine_state.get(node), resource)
    return 0 if table is None else table.free


def allocatable_bytes(machine_state: Mapping[int, NUMANodeState], node: int, resource: str) -> int:
    table = table_of(machine_state.get(node), resource)
    return 0 if table is None else table.allocatable


def are_groups_equal(group1: Iterable[int], group2: Iterable[int]) -> bool:
    """``areGroupsEqual``: the same nodes, compared sorted."""
    return sorted(group1) == sorted(group2)


def default_machine_state(
    machine_nodes: Iterable[NUMANodeInfo], system_reserved: Mapping[int, Mapping[str, int]]
) -> NUMANodeMap:
    """``getDefaultMachineState``."""

    def reserved_of(node_id: int, resource: str) -> int:
        return system_reserved.get(node_id, {}).get(resource, 0)

    out: NUMANodeMap = {}
    for node in machine_nodes:
        memory_map: dict[str, MemoryTable] = {}
        hugepages_total = 0
        for page_size, pages in node.hugepages:
            name = hugepage_resource_name(page_size)
            reserved = reserved_of(node.numa_id, name)
            total = pages * page_size
            allocatable = total - reserved
            memory_map[name] = MemoryTable(total, reserved, allocatable, 0, allocatable)
            hugepages_total += total
        reserved = reserved_of(node.numa_id, RESOURCE_MEMORY)
        allocatable = node.memory - reserved - hugepages_total
        memory_map[RESOURCE_MEMORY] = MemoryTable(
            node.memory, reserved, allocatable, 0, allocatable
        )
        out[node.numa_id] = NUMANodeState(0, memory_map, [node.numa_id])
    return out


def update_machine_state(
    machine_state: NUMANodeMap, numa_affinity: Sequence[int], resource: str, requested: int
) -> None:
    """``updateMachineState``: count the assignment on every node of the group, set the group,
    and move ``requested`` bytes from free to reserved node by node."""
    for n in numa_affinity:
        node = machine_state[n]
        node.number_of_assignments += 1
        node.cells = list(numa_affinity)
        table = node.memory_map.get(resource) if requested else None
        if table is not None:
            requested = reserve_free(table, requested)


def reserve_free(table: MemoryTable, requested: int) -> int:
    """Move up to ``requested`` bytes of one node's table from free to reserved; returns what
    is left to reserve on the group's next node."""
    if requested == 0 or table.free <= 0:
        return requested
    taken = min(table.free, requested)
    table.reserved += taken
    table.free -= taken
    return requested - taken


def release_blocks(machine_state: NUMANodeMap, blocks: Iterable[Block]) -> None:
    """The release loop of ``RemoveContainer``/``releaseMemory``: uncount the assignment (a
    node with none left returns to its own group) and move bytes back from reserved."""
    for b in blocks:
        released = b.size
        for n in b.numa_affinity:
            node = machine_state.get(n)
            if node is None:
                raise MemoryManagerError(
                    f"[memorymanager] the memory block uses NUMA node {n} that does not exist"
                )
            node.number_of_assignments -= 1
            if node.number_of_assignments == 0:
                node.cells = [n]
            if released == 0:
                continue
            table = node.memory_map.get(b.type)
            if table is None or table.reserved == 0:
                continue
            if table.reserved < released:
                released -= table.reserved
                table.free += table.reserved
                table.reserved = 0
                continue
            table.free += released
            table.reserved -= released
            released = 0

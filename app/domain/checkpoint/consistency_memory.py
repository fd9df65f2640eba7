"""Consistency checks of a ``memory_manager_state`` against itself and the topology.

They mirror the Static policy's machine-state validation (``validateState`` of
pkg/kubelet/cm/memorymanager/policy_static.go, spec ``allocation.md`` §3.5): per node and
resource ``free + reserved == allocatable``; per NUMA group and resource the reserved memory
equals the assigned blocks (pod-level pods count their pod blocks instead of their
containers'); ``numberOfAssignments`` counts one per block per node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.domain.checkpoint.findings import ERROR, WARNING, Issue
from app.domain.checkpoint.memory_state import Block, MemoryCheckpointState, NUMANodeState
from app.domain.topology.model import CPUTopology


def _assignment_blocks(state: MemoryCheckpointState) -> list[tuple[str, Block]]:
    """Blocks the machine state should account for: pod blocks for pods with a pod entry,
    container blocks otherwise."""
    out: list[tuple[str, Block]] = []
    pod_entries = state.pod_entries or {}
    for pod, blocks in sorted(pod_entries.items()):
        out.extend((f"pod {pod}", b) for b in blocks)
    for pod, containers in sorted(state.entries.items()):
        if pod in pod_entries:
            continue
        for name, blocks in sorted(containers.items()):
            out.extend((f"pod {pod} container {name}", b) for b in blocks)
    return out


def _groups(blocks: Iterable[Block], nodes: Iterable[int]) -> list[frozenset[int]]:
    parent: dict[int, int] = {n: n for n in nodes}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for b in blocks:
        ids = list(b.numa_affinity)
        for other in ids[1:]:
            parent[find(other)] = find(ids[0])
    comps: dict[int, set[int]] = {}
    for n in list(parent):
        comps.setdefault(find(n), set()).add(n)
    return [frozenset(c) for c in comps.values()]


def check_memory_state(state: MemoryCheckpointState, topology: CPUTopology | None) -> list[Issue]:
    """Every finding about one ``memory_manager_state``: the machine state's own sums, the
    assignments against it, then against the topology."""
    ms = state.machine_state
    blocks = _assignment_blocks(state)
    out = _memory_table_issues(ms)
    out += _block_issues(ms, blocks)
    out += _group_issues(ms, blocks)
    out += [
        Issue(
            "pod-entry-without-containers",
            WARNING,
            f"pod {pod} has pod-level memory blocks but no container entries",
        )
        for pod in sorted(state.pod_entries or {})
        if not state.entries.get(pod)
    ]
    if topology is not None:
        known = set(topology.numa_node_ids()) | {m.numa_id for m in topology.memory}
        unknown = sorted(set(ms) - known)
        if unknown:
            out.append(
                Issue(
                    "memory-numa-outside-topology",
                    ERROR,
                    f"machineState has NUMA nodes {unknown} the topology does not have",
                )
            )
    return out


_MachineState = Mapping[int, NUMANodeState]


def _memory_table_issues(ms: _MachineState) -> list[Issue]:
    """Per node and resource: ``free + reserved == allocatable``, and no more allocatable
    than the total leaves."""
    out: list[Issue] = []
    for node, ns in sorted(ms.items()):
        for res, t in sorted(ns.memory_map.items()):
            if t.free + t.reserved != t.allocatable:
                out.append(
                    Issue(
                        "machine-state-free-reserved",
                        ERROR,
                        f"NUMA {node} {res}: free {t.free} + reserved {t.reserved} != "
                        f"allocatable {t.allocatable}",
                    )
                )
            if t.allocatable + t.system_reserved > t.total:
                out.append(
                    Issue(
                        "allocatable-exceeds-total",
                        WARNING,
                        f"NUMA {node} {res}: allocatable {t.allocatable} + systemReserved "
                        f"{t.system_reserved} > total {t.total}",
                    )
                )
    return out


def _block_issues(ms: _MachineState, blocks: list[tuple[str, Block]]) -> list[Issue]:
    """Each block on NUMA nodes and resources the machine state has; ``numberOfAssignments``
    counting one per block per node."""
    out: list[Issue] = []
    counts: dict[int, int] = {}
    for owner, b in blocks:
        for node in b.numa_affinity:
            counts[node] = counts.get(node, 0) + 1
            unknown = _unknown_in_machine_state(ms, owner, b, node)
            if unknown is not None:
                out.append(unknown)
        if not b.numa_affinity:
            out.append(Issue("block-without-numa", ERROR, f"{owner}: a {b.type} block has no NUMA"))
    for node, ns in sorted(ms.items()):
        want = counts.get(node, 0)
        if ns.number_of_assignments != want:
            out.append(
                Issue(
                    "number-of-assignments",
                    ERROR,
                    f"NUMA {node}: numberOfAssignments {ns.number_of_assignments}, the "
                    f"assignments account for {want}",
                )
            )
    return out


def _unknown_in_machine_state(ms: _MachineState, owner: str, b: Block, node: int) -> Issue | None:
    """``validateState``'s lookups of a block's node and resource in the machine state."""
    if node not in ms:
        what = f"the NUMA that does not exist (NUMA {node})"
        return Issue("unknown-numa-node", ERROR, _ASSIGNMENT_USES.format(owner, what))
    if b.type not in ms[node].memory_map:
        what = f"memory resource that does not exist ({b.type} on NUMA {node})"
        return Issue("unknown-resource", ERROR, _ASSIGNMENT_USES.format(owner, what))
    return None


_ASSIGNMENT_USES = "[memorymanager] ({}) the memory assignment uses {}"


def _group_issues(ms: _MachineState, blocks: list[tuple[str, Block]]) -> list[Issue]:
    """Per NUMA group (nodes joined by multi-node blocks) and resource, the reserved memory
    equals the assigned blocks; a group's nodes list each other as cells."""
    groups = _groups((b for _, b in blocks), ms)
    # A block's NUMA nodes are all in one group (they were joined): sum the assigned bytes
    # per (group, resource) in one pass instead of a pass over every block per group.
    group_of = {n: i for i, group in enumerate(groups) for n in group}
    assigned_in: dict[tuple[int, str], int] = {}
    types_in: dict[int, set[str]] = {}
    for _, b in blocks:
        g = group_of.get(next(iter(b.numa_affinity), -1))
        if g is not None:  # no NUMA, or only one the machine state does not know: no group
            assigned_in[(g, b.type)] = assigned_in.get((g, b.type), 0) + b.size
            types_in.setdefault(g, set()).add(b.type)
    out: list[Issue] = []
    for gi, group in enumerate(groups):
        resources = sorted(
            {r for n in group if n in ms for r in ms[n].memory_map} | types_in.get(gi, set())
        )
        for res in resources:
            reserved = sum(
                ms[n].memory_map[res].reserved for n in group if n in ms and res in ms[n].memory_map
            )
            assigned = assigned_in.get((gi, res), 0)
            if reserved != assigned:
                nodes = ",".join(map(str, sorted(group)))
                out.append(
                    Issue(
                        "assignments-vs-reserved",
                        ERROR,
                        f"NUMA {nodes} {res}: reserved {reserved} bytes, assignments "
                        f"{assigned} bytes",
                    )
                )
        if len(group) > 1:
            out += _cells_issues(ms, group)
    return out


def _cells_issues(ms: _MachineState, group: frozenset[int]) -> list[Issue]:
    return [
        Issue(
            "cells-mismatch",
            WARNING,
            f"NUMA {n}: cells {list(ms[n].cells)} but assignments group NUMA {sorted(group)}",
        )
        for n in sorted(group)
        if n in ms and set(ms[n].cells) != set(group)
    ]

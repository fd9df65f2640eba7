"""Consistency checks for a pair of state files (``cpu_manager_state``,
``memory_manager_state``) and an optional topology.

The CPU checks mirror the static policy's start-up validation (``validateState`` of
pkg/kubelet/cm/cpumanager/policy_static.go, spec ``allocation.md`` §2.3) and go further
(overlaps between pods, grouped per CPU by ``overlaps``; pod entries vs their containers). The memory checks mirror the Static
policy's machine-state validation (``allocation.md`` §3.5): per node and resource
``free + reserved == allocatable``; per NUMA group and resource the reserved memory equals the
assigned blocks (pod-level pods count their pod blocks instead of their containers');
``numberOfAssignments`` counts one per block per node.

Each finding is an ``Issue(code, severity, message)``; ``error`` means a kubelet would refuse
the state at start-up (or the data contradicts itself), ``warning`` something suspicious,
``info`` a remark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.content import file_content
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import CPU, MEMORY, detect_tree, parse_checkpoint_text
from app.domain.checkpoint.errors import CheckpointError
from app.domain.checkpoint.findings import Issue, checksum_reports
from app.domain.checkpoint.memory_state import Block, MemoryCheckpointState
from app.domain.checkpoint.overlaps import (
    cap_repeated,
    left_out_message,
    overlap_message,
    shared_cpu_groups,
)
from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology

ERROR = "error"
WARNING = "warning"
INFO = "info"


def _load(
    value: str | bytes | CPUCheckpointState | MemoryCheckpointState,
    manager: str,
    issues: list[Issue],
) -> Any:
    if isinstance(value, CPUCheckpointState | MemoryCheckpointState):
        return value
    name = C.CPU_FILE_NAME if manager == CPU else M.MEMORY_FILE_NAME
    try:
        _, tree = parse_checkpoint_text(value)
        info = detect_tree(tree, manager)
    except CheckpointError as exc:
        issues.append(Issue("unreadable-file", ERROR, f"{name}: {exc.message}"))
        return None
    for c in checksum_reports(tree, info):
        if c.status == "invalid":
            issues.append(
                Issue(
                    "checksum-invalid",
                    ERROR,
                    f"{name}: {c.field} {c.stored} does not match the computed {c.computed}",
                )
            )
    fc = file_content(tree, info)
    for problem in fc.problems:
        issues.append(Issue("content-error", ERROR, f"{name}: {problem}"))
    return fc.state


def check_consistency(
    cpu: str | bytes | CPUCheckpointState | None = None,
    memory: str | bytes | MemoryCheckpointState | None = None,
    topology: CPUTopology | None = None,
    *,
    reserved_cpus: CPUSet | None = None,
    strict_reservation: bool = False,
    live_pod_uids: Iterable[str] | None = None,
) -> list[Issue]:
    """Check one or both state files (text or normalised state) against each other and,
    when given, the topology and the reserved CPUs. Never raises for bad file content."""
    issues: list[Issue] = []
    cpu_state = _load(cpu, CPU, issues) if cpu is not None else None
    mem_state = _load(memory, MEMORY, issues) if memory is not None else None
    live = set(live_pod_uids) if live_pod_uids is not None else None
    if cpu_state is not None:
        issues.extend(_check_cpu(cpu_state, topology, reserved_cpus, strict_reservation))
        if live is not None:
            issues.extend(_stale(cpu_state.all_pod_uids(), live, C.CPU_FILE_NAME))
    if mem_state is not None:
        issues.extend(_check_memory(mem_state, topology))
        if live is not None:
            pods = sorted(set(mem_state.entries) | set(mem_state.pod_entries or {}))
            issues.extend(_stale(pods, live, M.MEMORY_FILE_NAME))
    if cpu_state is not None and mem_state is not None:
        issues.extend(_check_pair(cpu_state, mem_state, topology))
    return cap_repeated(issues)


def _stale(pods: Sequence[str], live: set[str], name: str) -> list[Issue]:
    return [
        Issue("stale-entry", WARNING, f"{name}: pod {pod} has entries but is not running")
        for pod in pods
        if pod not in live
    ]


# -- CPU ------------------------------------------------------------------------------------------


def _check_cpu(
    state: CPUCheckpointState,
    topology: CPUTopology | None,
    reserved: CPUSet | None,
    strict: bool,
) -> list[Issue]:
    out: list[Issue] = []
    default = state.default_cpu_set
    owners: list[tuple[str, str, CPUSet]] = []  # (pod, container or "", cpuset)
    if state.container_entries is not None:
        for cid, cset in sorted(state.container_entries.items()):
            owners.append((f"container {cid}", cid, cset))
    for pod, containers in sorted(state.entries.items()):
        for name, cset in sorted(containers.items()):
            owners.append((pod, name, cset))
    pod_entries: Mapping[str, CPUSet] = state.pod_entries or {}
    assigned = CPUSet().union(*(c for _, _, c in owners), *pod_entries.values())

    # Containers of different pods must not share CPUs (containers of one pod may: init
    # containers hand their CPUs on, shared containers of a pod bubble share its pool).
    by_pod: dict[str, CPUSet] = {}
    for pod, _, cset in owners:
        by_pod[pod] = by_pod.get(pod, CPUSet()) | cset
    for pod, cset in pod_entries.items():
        by_pod[pod] = by_pod.get(pod, CPUSet()) | cset
    groups, left_out = shared_cpu_groups(by_pod)
    for cpus, holders in groups:
        out.append(Issue("overlapping-exclusive", ERROR, overlap_message(cpus, holders)))
    if left_out:
        out.append(Issue("overlapping-exclusive", ERROR, left_out_message(left_out)))
    default_text = str(default)  # once: every overlap below quotes it
    for pod, name, cset in owners:
        if cset & default:
            out.append(
                Issue(
                    "container-overlaps-default",
                    ERROR,
                    f'pod: {pod}, container: {name} cpuset: "{cset}" overlaps with default '
                    f'cpuset "{default_text}"',
                )
            )
    for pod, cset in sorted(pod_entries.items()):
        if cset & default:
            out.append(
                Issue(
                    "pod-entry-overlaps-default",
                    ERROR,
                    f'pod {pod}: pod cpuset "{cset}" overlaps with default cpuset "{default_text}"',
                )
            )
        pod_containers = state.entries.get(pod)
        if not pod_containers:
            out.append(
                Issue(
                    "pod-entry-without-containers",
                    WARNING,
                    f"pod {pod} has a pod entry ({cset}) but no container entries",
                )
            )
            continue
        for name, ccs in sorted(pod_containers.items()):
            outside = ccs - cset
            if outside:
                out.append(
                    Issue(
                        "container-outside-pod-entry",
                        ERROR,
                        f"pod {pod}, container {name}: CPUs {outside} are outside the pod's "
                        f"cpuset {cset}",
                    )
                )
    if default.is_empty() and (owners or pod_entries):
        out.append(Issue("empty-default-set", ERROR, "default cpuset cannot be empty"))
    if topology is None:
        return out
    all_cpus = topology.all_cpus
    outside = (default | assigned) - all_cpus
    if outside:
        out.append(
            Issue(
                "cpu-outside-topology",
                ERROR,
                f"CPUs {outside} are not in the topology (CPUs {all_cpus})",
            )
        )
    if reserved is not None:
        if strict:
            all_cpus = all_cpus - reserved
            inside = reserved & default
            if inside:
                out.append(
                    Issue(
                        "reserved-in-default",
                        ERROR,
                        f'some of strictly reserved cpus: "{inside}" are present in '
                        f'defaultCpuSet: "{default}"',
                    )
                )
        elif not reserved.is_subset_of(default):
            out.append(
                Issue(
                    "reserved-not-in-default",
                    ERROR,
                    f'not all reserved cpus: "{reserved}" are present in defaultCpuSet: '
                    f'"{default}"',
                )
            )
    union = default | assigned
    if not default.is_empty() and union != all_cpus:
        out.append(
            Issue(
                "cpus-mismatch",
                ERROR,
                f'current set of available CPUs "{all_cpus}" doesn\'t match with CPUs in state '
                f'"{union}"',
            )
        )
    if reserved is not None or not strict:
        expected = all_cpus - assigned
        if default != expected and not default.is_empty():
            missing = expected - default
            extra = default - expected
            parts = []
            if missing:
                parts.append(f"missing {missing}")
            if extra:
                parts.append(f"unexpected {extra}")
            out.append(
                Issue(
                    "default-set-mismatch",
                    ERROR,
                    f"default cpuset {default} is not topology{' - reserved' if strict else ''}"
                    f" - assigned = {expected}: {', '.join(parts)}",
                )
            )
    return out


# -- memory ---------------------------------------------------------------------------------------


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


def _check_memory(state: MemoryCheckpointState, topology: CPUTopology | None) -> list[Issue]:
    out: list[Issue] = []
    ms = state.machine_state
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
    blocks = _assignment_blocks(state)
    counts: dict[int, int] = {}
    for owner, b in blocks:
        for node in b.numa_affinity:
            counts[node] = counts.get(node, 0) + 1
            if node not in ms:
                out.append(
                    Issue(
                        "unknown-numa-node",
                        ERROR,
                        f"[memorymanager] ({owner}) the memory assignment uses the NUMA that "
                        f"does not exist (NUMA {node})",
                    )
                )
            elif b.type not in ms[node].memory_map:
                out.append(
                    Issue(
                        "unknown-resource",
                        ERROR,
                        f"[memorymanager] ({owner}) the memory assignment uses memory resource "
                        f"that does not exist ({b.type} on NUMA {node})",
                    )
                )
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
            for n in sorted(group):
                if n in ms and set(ms[n].cells) != set(group):
                    out.append(
                        Issue(
                            "cells-mismatch",
                            WARNING,
                            f"NUMA {n}: cells {list(ms[n].cells)} but assignments group NUMA "
                            f"{sorted(group)}",
                        )
                    )
    for pod in sorted(state.pod_entries or {}):
        if not state.entries.get(pod):
            out.append(
                Issue(
                    "pod-entry-without-containers",
                    WARNING,
                    f"pod {pod} has pod-level memory blocks but no container entries",
                )
            )
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


# -- both files ---------------------------------------------------------------------------------


def _check_pair(
    cpu: CPUCheckpointState, mem: MemoryCheckpointState, topology: CPUTopology | None
) -> list[Issue]:
    out: list[Issue] = []
    cpu_pods = set(cpu.pod_entries or {})
    mem_pods = set(mem.pod_entries or {})
    for pod in sorted(cpu_pods ^ mem_pods):
        where = C.CPU_FILE_NAME if pod in cpu_pods else M.MEMORY_FILE_NAME
        out.append(
            Issue(
                "pod-entry-in-one-file",
                INFO,
                f"pod {pod} has a pod-level entry in {where} only",
            )
        )
    if topology is None:
        return out
    for pod, containers in sorted(mem.entries.items()):
        for name, blocks in sorted(containers.items()):
            cset = cpu.entries.get(pod, {}).get(name)
            if cset is None or cset.is_empty():
                continue
            cpu_numa = set(topology.numa_nodes_of(cset))
            mem_numa = {n for b in blocks for n in b.numa_affinity}
            if mem_numa and cpu_numa and not cpu_numa <= mem_numa:
                out.append(
                    Issue(
                        "numa-misaligned",
                        WARNING,
                        f"pod {pod} container {name}: CPUs on NUMA {sorted(cpu_numa)}, memory on "
                        f"NUMA {sorted(mem_numa)}",
                    )
                )
    return out

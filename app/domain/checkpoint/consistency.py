"""Consistency checks for a pair of state files (``cpu_manager_state``,
``memory_manager_state``) and an optional topology.

The CPU checks (``consistency_cpu``) mirror the static policy's start-up validation
(``validateState`` of pkg/kubelet/cm/cpumanager/policy_static.go, spec ``allocation.md`` §2.3)
and go further (overlaps between pods, grouped per CPU by ``overlaps``; pod entries vs their
containers). The memory checks (``consistency_memory``) mirror the Static policy's
machine-state validation (``allocation.md`` §3.5): per node and resource
``free + reserved == allocatable``; per NUMA group and resource the reserved memory equals the
assigned blocks (pod-level pods count their pod blocks instead of their containers');
``numberOfAssignments`` counts one per block per node. This module reads the files, runs both
and checks the pair against each other (pod entries in one file only, NUMA alignment).

Each finding is an ``Issue(code, severity, message)``; ``error`` means a kubelet would refuse
the state at start-up (or the data contradicts itself), ``warning`` something suspicious,
``info`` a remark.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.consistency_cpu import check_cpu_state
from app.domain.checkpoint.consistency_memory import check_memory_state
from app.domain.checkpoint.content import file_content
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import CPU, MEMORY, detect_tree, parse_checkpoint_text
from app.domain.checkpoint.errors import CheckpointError
from app.domain.checkpoint.findings import ERROR, INFO, WARNING, Issue, checksum_reports
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.overlaps import cap_repeated
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology


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
        issues.extend(check_cpu_state(cpu_state, topology, reserved_cpus, strict_reservation))
        if live is not None:
            issues.extend(_stale(cpu_state.all_pod_uids(), live, C.CPU_FILE_NAME))
    if mem_state is not None:
        issues.extend(check_memory_state(mem_state, topology))
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

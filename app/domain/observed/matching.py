"""Joining checkpoint pods (by UID) with PodResources pods (by namespace/name), whose answers
are filled as pkg/kubelet/apis/podresources/server_v1.go does.

A checkpoint pod and a PodResources pod are the same pod when everything PodResources reports
for the pod agrees with the checkpoint — pod-level ``cpu_ids`` with the pod entry, each
container's ``cpu_ids`` with its entry, memory blocks with the memory manager's blocks — and at
least one of them is non-empty. Exclusive CPU sets are disjoint between pods, so one equal set
is decisive; memory blocks alone can be ambiguous (two identical pods), and an ambiguous pair
is never joined.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint import CPUCheckpointState, MemoryCheckpointState
from app.domain.cpuset import CPUSet
from app.domain.memorymanager.state import Block as MemoryBlock
from app.domain.podresources import ContainerMemory, PodResources, cpu_set_of

# -- joining -------------------------------------------------------------------------------


@dataclass(slots=True)
class Recorded:
    """One pod UID's entries across both state files."""

    uid: str
    cpus: dict[str, CPUSet] = field(default_factory=dict)
    pod_cpus: CPUSet | None = None
    memory: dict[str, tuple[MemoryBlock, ...]] = field(default_factory=dict)
    pod_memory: tuple[MemoryBlock, ...] | None = None

    def container_names(self) -> list[str]:
        return sorted(set(self.cpus) | set(self.memory))


def memory_block(b: Any) -> MemoryBlock:
    return MemoryBlock(tuple(b.numa_affinity), b.type, b.size)


class _RecordedByUid(dict[str, Recorded]):
    """Each pod's ``Recorded``, made on first use."""

    def __missing__(self, uid: str) -> Recorded:
        found = self[uid] = Recorded(uid)
        return found


def recorded_entries(
    cpu: CPUCheckpointState | None, memory: MemoryCheckpointState | None
) -> dict[str, Recorded]:
    out = _RecordedByUid()
    if cpu is not None:
        for uid, containers in cpu.entries.items():
            out[uid].cpus.update(containers)
        for uid, cpus in (cpu.pod_entries or {}).items():
            out[uid].pod_cpus = cpus
    if memory is not None:
        for uid, mcontainers in memory.entries.items():
            rec = out[uid]
            for name, blocks in mcontainers.items():
                rec.memory[name] = tuple(memory_block(b) for b in blocks)
        for uid, blocks in (memory.pod_entries or {}).items():
            out[uid].pod_memory = tuple(memory_block(b) for b in blocks)
    return dict(sorted(out.items()))


MemoryKey = tuple[tuple[str, int, tuple[int, ...]], ...]


def _blocks_key(blocks: Iterable[MemoryBlock]) -> MemoryKey:
    return tuple(sorted((b.type, b.size, tuple(sorted(b.numa_affinity))) for b in blocks))


def _reported_key(blocks: Iterable[ContainerMemory]) -> MemoryKey:
    return tuple(
        sorted(
            (
                m.memory_type,
                m.size,
                tuple(sorted(m.topology.numa_ids())) if m.topology is not None else (),
            )
            for m in blocks
        )
    )


def _evidence(rec: Recorded, pod: PodResources, cpu_known: bool, mem_known: bool) -> int | None:
    """How many of the pod's reported allocations agree with the UID's entries; ``None`` when
    one disagrees (then they are not the same pod)."""
    found = 0
    if cpu_known:
        if pod.cpu_ids:
            if rec.pod_cpus is None or rec.pod_cpus != cpu_set_of(pod.cpu_ids):
                return None
            found += 1
        for c in pod.containers:
            if c.cpu_ids:
                mine = rec.cpus.get(c.name)
                if mine is None or mine != cpu_set_of(c.cpu_ids):
                    return None
                found += 1
            elif rec.pod_cpus is None and c.name in rec.cpus:
                return None  # outside a pod budget every entry is an exclusive slice: reported
    if mem_known:
        if pod.memory:
            if not rec.pod_memory or _blocks_key(rec.pod_memory) != _reported_key(pod.memory):
                return None
            found += 1
        for c in pod.containers:
            if c.memory:
                blocks = rec.memory.get(c.name)
                if not blocks or _blocks_key(blocks) != _reported_key(c.memory):
                    return None
                found += 1
            elif not rec.pod_memory and rec.memory.get(c.name):
                return None  # outside a pod budget every container's blocks are reported
    return found


# (container name, or None for the pod's own entry; CPU mask) -> the UIDs recording it.
CpuIndex = dict[tuple[str | None, int], list[str]]


def _by_cpus(recorded: Mapping[str, Recorded]) -> CpuIndex:
    index: CpuIndex = {}
    for uid, rec in recorded.items():
        if rec.pod_cpus is not None:
            index.setdefault((None, rec.pod_cpus.mask), []).append(uid)
        for name, cpus in rec.cpus.items():
            index.setdefault((name, cpus.mask), []).append(uid)
    return index


def _suspects(
    recorded: Mapping[str, Recorded], by_cpus: CpuIndex | None, pod: PodResources
) -> Iterable[str]:
    """The UIDs that may be ``pod``: with a CPU set it reports, only those recording that set
    (``_evidence`` refuses every other), so matching 250 pods takes 250 lookups, not 62,500
    comparisons; else every UID."""
    if by_cpus is None:
        return recorded
    try:
        if pod.cpu_ids:
            return by_cpus.get((None, cpu_set_of(pod.cpu_ids).mask), ())
        for c in pod.containers:
            if c.cpu_ids:
                return by_cpus.get((c.name, cpu_set_of(c.cpu_ids).mask), ())
    except ValueError:  # a negative id: _evidence compares (and fails) as it always did
        return recorded
    return recorded


@dataclass(frozen=True, slots=True)
class Matching:
    """UID -> index of its PodResources pod; UIDs with candidates that could not be told
    apart; PodResources pods that match no UID."""

    matched: Mapping[str, int]
    ambiguous: frozenset[str]
    candidates: Mapping[str, tuple[int, ...]]


def match_pods(
    cpu: CPUCheckpointState | None,
    memory: MemoryCheckpointState | None,
    pods: Sequence[PodResources],
) -> Matching:
    """Join checkpoint UIDs with PodResources pods by their allocations (see the module
    docstring); only pairs that are each other's single candidate are joined."""
    recorded = recorded_entries(cpu, memory)
    return match_recorded(recorded, pods, cpu is not None, memory is not None)


def match_recorded(
    recorded: Mapping[str, Recorded],
    pods: Sequence[PodResources],
    cpu_known: bool,
    mem_known: bool,
) -> Matching:
    by_uid: dict[str, set[int]] = {}
    by_pod: dict[int, set[str]] = {}
    by_cpus = _by_cpus(recorded) if cpu_known and recorded else None
    for i, pod in enumerate(pods):
        for uid in _suspects(recorded, by_cpus, pod):
            score = _evidence(recorded[uid], pod, cpu_known, mem_known)
            if score:
                by_uid.setdefault(uid, set()).add(i)
                by_pod.setdefault(i, set()).add(uid)
    candidates = {uid: tuple(sorted(v)) for uid, v in by_uid.items()}
    matched: dict[str, int] = {}
    progress = True
    while progress:
        progress = False
        for uid in sorted(by_uid):
            options = by_uid[uid]
            if len(options) != 1:
                continue
            (i,) = options
            if by_pod.get(i) != {uid}:
                continue
            matched[uid] = i
            del by_uid[uid]
            del by_pod[i]
            for others in by_uid.values():
                others.discard(i)
            for owners in by_pod.values():
                owners.discard(uid)
            progress = True
    ambiguous = frozenset(uid for uid, options in by_uid.items() if options)
    return Matching(matched, ambiguous, candidates)

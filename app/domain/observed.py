"""An observed node: what a real kubelet recorded, merged into a ``NodeSnapshot`` (pure).

The sources (spec ``users.md`` §5.1) are read by ``app.services.observation``; this module only
combines what they returned, without touching disk or sockets:

* ``cpu_manager_state`` / ``memory_manager_state`` (keyed by pod UID and container name),
  read the way the newest kubelet reads them (``read_state_file``: the 1.37 readers with the
  ``PodLevelResourceManagers`` gate on, then off, then the older releases; the first reader that
  accepts the file wins and every newer reader's refusal is kept with the kubelet's text),
  follows pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
  pkg/kubelet/cm/memorymanager/state/state_checkpoint.go (v1.37) through
  ``app.domain.checkpoint``;
* PodResources ``List`` and ``GetAllocatableResources`` (keyed by namespace/name and
  container name), filled as pkg/kubelet/apis/podresources/server_v1.go does;
* the topology (sysfs), the kubelet configuration and the UIDs of ``<root>/pods/``.

Joining (``match_pods``): a checkpoint pod (UID) and a PodResources pod (namespace/name) are the
same pod when everything PodResources reports for the pod agrees with the checkpoint — pod-level
``cpu_ids`` with the pod entry, each container's ``cpu_ids`` with its entry, memory blocks with
the memory manager's blocks — and at least one of them is non-empty. Exclusive CPU sets are
disjoint between pods, so one equal set is decisive; memory blocks alone can be ambiguous (two
identical pods), and an ambiguous pair is never joined: the pod is then shown by UID only.
Pods that hold nothing exclusive (BestEffort, Burstable, non-integral CPU) have no checkpoint
entry and appear with their name only (no UID: the kubelet recorded none we can read).

Stale entries (kubernetes#129819): a checkpoint UID with no ``<root>/pods/<uid>`` directory
that no PodResources pod matches. When neither the pods dir nor PodResources could be read,
staleness is unknown and nothing is flagged.

Nothing is guessed about placement: it comes from the state files (or, when they cannot be
read, from PodResources with the consumer arithmetic of ``podresources.md`` §7). What the
sources cannot tell is said in a note: a container's isolation level inside a pod budget is
reported by PodResources (1.37: ``cpu_ids`` only for an exclusive slice); for a container it does
not list (regular init containers) or without PodResources it is inferred from the CPU sets (the
set of a listed container; else a set several containers hold is the pod shared pool, a set one
container holds an exclusive slice — a container alone in the pool, or an init container whose
slice was reused, looks the same). PodResources does not mark sidecars, so listed containers
are ``app`` and containers only the checkpoint knows are ``init``. QoS classes, requests and
admission times are not recorded.

A pod known by its UID only gets the pseudo namespace ``~`` (not a valid namespace name) and its
UID as name, so every pod has a ``namespace/name`` key and a URL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint import (
    CheckpointError,
    ChecksumReport,
    CPUCheckpointState,
    MemoryCheckpointState,
    Reader,
    inspect,
    load_checkpoint,
)
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import DEFAULT_RELEASE, KubeletConfig
from app.domain.memorymanager.state import Block as MemoryBlock
from app.domain.podresources import (
    AllocatableResourcesResponse,
    ContainerMemory,
    ListPodResourcesResponse,
    PodResources,
)
from app.domain.pools import Pools, derive_pools, pools_from_snapshot
from app.domain.snapshot import (
    ContainerAllocation,
    ContainerKind,
    Isolation,
    MemoryTable,
    NodeSnapshot,
    NUMAMemoryState,
    PodAllocation,
)
from app.domain.topology import CPUTopology

__all__ = [
    "NEWEST_FIRST",
    "SOURCES",
    "UID_ONLY_NAMESPACE",
    "CheckpointFile",
    "Observation",
    "ObservedNode",
    "PodIdentity",
    "SourceStatus",
    "StaleEntry",
    "StateFileReading",
    "build_observed_node",
    "infer_config",
    "match_pods",
    "read_state_file",
]

#: Pseudo namespace of a pod known by its UID only (``~`` is not a valid namespace name).
UID_ONLY_NAMESPACE = "~"

SOURCE_PODRESOURCES = "podresources"
SOURCE_CHECKPOINT = "checkpoint"
SOURCE_SYSFS = "sysfs"
SOURCE_CONFIG = "kubelet-config"
#: Every source, in the order pages list them.
SOURCES = (SOURCE_SYSFS, SOURCE_CHECKPOINT, SOURCE_PODRESOURCES, SOURCE_CONFIG)

#: The readers tried on an observed state file, newest kubelet first.
NEWEST_FIRST: tuple[Reader, ...] = (
    Reader("1.37", True),
    Reader("1.37", False),
    Reader("1.36", True),
    Reader("1.36", False),
    Reader("1.35"),
    Reader("1.17"),
)

FILE_NAMES = {"cpu": "cpu_manager_state", "memory": "memory_manager_state"}


# -- values --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """One source of an observation: ``ok`` when it could be read at all, the errors met."""

    source: str
    observed_at: float
    ok: bool
    detail: str = ""  # what was read: a path or a socket
    errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "observedAt": self.observed_at,
            "ok": self.ok,
            "detail": self.detail,
            "errors": list(self.errors),
        }


@dataclass(frozen=True, slots=True)
class CheckpointFile:
    """A state file as observed: detected format, checksums, which reader accepted it.

    ``error``/``message`` are the newest kubelet's refusal (``restoreState``'s error and the
    start-up failure it logs), also when an older reader accepted the file; ``read_error`` is
    set when the file could not be read from disk at all."""

    manager: str
    file: str
    path: str
    observed_at: float
    present: bool = False
    read_error: str | None = None
    version: str | None = None
    family: str | None = None
    label: str | None = None
    read_as: str | None = None  # the label of the reader that accepted the file
    accepted: bool = False
    policy_name: str | None = None
    error: str | None = None
    message: str | None = None
    refused_by: tuple[tuple[str, str], ...] = ()  # (reader label, its error), newest first
    checksums: tuple[ChecksumReport, ...] = ()
    size: int | None = None

    @property
    def problem(self) -> str | None:
        """What is wrong with the file for the newest kubelet, if anything."""
        if self.read_error is not None:
            return self.read_error
        if not self.present:
            return None
        if self.refused_by:
            label, error = self.refused_by[0]
            text = self.message or error
            if self.accepted:
                return (
                    f"{self.file}: refused by kubelet {label} ({text}); shown as read by "
                    f"kubelet {self.read_as}"
                )
            return f"{self.file}: {text}"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": SOURCE_CHECKPOINT,
            "observedAt": self.observed_at,
            "manager": self.manager,
            "file": self.file,
            "path": self.path,
            "present": self.present,
            "size": self.size,
            "readError": self.read_error,
            "version": self.version,
            "family": self.family,
            "label": self.label,
            "readAs": self.read_as,
            "accepted": self.accepted,
            "policyName": self.policy_name,
            "error": self.error,
            "message": self.message,
            "refusedBy": [{"reader": r, "error": e} for r, e in self.refused_by],
            "checksums": [c.to_dict() for c in self.checksums],
        }


@dataclass(frozen=True, slots=True)
class StateFileReading:
    """A state file's report and, when a reader accepted it, its normalised state."""

    file: CheckpointFile
    state: CPUCheckpointState | MemoryCheckpointState | None = None


@dataclass(frozen=True, slots=True)
class PodIdentity:
    """Who a pod of the observed snapshot is, and which sources know it."""

    uid: str  # "" when only PodResources knows the pod
    namespace: str | None  # None when only the checkpoint knows the pod
    name: str | None
    key: str  # the snapshot's ``namespace/name`` (``~/<uid>`` for a UID-only pod)
    sources: tuple[str, ...]
    stale: bool = False
    live_dir: bool | None = None  # whether <root>/pods/<uid> exists (None: unknown)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "namespace": self.namespace,
            "name": self.name,
            "key": self.key,
            "sources": list(self.sources),
            "stale": self.stale,
            "podDir": self.live_dir,
        }


@dataclass(frozen=True, slots=True)
class StaleEntry:
    """A checkpoint entry of a pod the node no longer has: ``container`` is ``None`` for a
    pod entry; ``cpus`` (CPU file) or ``memory`` (memory file) is what it holds."""

    file: str
    uid: str
    container: str | None
    cpus: CPUSet | None = None
    memory: tuple[MemoryBlock, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": SOURCE_CHECKPOINT,
            "file": self.file,
            "uid": self.uid,
            "container": self.container,
            "cpus": None if self.cpus is None else str(self.cpus),
            "memory": [b.to_dict() for b in self.memory],
        }


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything the sources returned for one observation (``None``: not available)."""

    name: str
    observed_at: float
    topology: CPUTopology | None = None
    config: KubeletConfig | None = None
    config_path: str | None = None
    config_text: str | None = None
    cpu: StateFileReading | None = None
    memory: StateFileReading | None = None
    pod_uids: tuple[str, ...] | None = None
    list_response: ListPodResourcesResponse | None = None
    allocatable: AllocatableResourcesResponse | None = None
    sources: tuple[SourceStatus, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ObservedNode:
    """The result of an observation: the snapshot (``None`` without a topology), where every
    piece came from, the pods' identities and the stale entries."""

    name: str
    observed_at: float
    snapshot: NodeSnapshot | None
    sources: tuple[SourceStatus, ...]
    files: tuple[CheckpointFile, ...] = ()
    identities: tuple[PodIdentity, ...] = ()
    stale: tuple[StaleEntry, ...] = ()
    pools: Pools | None = None
    list_response: ListPodResourcesResponse | None = None
    allocatable: AllocatableResourcesResponse | None = None
    config_path: str | None = None
    config_text: str | None = None
    config_inferred: bool = False
    pod_uids: tuple[str, ...] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def source(self, name: str) -> SourceStatus | None:
        for s in self.sources:
            if s.source == name:
                return s
        return None

    @property
    def errors(self) -> tuple[tuple[str, str], ...]:
        """``(source, message)`` of every error met, in source order."""
        return tuple((s.source, e) for s in self.sources for e in s.errors)

    @property
    def ready(self) -> bool:
        """A snapshot was built and both PodResources and the state files could be read."""
        pr = self.source(SOURCE_PODRESOURCES)
        return self.serving and pr is not None and pr.ok

    @property
    def serving(self) -> bool:
        """A snapshot was built from readable state files: the node's pages, CPU map and
        checkpoint verdicts answer. PodResources is optional for this (its routes say why they
        cannot answer), so a missing socket alone does not make the agent unready."""
        cp = self.source(SOURCE_CHECKPOINT)
        return self.snapshot is not None and cp is not None and cp.ok

    @property
    def stale_uids(self) -> frozenset[str]:
        return frozenset(i.uid for i in self.identities if i.stale)

    def identity(self, namespace: str, name: str) -> PodIdentity | None:
        key = f"{namespace}/{name}"
        for i in self.identities:
            if i.key == key:
                return i
        return None

    def podresources_pod(self, namespace: str, name: str) -> PodResources | None:
        if self.list_response is None:
            return None
        return self.list_response.pod(namespace, name)

    def stale_counts(self) -> dict[str, int]:
        """Stale entries per file name."""
        out = {name: 0 for name in FILE_NAMES.values()}
        for s in self.stale:
            out[s.file] = out.get(s.file, 0) + 1
        return out


# -- state files -----------------------------------------------------------------------------


def read_state_file(
    content: bytes | None,
    manager: str,
    *,
    path: str,
    state_dir: str,
    observed_at: float,
    read_error: str | None = None,
    readers: Sequence[Reader] = NEWEST_FIRST,
) -> StateFileReading:
    """Read ``content`` (``None``: no such file) as the newest kubelet that accepts it would.

    Never raises for bad content: the refusal texts are in the returned file report."""
    name = FILE_NAMES[manager]
    base = CheckpointFile(manager, name, path, observed_at)
    if read_error is not None:
        return StateFileReading(
            CheckpointFile(manager, name, path, observed_at, present=True, read_error=read_error)
        )
    if content is None:
        return StateFileReading(base)
    report = inspect(content, manager, targets=(), state_dir=state_dir)
    version = report.version
    refused: list[tuple[str, str]] = []
    first_error: str | None = None
    first_message: str | None = None
    accepted_by: Reader | None = None
    state: CPUCheckpointState | MemoryCheckpointState | None = None
    for reader in readers:
        try:
            result = load_checkpoint(content, manager, reader, state_dir=state_dir)
        except CheckpointError as exc:
            refused.append((reader.label, exc.message))
            first_error = first_error or exc.message
            first_message = first_message or exc.message
            continue
        if result.ignored:
            continue
        if result.accepted:
            accepted_by = reader
            state = result.state
            break
        refused.append((reader.label, result.error or "refused"))
        if first_error is None:
            first_error, first_message = result.error, result.message
    policy = state.policy_name if state is not None else report.policy_name
    return StateFileReading(
        CheckpointFile(
            manager,
            name,
            path,
            observed_at,
            present=True,
            version=version.version if version is not None else None,
            family=version.family if version is not None else None,
            label=version.label if version is not None else None,
            read_as=accepted_by.label if accepted_by is not None else None,
            accepted=accepted_by is not None,
            policy_name=policy,
            error=first_error,
            message=first_message,
            refused_by=tuple(refused),
            checksums=report.checksums,
            size=len(content),
        ),
        state,
    )


def _cpu_state(reading: StateFileReading | None) -> CPUCheckpointState | None:
    if reading is not None and isinstance(reading.state, CPUCheckpointState):
        return reading.state
    return None


def _memory_state(reading: StateFileReading | None) -> MemoryCheckpointState | None:
    if reading is not None and isinstance(reading.state, MemoryCheckpointState):
        return reading.state
    return None


def infer_config(
    cpu: StateFileReading | None, memory: StateFileReading | None
) -> tuple[str, KubeletConfig]:
    """The kubelet release the state files point to, and a configuration holding only what the
    files record (policies; pod-level gates and scope ``pod`` when there are pod entries)."""
    cpu_state, mem_state = _cpu_state(cpu), _memory_state(memory)
    versions = {
        (r.file.manager, r.file.version) for r in (cpu, memory) if r is not None and r.file.version
    }
    if ("cpu", "V4") in versions or ("memory", "V3") in versions:
        release = "1.37"
    elif ("cpu", "V3") in versions or ("memory", "V2") in versions:
        release = "1.36"
    elif versions:
        release = "1.35"
    else:
        release = DEFAULT_RELEASE
    pod_level = bool(cpu_state is not None and cpu_state.pod_entries) or bool(
        mem_state is not None and mem_state.pod_entries
    )
    gates = {"PodLevelResources": True, "PodLevelResourceManagers": True} if pod_level else {}
    return release, KubeletConfig(
        release=release,
        cpu_manager_policy=cpu_state.policy_name if cpu_state is not None else "none",
        memory_manager_policy=mem_state.policy_name if mem_state is not None else "None",
        topology_manager_scope="pod" if pod_level else "container",
        feature_gates=gates,
    )


# -- joining -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Recorded:
    """One pod UID's entries across both state files."""

    uid: str
    cpus: dict[str, CPUSet] = field(default_factory=dict)
    pod_cpus: CPUSet | None = None
    memory: dict[str, tuple[MemoryBlock, ...]] = field(default_factory=dict)
    pod_memory: tuple[MemoryBlock, ...] | None = None

    def container_names(self) -> list[str]:
        return sorted(set(self.cpus) | set(self.memory))


def _block(b: Any) -> MemoryBlock:
    return MemoryBlock(tuple(b.numa_affinity), b.type, b.size)


def _recorded(
    cpu: CPUCheckpointState | None, memory: MemoryCheckpointState | None
) -> dict[str, _Recorded]:
    out: dict[str, _Recorded] = {}

    def get(uid: str) -> _Recorded:
        found = out.get(uid)
        if found is None:
            found = out[uid] = _Recorded(uid)
        return found

    if cpu is not None:
        for uid, containers in cpu.entries.items():
            get(uid).cpus.update(containers)
        for uid, cpus in (cpu.pod_entries or {}).items():
            get(uid).pod_cpus = cpus
    if memory is not None:
        for uid, mcontainers in memory.entries.items():
            rec = get(uid)
            for name, blocks in mcontainers.items():
                rec.memory[name] = tuple(_block(b) for b in blocks)
        for uid, blocks in (memory.pod_entries or {}).items():
            get(uid).pod_memory = tuple(_block(b) for b in blocks)
    return dict(sorted(out.items()))


def _cpus(ids: Iterable[int]) -> CPUSet:
    mask = 0
    for i in ids:
        mask |= 1 << i
    return CPUSet.from_mask(mask)


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


def _evidence(rec: _Recorded, pod: PodResources, cpu_known: bool, mem_known: bool) -> int | None:
    """How many of the pod's reported allocations agree with the UID's entries; ``None`` when
    one disagrees (then they are not the same pod)."""
    found = 0
    if cpu_known:
        if pod.cpu_ids:
            if rec.pod_cpus is None or rec.pod_cpus != _cpus(pod.cpu_ids):
                return None
            found += 1
        for c in pod.containers:
            if c.cpu_ids:
                mine = rec.cpus.get(c.name)
                if mine is None or mine != _cpus(c.cpu_ids):
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
    recorded = _recorded(cpu, memory)
    return _match(recorded, pods, cpu is not None, memory is not None)


def _match(
    recorded: Mapping[str, _Recorded],
    pods: Sequence[PodResources],
    cpu_known: bool,
    mem_known: bool,
) -> Matching:
    by_uid: dict[str, set[int]] = {}
    by_pod: dict[int, set[str]] = {}
    for uid, rec in recorded.items():
        for i, pod in enumerate(pods):
            score = _evidence(rec, pod, cpu_known, mem_known)
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


# -- building the snapshot --------------------------------------------------------------------


def _memory_of(blocks: Iterable[ContainerMemory]) -> tuple[MemoryBlock, ...]:
    return tuple(
        MemoryBlock(
            tuple(m.topology.numa_ids()) if m.topology is not None else (), m.memory_type, m.size
        )
        for m in blocks
    )


class _Builder:
    def __init__(self, obs: Observation, config: KubeletConfig) -> None:
        self.obs = obs
        self.config = config
        self.cpu = _cpu_state(obs.cpu)
        self.mem = _memory_state(obs.memory)
        self.notes: list[str] = list(obs.notes)

    # -- one pod ---------------------------------------------------------------------------
    def _cpu_side(
        self, rec: _Recorded | None, pr: PodResources | None, label: str
    ) -> tuple[CPUSet | None, dict[str, tuple[CPUSet, Isolation]]]:
        """The pod entry and each container's (cpuset, isolation) for the CPU manager."""
        out: dict[str, tuple[CPUSet, Isolation]] = {}
        if self.cpu is not None:
            if rec is None:
                return None, out
            listed = {c.name: c for c in pr.containers} if pr is not None else {}
            holders: dict[int, int] = {}
            told: dict[int, set[Isolation]] = {}  # what PodResources says of each set
            for cname, cpus in rec.cpus.items():
                holders[cpus.mask] = holders.get(cpus.mask, 0) + 1
                reported = listed.get(cname)
                if reported is not None:
                    told.setdefault(cpus.mask, set()).add(
                        "container" if reported.cpu_ids else "pod"
                    )
            inferred: list[str] = []
            for cname, cpus in sorted(rec.cpus.items()):
                isolation: Isolation = "container"
                if rec.pod_cpus is not None:
                    reported = listed.get(cname)
                    same = told.get(cpus.mask, set())
                    if reported is not None:
                        isolation = "container" if reported.cpu_ids else "pod"
                    else:
                        inferred.append(cname)
                        if len(same) == 1:
                            (isolation,) = same  # the set of a listed container
                        elif holders[cpus.mask] > 1:
                            isolation = "pod"
                out[cname] = (cpus, isolation)
            if inferred:
                self.notes.append(
                    f"{label}: PodResources does not report the isolation of "
                    f"{', '.join(inferred)}; inferred from the CPU sets (the set of a listed "
                    f"container, else a set several containers hold is the pod shared pool and "
                    f"a set one container holds an exclusive slice: a container alone in the "
                    f"pool, or a regular init container whose slice was reused, looks the same)"
                )
            return rec.pod_cpus, out
        if pr is None:
            return None, out
        # No CPU state: what PodResources reports (podresources.md §7).
        pod_cpus = _cpus(pr.cpu_ids) if pr.cpu_ids else None
        held = 0
        for c in pr.containers:
            if c.cpu_ids:
                cpus = _cpus(c.cpu_ids)
                held |= cpus.mask
                out[c.name] = (cpus, "container")
        if pod_cpus is not None:
            pool = CPUSet.from_mask(pod_cpus.mask & ~held)
            for c in pr.containers:
                if c.name not in out:
                    out[c.name] = (pool, "pod")
        return pod_cpus, out

    def _memory_side(
        self, rec: _Recorded | None, pr: PodResources | None
    ) -> tuple[tuple[MemoryBlock, ...], dict[str, tuple[MemoryBlock, ...]]]:
        if self.mem is not None:
            if rec is None:
                return (), {}
            return rec.pod_memory or (), dict(rec.memory)
        if pr is None:
            return (), {}
        containers = {c.name: _memory_of(c.memory) for c in pr.containers if c.memory}
        return _memory_of(pr.memory), containers

    def pod(
        self, rec: _Recorded | None, pr: PodResources | None, uid: str, key: tuple[str, str]
    ) -> PodAllocation:
        namespace, name = key
        label = f"pod {namespace}/{name}" if pr is not None else f"pod UID {uid}"
        pod_cpus, cpu_side = self._cpu_side(rec, pr, label)
        pod_memory, mem_side = self._memory_side(rec, pr)
        listed = [c.name for c in pr.containers] if pr is not None else []
        listed_set = set(listed)
        known = sorted((set(cpu_side) | set(mem_side)) - listed_set)
        reported = {c.name: c for c in pr.containers} if pr is not None else {}
        containers: list[ContainerAllocation] = []
        for cname in [*known, *listed]:
            kind: ContainerKind = "init" if pr is not None and cname not in listed_set else "app"
            cpus, isolation = cpu_side.get(cname, (CPUSet(), "host"))
            blocks = mem_side.get(cname, ())
            memory_isolation: Isolation | None = None
            if not blocks:
                memory_isolation = "host"
            elif cname in reported and self.mem is not None:
                if reported[cname].memory:
                    memory_isolation = "container"
                elif pod_memory:
                    memory_isolation = "pod"
            containers.append(
                ContainerAllocation(
                    name=cname,
                    kind=kind,
                    cpuset=cpus,
                    isolation=isolation,
                    memory=blocks,
                    memory_isolation=memory_isolation,
                )
            )
        return PodAllocation(
            uid=uid,
            name=name,
            namespace=namespace,
            qos_class="",
            containers=tuple(containers),
            pod_cpuset=pod_cpus,
            pod_memory=pod_memory,
        )


def _numa_memory(state: MemoryCheckpointState | None) -> tuple[NUMAMemoryState, ...]:
    if state is None:
        return ()
    out = []
    for numa_id, node in sorted(state.machine_state.items()):
        tables = {
            name: MemoryTable(t.total, t.system_reserved, t.allocatable, t.reserved, t.free)
            for name, t in sorted(node.memory_map.items())
        }
        out.append(NUMAMemoryState(numa_id, tables, tuple(node.cells), node.number_of_assignments))
    return tuple(out)


def _stale_entries(
    uid: str, cpu: CPUCheckpointState | None, memory: MemoryCheckpointState | None
) -> list[StaleEntry]:
    out: list[StaleEntry] = []
    if cpu is not None:
        if cpu.pod_entries and uid in cpu.pod_entries:
            out.append(StaleEntry(FILE_NAMES["cpu"], uid, None, cpus=cpu.pod_entries[uid]))
        for name, cpus in sorted(cpu.entries.get(uid, {}).items()):
            out.append(StaleEntry(FILE_NAMES["cpu"], uid, name, cpus=cpus))
    if memory is not None:
        if memory.pod_entries and uid in memory.pod_entries:
            blocks = tuple(_block(b) for b in memory.pod_entries[uid])
            out.append(StaleEntry(FILE_NAMES["memory"], uid, None, memory=blocks))
        for name, mblocks in sorted(memory.entries.get(uid, {}).items()):
            blocks = tuple(_block(b) for b in mblocks)
            out.append(StaleEntry(FILE_NAMES["memory"], uid, name, memory=blocks))
    return out


def build_observed_node(obs: Observation) -> ObservedNode:
    """Merge one observation into an ``ObservedNode`` (see the module docstring)."""
    inferred = obs.config is None
    config = obs.config if obs.config is not None else infer_config(obs.cpu, obs.memory)[1]
    b = _Builder(obs, config)
    if inferred:
        b.notes.append(
            "no kubelet configuration was read: the policies shown are the ones the state "
            "files record"
        )
    files = tuple(r.file for r in (obs.cpu, obs.memory) if r is not None)
    for f in files:
        if f.accepted and f.policy_name is not None:
            configured = (
                config.cpu_manager_policy if f.manager == "cpu" else config.memory_manager_policy
            )
            if not inferred and configured != f.policy_name:
                b.notes.append(
                    f"{f.file} records policy {f.policy_name!r} but the configuration says "
                    f"{configured!r}: the kubelet would refuse to start with this pair"
                )
    pr_pods = obs.list_response.pod_resources if obs.list_response is not None else ()
    recorded = _recorded(b.cpu, b.mem)
    matching = _match(recorded, pr_pods, b.cpu is not None, b.mem is not None)
    pod_dirs = set(obs.pod_uids) if obs.pod_uids is not None else None
    pr_known = obs.list_response is not None
    if pod_dirs is None and not pr_known and recorded:
        b.notes.append(
            "stale entries cannot be told: neither the pods directory nor PodResources "
            "could be read"
        )

    pods: list[PodAllocation] = []
    identities: list[PodIdentity] = []
    stale: list[StaleEntry] = []
    matched_pods = {i: uid for uid, i in matching.matched.items()}
    # Named pods (PodResources), by namespace/name.
    order = sorted(range(len(pr_pods)), key=lambda i: (pr_pods[i].namespace, pr_pods[i].name))
    for i in order:
        pr = pr_pods[i]
        uid = matched_pods.get(i, "")
        rec = recorded.get(uid) if uid else None
        pods.append(b.pod(rec, pr, uid, (pr.namespace, pr.name)))
        sources = (SOURCE_CHECKPOINT, SOURCE_PODRESOURCES) if uid else (SOURCE_PODRESOURCES,)
        identities.append(
            PodIdentity(
                uid,
                pr.namespace,
                pr.name,
                f"{pr.namespace}/{pr.name}",
                sources,
                live_dir=(uid in pod_dirs) if uid and pod_dirs is not None else None,
            )
        )
        if not uid and _reports_allocations(pr) and (b.cpu is not None or b.mem is not None):
            b.notes.append(
                f"PodResources reports allocations for pod {pr.namespace}/{pr.name} that no "
                "checkpoint entry matches (the state changed between the reads?)"
            )
    # Pods known by their UID only.
    for uid, rec in recorded.items():
        if uid in matching.matched:
            continue
        live_dir = (uid in pod_dirs) if pod_dirs is not None else None
        is_stale = (
            live_dir is not True
            and (pod_dirs is not None or pr_known)
            and (live_dir is False or uid not in matching.candidates)
        )
        if uid in matching.ambiguous:
            b.notes.append(
                f"pod UID {uid}: its allocations fit several PodResources pods; not joined"
            )
        pods.append(b.pod(rec, None, uid, (UID_ONLY_NAMESPACE, uid)))
        identities.append(
            PodIdentity(
                uid,
                None,
                None,
                f"{UID_ONLY_NAMESPACE}/{uid}",
                (SOURCE_CHECKPOINT,),
                stale=is_stale,
                live_dir=live_dir,
            )
        )
        if is_stale:
            stale.extend(_stale_entries(uid, b.cpu, b.mem))

    snapshot = _snapshot(obs, config, b, tuple(pods))
    pools: Pools | None = None
    if snapshot is not None:
        if obs.list_response is not None and obs.allocatable is not None:
            pools = derive_pools(
                obs.list_response,
                obs.allocatable,
                obs.topology,
                source=SOURCE_PODRESOURCES,
                observed_at=obs.observed_at,
            )
        else:
            pools = pools_from_snapshot(snapshot)
    return ObservedNode(
        name=obs.name,
        observed_at=obs.observed_at,
        snapshot=snapshot,
        sources=obs.sources,
        files=files,
        identities=tuple(identities),
        stale=tuple(stale),
        pools=pools,
        list_response=obs.list_response,
        allocatable=obs.allocatable,
        config_path=obs.config_path,
        config_text=obs.config_text,
        config_inferred=inferred,
        pod_uids=obs.pod_uids,
        notes=tuple(b.notes),
    )


def _reports_allocations(pod: PodResources) -> bool:
    return bool(pod.cpu_ids or pod.memory) or any(c.cpu_ids or c.memory for c in pod.containers)


def _snapshot(
    obs: Observation, config: KubeletConfig, b: _Builder, pods: tuple[PodAllocation, ...]
) -> NodeSnapshot | None:
    topo = obs.topology
    if topo is None:
        return None
    all_cpus = topo.all_cpus
    if b.cpu is not None:
        default = b.cpu.default_cpu_set
        if b.cpu.policy_name == "none":
            default = all_cpus  # the none policy writes an empty set and runs on every CPU
    elif obs.list_response is not None:
        held = 0
        for p in pods:
            held |= p.exclusive_cpus().mask | (p.pod_cpuset.mask if p.pod_cpuset else 0)
        default = CPUSet.from_mask(all_cpus.mask & ~held)
    else:
        default = all_cpus
    if obs.allocatable is not None and obs.allocatable.cpu_ids:
        reserved = all_cpus - _cpus(obs.allocatable.cpu_ids)
    elif config.reserved_system_cpus is not None:
        reserved = config.reserved_system_cpus
    else:
        reserved = CPUSet()
        if config.cpu_manager_policy == "static":
            b.notes.append(
                "the reserved CPUs are unknown: PodResources did not answer and the "
                "configuration has no reservedSystemCPUs"
            )
    stray = [c for c in (reserved | default) if c not in topo.cpu_details]
    if stray:
        b.notes.append(
            f"the kubelet's CPU ids {_cpus(stray)} are not online CPUs of this host's topology"
        )
    if b.cpu is not None:
        source = SOURCE_CHECKPOINT
    elif obs.list_response is not None:
        source = SOURCE_PODRESOURCES
    else:
        source = SOURCE_CHECKPOINT if b.mem is not None else SOURCE_SYSFS
    return NodeSnapshot(
        name=obs.name,
        simulated=False,
        topology=topo,
        config=config,
        reserved_cpus=reserved & all_cpus,
        default_cpuset=default & all_cpus,
        pods=pods,
        memory=_numa_memory(b.mem),
        source=source,
        observed_at=obs.observed_at,
        notes=tuple(b.notes),
    )

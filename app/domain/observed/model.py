"""The values of an observed node (spec ``users.md`` §5.1): where each piece came from
(``SourceStatus``), a state file as observed (``CheckpointFile``: the newest kubelet's refusal
with restoreState's text, as pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
pkg/kubelet/cm/memorymanager/state/state_checkpoint.go (v1.37) word it), who each pod is
(``PodIdentity``), the checkpoint entries of pods the node no longer has (``StaleEntry``,
kubernetes#129819), what the sources returned (``Observation``) and the merged result
(``ObservedNode``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint import ChecksumReport, CPUCheckpointState, MemoryCheckpointState
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.state import Block as MemoryBlock
from app.domain.podresources import (
    AllocatableResourcesResponse,
    ListPodResourcesResponse,
    PodResources,
)
from app.domain.pools import Pools
from app.domain.snapshot import NodeSnapshot
from app.domain.topology.model import CPUTopology

#: Pseudo namespace of a pod known by its UID only (``~`` is not a valid namespace name).
UID_ONLY_NAMESPACE = "~"

SOURCE_PODRESOURCES = "podresources"
SOURCE_CHECKPOINT = "checkpoint"
SOURCE_SYSFS = "sysfs"
SOURCE_CONFIG = "kubelet-config"
#: Every source, in the order pages list them.
SOURCES = (SOURCE_SYSFS, SOURCE_CHECKPOINT, SOURCE_PODRESOURCES, SOURCE_CONFIG)

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

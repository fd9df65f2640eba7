"""A read-only picture of a node's allocations: what pages, state files and PodResources need.

A ``NodeSnapshot`` is produced by a simulated ``Node`` (the engine's own state) or assembled
from what an observed kubelet recorded (its checkpoint files and PodResources answers). The
shapes keep the kubelet's vocabulary: a container's ``cpuset`` is its state-file assignment
(its exclusive CPUs, or for a pod-level pod's shared container, the pod shared pool), and
``isolation`` is ``GetResourceIsolationLevel`` (``container``, ``pod`` or ``host``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.state import Block as MemoryBlock
from app.domain.topology.model import CPUTopology

__all__ = [
    "ContainerAllocation",
    "MemoryBlock",
    "MemoryTable",
    "NUMAMemoryState",
    "NodeSnapshot",
    "PodAllocation",
]

Isolation = Literal["container", "pod", "host"]
ContainerKind = Literal["init", "sidecar", "app"]


@dataclass(frozen=True, slots=True)
class MemoryTable:
    """One NUMA node's accounting for one resource (bytes)."""

    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "systemReserved": self.system_reserved,
            "allocatable": self.allocatable,
            "reserved": self.reserved,
            "free": self.free,
        }


@dataclass(frozen=True, slots=True)
class NUMAMemoryState:
    numa_id: int
    memory_map: dict[str, MemoryTable]
    cells: tuple[int, ...]
    number_of_assignments: int


@dataclass(frozen=True, slots=True)
class ContainerAllocation:
    name: str
    kind: ContainerKind
    cpuset: CPUSet
    isolation: Isolation
    memory: tuple[MemoryBlock, ...] = ()
    cpu_request_milli: int = 0
    cpu_limit_milli: int = 0
    # ``container``: the blocks are this container's alone; ``pod``: they are the pod's shared
    # memory pool (a pod-level pod's container that is not equivalent Guaranteed); ``host``:
    # no memory-manager blocks; ``None``: not recorded (snapshots assembled from observed
    # data), readers then infer it from the CPU figures.
    memory_isolation: Isolation | None = None

    @property
    def exclusive_cpus(self) -> CPUSet:
        """CPUs this container owns alone (level ``container``), else empty."""
        return self.cpuset if self.isolation == "container" else CPUSet()


@dataclass(frozen=True, slots=True)
class PodAllocation:
    uid: str
    name: str
    namespace: str
    qos_class: str
    containers: tuple[ContainerAllocation, ...]
    pod_cpuset: CPUSet | None = None  # the pod's budget (pod entry), pod scope only
    pod_memory: tuple[MemoryBlock, ...] = ()
    pod_level_cpu_milli: int | None = None
    admitted_at: float = 0.0

    @property
    def has_pod_entry(self) -> bool:
        return self.pod_cpuset is not None or bool(self.pod_memory)

    def exclusive_cpus(self) -> CPUSet:
        mask = 0
        for c in self.containers:
            mask |= c.exclusive_cpus.mask
        return CPUSet.from_mask(mask)

    def shared_pool(self) -> CPUSet:
        """The pod shared pool: the pod's budget minus its containers' exclusive CPUs."""
        if self.pod_cpuset is None:
            return CPUSet()
        return self.pod_cpuset - self.exclusive_cpus()


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    name: str
    simulated: bool
    topology: CPUTopology
    config: KubeletConfig
    reserved_cpus: CPUSet
    default_cpuset: CPUSet
    pods: tuple[PodAllocation, ...] = ()
    memory: tuple[NUMAMemoryState, ...] = ()
    source: str = "simulation"
    observed_at: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def allocatable_cpus(self) -> CPUSet:
        """What GetAllocatableResources reports: every CPU minus the reserved ones."""
        return self.topology.all_cpus - self.reserved_cpus

    def pod(self, namespace: str, name: str) -> PodAllocation | None:
        for p in self.pods:
            if p.namespace == namespace and p.name == name:
                return p
        return None

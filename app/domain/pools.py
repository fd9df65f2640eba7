"""Derived CPU and memory pools from a PodResources ``List`` + ``GetAllocatableResources`` pair.

The consumer arithmetic of podresources.md §7, shared by simulated and observed nodes: a
simulated node goes through the same code by building its responses first
(``pools_from_snapshot``), an observed node passes what its kubelet answered.

* Pod shared pool ``PodShared_p = P_p − ⋃_c C_{p,c}`` (empty when the pod reports no
  pod-level ``cpu_ids``).
* CPUs held exclusively by a pod ``E_p = P_p ∪ ⋃_c C_{p,c}`` (a set union: pod-level and
  container-level ids overlap on purpose).
* Node shared pool ``NodeShared = A − ⋃_p E_p`` with ``A`` the allocatable CPUs.
* Reserved CPUs: every CPU of the topology not in ``A`` (unknown without a topology).
* Per NUMA node: ``available[n] = |A ∩ cpus(n)| − |⋃_p E_p ∩ cpus(n)|``, the API carrying no
  CPU→NUMA map (the topology provides it).
* Memory per NUMA node and type: per pod the pod-level blocks if present, else the sum of
  its container blocks; pod-shared memory = pod-level size − Σ exclusive container sizes.
  A block spanning several NUMA nodes is charged to them in ascending order, each up to
  what it has left (the memory manager's own order, allocation.md §3.4); what no node can
  take stays on the last one.

``Pools.to_dict()`` is the JSON shape of users.md §5.3: ``{"reserved", "nodeShared",
"exclusive", "podShared", "perNuma"}`` with every CPU set given as both its list string and
an array of ids (``{"cpus": "2-3", "cpuIds": [2, 3]}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.domain.cpuset import CPUSet
from app.domain.podresources import (
    AllocatableResourcesResponse,
    ContainerMemory,
    ListPodResourcesResponse,
    PodResources,
    build_allocatable_response,
    build_list_response,
    cpu_set_of,
)
from app.domain.snapshot import NodeSnapshot
from app.domain.topology.model import CPUTopology


def cpuset_view(cpus: CPUSet) -> dict[str, Any]:
    """A CPU set as the list string and the ids: ``{"cpus": "0-2", "cpuIds": [0, 1, 2]}``."""
    return {"cpus": str(cpus), "cpuIds": list(cpus)}


@dataclass(frozen=True, slots=True)
class ContainerPool:
    name: str
    cpus: CPUSet  # the container's exclusive CPUs (ContainerResources.cpu_ids)


@dataclass(frozen=True, slots=True)
class PodPool:
    namespace: str
    name: str
    pod_cpus: CPUSet  # P_p (PodResources.cpu_ids, 1.37)
    exclusive_cpus: CPUSet  # E_p = P_p ∪ container cpu_ids
    shared_cpus: CPUSet  # PodShared_p = P_p − container cpu_ids
    containers: tuple[ContainerPool, ...]
    shared_memory: tuple[tuple[str, int], ...] = ()  # (type, bytes) of the pod shared pool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class MemoryAvailability:
    memory_type: str
    allocatable: int
    used: int

    @property
    def available(self) -> int:
        return self.allocatable - self.used

    def to_dict(self) -> dict[str, int]:
        return {"allocatable": self.allocatable, "used": self.used, "available": self.available}


@dataclass(frozen=True, slots=True)
class NUMAPool:
    numa_id: int
    cpus: CPUSet  # every CPU of the node
    allocatable: CPUSet  # A ∩ cpus(n)
    exclusive: CPUSet  # ⋃_p E_p ∩ cpus(n)
    node_shared: CPUSet  # NodeShared ∩ cpus(n)
    reserved: CPUSet  # cpus(n) − A
    memory: tuple[MemoryAvailability, ...] = ()

    @property
    def available(self) -> int:
        return self.allocatable.size() - self.exclusive.size()

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpus": cpuset_view(self.cpus),
            "reserved": cpuset_view(self.reserved),
            "nodeShared": cpuset_view(self.node_shared),
            "exclusive": cpuset_view(self.exclusive),
            "allocatableCpus": self.allocatable.size(),
            "exclusiveCpus": self.exclusive.size(),
            "availableCpus": self.available,
            "memory": {m.memory_type: m.to_dict() for m in self.memory},
        }


@dataclass(frozen=True, slots=True)
class Pools:
    allocatable: CPUSet
    reserved: CPUSet
    node_shared: CPUSet
    pods: tuple[PodPool, ...]
    per_numa: tuple[NUMAPool, ...] = ()
    source: str = "podresources"
    observed_at: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exclusive(self) -> CPUSet:
        mask = 0
        for p in self.pods:
            mask |= p.exclusive_cpus.mask
        return CPUSet.from_mask(mask)

    def pod(self, namespace: str, name: str) -> PodPool | None:
        for p in self.pods:
            if p.namespace == namespace and p.name == name:
                return p
        return None

    def to_dict(self) -> dict[str, Any]:
        exclusive: dict[str, Any] = {}
        pod_shared: dict[str, Any] = {}
        for p in self.pods:
            if p.exclusive_cpus:
                exclusive[p.key] = {
                    **cpuset_view(p.exclusive_cpus),
                    "containers": {c.name: cpuset_view(c.cpus) for c in p.containers if c.cpus},
                }
            if p.pod_cpus or p.shared_memory:
                pod_shared[p.key] = {
                    **cpuset_view(p.shared_cpus),
                    "memory": dict(p.shared_memory),
                }
        return {
            "source": self.source,
            "observedAt": self.observed_at,
            "reserved": cpuset_view(self.reserved),
            "allocatable": cpuset_view(self.allocatable),
            "nodeShared": cpuset_view(self.node_shared),
            "exclusive": exclusive,
            "podShared": pod_shared,
            "perNuma": {str(n.numa_id): n.to_dict() for n in self.per_numa},
        }


def _pod_pool(pod: PodResources) -> PodPool:
    pod_cpus = cpu_set_of(pod.cpu_ids)
    containers = tuple(ContainerPool(c.name, cpu_set_of(c.cpu_ids)) for c in pod.containers)
    container_mask = 0
    for c in containers:
        container_mask |= c.cpus.mask
    shared_memory: dict[str, int] = {}
    for block in pod.memory:
        shared_memory[block.memory_type] = shared_memory.get(block.memory_type, 0) + block.size
    if shared_memory:
        for cr in pod.containers:
            for block in cr.memory:
                if block.memory_type in shared_memory:
                    shared_memory[block.memory_type] -= block.size
    return PodPool(
        namespace=pod.namespace,
        name=pod.name,
        pod_cpus=pod_cpus,
        exclusive_cpus=CPUSet.from_mask(pod_cpus.mask | container_mask),
        shared_cpus=CPUSet.from_mask(pod_cpus.mask & ~container_mask),
        containers=containers,
        shared_memory=tuple(sorted(shared_memory.items())),
    )


def _numa_ids(block: ContainerMemory) -> tuple[int, ...]:
    if block.topology is None:
        return ()
    return tuple(sorted({n.id for n in block.topology.nodes}))


def _memory_per_numa(
    list_response: ListPodResourcesResponse, allocatable: AllocatableResourcesResponse
) -> dict[int, tuple[MemoryAvailability, ...]]:
    capacity: dict[tuple[int, str], int] = {}
    for block in allocatable.memory:
        for n in _numa_ids(block):
            capacity[(n, block.memory_type)] = capacity.get((n, block.memory_type), 0) + block.size
    used: dict[tuple[int, str], int] = {}
    for pod in list_response.pod_resources:
        blocks = pod.memory or tuple(b for c in pod.containers for b in c.memory)
        for block in blocks:
            nodes = _numa_ids(block)
            if not nodes:
                continue
            left = block.size
            for i, n in enumerate(nodes):
                key = (n, block.memory_type)
                room = max(capacity.get(key, 0) - used.get(key, 0), 0)
                take = left if i == len(nodes) - 1 else min(left, room)
                used[key] = used.get(key, 0) + take
                left -= take
                if left == 0:
                    break
    out: dict[int, list[MemoryAvailability]] = {}
    for key in sorted(set(capacity) | set(used), key=lambda k: (k[0], k[1] != "memory", k[1])):
        n, memory_type = key
        out.setdefault(n, []).append(
            MemoryAvailability(memory_type, capacity.get(key, 0), used.get(key, 0))
        )
    return {n: tuple(v) for n, v in out.items()}


def _notes(allocatable_cpus: CPUSet, exclusive_mask: int) -> list[str]:
    """What does not add up: exclusive CPUs the kubelet does not call allocatable, or no
    allocatable CPUs at all."""
    notes: list[str] = []
    if exclusive_mask & ~allocatable_cpus.mask:
        stray = CPUSet.from_mask(exclusive_mask & ~allocatable_cpus.mask)
        notes.append(f"exclusive CPUs outside the allocatable set: {stray}")
    if not allocatable_cpus:
        notes.append("no allocatable CPUs reported (CPU manager policy none?)")
    return notes


def _numa_pools(
    topology: CPUTopology,
    memory: dict[int, tuple[MemoryAvailability, ...]],
    allocatable_cpus: CPUSet,
    exclusive_mask: int,
    node_shared: CPUSet,
    reserved: CPUSet,
) -> tuple[NUMAPool, ...]:
    """The node's pools cut by NUMA node (those with CPUs and those with memory)."""
    out: list[NUMAPool] = []
    for n in sorted(set(topology.numa_node_ids()) | set(memory)):
        node = topology.cpus_of_numa_node(n)
        out.append(
            NUMAPool(
                numa_id=n,
                cpus=node,
                allocatable=node & allocatable_cpus,
                exclusive=CPUSet.from_mask(node.mask & exclusive_mask),
                node_shared=node & node_shared,
                reserved=node & reserved,
                memory=memory.get(n, ()),
            )
        )
    return tuple(out)


def derive_pools(
    list_response: ListPodResourcesResponse,
    allocatable: AllocatableResourcesResponse,
    topology: CPUTopology | None = None,
    *,
    source: str = "podresources",
    observed_at: float = 0.0,
) -> Pools:
    """The pools a node's ``List`` and ``GetAllocatableResources`` answers imply."""
    allocatable_cpus = cpu_set_of(allocatable.cpu_ids)
    pods = tuple(_pod_pool(p) for p in list_response.pod_resources)
    exclusive_mask = 0
    for p in pods:
        exclusive_mask |= p.exclusive_cpus.mask
    node_shared = CPUSet.from_mask(allocatable_cpus.mask & ~exclusive_mask)
    notes = _notes(allocatable_cpus, exclusive_mask)
    memory = _memory_per_numa(list_response, allocatable)
    reserved = CPUSet()
    per_numa: tuple[NUMAPool, ...] = ()
    if topology is not None:
        if allocatable_cpus:
            reserved = topology.all_cpus - allocatable_cpus
        per_numa = _numa_pools(
            topology, memory, allocatable_cpus, exclusive_mask, node_shared, reserved
        )
    return Pools(
        allocatable=allocatable_cpus,
        reserved=reserved,
        node_shared=node_shared,
        pods=pods,
        per_numa=per_numa,
        source=source,
        observed_at=observed_at,
        notes=tuple(notes),
    )


def pools_from_snapshot(snapshot: NodeSnapshot) -> Pools:
    """Pools of a snapshot, derived from the PodResources answers its kubelet would give."""
    return derive_pools(
        build_list_response(snapshot),
        build_allocatable_response(snapshot),
        snapshot.topology,
        source=snapshot.source,
        observed_at=snapshot.observed_at,
    )

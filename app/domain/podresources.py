"""PodResources v1 messages as plain values, and what a kubelet answers for a NodeSnapshot.

The dataclasses mirror the messages of ``proto/podresources/v1/api.proto`` field for field
(proto names, snake_case); ``app.adapters.podresources_pb`` converts them to and from the
generated protobuf classes, ``app.adapters.podresources_json`` to and from canonical JSON. ``None`` stands for an unset message field
(``topology``) and for an unset proto3 ``optional`` (``ClaimResource.share_id``).

The builder follows pkg/kubelet/apis/podresources/server_v1.go and the providers in
pkg/kubelet/cm/container_manager_linux.go (v1.37, with kubernetes#138738 for the pod-level
fields):

* ``List`` reports every pod of the snapshot; each pod lists its sidecars (restartable init
  containers) in spec order, then its app containers in spec order. Regular init containers
  are left out.
* ``ContainerResources.cpu_ids`` holds the container's CPU-manager assignment. From 1.37 only
  isolation level ``container`` reports it (``pod`` and ``host`` report nothing); before 1.37
  the state assignment is reported as is, so a pod-shared-pool container of a 1.36 pod-scope
  pod reports the pod shared pool (the "most likely" 1.36 behaviour of the spec, §5.4).
* ``ContainerResources.memory`` holds the container's memory-manager blocks (``Static``
  policy). From 1.37, inside a pod with a pod-level allocation, only containers with an
  exclusive memory slice report blocks (see ``_has_exclusive_memory``).
* ``PodResources.cpu_ids`` / ``memory`` (from 1.37) hold the pod entry of the CPU / memory
  manager, reported when ``PodLevelResources`` and ``PodLevelResourceManagers`` are on and the
  pod has such an entry; empty otherwise. The topology manager scope is not consulted (the
  providers read the state), so after a restart that changed the scope from ``pod`` to
  ``container`` with the state kept, the pods admitted before still report their entries.
* ``GetAllocatableResources``: every CPU minus the reserved ones (static policy), and one
  memory block per NUMA node and memory type with allocatable > 0 (``Static`` policy).

Ordering (spec §5.9): the kubelet dumps CPU sets unsorted and walks Go maps for memory and
devices, so its order carries no meaning. This builder emits a fixed order: CPU ids
ascending, allocatable memory by NUMA node then ``memory`` before hugepages (by page size),
pods in snapshot order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.domain import releases
from app.domain.cpuset import CPUSet
from app.domain.snapshot import (
    ContainerAllocation,
    MemoryBlock,
    NodeSnapshot,
    PodAllocation,
)
from app.domain.topology.model import hugepage_resource_name

POD_LEVEL_RELEASE = releases.POD_LEVEL_PODRESOURCES_SINCE
#: Releases answering by the 1.37 rules (1.38 = upstream master kept them).
POD_LEVEL_RELEASES = frozenset(r.name for r in releases.TABLE if r.podresources_pod_level)


class PodNotFoundError(LookupError):
    """``Get`` for a pod the kubelet does not know (gRPC status UNKNOWN upstream)."""

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name
        self.message = f"pod {name} in namespace {namespace} not found"
        super().__init__(self.message)


# -- messages ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NUMANode:
    id: int = 0


@dataclass(frozen=True, slots=True)
class TopologyInfo:
    nodes: tuple[NUMANode, ...] = ()

    @classmethod
    def of(cls, numa_ids: tuple[int, ...] | list[int]) -> TopologyInfo:
        return cls(tuple(NUMANode(n) for n in numa_ids))

    def numa_ids(self) -> tuple[int, ...]:
        return tuple(n.id for n in self.nodes)


@dataclass(frozen=True, slots=True)
class ContainerMemory:
    memory_type: str = ""
    size: int = 0
    topology: TopologyInfo | None = None


@dataclass(frozen=True, slots=True)
class ContainerDevices:
    resource_name: str = ""
    device_ids: tuple[str, ...] = ()
    topology: TopologyInfo | None = None


@dataclass(frozen=True, slots=True)
class CDIDevice:
    name: str = ""


@dataclass(frozen=True, slots=True)
class ClaimResource:
    cdi_devices: tuple[CDIDevice, ...] = ()
    driver_name: str = ""
    pool_name: str = ""
    device_name: str = ""
    share_id: str | None = None  # proto3 optional: None = unset, "" = set to empty


@dataclass(frozen=True, slots=True)
class DynamicResource:
    claim_name: str = ""
    claim_namespace: str = ""
    claim_resources: tuple[ClaimResource, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerResources:
    name: str = ""
    devices: tuple[ContainerDevices, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()
    dynamic_resources: tuple[DynamicResource, ...] = ()


@dataclass(frozen=True, slots=True)
class PodResources:
    name: str = ""
    namespace: str = ""
    containers: tuple[ContainerResources, ...] = ()
    cpu_ids: tuple[int, ...] = ()  # 1.37: pod-level exclusive CPUs
    memory: tuple[ContainerMemory, ...] = ()  # 1.37: pod-level memory blocks

    def container(self, name: str) -> ContainerResources | None:
        for c in self.containers:
            if c.name == name:
                return c
        return None


@dataclass(frozen=True, slots=True)
class ListPodResourcesRequest:
    pass


@dataclass(frozen=True, slots=True)
class ListPodResourcesResponse:
    pod_resources: tuple[PodResources, ...] = ()

    def pod(self, namespace: str, name: str) -> PodResources | None:
        for p in self.pod_resources:
            if p.namespace == namespace and p.name == name:
                return p
        return None


@dataclass(frozen=True, slots=True)
class AllocatableResourcesRequest:
    pass


@dataclass(frozen=True, slots=True)
class AllocatableResourcesResponse:
    devices: tuple[ContainerDevices, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()


@dataclass(frozen=True, slots=True)
class GetPodResourcesRequest:
    pod_name: str = ""
    pod_namespace: str = ""


@dataclass(frozen=True, slots=True)
class GetPodResourcesResponse:
    pod_resources: PodResources | None = None


def cpu_set_of(ids: Iterable[int]) -> CPUSet:
    """The CPU set of a message's ``cpu_ids`` (ids taken as given: the adapters bound them)."""
    mask = 0
    for i in ids:
        mask |= 1 << i
    return CPUSet.from_mask(mask)


# -- builder -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """The parts of a kubelet's configuration that shape its PodResources answers."""

    cpu_static: bool = True  # cpuManagerPolicy static: any cpu_ids at all
    memory_static: bool = False  # memoryManagerPolicy Static: any memory at all
    exclusive_only: bool = True  # 1.37 (kubernetes#138738): container fields only for slices
    pod_level: bool = False  # from 1.37, gates on: PodResources.cpu_ids / memory

    @classmethod
    def from_snapshot(cls, snapshot: NodeSnapshot) -> BuildOptions:
        config = snapshot.config
        release_137 = config.release in POD_LEVEL_RELEASES
        return cls(
            cpu_static=config.cpu_manager_policy == "static",
            memory_static=config.memory_manager_policy == "Static",
            exclusive_only=release_137,
            pod_level=release_137 and config.pod_level_resource_managers,
        )


def reports_pod_level(snapshot: NodeSnapshot) -> bool:
    """Whether this kubelet fills ``PodResources.cpu_ids`` / ``memory`` for pods with entries."""
    return BuildOptions.from_snapshot(snapshot).pod_level


# Memory entries by (type, size, NUMA ids): a node has few distinct ones, and the values are
# immutable, so they are shared rather than built for every container (bounded).
_MEMORY_ENTRIES: dict[tuple[str, int, tuple[int, ...]], ContainerMemory] = {}


def _memory_entry(b: MemoryBlock) -> ContainerMemory:
    numa = tuple(b.numa_affinity)
    key = (b.type, b.size, numa)
    entry = _MEMORY_ENTRIES.get(key)
    if entry is None:
        if len(_MEMORY_ENTRIES) >= 4096:
            _MEMORY_ENTRIES.clear()
        entry = _MEMORY_ENTRIES[key] = ContainerMemory(b.type, b.size, TopologyInfo.of(numa))
    return entry


def _memory(blocks: tuple[MemoryBlock, ...]) -> tuple[ContainerMemory, ...]:
    return tuple(_memory_entry(b) for b in blocks) if blocks else ()


# Containers without CPU ids by (name, memory): many containers of a node report only a name
# (sidecars, shared-pool containers), so those values are shared too (bounded).
_CPULESS_CONTAINERS: dict[tuple[str, tuple[ContainerMemory, ...]], ContainerResources] = {}


def _cpuless_container(name: str, memory: tuple[ContainerMemory, ...]) -> ContainerResources:
    key = (name, memory)
    found = _CPULESS_CONTAINERS.get(key)
    if found is None:
        if len(_CPULESS_CONTAINERS) >= 4096:
            _CPULESS_CONTAINERS.clear()
        found = _CPULESS_CONTAINERS[key] = ContainerResources(name, (), (), memory)
    return found


def _has_exclusive_memory(c: ContainerAllocation) -> bool:
    """Whether a container of a pod-level pod holds an exclusive memory slice.

    The engine records it (``memory_isolation``). Snapshots assembled from observed data do
    not know it; exclusive memory goes to "equivalent Guaranteed" containers (cpu and memory
    requests equal to limits and non-zero, integral CPU or not: allocation.md §5.2), so such a
    container counts as memory-exclusive when its CPUs are exclusive or its cpu request
    equals its non-zero cpu limit.
    """
    if c.memory_isolation is not None:
        return c.memory_isolation == "container"
    if c.isolation == "container":
        return True
    return c.cpu_request_milli > 0 and c.cpu_request_milli == c.cpu_limit_milli


def _container_resources(
    options: BuildOptions, c: ContainerAllocation, memory_slices_only: bool
) -> ContainerResources:
    """A container's element: its CPUs at isolation ``container`` (before 1.37 at ``pod``
    too), its memory blocks unless only exclusive memory slices are reported."""
    isolation = c.isolation
    reports_cpus = isolation == "container" or (isolation == "pod" and not options.exclusive_only)
    c_cpus = tuple(c.cpuset) if options.cpu_static and reports_cpus else ()
    c_memory: tuple[ContainerMemory, ...] = ()
    if options.memory_static and c.memory and (not memory_slices_only or _has_exclusive_memory(c)):
        c_memory = _memory(c.memory)
    if c_cpus:
        return ContainerResources(c.name, (), c_cpus, c_memory)
    return _cpuless_container(c.name, c_memory)


def build_pod_resources_with(options: BuildOptions, pod: PodAllocation) -> PodResources:
    """One ``PodResources`` element for a pod under the given kubelet options.

    The sidecars, then the app containers (regular init containers are left out); from 1.37
    a pod with a pod-level allocation reports memory only for containers holding an
    exclusive memory slice, and with ``pod_level`` the pod's own entries."""
    memory_slices_only = options.exclusive_only and pod.has_pod_entry
    sidecars: list[ContainerResources] = []
    apps: list[ContainerResources] = []
    for c in pod.containers:
        if c.kind == "sidecar":
            sidecars.append(_container_resources(options, c, memory_slices_only))
        elif c.kind == "app":
            apps.append(_container_resources(options, c, memory_slices_only))
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()
    if options.pod_level:
        if options.cpu_static and pod.pod_cpuset is not None:
            cpu_ids = tuple(pod.pod_cpuset)
        if options.memory_static:
            memory = _memory(pod.pod_memory)
    return PodResources(
        name=pod.name,
        namespace=pod.namespace,
        containers=tuple(sidecars + apps),
        cpu_ids=cpu_ids,
        memory=memory,
    )


def build_pod_resources(snapshot: NodeSnapshot, pod: PodAllocation) -> PodResources:
    """One ``PodResources`` element as ``List`` and ``Get`` return it."""
    return build_pod_resources_with(BuildOptions.from_snapshot(snapshot), pod)


def build_list_response(snapshot: NodeSnapshot) -> ListPodResourcesResponse:
    """What ``List`` returns: every (active) pod of the snapshot."""
    options = BuildOptions.from_snapshot(snapshot)
    return ListPodResourcesResponse(
        tuple(build_pod_resources_with(options, p) for p in snapshot.pods)
    )


def build_get_response(
    snapshot: NodeSnapshot, namespace: str, name: str
) -> GetPodResourcesResponse:
    """What ``Get`` returns; raises PodNotFoundError with the kubelet's text."""
    pod = snapshot.pod(namespace, name)
    if pod is None:
        raise PodNotFoundError(namespace, name)
    return GetPodResourcesResponse(build_pod_resources(snapshot, pod))


_BINARY_SUFFIXES = {"": 1, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4}


def _memory_type_order(memory_type: str) -> tuple[int, int, str]:
    """``memory`` first, then hugepages by page size (``hugepages-2Mi`` < ``hugepages-1Gi``)."""
    if memory_type == "memory":
        return (0, 0, memory_type)
    size = memory_type.removeprefix("hugepages-")
    digits = size.rstrip("KMGTi")
    unit = _BINARY_SUFFIXES.get(size[len(digits) :])
    if not digits.isdigit() or unit is None:
        return (2, 0, memory_type)
    return (1, int(digits) * unit, memory_type)


def allocatable_memory(snapshot: NodeSnapshot) -> tuple[ContainerMemory, ...]:
    """``GetAllocatableMemory``: one block per NUMA node and type with allocatable > 0.

    Taken from the memory manager's machine state in the snapshot. A snapshot without one
    (a hand-made or observed node) falls back to the start-up arithmetic of the machine
    state: total − reservedMemory, and for ``memory`` also minus the node's hugepages.
    """
    if snapshot.config.memory_manager_policy != "Static":
        return ()
    per_node: list[tuple[int, str, int]] = []
    if snapshot.memory:
        for state in sorted(snapshot.memory, key=lambda s: s.numa_id):
            for memory_type, table in state.memory_map.items():
                per_node.append((state.numa_id, memory_type, table.allocatable))
    else:
        reserved = snapshot.config.reserved_memory_by_numa()
        for node in snapshot.topology.memory:
            res = reserved.get(node.numa_id, {})
            per_node.append(
                (node.numa_id, "memory", node.regular_memory_bytes() - res.get("memory", 0))
            )
            for page_size in sorted(node.hugepages):
                memory_type = hugepage_resource_name(page_size)
                total = node.hugepage_bytes(page_size)
                per_node.append((node.numa_id, memory_type, total - res.get(memory_type, 0)))
    per_node.sort(key=lambda t: (t[0], _memory_type_order(t[1])))
    return tuple(
        ContainerMemory(memory_type, size, TopologyInfo.of((numa_id,)))
        for numa_id, memory_type, size in per_node
        if size > 0
    )


def build_allocatable_response(snapshot: NodeSnapshot) -> AllocatableResourcesResponse:
    """What ``GetAllocatableResources`` returns (devices: none are simulated)."""
    cpu_ids: tuple[int, ...] = ()
    if snapshot.config.cpu_manager_policy == "static":
        cpu_ids = tuple(snapshot.allocatable_cpus)
    return AllocatableResourcesResponse(cpu_ids=cpu_ids, memory=allocatable_memory(snapshot))

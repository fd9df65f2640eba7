"""A simulated node's live state as immutable values (``NodeSnapshot``): per container the CPUs
and memory blocks it holds and how they are isolated, per pod its pod-level CPU set and memory,
per NUMA node the memory manager's tables.

What PodResources (pkg/kubelet/apis/podresources/server_v1.go through the container manager's
``GetCPUs``/``GetMemory``), the state files and the pages read; computed from the CPU manager's
state, its isolation level (cpumanager/policy_static.go ``GetResourceIsolationLevel``) and the
memory manager's state, never from the pod's requests alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.memory_manager import MemoryManager
from app.domain.pod.model import Container, Pod
from app.domain.pod.qos import is_container_equivalent_qos_guaranteed, pod_qos_class
from app.domain.snapshot import (
    ContainerAllocation,
    ContainerKind,
    Isolation,
    MemoryBlock,
    MemoryTable,
    NodeSnapshot,
    NUMAMemoryState,
    PodAllocation,
)
from app.domain.topology.model import CPUTopology


class Node(Protocol):
    """What a snapshot reads of ``app.domain.node.model.Node`` (a protocol: no import back)."""

    name: str
    topology: CPUTopology
    config: KubeletConfig
    clock: Callable[[], float]
    pods: dict[str, Pod]
    admitted_at: dict[str, float]
    cpu_policy: StaticPolicy | None
    cpu_state: CPUManagerState
    memory: MemoryManager | None

    @property
    def reserved_cpus(self) -> CPUSet: ...


def container_allocation(
    node: Node, pod: Pod, container: Container, kind: ContainerKind
) -> ContainerAllocation:
    cset = node.cpu_state.get_cpu_set(pod.uid, container.name)
    isolation: Isolation = "host"
    if node.cpu_policy is not None and cset is not None:
        isolation = node.cpu_policy.get_resource_isolation_level(node.cpu_state, pod, container)
    blocks: tuple[MemoryBlock, ...] = ()
    memory_isolation: Isolation = "host"
    if node.memory is not None:
        blocks = node.memory.state.get_memory_blocks(pod.uid, container.name) or ()
        if blocks:
            pod_entry = node.memory.state.get_pod_memory_blocks(pod.uid)
            shared = pod_entry is not None and not is_container_equivalent_qos_guaranteed(container)
            memory_isolation = "pod" if shared else "container"
    return ContainerAllocation(
        name=container.name,
        kind=kind,
        cpuset=cset if cset is not None else CPUSet(),
        isolation=isolation,
        memory=blocks,
        cpu_request_milli=container.cpu_request_milli(),
        cpu_limit_milli=container.cpu_limit_milli(),
        memory_isolation=memory_isolation,
    )


def pod_allocation(node: Node, pod: Pod, admitted_at: float) -> PodAllocation:
    containers = [
        container_allocation(node, pod, c, "sidecar" if c.is_sidecar else "init")
        for c in pod.init_containers
    ]
    containers += [container_allocation(node, pod, c, "app") for c in pod.containers]
    pod_memory: tuple[MemoryBlock, ...] = ()
    if node.memory is not None:
        pod_memory = node.memory.state.get_pod_memory_blocks(pod.uid) or ()
    pod_cpu = None
    if pod.resources is not None and "cpu" in pod.resources.requests:
        pod_cpu = pod.resources.requests["cpu"].milli_value()
    return PodAllocation(
        uid=pod.uid,
        name=pod.name,
        namespace=pod.namespace,
        qos_class=pod_qos_class(pod, node.config.gate("PodLevelResources")),
        containers=tuple(containers),
        pod_cpuset=node.cpu_state.get_pod_cpu_set(pod.uid),
        pod_memory=pod_memory,
        pod_level_cpu_milli=pod_cpu,
        admitted_at=admitted_at,
    )


def numa_memory(node: Node) -> tuple[NUMAMemoryState, ...]:
    if node.memory is None:
        return ()
    out = []
    for numa_id, state in sorted(node.memory.state.machine_state.items()):
        tables = {
            name: MemoryTable(
                t.total_mem_size, t.system_reserved, t.allocatable, t.reserved, t.free
            )
            for name, t in sorted(state.memory_map.items())
        }
        out.append(
            NUMAMemoryState(numa_id, tables, tuple(state.cells), state.number_of_assignments)
        )
    return tuple(out)


def node_snapshot(node: Node) -> NodeSnapshot:
    """Everything a page, a state file or PodResources needs, as immutable values."""
    pods = tuple(pod_allocation(node, p, node.admitted_at[p.uid]) for p in node.pods.values())
    return NodeSnapshot(
        name=node.name,
        simulated=True,
        topology=node.topology,
        config=node.config,
        reserved_cpus=node.reserved_cpus,
        default_cpuset=node.cpu_state.default_cpuset,
        pods=pods,
        memory=numa_memory(node),
        source="simulation",
        observed_at=node.clock(),
    )

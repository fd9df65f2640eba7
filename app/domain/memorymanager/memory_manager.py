"""The memory manager as a topology-manager hint provider
(follows pkg/kubelet/cm/memorymanager/memory_manager.go and policy_none.go, v1.37).

``MemoryManager`` binds a policy to a ``MemoryManagerState`` and implements the
``HintProvider`` protocol of ``app.domain.topologymanager.scope`` (``get_topology_hints``,
``get_pod_topology_hints``, ``allocate``, ``allocate_pod``) plus ``remove_container`` and
``add_container`` (a container starting releases the regular init containers before it).

``new_memory_manager`` does ``NewManager``'s checks: the policy name (``None`` or ``Static``;
``unknown policy: "<name>"``) and, for ``Static``, ``getSystemReservedMemory``: every
``reservedMemory`` entry names an existing NUMA node and, per resource, the entries add up to
the node-allocatable reservation (kube-reserved + system-reserved, plus the hard eviction
threshold for ``memory``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from app.domain.errors import DomainError
from app.domain.golang.strconv import go_quote
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.machine import NUMANodeInfo, machine_nodes_from_topology
from app.domain.memorymanager.policy_static import POLICY_TYPE_STATIC, StaticPolicy
from app.domain.memorymanager.state import Block, MemoryManagerState
from app.domain.pod.model import Container, Pod
from app.domain.quantity import BINARY_SI, DECIMAL_SI, Quantity
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.hint import ProviderHints
from app.domain.topologymanager.scope import Store

POLICY_TYPE_NONE = "None"


class MemoryManagerConfigError(DomainError):
    """The memory manager cannot be built; ``message`` is the kubelet's text."""


class MemoryReservationLike(Protocol):
    """A ``reservedMemory`` entry: ``numa_node`` and ``limits`` (resource -> bytes)."""

    @property
    def numa_node(self) -> int: ...

    @property
    def limits(self) -> Mapping[str, int]: ...


@dataclass(frozen=True, slots=True)
class MemoryReservation:
    numa_node: int
    limits: Mapping[str, int]


class NonePolicy:
    """``policyNone``: no hints, no allocations."""

    name = POLICY_TYPE_NONE

    def start(self, state: MemoryManagerState) -> None:
        return None

    def get_topology_hints(
        self, state: MemoryManagerState, pod: Pod, container: Container
    ) -> ProviderHints | None:
        return None

    def get_pod_topology_hints(self, state: MemoryManagerState, pod: Pod) -> ProviderHints | None:
        return None

    def allocate(self, state: MemoryManagerState, pod: Pod, container: Container) -> None:
        return None

    def allocate_pod(self, state: MemoryManagerState, pod: Pod) -> None:
        return None

    def remove_container(self, state: MemoryManagerState, pod_uid: str, name: str) -> None:
        return None

    def get_allocatable_memory(self, state: MemoryManagerState) -> list[Block]:
        return []


def _quantity_text(n: int) -> str:
    """How the kubelet prints a summed reservation: the format of the first addend wins, and
    a zero sum prints ``0``; byte sums of binary quantities print in binary SI."""
    fmt = BINARY_SI if n and n % 1024 == 0 else DECIMAL_SI
    return str(Quantity.from_int(n, fmt))


def get_system_reserved_memory(
    numa_ids: Iterable[int],
    node_allocatable_reservation: Mapping[str, int],
    reserved_memory: Iterable[MemoryReservationLike],
) -> dict[int, dict[str, int]]:
    """``getSystemReservedMemory``: validate ``reservedMemory`` and return bytes per node."""
    nodes = set(numa_ids)
    entries = list(reserved_memory)
    totals: dict[str, int] = {}
    for r in entries:
        if r.numa_node not in nodes:
            raise MemoryManagerConfigError(
                f"the reserved memory configuration references a NUMA node {r.numa_node} that "
                "does not exist on this machine"
            )
        for name, size in r.limits.items():
            totals[name] = totals.get(name, 0) + int(size)
    names = set(totals) | {
        n for n in node_allocatable_reservation if n == "memory" or n.startswith("hugepages-")
    }
    for name in sorted(names):
        allocatable = int(node_allocatable_reservation.get(name, 0))
        reserved = totals.get(name, 0)
        if allocatable != reserved:
            raise MemoryManagerConfigError(
                f"the total amount {go_quote(_quantity_text(reserved))} of type "
                f"{go_quote(name)} is not equal to the value "
                f"{go_quote(_quantity_text(allocatable))} determined by Node Allocatable feature"
            )
    out: dict[int, dict[str, int]] = {n: {} for n in sorted(nodes)}
    for r in entries:
        for name, size in r.limits.items():
            out[r.numa_node][name] = int(size)
    return out


class MemoryManager:
    """``manager``: a policy plus its state; a topology-manager hint provider."""

    def __init__(
        self,
        policy: StaticPolicy | NonePolicy,
        state: MemoryManagerState | None = None,
    ) -> None:
        self.policy = policy
        self.state = state if state is not None else MemoryManagerState()

    @property
    def policy_name(self) -> str:
        return self.policy.name

    def start(self) -> None:
        """``Start``: validate (or initialise) the state."""
        self.policy.start(self.state)

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints | None:
        hints = self.policy.get_topology_hints(self.state, pod, container)
        return None if hints is None else dict(hints)

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints | None:
        hints = self.policy.get_pod_topology_hints(self.state, pod)
        return None if hints is None else dict(hints)

    def allocate(self, pod: Pod, container: Container) -> None:
        self.policy.allocate(self.state, pod, container)

    def allocate_pod(self, pod: Pod) -> None:
        self.policy.allocate_pod(self.state, pod)

    def remove_container(self, pod_uid: str, container_name: str) -> None:
        self.policy.remove_container(self.state, pod_uid, container_name)

    def remove_pod(self, pod: Pod) -> None:
        """Remove every container of a pod (init containers first)."""
        for c in pod.all_containers():
            self.remove_container(pod.uid, c.name)

    def add_container(self, pod: Pod, container_name: str) -> None:
        """``AddContainer``: a starting container releases the regular init containers that
        ran before it (sidecars keep their memory)."""
        for init in pod.init_containers:
            if init.name == container_name:
                break
            if init.is_sidecar:
                continue
            self.remove_container(pod.uid, init.name)

    def get_memory(self, pod_uid: str, container_name: str) -> tuple[Block, ...] | None:
        return self.state.get_memory_blocks(pod_uid, container_name)

    def get_memory_numa_nodes(self, pod: Pod, container: Container) -> set[int] | None:
        """``GetMemoryNUMANodes``: the nodes of the container's blocks, ``None`` when none."""
        nodes = {
            n
            for b in self.state.get_memory_blocks(pod.uid, container.name) or ()
            for n in b.numa_affinity
        }
        return nodes or None

    def get_allocatable_memory(self) -> list[Block]:
        return self.policy.get_allocatable_memory(self.state)


def new_memory_manager(
    policy_name: str,
    topology: CPUTopology | Iterable[NUMANodeInfo],
    *,
    node_allocatable_reservation: Mapping[str, int] | None = None,
    reserved_memory: Iterable[MemoryReservationLike] = (),
    affinity: Store | None = None,
    state: MemoryManagerState | None = None,
    pod_level_resources: bool = True,
    pod_level_resource_managers: bool = False,
    release: str | None = None,
) -> MemoryManager:
    """``NewManager``: build the policy (its configuration errors raised) and the manager."""
    if policy_name == POLICY_TYPE_NONE:
        return MemoryManager(NonePolicy(), state)
    if policy_name != POLICY_TYPE_STATIC:
        raise MemoryManagerConfigError(f"unknown policy: {go_quote(policy_name)}")
    nodes = (
        machine_nodes_from_topology(topology)
        if isinstance(topology, CPUTopology)
        else tuple(topology)
    )
    reserved = get_system_reserved_memory(
        [n.numa_id for n in nodes], node_allocatable_reservation or {}, reserved_memory
    )
    try:
        policy = StaticPolicy(
            nodes,
            reserved,
            affinity,
            pod_level_resources=pod_level_resources,
            pod_level_resource_managers=pod_level_resource_managers,
            **({} if release is None else {"release": release}),
        )
    except MemoryManagerError as exc:
        raise MemoryManagerConfigError(exc.message) from None
    return MemoryManager(policy, state)

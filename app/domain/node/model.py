"""A simulated node: topology + kubelet configuration + the three resource managers.

Follows how pkg/kubelet/cm/container_manager_linux.go wires the managers (v1.37): the
topology manager is the pod admit handler, the CPU manager and then the memory manager are its
hint providers, each reading the merged hint of a container from the topology manager's store.

``Node.admit`` is all-or-nothing: the managers work on copies of their state and the copies
replace the live state only when the pod is admitted, so a rejection changes nothing (the
kubelet itself may leave partial allocations of a rejected pod until its cleanup loop runs;
a simulator must not). ``dry_run`` answers exactly like ``admit`` and keeps nothing, not even
the managers' metric counters (a rejected ``admit`` keeps its error counts, as the kubelet's).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from app.domain.admission import AdmissionError, UnexpectedAdmissionError
from app.domain.cpumanager.errors import CPUManagerStateError
from app.domain.cpumanager.policy_options import CPUManagerPolicyError
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.deadline import DeadlineExceededError
from app.domain.errors import FieldError
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.memory_manager import (
    MemoryManager,
    MemoryManagerConfigError,
    new_memory_manager,
)
from app.domain.memorymanager.state import MemoryManagerState
from app.domain.node.snapshot import node_snapshot, pod_allocation
from app.domain.pod.model import Container, Pod
from app.domain.snapshot import NodeSnapshot, PodAllocation
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.topology_manager import (
    TopologyManager,
    TopologyManagerConfig,
    TopologyManagerConfigError,
    new_manager,
)


class NodeError(FieldError):
    """A node operation that is not an admission decision (unknown pod, duplicate pod)."""


@dataclass(frozen=True, slots=True)
class AdmissionResult:
    """What the kubelet decided for a pod."""

    admitted: bool
    pod_uid: str
    namespace: str
    name: str
    reason: str = ""
    message: str = ""
    allocation: PodAllocation | None = None
    hints: dict[str, TopologyHint] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "admitted": self.admitted,
            "pod": {"uid": self.pod_uid, "namespace": self.namespace, "name": self.name},
        }
        if not self.admitted:
            d["reason"] = self.reason
            d["message"] = self.message
        else:
            d["hints"] = {name: h.to_dict() for name, h in self.hints.items()}
        return d


class _CPUProvider:
    """The CPU manager as a topology-manager hint provider (``cpu_manager.go``)."""

    def __init__(self, node: Node, policy: StaticPolicy, tm: TopologyManager) -> None:
        self.node = node
        self.policy = policy
        self.tm = tm

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints | None:
        return self.policy.get_topology_hints(self.node.cpu_state, pod, container)

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints | None:
        return self.policy.get_pod_topology_hints(self.node.cpu_state, pod)

    def allocate(self, pod: Pod, container: Container) -> None:
        hint = self.tm.get_affinity(pod.uid, container.name)
        self.policy.allocate(self.node.cpu_state, pod, container, hint)

    def allocate_pod(self, pod: Pod) -> None:
        self.policy.allocate_pod(self.node.cpu_state, pod, self.tm.scope.hints_of(pod))


def _new_cpu_manager(
    topology: CPUTopology, config: KubeletConfig, gates: Mapping[str, bool]
) -> tuple[StaticPolicy | None, CPUManagerState]:
    """The CPU manager's policy (``None`` for ``none``) and its started state; the reserved
    CPUs must be on the machine, and a policy error names the configuration field."""
    reserved = config.reserved_system_cpus
    if reserved is not None and not reserved.is_subset_of(topology.all_cpus):
        outside = reserved - topology.all_cpus
        raise KubeletConfigError(
            "reservedSystemCPUs",
            f"reserved CPUs {outside} are not on this machine (CPUs {topology.all_cpus})",
        )
    if config.cpu_manager_policy != "static":
        return None, CPUManagerState(default_cpuset=topology.all_cpus)
    # --reserved-cpus overrides the cpu of kube/system-reserved (cmd/kubelet server.go).
    num_reserved = reserved.size() if reserved else config.num_reserved_cpus()
    try:
        policy = StaticPolicy(
            topology,
            num_reserved,
            reserved,
            config.cpu_manager_policy_options,
            topology_manager_policy=config.topology_manager_policy,
            feature_gates=gates,
            release=config.release,
        )
        state = CPUManagerState()
        policy.start(state)
    except CPUManagerPolicyError as exc:
        raise KubeletConfigError("cpuManagerPolicyOptions", str(exc)) from None
    except CPUManagerStateError as exc:
        raise KubeletConfigError("cpuManagerPolicy", exc.message) from None
    return policy, state


def _new_topology_manager(
    topology: CPUTopology, config: KubeletConfig, gates: Mapping[str, bool]
) -> TopologyManager:
    try:
        return new_manager(
            topology,
            TopologyManagerConfig(
                policy=config.topology_manager_policy,
                scope=config.topology_manager_scope,
                options=config.topology_manager_policy_options,
                feature_gates=gates,
            ),
            pod_level_resource_managers=config.pod_level_resource_managers,
        )
    except TopologyManagerConfigError as exc:
        raise KubeletConfigError(exc.field, exc.message) from None


def _new_memory_manager(
    topology: CPUTopology, config: KubeletConfig, affinity: TopologyManager
) -> MemoryManager | None:
    """The started memory manager of the ``Static`` policy (``None`` for ``None``)."""
    if config.memory_manager_policy != "Static":
        return None
    try:
        memory = new_memory_manager(
            "Static",
            topology,
            node_allocatable_reservation=config.node_allocatable_memory_reservation(),
            reserved_memory=config.reserved_memory,
            affinity=affinity,
            pod_level_resources=config.gate("PodLevelResources"),
            pod_level_resource_managers=config.pod_level_resource_managers,
            release=config.release,
        )
        memory.start()
    except (MemoryManagerConfigError, MemoryManagerError) as exc:
        raise KubeletConfigError("reservedMemory", str(exc)) from None
    return memory


class Node:
    """One node whose pods are admitted by a kubelet-faithful engine."""

    def __init__(
        self,
        name: str,
        topology: CPUTopology,
        config: KubeletConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.topology = topology
        self.config = config
        self.clock = clock
        self.pods: dict[str, Pod] = {}
        self.admitted_at: dict[str, float] = {}
        # uid by ``namespace/name`` of the pods above: a lookup by name must not scan a full
        # node on every admission. Only ``keep`` and ``remove`` change either.
        self._uid_by_key: dict[str, str] = {}
        gates = config.gates()
        self.cpu_policy, self.cpu_state = _new_cpu_manager(topology, config, gates)
        self.topology_manager = _new_topology_manager(topology, config, gates)
        self.memory = _new_memory_manager(topology, config, self.topology_manager)
        # Providers in the kubelet's registration order: CPU manager, then memory manager.
        if self.cpu_policy is not None:
            self.topology_manager.add_hint_provider(
                _CPUProvider(self, self.cpu_policy, self.topology_manager)
            )
        if self.memory is not None:
            self.topology_manager.add_hint_provider(self.memory)

    # -- queries -----------------------------------------------------------------------
    @property
    def reserved_cpus(self) -> CPUSet:
        return self.cpu_policy.reserved_cpus if self.cpu_policy else CPUSet()

    def find_pod(self, key: str) -> Pod | None:
        """A pod by uid or by ``namespace/name``."""
        if key in self.pods:
            return self.pods[key]
        uid = self._uid_by_key.get(key)
        return None if uid is None else self.pods[uid]

    @property
    def pod_keys(self) -> AbstractSet[str]:
        """The ``namespace/name`` of every pod on the node (a live view)."""
        return self._uid_by_key.keys()

    def keep(self, pod: Pod, admitted_at: float) -> None:
        """Record ``pod`` as on the node since ``admitted_at`` (its resources are the
        managers' business: an admission or a restored state has already placed them)."""
        self.pods[pod.uid] = pod
        self._uid_by_key[pod.key] = pod.uid
        self.admitted_at[pod.uid] = admitted_at

    # -- admission ---------------------------------------------------------------------
    def admit(self, pod: Pod) -> AdmissionResult:
        """Admit a pod as the kubelet would; on rejection nothing changes."""
        return self._admit(pod, commit=True)

    def dry_run(self, pod: Pod) -> AdmissionResult:
        """The answer ``admit`` would give, without keeping anything."""
        return self._admit(pod, commit=False)

    def readmit(self, pod: Pod, admitted_at: float) -> AdmissionResult:
        """Admit a pod again after a kubelet restart, keeping its admission time. The caller
        vouches that the pods it re-admits are distinct (a checked record), so no name is
        checked; the answer carries no allocation view."""
        result = self._admit(pod, commit=True, checked=True)
        if result.admitted:
            self.admitted_at[pod.uid] = admitted_at
        return result

    def _admit(self, pod: Pod, *, commit: bool, checked: bool = False) -> AdmissionResult:
        if pod.uid in self.pods:
            raise NodeError(f"pod with uid {pod.uid} is already admitted", "metadata.uid")
        if not checked and self.find_pod(pod.key) is not None:
            raise NodeError(f"pod {pod.key} is already admitted", "metadata.name")

        saved = self._save()
        # A dry run is no kubelet event: the managers' counters stay as they were.
        counters = None if commit else self._save_metrics()
        try:
            return self._attempt(pod, saved, commit, checked)
        finally:
            if counters is not None:
                self._restore_metrics(counters)

    def _attempt(
        self, pod: Pod, saved: tuple[object, ...], commit: bool, checked: bool
    ) -> AdmissionResult:
        try:
            hints = self.topology_manager.admit(pod)
            if self.memory is not None:
                # The pod starts: each starting container releases the memory of the regular
                # init containers before it (memory manager AddContainer).
                for container in pod.all_containers():
                    self.memory.add_container(pod, container.name)
        except AdmissionError as err:
            self._restore(saved, pod)
            return AdmissionResult(False, pod.uid, pod.namespace, pod.name, err.reason, err.message)
        except DeadlineExceededError:  # stopped, not judged: keep nothing, tell the caller
            self._restore(saved, pod)
            raise
        except (ValueError, LookupError) as err:  # an engine failure the kubelet would wrap
            self._restore(saved, pod)
            wrapped = UnexpectedAdmissionError.wrap(err)
            return AdmissionResult(
                False, pod.uid, pod.namespace, pod.name, wrapped.reason, wrapped.message
            )
        now = self.clock()
        allocation = None if checked else pod_allocation(self, pod, now)
        if commit:
            self.keep(pod, now)
        else:
            self._restore(saved, pod)
        return AdmissionResult(
            True, pod.uid, pod.namespace, pod.name, allocation=allocation, hints=hints
        )

    def _save(self) -> tuple[object, ...]:
        reuse = dict(self.cpu_policy.cpus_to_reuse) if self.cpu_policy else {}
        mem_state: MemoryManagerState | None = None
        mem_reuse: object = None
        if self.memory is not None:
            # Shares the node states: the policy replaces them, never changes them in place.
            mem_state = self.memory.state.snapshot()
            mem_reuse = copy.deepcopy(
                getattr(self.memory.policy, "init_containers_reusable_memory", None)
            )
        return (self.cpu_state.copy(), reuse, mem_state, mem_reuse)

    def _save_metrics(self) -> tuple[object, object]:
        cpu = self.cpu_policy.metrics.copy() if self.cpu_policy else None
        policy = self.memory.policy if self.memory is not None else None
        metrics = getattr(policy, "metrics", None)
        mem = metrics.copy() if metrics is not None else None
        return (cpu, mem)

    def _restore_metrics(self, saved: tuple[object, object]) -> None:
        cpu, mem = saved
        if self.cpu_policy is not None and cpu is not None:
            self.cpu_policy.metrics = cpu  # type: ignore[assignment]
        if self.memory is not None and mem is not None:
            self.memory.policy.metrics = mem  # type: ignore[union-attr]

    def _restore(self, saved: tuple[object, ...], pod: Pod) -> None:
        """Undo everything an admission attempt did (counters of failures stay: they count
        real events, as the kubelet's do)."""
        cpu_state, reuse, mem_state, mem_reuse = saved
        assert isinstance(cpu_state, CPUManagerState)
        self.cpu_state = cpu_state
        if self.cpu_policy is not None:
            self.cpu_policy.cpus_to_reuse = reuse  # type: ignore[assignment]
        if self.memory is not None and isinstance(mem_state, MemoryManagerState):
            self.memory.state = mem_state
            if mem_reuse is not None:
                self.memory.policy.init_containers_reusable_memory = mem_reuse  # type: ignore[union-attr]
        self.topology_manager.remove_pod(pod.uid)

    def admit_all(self, pods: Iterable[Pod]) -> list[AdmissionResult]:
        return [self.admit(p) for p in pods]

    def remove(self, key: str) -> Pod:
        """Remove a pod (by uid or ``namespace/name``): every container, then the pod."""
        pod = self.find_pod(key)
        if pod is None:
            raise NodeError(f"pod {key} is not on node {self.name}", "pod")
        self.release_resources(pod)
        del self.pods[pod.uid]
        del self._uid_by_key[pod.key]
        self.admitted_at.pop(pod.uid, None)
        return pod

    def release_resources(self, pod: Pod) -> None:
        """Give back what the managers hold for ``pod``, admitted or not (a pod rejected when
        the kubelet restarts leaves its checkpointed entries: the managers' stale-state
        cleanup returns them, as this does)."""
        for container in pod.all_containers():
            if self.cpu_policy is not None:
                self.cpu_policy.remove_container(self.cpu_state, pod.uid, container.name)
            if self.memory is not None:
                self.memory.remove_container(pod.uid, container.name)
            self.topology_manager.remove_container(pod.uid, container.name)
        if self.cpu_policy is not None:
            self.cpu_policy.cpus_to_reuse.pop(pod.uid, None)
        if self.memory is not None and self.memory.policy is not None:
            reusable = getattr(self.memory.policy, "init_containers_reusable_memory", None)
            if isinstance(reusable, dict):
                reusable.pop(pod.uid, None)
        self.topology_manager.remove_pod(pod.uid)

    # -- views -------------------------------------------------------------------------
    def snapshot(self) -> NodeSnapshot:
        """Everything a page, a state file or PodResources needs, as immutable values."""
        return node_snapshot(self)

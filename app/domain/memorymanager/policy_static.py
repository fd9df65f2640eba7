"""Static memory manager policy (follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37,
the code line with KEP-5526 ``AllocatePod``; per release through ``app.domain.releases``):

* from 1.37, kubernetes#138770 (content id 68686888954 against the pre-change 4195507488):
  ``Allocate`` returns right after reading the container's requests when it requests no memory
  (no pinning count, no default hint, no state change) and ``GetTopologyHints`` returns nil for
  such a container. 1.36 still runs ``Allocate`` for it: in the container scope a pod-level
  pod's containers without exclusive memory then fail on the default hint or on the
  single/cross-NUMA rule (the documentation tutorial's ``container-scope-mixed`` pod);
* 1.38 = master adds kubernetes#141077 (a restored pod allocation is kept on re-admission) and
  kubernetes#141070 (``GetPodTopologyHints`` regenerates a pod-level pod's hint from its pod
  blocks, and a container-level pod's from the first container with blocks against that
  container's own requests; test ``TestMemoryManagerRestoreState``, content id 68452152110).

The policy holds configuration (the machine's NUMA memory, the per-NUMA system reservation,
the topology manager's hint store, the pod-level feature gates) and the in-memory
init-container reuse bookkeeping; the state is passed in. Every method that changes state
works on a copy of the machine state and stores it back only on success. This module owns the
policy's entry points and the gates; the work is done by its sibling modules:

* ``get_default_machine_state`` (§3.1) - ``app.domain.memorymanager.machine``;
* ``start``: ``validateState`` (§3.5) - ``app.domain.memorymanager.state_validation``;
* ``get_topology_hints`` / ``get_pod_topology_hints`` (§3.3, §5.4) and ``calculate_hints`` -
  ``app.domain.memorymanager.hints``;
* ``allocate`` (§3.4) with the default hint, hint extension, the single/cross-NUMA violation
  check (``hints.resolve_hint``), init-container reuse and the shrinking of earlier init
  containers' blocks (``app.domain.memorymanager.init_reuse``);
* ``allocate_pod`` (§5.5): one NUMA-aligned pod budget, partitioned arithmetically, and
  ``validate_pod_scope_resources`` (§5.3) - ``app.domain.memorymanager.pod_allocation``;
* requests in bytes - ``app.domain.memorymanager.requests``;
* ``remove_container`` (§3.4, §5.7);
* ``metrics``: the kubelet's memory manager counters (``app.domain.memorymanager.metrics``).

Where Go's map order reaches an output we use resource-name order: blocks of a container are
listed by resource name, and with several failing budget types the first in name order is
reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.domain import releases
from app.domain.admission import EmptyPodSharedPoolError
from app.domain.cpumanager.metrics import ASSIGNMENT_NODE_EXCLUSIVE, SOURCE_NODE, SOURCE_POD
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.hints import (
    ZERO_HINT,
    HintMap,
    calculate_hints,
    regenerate_hints,
    resolve_hint,
)
from app.domain.memorymanager.init_reuse import (
    ReusableMemory,
    pod_reusable_memory,
    update_init_containers_memory_blocks,
    update_pod_reusable_memory,
)
from app.domain.memorymanager.machine import (
    NUMANodeInfo,
    default_machine_state,
    machine_nodes_from_topology,
    release_blocks,
    update_machine_state,
)
from app.domain.memorymanager.metrics import MemoryManagerMetrics
from app.domain.memorymanager.pod_allocation import partition_pod_budget, pod_scope_budget_error
from app.domain.memorymanager.requests import (
    container_requested_resources,
    pod_requested_resources,
)
from app.domain.memorymanager.state import (
    Block,
    MemoryManagerState,
    NUMANodeMap,
    NUMANodeState,
)
from app.domain.memorymanager.state_validation import validate_state
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.model import RESOURCE_MEMORY, Container, Pod
from app.domain.pod.qos import QOS_GUARANTEED, is_pod_level_resources_set, pod_qos_class
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.bitmask import bits
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.scope import Store

__all__ = ["POLICY_TYPE_STATIC", "StaticPolicy"]

POLICY_TYPE_STATIC = "Static"


class StaticPolicy:
    """``staticPolicy``."""

    name = POLICY_TYPE_STATIC

    def __init__(
        self,
        machine_nodes: Iterable[NUMANodeInfo] | CPUTopology = (),
        system_reserved: Mapping[int, Mapping[str, int]] | None = None,
        affinity: Store | None = None,
        *,
        pod_level_resources: bool = True,
        pod_level_resource_managers: bool = False,
        release: str = DEFAULT_RELEASE,
    ) -> None:
        """``NewPolicyStatic``: the reserved ``memory`` summed over nodes must be positive."""
        self.release = release
        self.restores_pods = releases.has(release, releases.MEMORY_POD_RESTORE)
        self.pod_hints_from_pod_blocks = releases.has(release, releases.MEMORY_POD_HINTS)
        self.skips_no_request = releases.has(release, releases.MEMORY_SKIP_NO_REQUEST)
        self.pod_budget_init_check = not releases.has(
            release, releases.POD_BUDGET_WITHOUT_INIT_CHECK
        )
        reserved = {int(n): dict(r) for n, r in (system_reserved or {}).items()}
        total = sum(r.get(RESOURCE_MEMORY, 0) for r in reserved.values())
        if total <= 0:
            raise MemoryManagerError(
                "[memorymanager] you should specify the system reserved memory"
            )
        if isinstance(machine_nodes, CPUTopology):
            machine_nodes = machine_nodes_from_topology(machine_nodes)
        self.machine_nodes: tuple[NUMANodeInfo, ...] = tuple(machine_nodes)
        self.system_reserved = reserved
        self.affinity = affinity
        self.pod_level_resources = pod_level_resources
        self.pod_level_resource_managers = pod_level_resource_managers
        # pod uid -> NUMA mask -> resource -> bytes reusable from regular init containers
        self.init_containers_reusable_memory: ReusableMemory = {}
        self.metrics = MemoryManagerMetrics()

    # -- helpers ------------------------------------------------------------------------
    def _qos(self, pod: Pod) -> str:
        return pod_qos_class(pod, self.pod_level_resources)

    def _pod_level(self, pod: Pod) -> bool:
        """Gate ``PodLevelResourceManagers`` on and the pod sets pod-level resources."""
        return self.pod_level_resource_managers and is_pod_level_resources_set(pod)

    def _skipped_pod_level(self, pod: Pod) -> bool:
        """A pod-level pod while either gate is off: the policy leaves it alone."""
        gates_on = self.pod_level_resource_managers and self.pod_level_resources
        return not gates_on and is_pod_level_resources_set(pod)

    def _affinity(self, pod: Pod, container_name: str) -> TopologyHint:
        if self.affinity is None:
            return ZERO_HINT
        return self.affinity.get_affinity(pod.uid, container_name)

    def get_resource_system_reserved(self, node_id: int, resource: str) -> int:
        return self.system_reserved.get(node_id, {}).get(resource, 0)

    # -- machine state --------------------------------------------------------------------
    def get_default_machine_state(self) -> NUMANodeMap:
        """``getDefaultMachineState``."""
        return default_machine_state(self.machine_nodes, self.system_reserved)

    def start(self, state: MemoryManagerState) -> None:
        """``Start``: validate the state (and fill an empty one with the default state)."""
        self.validate_state(state)

    def validate_state(self, state: MemoryManagerState) -> None:
        """``validateState`` (§3.5)."""
        validate_state(state, self.get_default_machine_state, self.pod_level_resource_managers)

    def get_allocatable_memory(self, state: MemoryManagerState) -> list[Block]:
        """``GetAllocatableMemory``: one single-node block per non-zero allocatable table."""
        out = []
        for node_id in sorted(state.machine_state):
            node = state.machine_state[node_id]
            for resource in sorted(node.memory_map):
                table = node.memory_map[resource]
                if table.allocatable == 0:
                    continue
                out.append(Block((node_id,), resource, table.allocatable))
        return out

    # -- requests -----------------------------------------------------------------------
    def get_container_requested_resources(self, pod: Pod, container: Container) -> dict[str, int]:
        """``getContainerRequestedResources`` under this policy's gates."""
        return container_requested_resources(pod, container, self._pod_level(pod))

    def get_pod_requested_resources(self, pod: Pod) -> dict[str, int]:
        """``getPodRequestedResources`` under this policy's gates."""
        return pod_requested_resources(pod, self._pod_level(pod))

    # -- hints --------------------------------------------------------------------------
    def calculate_hints(
        self, machine_state: Mapping[int, NUMANodeState], pod: Pod, requested: Mapping[str, int]
    ) -> HintMap:
        """``calculateHints`` (§3.3), with what the pod's init containers leave for reuse."""
        reusable = self.init_containers_reusable_memory.get(pod.uid)
        return calculate_hints(machine_state, requested, reusable)

    def get_topology_hints(
        self, state: MemoryManagerState, pod: Pod, container: Container
    ) -> HintMap | None:
        """``GetTopologyHints`` (container scope)."""
        if self._qos(pod) != QOS_GUARANTEED:
            return None
        try:
            requested = self.get_container_requested_resources(pod, container)
        except MemoryManagerError:
            return None
        if self.skips_no_request and not requested:
            return None  # 1.37 (kubernetes#138770)
        if self._skipped_pod_level(pod):
            return None
        blocks = state.get_memory_blocks(pod.uid, container.name)
        if blocks is not None:
            return regenerate_hints(blocks, requested)
        return self.calculate_hints(state.machine_state, pod, requested)

    def get_pod_topology_hints(self, state: MemoryManagerState, pod: Pod) -> HintMap | None:
        """``GetPodTopologyHints`` (pod scope; §5.4 for pod-level pods)."""
        if self._qos(pod) != QOS_GUARANTEED:
            return None
        try:
            requested = self.get_pod_requested_resources(pod)
        except MemoryManagerError:
            return None
        if self._skipped_pod_level(pod):
            return None
        if self._pod_level(pod) and self.pod_scope_budget_error(pod) is not None:
            return {r: [] for r in requested}
        if not requested:
            return None
        if self.pod_hints_from_pod_blocks and self._pod_level(pod):
            # 1.38 (kubernetes#141070): a restored pod-level pod's hint comes from its pod
            # blocks; one container's blocks never match a multi-container pod's request.
            pod_blocks = state.get_pod_memory_blocks(pod.uid)
            if pod_blocks is not None:
                return regenerate_hints(pod_blocks, requested)
        for c in pod.all_containers():
            blocks = state.get_memory_blocks(pod.uid, c.name)
            if blocks is None:
                continue
            if not self.pod_hints_from_pod_blocks:
                return regenerate_hints(blocks, requested)
            # 1.38 (kubernetes#141070): against the container's own requests.
            try:
                own = self.get_container_requested_resources(pod, c)
            except MemoryManagerError:
                return None
            return regenerate_hints(blocks, own)
        return self.calculate_hints(state.machine_state, pod, requested)

    def _resolve_hint(
        self,
        machine_state: NUMANodeMap,
        pod: Pod,
        requested: Mapping[str, int],
        hint: TopologyHint,
    ) -> int:
        """Allocate steps 4–6 (``hints.resolve_hint``): the final mask."""
        reusable = self.init_containers_reusable_memory.get(pod.uid)
        return resolve_hint(machine_state, requested, hint, reusable)

    # -- allocation ---------------------------------------------------------------------
    def allocate(
        self,
        state: MemoryManagerState,
        pod: Pod,
        container: Container,
        hint: TopologyHint | None = None,
    ) -> None:
        """``Allocate`` (§3.4). ``hint`` defaults to the affinity store's hint (else none)."""
        if self._qos(pod) != QOS_GUARANTEED:
            return
        if self._skipped_pod_level(pod):
            return
        requested: Mapping[str, int] | None = None
        if self.skips_no_request:
            # 1.37 (kubernetes#138770): requests first; nothing requested, nothing to do.
            requested = self.get_container_requested_resources(pod, container)
            if not requested:
                return
        with self.metrics.pinning(RESOURCE_MEMORY, SOURCE_NODE):
            self._allocate(state, pod, container, hint, requested)

    def _allocate(
        self,
        state: MemoryManagerState,
        pod: Pod,
        container: Container,
        hint: TopologyHint | None,
        requested: Mapping[str, int] | None,
    ) -> None:
        reuse = self.init_containers_reusable_memory
        existing = state.get_memory_blocks(pod.uid, container.name)
        if existing is not None:
            update_pod_reusable_memory(reuse, pod, container, existing)
            return
        if hint is None:
            hint = self._affinity(pod, container.name)
        if requested is None:
            requested = self.get_container_requested_resources(pod, container)
        mask = self._resolve_hint(state.machine_state, pod, requested, hint)
        mask_nodes = tuple(bits(mask))
        # Copy-on-write: only the nodes of the mask change.
        machine_state = state.machine_state_for_update(mask_nodes)
        blocks: list[Block] = []
        for resource in sorted(requested):
            size = requested[resource]
            blocks.append(Block(mask_nodes, resource, size))
            reusable = pod_reusable_memory(reuse, pod, mask, resource)
            charge = 0 if reusable >= size else size - reusable
            update_machine_state(machine_state, mask_nodes, resource, charge)
            # Counted per resource type, as upstream does inside this loop.
            self.metrics.allocations_total[(RESOURCE_MEMORY, SOURCE_NODE)] += 1
        update_pod_reusable_memory(reuse, pod, container, blocks)
        state.replace_machine_state(machine_state)
        state.set_memory_blocks(pod.uid, container.name, blocks)
        update_init_containers_memory_blocks(state, pod, container, blocks)
        self.metrics.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_NODE_EXCLUSIVE)] += 1

    def pod_scope_budget_error(self, pod: Pod) -> PodBudgetError | None:
        """``validatePodScopeResources`` (memory flavour, §5.3); ``None`` when the pod fits."""
        budget = self.get_pod_requested_resources(pod)
        return pod_scope_budget_error(
            pod,
            budget,
            lambda c: self.get_container_requested_resources(pod, c),
            init_check=self.pod_budget_init_check,
        )

    def validate_pod_scope_resources(self, pod: Pod) -> None:
        """Raise the budget error (a ``PodBudgetError``) when the pod does not fit."""
        err = self.pod_scope_budget_error(pod)
        if err is not None:
            raise err

    def allocate_pod(
        self, state: MemoryManagerState, pod: Pod, hint: TopologyHint | None = None
    ) -> None:
        """``AllocatePod`` (§5.5): reserve the pod budget once on one mask and partition it.

        ``hint`` defaults to the affinity store's hint of the pod's first container.
        """
        if self._qos(pod) != QOS_GUARANTEED:
            return
        try:
            budget = self.get_pod_requested_resources(pod)
        except MemoryManagerError:
            return  # logged and ignored upstream
        with self.metrics.pinning(RESOURCE_MEMORY, SOURCE_POD):
            self._allocate_pod(state, pod, budget, hint)

    def _allocate_pod(
        self,
        state: MemoryManagerState,
        pod: Pod,
        budget: Mapping[str, int],
        hint: TopologyHint | None,
    ) -> None:
        if self.restores_pods and state.get_pod_memory_blocks(pod.uid) is not None:
            # 1.38 (kubernetes#141077, fixes #140906): re-admission after a restart keeps the
            # restored pod allocation; 1.37 reserves it a second time (or rejects the pod).
            # Counted as one pinning request, like the node path's "already in the state".
            return
        err = self.pod_scope_budget_error(pod)
        if err is not None:
            raise EmptyPodSharedPoolError(err.message)
        containers = pod.all_containers()
        if hint is None:
            hint = self._affinity(pod, containers[0].name) if containers else ZERO_HINT
        mask = self._resolve_hint(state.machine_state, pod, budget, hint)
        partition_pod_budget(
            state,
            pod,
            budget,
            mask,
            self.metrics,
            lambda c: self.get_container_requested_resources(pod, c),
        )

    # -- release ------------------------------------------------------------------------
    def remove_container(
        self, state: MemoryManagerState, pod_uid: str, container_name: str
    ) -> None:
        """``RemoveContainer``: node-pool blocks go back at once; a pod-level pod's budget goes
        back when its last container is removed (§5.7)."""
        if self.pod_level_resource_managers:
            pod_blocks = state.get_pod_memory_blocks(pod_uid)
            if pod_blocks is not None:
                state.delete(pod_uid, container_name)
                if not state.assignments.get(pod_uid):
                    self._release_memory(state, pod_blocks)
                    state.delete_pod(pod_uid)
                return
        blocks = state.get_memory_blocks(pod_uid, container_name)
        if blocks is None:
            return
        state.delete(pod_uid, container_name)
        self._release_memory(state, blocks)

    @staticmethod
    def _release_memory(state: MemoryManagerState, blocks: Iterable[Block]) -> None:
        blocks = tuple(blocks)
        # Copy-on-write: only the nodes of the blocks change.
        machine_state = state.machine_state_for_update(n for b in blocks for n in b.numa_affinity)
        release_blocks(machine_state, blocks)
        state.replace_machine_state(machine_state)

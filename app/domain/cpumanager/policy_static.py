"""Static CPU manager policy, classic and pod-level (follows
pkg/kubelet/cm/cpumanager/policy_static.go and the policy-facing parts of cpu_manager.go, v1.37;
release 1.38 = master adds the pod-level restore of kubernetes#141041, ``pod_restore.py``, the
take-by-topology changes of ``cpu_assignment`` and the CPU gauges recomputed from the state
of kubernetes#141261, ``app.domain.cpumanager.gauges``; see ``app.domain.releases``).

``StaticPolicy`` holds configuration (topology, reserved CPUs, options, feature gates) plus the
two pieces of memory the kubelet's policy keeps: ``cpus_to_reuse`` (init-container CPUs that
later containers of the same pod may take) and its metrics counters. State is passed in as a
``CPUManagerState`` and mutated in place; ``allocate_pod`` rolls its own changes back on error.

Pools (spec §2.4): *allocatable* = all − reserved; *available* = default − reserved;
*available physical* = default − the whole cores of the reserved CPUs.

Allocation failures: ``SMTAlignmentError`` and ``EmptyPodSharedPoolError`` are admission errors
with the kubelet's reasons; anything else is a ``CPUAllocationError`` carrying the kubelet's
text, which the topology manager/node wraps as ``UnexpectedAdmissionError``.

Like the upstream line that carries ``AllocatePod``, ``takeByTopology`` does not hand the
``align-by-socket`` flag to the NUMA-distributed algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal

from app.domain import releases
from app.domain.admission import EmptyPodSharedPoolError, SMTAlignmentError
from app.domain.cpumanager.cpu_assignment.common import CPUSortingStrategy, TakeByTopologyError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpumanager.gauges import CPUGauges
from app.domain.cpumanager.hints import generate_cpu_topology_hints
from app.domain.cpumanager.metrics import (
    ALIGN_SCOPE_CONTAINER,
    ALIGNED_PHYSICAL_CPU,
    ASSIGNMENT_NODE_EXCLUSIVE,
    ASSIGNMENT_POD_EXCLUSIVE,
    ASSIGNMENT_POD_SHARED,
    RESOURCE_CPU,
    SOURCE_NODE,
    SOURCE_POD,
    CPUManagerMetrics,
)
from app.domain.cpumanager.pod_restore import (
    drop_stale_pod_allocation,
    restorable_pod_cpus,
    restore_pod,
)
from app.domain.cpumanager.pod_scope import (
    guaranteed_cpus,
    pod_guaranteed_cpus,
    resources_qualify_for_exclusive_cpus,
    skipped_pod_level_pod,
    uses_pod_level_managers,
    validate_pod_scope_resources,
)
from app.domain.cpumanager.policy_options import (
    GATE_POD_LEVEL_RESOURCE_MANAGERS,
    CPUManagerPolicyError,
    StaticPolicyOptions,
    gate_enabled,
    new_static_policy_options,
    validate_static_policy_options,
)
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.domain.pod import Container, Pod
from app.domain.pod_budget import PodBudgetError
from app.domain.quantity import Quantity
from app.domain.topology import CPUTopology
from app.domain.topologymanager.bitmask import bits
from app.domain.topologymanager.hint import ProviderHints, TopologyHint

POLICY_STATIC = "static"

IsolationLevel = Literal["container", "pod", "host"]
ISOLATION_HOST: IsolationLevel = "host"
ISOLATION_POD: IsolationLevel = "pod"
ISOLATION_CONTAINER: IsolationLevel = "container"

EMPTY = CPUSet()


class CPUAllocationError(Exception):
    """An untyped allocation failure; ``message`` is the kubelet's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CPUManagerStateError(Exception):
    """``Start`` found the state inconsistent (``validateState``); the kubelet's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def num_reserved_cpus_from_reservation(reserved_cpu: Quantity | None) -> int:
    """``ceil(kubeReserved.cpu + systemReserved.cpu)`` as NewManager computes it (§2.1 step 1).

    ``reserved_cpu`` is the node-allocatable CPU reservation, ``None`` when it has no cpu entry.
    """
    if reserved_cpu is None:
        raise CPUManagerPolicyError(
            "[cpumanager] unable to determine reserved CPU resources for static policy"
        )
    if reserved_cpu.is_zero():
        raise CPUManagerPolicyError(
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu "
            "to be greater than zero"
        )
    return math.ceil(reserved_cpu.milli_value() / 1000)


def _find_container(pod: Pod, container: Container | str) -> Container:
    if not isinstance(container, str):
        return container
    for c in (*pod.init_containers, *pod.containers):
        if c.name == container:
            return c
    raise CPUAllocationError(f"container {container!r} is not part of pod {pod.uid!r}")


class StaticPolicy:
    """``staticPolicy``."""

    def __init__(
        self,
        topology: CPUTopology,
        num_reserved_cpus: int,
        reserved_cpus: CPUSet | None = None,
        options: StaticPolicyOptions | Mapping[str, str] | None = None,
        topology_manager_policy: str = "none",
        feature_gates: Mapping[str, bool] | None = None,
        release: str = DEFAULT_RELEASE,
    ) -> None:
        self.feature_gates: dict[str, bool] = dict(feature_gates or {})
        self.release = release
        self.restores_pods = releases.has(release, releases.CPU_POD_RESTORE)
        self.spread_by_topology = releases.has(release, releases.SPREAD_BY_TOPOLOGY)
        self.hang_release = (
            None if releases.has(release, releases.DISTRIBUTED_GROUP_CHECK) else release
        )
        if isinstance(options, StaticPolicyOptions):
            opts = options
        else:
            opts = new_static_policy_options(options or {}, self.feature_gates)
        validate_static_policy_options(opts, topology, topology_manager_policy)
        self.topology = topology
        self.options = opts
        self.topology_manager_policy = topology_manager_policy
        self.cpu_group_size = topology.cpus_per_core()
        self.cpus_to_reuse: dict[str, CPUSet] = {}
        self.metrics = CPUManagerMetrics()

        all_cpus = topology.all_cpus
        if reserved_cpus is not None and reserved_cpus.size() > 0:
            reserved = reserved_cpus
        else:
            try:
                reserved = self.take_by_topology(all_cpus, num_reserved_cpus)
            except (TakeByTopologyError, CPUAllocationError):
                reserved = EMPTY  # upstream ignores the error; the size check reports it
        if reserved.size() != num_reserved_cpus:
            raise CPUManagerPolicyError(
                "[cpumanager] unable to reserve the required amount of CPUs "
                f"(size of {reserved} did not equal {num_reserved_cpus})"
            )
        physical = 0
        for cpu in reserved:
            info = topology.cpu_details.get(cpu)
            if info is None:
                raise CPUManagerPolicyError(
                    "[cpumanager] unable to build the reserved physical CPUs from the reserved "
                    f"set: unknown CPU ID: {cpu}"
                )
            physical |= topology.cpus_of_core(info.core_id).mask
        self.reserved_cpus: CPUSet = reserved
        self.reserved_physical_cpus: CPUSet = CPUSet.from_mask(physical)
        self.gauges = CPUGauges(
            self.metrics,
            topology,
            reserved,
            from_state=releases.has(release, releases.CPU_METRICS_FROM_STATE),
            feature_gates=self.feature_gates,
        )

    def name(self) -> str:
        return POLICY_STATIC

    def _gate(self, name: str) -> bool:
        return gate_enabled(self.feature_gates, name)

    # -- start ------------------------------------------------------------------------
    def start(self, state: CPUManagerState) -> None:
        """``Start``: validate (and possibly initialise) the state, then set the gauges."""
        self.validate_state(state)
        self.gauges.start(state)

    def validate_state(self, state: CPUManagerState) -> None:
        """``validateState`` (§2.3)."""
        default = state.default_cpuset
        all_cpus = self.topology.all_cpus
        if self.options.strict_cpu_reservation:
            all_cpus = all_cpus - self.reserved_cpus

        if default.is_empty():
            if state.assignments:
                raise CPUManagerStateError("default cpuset cannot be empty")
            state.set_default_cpu_set(all_cpus)
            return

        if self.options.strict_cpu_reservation:
            overlap = self.reserved_cpus & default
            if overlap:
                raise CPUManagerStateError(
                    f'some of strictly reserved cpus: "{overlap}" are present in '
                    f'defaultCpuSet: "{default}"'
                )
        elif (self.reserved_cpus & default) != self.reserved_cpus:
            raise CPUManagerStateError(
                f'not all reserved cpus: "{self.reserved_cpus}" are present in '
                f'defaultCpuSet: "{default}"'
            )

        # Go ranges over maps in random order; we report the first overlap in sorted order.
        for pod, container, cset in state.iter_assignments():
            if default & cset:
                raise CPUManagerStateError(
                    f'pod: {pod}, container: {container} cpuset: "{cset}" overlaps with '
                    f'default cpuset "{default}"'
                )

        known = default | state.assigned_cpus()
        if self._gate(GATE_POD_LEVEL_RESOURCE_MANAGERS):
            known = known | state.pod_entry_cpus()
        if known != all_cpus:
            raise CPUManagerStateError(
                f'current set of available CPUs "{all_cpus}" doesn\'t match with CPUs in '
                f'state "{known}"'
            )

    # -- pools ------------------------------------------------------------------------
    def get_allocatable_cpus(self, state: CPUManagerState | None = None) -> CPUSet:
        """``GetAllocatableCPUs``: every CPU but the reserved ones."""
        return self.topology.all_cpus - self.reserved_cpus

    def get_available_cpus(self, state: CPUManagerState) -> CPUSet:
        """``GetAvailableCPUs``: the default set minus the reserved CPUs."""
        return state.default_cpuset - self.reserved_cpus

    def get_available_physical_cpus(self, state: CPUManagerState) -> CPUSet:
        return state.default_cpuset - self.reserved_physical_cpus

    # -- counts -----------------------------------------------------------------------
    def guaranteed_cpus(self, pod: Pod, container: Container) -> int:
        return guaranteed_cpus(pod, container, self.feature_gates)

    def pod_guaranteed_cpus(self, pod: Pod) -> int:
        return pod_guaranteed_cpus(pod, self.feature_gates)

    def validate_pod_scope_resources(self, pod: Pod) -> None:
        """Raise ``PodBudgetError`` when the pod's budget leaves a shared pool empty (§5.3)."""
        validate_pod_scope_resources(pod, self.feature_gates)

    # -- reuse bookkeeping (§2.12) ----------------------------------------------------
    def update_cpus_to_reuse(self, pod: Pod, container: Container, cset: CPUSet) -> None:
        for uid in [u for u in self.cpus_to_reuse if u != pod.uid]:
            del self.cpus_to_reuse[uid]
        current = self.cpus_to_reuse.setdefault(pod.uid, EMPTY)
        for init in pod.init_containers:
            if init.name == container.name:
                if init.is_sidecar:
                    break
                self.cpus_to_reuse[pod.uid] = current | cset
                return
        self.cpus_to_reuse[pod.uid] = current - cset

    # -- SMT check ----------------------------------------------------------------------
    def enforce_smt_alignment(self, state: CPUManagerState, num_cpus: int) -> None:
        """``full-pcpus-only``: whole cores, enough free physical CPUs (§2.6 step 3)."""
        if not self.options.full_physical_cpus_only:
            return
        if self.cpu_group_size == 0 or num_cpus % self.cpu_group_size != 0:
            raise SMTAlignmentError(num_cpus, self.cpu_group_size)
        available = self.get_available_physical_cpus(state).size()
        if num_cpus > available:
            raise SMTAlignmentError(num_cpus, self.cpu_group_size, available, True)

    # -- allocation ---------------------------------------------------------------------
    def allocate(
        self,
        state: CPUManagerState,
        pod: Pod,
        container: Container | str,
        hint: TopologyHint | None = None,
    ) -> None:
        """``Allocate`` (node-pool path, §2.6). ``hint`` is the stored TM affinity."""
        c = _find_container(pod, container)
        num_cpus = self.guaranteed_cpus(pod, c)
        if num_cpus == 0:
            return
        if skipped_pod_level_pod(pod, self.feature_gates):
            return

        m = self.metrics
        m.pinning_requests_total += 1
        try:
            self.enforce_smt_alignment(state, num_cpus)
            existing = state.get_cpu_set(pod.uid, c.name)
            if existing is not None:
                self.update_cpus_to_reuse(pod, c, existing)
            else:
                mask = hint.numa_affinity if hint is not None else None
                cset, uncore_aligned = self._allocate_cpus(
                    state, num_cpus, mask, self.cpus_to_reuse.get(pod.uid, EMPTY)
                )
                state.set_cpu_set(pod.uid, c.name, cset)
                self.update_cpus_to_reuse(pod, c, cset)
                self.gauges.on_allocate(state, cset, uncore_aligned)
                m.allocations_total[(RESOURCE_CPU, SOURCE_NODE)] += 1
                m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_NODE_EXCLUSIVE)] += 1
        except Exception:
            m.pinning_errors_total += 1
            m.allocation_errors_total[(RESOURCE_CPU, SOURCE_NODE)] += 1
            if self.options.full_physical_cpus_only:
                m.aligned_compute_resources_failure[
                    (ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU)
                ] += 1
            raise
        finally:
            self.gauges.refresh(state)
        if self.options.full_physical_cpus_only:
            m.aligned_compute_resources[(ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU)] += 1

    def allocate_cpus(
        self,
        state: CPUManagerState,
        num_cpus: int,
        numa_affinity: int | Iterable[int] | None,
        reusable: CPUSet = EMPTY,
    ) -> CPUSet:
        """``allocateCPUs`` (§2.7): aligned CPUs first, then the rest; removes them from the
        default set. ``numa_affinity`` is a NUMA bitmask (int), NUMA ids, or ``None``."""
        mask = numa_affinity
        if mask is not None and not isinstance(mask, int):
            mask = sum(1 << n for n in set(mask))
        cset, _ = self._allocate_cpus(state, num_cpus, mask, reusable)
        return cset

    def _allocate_cpus(
        self, state: CPUManagerState, num_cpus: int, mask: int | None, reusable: CPUSet
    ) -> tuple[CPUSet, bool]:
        allocatable = self.get_available_cpus(state) | reusable
        result = EMPTY
        if mask is not None:
            aligned = self._get_aligned_cpus(mask, allocatable)
            result = result | self.take_by_topology(aligned, min(num_cpus, aligned.size()))
        remaining = self.take_by_topology(allocatable - result, num_cpus - result.size())
        result = result | remaining
        state.set_default_cpu_set(state.default_cpuset - result)
        return result, len(self.topology.uncore_caches_of(result)) == 1

    def _get_aligned_cpus(self, mask: int, allocatable: CPUSet) -> CPUSet:
        """``getAlignedCPUs``: allocatable CPUs on the mask's NUMA nodes (or their sockets)."""
        numa_ids = bits(mask)
        if self.options.align_by_socket:
            sockets = self.topology.sockets_in_numa_nodes(numa_ids)
            return allocatable & self.topology.cpus_in_sockets(sockets)
        return allocatable & self.topology.cpus_in_numa_nodes(numa_ids)

    def take_by_topology(self, available: CPUSet, num_cpus: int) -> CPUSet:
        """``takeByTopology`` dispatch (§2.7); failures become ``CPUAllocationError``."""
        strategy = (
            CPUSortingStrategy.SPREAD
            if self.options.distribute_cpus_across_cores
            else CPUSortingStrategy.PACKED
        )
        try:
            if self.options.distribute_cpus_across_numa:
                group = self.cpu_group_size if self.options.full_physical_cpus_only else 1
                return take_by_topology_numa_distributed(
                    self.topology,
                    available,
                    num_cpus,
                    group,
                    strategy,
                    spread_by_topology=self.spread_by_topology,
                    hang_release=self.hang_release,
                )
            return take_by_topology_numa_packed(
                self.topology,
                available,
                num_cpus,
                strategy,
                self.options.prefer_align_by_uncore_cache,
                spread_by_topology=self.spread_by_topology,
            )
        except TakeByTopologyError as exc:
            raise CPUAllocationError(str(exc)) from exc

    # -- removal ------------------------------------------------------------------------
    def remove_container(self, state: CPUManagerState, pod_uid: str, container_name: str) -> None:
        """``RemoveContainer``: node-pool release, or pod-level release (§2.12, §5.7)."""
        self._remove_container(state, pod_uid, container_name)
        self.gauges.refresh(state)

    def _remove_container(self, state: CPUManagerState, pod_uid: str, container_name: str) -> None:
        to_release = state.get_cpu_set(pod_uid, container_name)
        if to_release is None:
            return
        state.delete(pod_uid, container_name)

        if self._gate(GATE_POD_LEVEL_RESOURCE_MANAGERS):
            pod_cpus = state.get_pod_cpu_set(pod_uid)
            if pod_cpus is not None:
                if not state.assignments.get(pod_uid):
                    state.set_default_cpu_set(state.default_cpuset | pod_cpus)
                    state.delete_pod(pod_uid)
                    self.gauges.on_release(state, pod_cpus)
                return

        in_use = EMPTY
        for name, cset in state.assignments.get(pod_uid, {}).items():
            if name != container_name:
                in_use = in_use | cset
        to_release = to_release - in_use
        state.set_default_cpu_set(state.default_cpuset | to_release)
        self.gauges.on_release(state, to_release)

    def remove_stale_state(self, state: CPUManagerState, active_pods: Iterable[Pod]) -> None:
        """``removeStaleState``: drop assignments of containers no longer in an active pod."""
        active: dict[str, set[str]] = {}
        for pod in active_pods:
            active[pod.uid] = {c.name for c in (*pod.init_containers, *pod.containers)}
        for pod_uid, container_name, _ in list(state.iter_assignments()):
            if container_name not in active.get(pod_uid, set()):
                self.remove_container(state, pod_uid, container_name)

    # -- hints (§2.11, §5.4) --------------------------------------------------------------
    def generate_cpu_topology_hints(
        self, available: CPUSet, reusable: CPUSet, request: int
    ) -> list[TopologyHint]:
        return generate_cpu_topology_hints(
            self.topology, available, reusable, request, self.options.align_by_socket
        )

    def get_topology_hints(
        self, state: CPUManagerState, pod: Pod, container: Container | str
    ) -> ProviderHints:
        """``GetTopologyHints``: ``{"cpu": None}`` = no preference, ``{"cpu": []}`` = none."""
        c = _find_container(pod, container)
        requested = self.guaranteed_cpus(pod, c)
        if requested == 0 or skipped_pod_level_pod(pod, self.feature_gates):
            return {RESOURCE_CPU: None}
        allocated = state.get_cpu_set(pod.uid, c.name)
        if allocated is not None:
            if allocated.size() != requested:
                return {RESOURCE_CPU: []}
            return {RESOURCE_CPU: self.generate_cpu_topology_hints(allocated, EMPTY, requested)}
        available = self.get_available_cpus(state)
        reusable = self.cpus_to_reuse.get(pod.uid, EMPTY)
        return {RESOURCE_CPU: self.generate_cpu_topology_hints(available, reusable, requested)}

    def get_pod_topology_hints(self, state: CPUManagerState, pod: Pod) -> ProviderHints:
        """``GetPodTopologyHints`` (pod scope; sized for the bubble with pod-level resources)."""
        requested = self.pod_guaranteed_cpus(pod)
        if requested == 0 or skipped_pod_level_pod(pod, self.feature_gates):
            return {RESOURCE_CPU: None}
        if uses_pod_level_managers(pod, self.feature_gates):
            try:
                self.validate_pod_scope_resources(pod)
            except PodBudgetError:
                return {RESOURCE_CPU: []}
            if self.restores_pods and state.get_pod_cpu_set(pod.uid) is not None:
                return {RESOURCE_CPU: self._restored_pod_hints(state, pod, requested)}
        assigned = EMPTY
        for c in (*pod.init_containers, *pod.containers):
            allocated = state.get_cpu_set(pod.uid, c.name)
            if allocated is None:
                continue
            if allocated.size() != self.guaranteed_cpus(pod, c):
                return {RESOURCE_CPU: []}
            assigned = assigned | allocated
        if assigned.size() == requested:
            return {RESOURCE_CPU: self.generate_cpu_topology_hints(assigned, EMPTY, requested)}
        available = self.get_available_cpus(state)
        reusable = self.cpus_to_reuse.get(pod.uid, EMPTY) | assigned
        return {RESOURCE_CPU: self.generate_cpu_topology_hints(available, reusable, requested)}

    def _restored_pod_hints(
        self, state: CPUManagerState, pod: Pod, requested: int
    ) -> list[TopologyHint]:
        """1.38 (kubernetes#141041): hints of a pod whose pod-level CPU set is in the state.

        A restorable set gives its own hints (none when its size is not the request); a stale
        one (overlapping the default set, or container entries with a hole) gives fresh hints
        over the available CPUs plus the CPUs its release would give back.
        """
        restorable = restorable_pod_cpus(state, pod)
        if restorable is not None:
            if restorable.size() != requested:
                return []
            return self.generate_cpu_topology_hints(restorable, EMPTY, requested)
        pod_cpus = state.get_pod_cpu_set(pod.uid) or EMPTY
        available = (self.get_available_cpus(state) | pod_cpus) - self.reserved_cpus
        return self.generate_cpu_topology_hints(available, EMPTY, requested)

    # -- pod-level allocation (§5.5) -----------------------------------------------------
    def allocate_pod(
        self,
        state: CPUManagerState,
        pod: Pod,
        hints: TopologyHint | Mapping[str, TopologyHint | None] | None = None,
    ) -> None:
        """``AllocatePod``: one bubble for the pod, partitioned among its containers.

        ``hints`` is the TM affinity stored for the pod's containers (a mapping by container
        name) or one hint for all of them; the first container's (init first) is used. On
        error the state is left as it was.
        """
        total = self.pod_guaranteed_cpus(pod)
        if total == 0:
            return
        try:
            self._allocate_or_restore_pod(state, pod, total, hints)
        finally:
            self.gauges.refresh(state)

    def _allocate_or_restore_pod(
        self,
        state: CPUManagerState,
        pod: Pod,
        total: int,
        hints: TopologyHint | Mapping[str, TopologyHint | None] | None,
    ) -> None:
        m = self.metrics
        if self.restores_pods and state.get_pod_cpu_set(pod.uid) is not None:
            restorable = restorable_pod_cpus(state, pod)
            if restorable is not None:
                self._restore_pod(state, pod, restorable)
                return
            # A stale allocation (an interrupted release or cleanup) goes back to the
            # default set; the pod is then allocated from scratch.
            drop_stale_pod_allocation(state, pod)
        snapshot = state.copy()
        try:
            self._allocate_pod(state, pod, total, hints)
        except Exception:
            state.restore(snapshot)
            m.pinning_errors_total += 1
            m.allocation_errors_total[(RESOURCE_CPU, SOURCE_POD)] += 1
            raise

    def _restore_pod(self, state: CPUManagerState, pod: Pod, pod_cpus: CPUSet) -> None:
        """1.38: keep the restored pod-level allocation, complete what is missing."""
        m = self.metrics
        try:
            computed = restore_pod(
                state, pod, pod_cpus, self.guaranteed_cpus, self.take_by_topology
            )
        except Exception:
            m.pinning_errors_total += 1
            m.allocation_errors_total[(RESOURCE_CPU, SOURCE_POD)] += 1
            raise
        m.allocations_total[(RESOURCE_CPU, SOURCE_POD)] += len(computed)

    def _allocate_pod(
        self,
        state: CPUManagerState,
        pod: Pod,
        total: int,
        hints: TopologyHint | Mapping[str, TopologyHint | None] | None,
    ) -> None:
        m = self.metrics
        try:
            self.validate_pod_scope_resources(pod)
        except PodBudgetError as exc:
            raise EmptyPodSharedPoolError(exc.message) from exc
        self.enforce_smt_alignment(state, total)

        containers = (*pod.init_containers, *pod.containers)
        hint: TopologyHint | None
        if hints is None or isinstance(hints, TopologyHint):
            hint = hints
        else:
            hint = hints.get(containers[0].name) if containers else None
        mask = hint.numa_affinity if hint is not None else None
        bubble, uncore_aligned = self._allocate_cpus(state, total, mask, EMPTY)
        self.gauges.on_allocate(state, bubble, uncore_aligned)
        state.set_pod_cpu_set(pod.uid, bubble)

        recorded: dict[str, CPUSet] = {}
        sidecar_cpus = EMPTY
        for c in pod.init_containers:
            n = self.guaranteed_cpus(pod, c)
            if n > 0:
                m.pinning_requests_total += 1
                cset = self.take_by_topology(bubble - sidecar_cpus, n)
                m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_EXCLUSIVE)] += 1
                recorded[c.name] = cset
                if c.is_sidecar:
                    sidecar_cpus = sidecar_cpus | cset
            elif not c.is_sidecar:
                m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_SHARED)] += 1
                recorded[c.name] = bubble - sidecar_cpus

        pool = bubble - sidecar_cpus
        for c in pod.containers:
            n = self.guaranteed_cpus(pod, c)
            if n > 0:
                m.pinning_requests_total += 1
                cset = self.take_by_topology(pool, n)
                m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_EXCLUSIVE)] += 1
                recorded[c.name] = cset
                pool = pool - cset

        for c in containers:
            cset_or_none = recorded.get(c.name)
            if cset_or_none is not None:
                state.set_cpu_set(pod.uid, c.name, cset_or_none)
            else:
                state.set_cpu_set(pod.uid, c.name, pool)
                m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_POD_SHARED)] += 1
            m.allocations_total[(RESOURCE_CPU, SOURCE_POD)] += 1

    # -- isolation (§5.8) -------------------------------------------------------------------
    def get_resource_isolation_level(
        self, state: CPUManagerState, pod: Pod, container: Container | str
    ) -> IsolationLevel:
        """``GetResourceIsolationLevel``: ``host``, ``pod`` or ``container``."""
        c = _find_container(pod, container)
        if state.get_cpu_set(pod.uid, c.name) is None:
            return ISOLATION_HOST
        if uses_pod_level_managers(pod, self.feature_gates) and (
            not resources_qualify_for_exclusive_cpus(c)
        ):
            return ISOLATION_POD
        return ISOLATION_CONTAINER

"""Static CPU manager policy, classic and pod-level (follows
pkg/kubelet/cm/cpumanager/policy_static.go and the policy-facing parts of cpu_manager.go, v1.37;
release 1.38 = master adds kubernetes#129079 (a container's checkpointed CPUs are found before
the ``full-pcpus-only`` SMT check, content id 54651890818; 1.36-line code, content id
3556663868, checks SMT first), the pod-level restore of kubernetes#141041, ``pod_restore.py``, the
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

This module owns the policy's configuration, pools, allocation and release entry points; its
sibling modules do the rest: ``errors``, ``reservation`` (the reserved CPUs),
``state_validation`` (``validateState``), ``take`` (``takeByTopology`` dispatch and its 1.38
changes kubernetes#139778, #139456, #141238), ``policy_hints`` (hints), ``pod_allocation`` (the KEP-5526
``AllocatePod`` path and its bubble partition), ``pod_restore`` (1.38 restore), ``pod_scope``
(counts, budget checks, isolation level) and ``gauges`` (the CPU gauges per release).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.domain import releases
from app.domain.admission import SMTAlignmentError
from app.domain.cpumanager.cpu_assignment.common import TakeByTopologyError
from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.gauges import CPUGauges
from app.domain.cpumanager.metrics import (
    ALIGN_SCOPE_CONTAINER,
    ALIGNED_PHYSICAL_CPU,
    ASSIGNMENT_NODE_EXCLUSIVE,
    RESOURCE_CPU,
    SOURCE_NODE,
    CPUManagerMetrics,
)
from app.domain.cpumanager.pod_allocation import allocate_pod
from app.domain.cpumanager.pod_scope import (
    IsolationLevel,
    guaranteed_cpus,
    pod_guaranteed_cpus,
    resource_isolation_level,
    skipped_pod_level_pod,
    validate_pod_scope_resources,
)
from app.domain.cpumanager.policy_hints import container_topology_hints, pod_topology_hints
from app.domain.cpumanager.policy_options import (
    GATE_POD_LEVEL_RESOURCE_MANAGERS,
    StaticPolicyOptions,
    gate_enabled,
    new_static_policy_options,
    validate_static_policy_options,
)
from app.domain.cpumanager.reservation import check_reserved_size, reserved_physical_cpus
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpumanager.state_validation import validate_state
from app.domain.cpumanager.take import aligned_cpus, take_by_topology
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.domain.pod.model import Container, Pod
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.hint import ProviderHints, TopologyHint

POLICY_STATIC = "static"

EMPTY = CPUSet()


def _find_container(pod: Pod, container: Container | str) -> Container:
    if not isinstance(container, str):
        return container
    for c in (*pod.init_containers, *pod.containers):
        if c.name == container:
            return c
    raise CPUAllocationError(f"container {container!r} is not part of pod {pod.uid!r}")


#: ``takeByTopology`` of the reserved CPUs per (machine, options, release, gates, count): a
#: ``CPUSet`` is immutable, the machine is kept by identity.
_RESERVED_TAKES: dict[tuple[object, ...], CPUSet] = {}
_RESERVED_TAKES_KEPT = 256


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
        self._set_release(release)
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

        reserved = self._take_reserved(num_reserved_cpus, reserved_cpus)
        self.reserved_physical_cpus: CPUSet = reserved_physical_cpus(topology, reserved)
        self.reserved_cpus: CPUSet = reserved
        self.gauges = CPUGauges(
            self.metrics,
            topology,
            reserved,
            from_state=releases.has(release, releases.CPU_METRICS_FROM_STATE),
            feature_gates=self.feature_gates,
        )

    def _set_release(self, release: str) -> None:
        """The release's rules the policy follows (``app.domain.releases``)."""
        self.release = release
        self.restores_pods = releases.has(release, releases.CPU_POD_RESTORE)
        self.restore_before_smt = releases.has(release, releases.CPU_RESTORE_BEFORE_SMT)
        self.distributed_align_by_socket = releases.has(
            release, releases.DISTRIBUTED_ALIGN_BY_SOCKET
        )
        self.min_numas_from_hint = releases.has(release, releases.DISTRIBUTED_MIN_NUMAS_FROM_HINT)
        self.copy_best_combo = releases.has(release, releases.DISTRIBUTED_COPY_BEST)
        self.pod_budget_init_check = not releases.has(
            release, releases.POD_BUDGET_WITHOUT_INIT_CHECK
        )
        self.spread_by_topology = releases.has(release, releases.SPREAD_BY_TOPOLOGY)
        self.hang_release = (
            None if releases.has(release, releases.DISTRIBUTED_GROUP_CHECK) else release
        )

    def _take_reserved(self, num_reserved_cpus: int, reserved_cpus: CPUSet | None) -> CPUSet:
        """``NewStaticPolicy``'s reserved CPUs: the explicit list, else ``takeByTopology`` of
        ``num_reserved_cpus`` over all CPUs; either must have the reserved size."""
        if reserved_cpus is not None and reserved_cpus.size() > 0:
            reserved = reserved_cpus
        else:
            reserved = self._take_reserved_by_topology(num_reserved_cpus)
        check_reserved_size(reserved, num_reserved_cpus)
        return reserved

    def _take_reserved_by_topology(self, num_reserved_cpus: int) -> CPUSet:
        """``takeByTopology`` of ``num_reserved_cpus`` over all CPUs (empty when it fails:
        upstream ignores the error and the size check reports it). Remembered: the take
        depends only on what built the policy, and a fleet's nodes share a few (machine,
        options, release) while each upgrade check builds a node."""
        key = (
            self.topology,
            self.options,
            self.release,
            tuple(sorted(self.feature_gates.items())),
            num_reserved_cpus,
        )
        reserved = _RESERVED_TAKES.get(key)
        if reserved is None:
            try:
                reserved = self.take_by_topology(self.topology.all_cpus, num_reserved_cpus)
            except (TakeByTopologyError, CPUAllocationError):
                reserved = EMPTY
            if len(_RESERVED_TAKES) >= _RESERVED_TAKES_KEPT:
                del _RESERVED_TAKES[next(iter(_RESERVED_TAKES))]
            _RESERVED_TAKES[key] = reserved
        return reserved

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
        validate_state(
            state,
            self.topology.all_cpus,
            self.reserved_cpus,
            strict_cpu_reservation=self.options.strict_cpu_reservation,
            pod_level_resource_managers=self._gate(GATE_POD_LEVEL_RESOURCE_MANAGERS),
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
        validate_pod_scope_resources(pod, self.feature_gates, init_check=self.pod_budget_init_check)

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
        try:
            with m.pinning(RESOURCE_CPU, SOURCE_NODE):
                self._allocate_container(state, pod, c, num_cpus, hint)
        except Exception:
            if self.options.full_physical_cpus_only:
                m.aligned_compute_resources_failure[
                    (ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU)
                ] += 1
            raise
        finally:
            self.gauges.refresh(state)
        if self.options.full_physical_cpus_only:
            m.aligned_compute_resources[(ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU)] += 1

    def _allocate_container(
        self,
        state: CPUManagerState,
        pod: Pod,
        c: Container,
        num_cpus: int,
        hint: TopologyHint | None,
    ) -> None:
        """``Allocate``'s steps once counted: the SMT check, then the CPUs the state already
        holds for the container (kept) or fresh ones on the hint."""
        existing = state.get_cpu_set(pod.uid, c.name)
        if existing is None or not self.restore_before_smt:
            # Before kubernetes#129079 (1.38) the SMT check comes first, also for a
            # container whose CPUs are already in the state.
            self.enforce_smt_alignment(state, num_cpus)
        if existing is not None:
            self.update_cpus_to_reuse(pod, c, existing)
            return
        mask = hint.numa_affinity if hint is not None else None
        cset, uncore_aligned = self.allocate_cpus_with_alignment(
            state, num_cpus, mask, self.cpus_to_reuse.get(pod.uid, EMPTY)
        )
        state.set_cpu_set(pod.uid, c.name, cset)
        self.update_cpus_to_reuse(pod, c, cset)
        self.gauges.on_allocate(state, cset, uncore_aligned)
        m = self.metrics
        m.allocations_total[(RESOURCE_CPU, SOURCE_NODE)] += 1
        m.container_assignments[(RESOURCE_CPU, ASSIGNMENT_NODE_EXCLUSIVE)] += 1

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
        cset, _ = self.allocate_cpus_with_alignment(state, num_cpus, mask, reusable)
        return cset

    def allocate_cpus_with_alignment(
        self, state: CPUManagerState, num_cpus: int, mask: int | None, reusable: CPUSet
    ) -> tuple[CPUSet, bool]:
        """``allocateCPUs`` on a NUMA mask (or none); also whether the CPUs share one uncore
        cache (the uncore alignment gauge)."""
        allocatable = self.get_available_cpus(state) | reusable
        result = EMPTY
        if mask is not None:
            aligned = aligned_cpus(self.topology, self.options.align_by_socket, mask, allocatable)
            hint_numas = mask.bit_count() if self.min_numas_from_hint else 0
            result = result | self.take_by_topology(
                aligned, min(num_cpus, aligned.size()), min_numas=hint_numas
            )
        remaining = self.take_by_topology(allocatable - result, num_cpus - result.size())
        result = result | remaining
        state.set_default_cpu_set(state.default_cpuset - result)
        return result, len(self.topology.uncore_caches_of(result)) == 1

    def take_by_topology(self, available: CPUSet, num_cpus: int, min_numas: int = 0) -> CPUSet:
        """``takeByTopology`` dispatch (§2.7); failures become ``CPUAllocationError``.
        ``min_numas``: the hint's NUMA count (1.38, kubernetes#139456), else 0."""
        return take_by_topology(
            self.topology,
            self.options,
            self.cpu_group_size,
            available,
            num_cpus,
            spread_by_topology=self.spread_by_topology,
            hang_release=self.hang_release,
            align_by_socket=self.distributed_align_by_socket and self.options.align_by_socket,
            copy_best=self.copy_best_combo,
            min_numas=min_numas,
        )

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
    def get_topology_hints(
        self, state: CPUManagerState, pod: Pod, container: Container | str
    ) -> ProviderHints:
        """``GetTopologyHints``: ``{"cpu": None}`` = no preference, ``{"cpu": []}`` = none."""
        return container_topology_hints(
            state,
            pod,
            _find_container(pod, container),
            topology=self.topology,
            align_by_socket=self.options.align_by_socket,
            feature_gates=self.feature_gates,
            reserved_cpus=self.reserved_cpus,
            reusable=self.cpus_to_reuse.get(pod.uid, EMPTY),
        )

    def get_pod_topology_hints(self, state: CPUManagerState, pod: Pod) -> ProviderHints:
        """``GetPodTopologyHints`` (pod scope; sized for the bubble with pod-level resources)."""
        return pod_topology_hints(
            state,
            pod,
            topology=self.topology,
            align_by_socket=self.options.align_by_socket,
            feature_gates=self.feature_gates,
            reserved_cpus=self.reserved_cpus,
            reusable=self.cpus_to_reuse.get(pod.uid, EMPTY),
            restores_pods=self.restores_pods,
            budget_init_check=self.pod_budget_init_check,
        )

    # -- pod-level allocation (§5.5) -----------------------------------------------------
    def allocate_pod(
        self,
        state: CPUManagerState,
        pod: Pod,
        hints: TopologyHint | Mapping[str, TopologyHint | None] | None = None,
    ) -> None:
        """``AllocatePod``: one bubble for the pod, partitioned among its containers
        (``pod_allocation``); on error the state is left as it was."""
        allocate_pod(self, state, pod, hints)

    # -- isolation (§5.8) -------------------------------------------------------------------
    def get_resource_isolation_level(
        self, state: CPUManagerState, pod: Pod, container: Container | str
    ) -> IsolationLevel:
        """``GetResourceIsolationLevel``: ``host``, ``pod`` or ``container``."""
        c = _find_container(pod, container)
        return resource_isolation_level(state, pod, c, self.feature_gates)

"""The static CPU policy's three gauges, per release (follows the metric updates of
pkg/kubelet/cm/cpumanager/policy_static.go: ``initializeMetrics``, ``updateMetricsOnAllocate``,
``updateMetricsOnRelease``, ``updateAllocationPerNUMAMetric``).

The gauges (``exclusive_cpu_allocation_count``, ``shared_pool_size_millicores``,
``allocation_per_numa``) are kept two ways, by release:

* 1.36 and 1.37 (the KEP-5526 code of kubernetes#134768): per-event deltas. An allocation adds
  the size of the CPU set it took (a pod-level pod's whole CPU set, its "bubble"), a release
  subtracts what went back to the default set; ``allocation_per_numa`` is re-set from the union
  of the *container* assignments, only for the NUMA nodes that union touches. ``AllocatePod``
  counts before it writes the pod's container assignments, so the per-NUMA gauge does not see
  that pod (a first pod-level pod leaves it without samples), a NUMA node that empties keeps
  its last value, and ``Start`` counts container assignments only (not pod-level CPU sets).
* 1.38 (kubernetes#141261, fixes #141262; policy_static_metrics_test.go): recomputed from the
  state after every allocation and release: exclusive = the union of the container
  assignments and, while ``PodLevelResourceManagers`` is on, the pod-level CPU sets; shared
  pool = the default set without the reserved CPUs; one per-NUMA sample for every NUMA node
  of the topology, zero included (``CPUGauges.refresh``).

``CPUGauges`` also counts the uncore-cache alignment of an allocation and zero-initialises the
``container_aligned_compute_resources_*`` series at start, as ``initializeMetrics`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass

from app.domain.cpumanager.metrics import (
    ALIGN_SCOPE_CONTAINER,
    ALIGNED_PHYSICAL_CPU,
    ALIGNED_UNCORE_CACHE,
    CPUManagerMetrics,
)
from app.domain.cpumanager.policy_options import GATE_POD_LEVEL_RESOURCE_MANAGERS, gate_enabled
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology


def numa_counts(topology: CPUTopology, cpus: CPUSet) -> list[tuple[int, int]]:
    """How many of ``cpus`` each NUMA node holds, for the nodes that hold any, in the order a
    walk over the CPUs meets them. A CPU unknown to the topology counts for node 0 (upstream
    logs the failed lookup and counts the zero value). Per-node masks and popcounts instead
    of a walk over up to 512 CPUs."""
    mask = cpus.mask
    found: dict[int, tuple[int, int]] = {}  # numa -> (lowest CPU bit, count)
    for numa in topology.numa_node_ids():
        on_node = mask & topology.cpus_of_numa_node(numa).mask
        if on_node:
            found[numa] = (on_node & -on_node, on_node.bit_count())
    unknown = mask & ~topology.all_cpus.mask
    if unknown:
        low, n = found.get(0, (unknown & -unknown, 0))
        found[0] = (min(low, unknown & -unknown), n + unknown.bit_count())
    ordered = sorted(found.items(), key=lambda item: item[1][0])
    return [(numa, n) for numa, (_, n) in ordered]


def _gauges_from_state(
    m: CPUManagerMetrics, topology: CPUTopology, exclusive: CPUSet, available: CPUSet
) -> None:
    """1.38 (kubernetes#141261): set the three gauges from what the state holds now:
    ``exclusive`` CPUs and the ``available`` shared pool; every NUMA node gets a sample."""
    m.exclusive_cpu_allocation_count = exclusive.size()
    m.shared_pool_size_millicores = available.size() * 1000
    counts = dict(numa_counts(topology, exclusive))
    m.allocation_per_numa.clear()
    for numa in sorted(set(topology.numa_node_ids()) | set(counts)):
        m.allocation_per_numa[numa] = counts.get(numa, 0)


@dataclass(eq=False)
class CPUGauges:
    """The gauges of one policy: ``reserved`` CPUs are not in the shared pool; with
    ``from_state`` (1.38) they are recomputed, pod-level CPU sets counted while the policy's
    ``feature_gates`` (the same mapping) have ``PodLevelResourceManagers`` on."""

    metrics: CPUManagerMetrics
    topology: CPUTopology
    reserved: CPUSet
    _: KW_ONLY
    from_state: bool
    feature_gates: Mapping[str, bool]

    def start(self, state: CPUManagerState) -> None:
        m = self.metrics
        for key in (
            (ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU),
            (ALIGN_SCOPE_CONTAINER, ALIGNED_UNCORE_CACHE),
        ):
            m.aligned_compute_resources[key] += 0
        m.aligned_compute_resources_failure[(ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU)] += 0
        if self.from_state:
            self.refresh(state)
            return
        m.shared_pool_size_millicores = (state.default_cpuset - self.reserved).size() * 1000
        assigned = state.assigned_cpus()
        m.exclusive_cpu_allocation_count = assigned.size()
        self.update_per_numa(assigned)

    def refresh(self, state: CPUManagerState) -> None:
        """1.38: the gauges as the state stands (called at the end of every allocation and
        release); a no-op before."""
        if not self.from_state:
            return
        exclusive = state.assigned_cpus()
        if gate_enabled(self.feature_gates, GATE_POD_LEVEL_RESOURCE_MANAGERS):
            exclusive = exclusive | state.pod_entry_cpus()
        available = state.default_cpuset - self.reserved
        _gauges_from_state(self.metrics, self.topology, exclusive, available)

    def on_allocate(self, state: CPUManagerState, cset: CPUSet, uncore_aligned: bool) -> None:
        m = self.metrics
        if uncore_aligned:
            m.aligned_compute_resources[(ALIGN_SCOPE_CONTAINER, ALIGNED_UNCORE_CACHE)] += 1
        if self.from_state:
            return
        m.exclusive_cpu_allocation_count += cset.size()
        m.shared_pool_size_millicores -= cset.size() * 1000
        self.update_per_numa(state.assigned_cpus())

    def on_release(self, state: CPUManagerState, cset: CPUSet) -> None:
        if self.from_state:
            return
        m = self.metrics
        m.exclusive_cpu_allocation_count -= cset.size()
        m.shared_pool_size_millicores += cset.size() * 1000
        self.update_per_numa(state.assigned_cpus() - cset)

    def update_per_numa(self, cpus: CPUSet) -> None:
        """1.36/1.37: set the gauge of the NUMA nodes ``cpus`` touches (the others keep their
        value), in the order a walk over the CPUs meets them."""
        self.metrics.allocation_per_numa.update(numa_counts(self.topology, cpus))

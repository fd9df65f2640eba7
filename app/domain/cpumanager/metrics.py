"""CPU manager metrics as plain counters (follows pkg/kubelet/metrics/metrics.go and the
metric updates in pkg/kubelet/cm/cpumanager/policy_static.go per release).

The kubelet exports Prometheus series; the engine only counts. A policy owns one
``CPUManagerMetrics``; the web layer may export it. Label values are the kubelet's:

* ``resource_manager_allocations_total{resource_name, source}``;
* ``resource_manager_allocation_errors_total{resource_name, source}``;
* ``resource_manager_container_assignments{resource_name, assignment_type}``;
* the older ``cpu_manager_*`` series and ``container_aligned_compute_resources_*``.

``ResourceManagerCounters`` holds the three KEP-5526 series and can be shared with the memory
manager (``resource_name`` = ``memory``).

The three gauges (``exclusive_cpu_allocation_count``, ``shared_pool_size_millicores``,
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
  of the topology, zero included (``gauges_from_state``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
SOURCE_POD = "pod"
SOURCE_NODE = "node"
ASSIGNMENT_NODE_EXCLUSIVE = "node_exclusive"
ASSIGNMENT_POD_EXCLUSIVE = "pod_exclusive"
ASSIGNMENT_POD_SHARED = "pod_shared"

ALIGN_SCOPE_CONTAINER = "container"
ALIGNED_PHYSICAL_CPU = "physical_cpu"
ALIGNED_UNCORE_CACHE = "uncore_cache"


@dataclass(slots=True)
class ResourceManagerCounters:
    """The ``resource_manager_*`` series (KEP-5526)."""

    allocations_total: Counter[tuple[str, str]] = field(default_factory=Counter)
    allocation_errors_total: Counter[tuple[str, str]] = field(default_factory=Counter)
    container_assignments: Counter[tuple[str, str]] = field(default_factory=Counter)

    def allocations(self, resource: str, source: str) -> int:
        return self.allocations_total[(resource, source)]

    def errors(self, resource: str, source: str) -> int:
        return self.allocation_errors_total[(resource, source)]

    def assignments(self, resource: str, assignment_type: str) -> int:
        return self.container_assignments[(resource, assignment_type)]


@dataclass(slots=True)
class CPUManagerMetrics(ResourceManagerCounters):
    """Everything the static CPU policy counts."""

    pinning_requests_total: int = 0
    pinning_errors_total: int = 0
    shared_pool_size_millicores: int = 0
    exclusive_cpu_allocation_count: int = 0
    allocation_per_numa: dict[int, int] = field(default_factory=dict)
    aligned_compute_resources: Counter[tuple[str, str]] = field(default_factory=Counter)
    aligned_compute_resources_failure: Counter[tuple[str, str]] = field(default_factory=Counter)

    def snapshot(self) -> dict[str, object]:
        """A JSON-friendly view (series name -> value or {label text: value})."""

        def labelled(c: Counter[tuple[str, str]], a: str, b: str) -> dict[str, int]:
            return {f'{a}="{k[0]}",{b}="{k[1]}"': v for k, v in sorted(c.items())}

        return {
            "resource_manager_allocations_total": labelled(
                self.allocations_total, "resource_name", "source"
            ),
            "resource_manager_allocation_errors_total": labelled(
                self.allocation_errors_total, "resource_name", "source"
            ),
            "resource_manager_container_assignments": labelled(
                self.container_assignments, "resource_name", "assignment_type"
            ),
            "cpu_manager_pinning_requests_total": self.pinning_requests_total,
            "cpu_manager_pinning_errors_total": self.pinning_errors_total,
            "cpu_manager_shared_pool_size_millicores": self.shared_pool_size_millicores,
            "cpu_manager_exclusive_cpu_allocation_count": self.exclusive_cpu_allocation_count,
            "cpu_manager_allocation_per_numa": {
                f'numa_node="{k}"': v for k, v in sorted(self.allocation_per_numa.items())
            },
            "container_aligned_compute_resources_count": labelled(
                self.aligned_compute_resources, "scope", "boundary"
            ),
            "container_aligned_compute_resources_failure_count": labelled(
                self.aligned_compute_resources_failure, "scope", "boundary"
            ),
        }


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


def gauges_from_state(
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

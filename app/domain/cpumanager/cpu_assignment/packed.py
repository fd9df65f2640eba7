"""``takeByTopologyNUMAPacked`` (follows pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37 and
master as 1.38): the default algorithm - whole NUMA nodes / sockets, optionally whole and partial
uncore caches, whole cores, then single CPUs.
"""

from __future__ import annotations

from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.common import (
    CPUSortingStrategy,
    TakeByTopologyError,
    not_enough,
    parse_strategy,
)
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology

__all__ = ["packed_or_empty", "take_by_topology_numa_packed"]


def take_by_topology_numa_packed(
    topo: CPUTopology,
    available: CPUSet,
    num_cpus: int,
    cpu_sorting_strategy: CPUSortingStrategy | str = CPUSortingStrategy.PACKED,
    prefer_align_by_uncore_cache: bool = False,
    *,
    spread_by_topology: bool = False,
) -> CPUSet:
    """``num_cpus`` CPUs from ``available``, packed by topology (``takeByTopologyNUMAPacked``).

    Steps: whole first-level elements (NUMA nodes when NUMA-first, else sockets), whole
    second-level elements, then with ``prefer_align_by_uncore_cache`` whole and partial uncore
    caches, whole cores (packed strategy only), and finally single CPUs in strategy order.
    Raises ``TakeByTopologyError`` with the kubelet's text when there are too few CPUs.
    ``spread_by_topology`` is the 1.38 spread order (kubernetes#140766).
    """
    strategy = parse_strategy(cpu_sorting_strategy)
    acc = CPUAccumulator(topo, available, num_cpus, strategy, spread_by_topology)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise not_enough(num_cpus, available)

    # Upstream's steps in order, each followed by "if acc.isSatisfied() return".
    steps = [acc.take_full_first_level, acc.take_full_second_level]
    if prefer_align_by_uncore_cache:
        steps.append(acc.take_uncore_cache)
    if strategy is not CPUSortingStrategy.SPREAD:
        steps.append(acc.take_full_cores)
    steps.append(acc.take_remaining_cpus)
    for take in steps:
        take()
        if acc.is_satisfied():
            return acc.result
    raise TakeByTopologyError("failed to allocate cpus")


def packed_or_empty(
    topo: CPUTopology,
    available: CPUSet,
    num_cpus: int,
    strategy: CPUSortingStrategy,
    spread_by_topology: bool,
) -> CPUSet:
    """Upstream ignores the error of these inner packed calls (``cpus, _ :=``)."""
    try:
        return take_by_topology_numa_packed(
            topo, available, num_cpus, strategy, False, spread_by_topology=spread_by_topology
        )
    except TakeByTopologyError:
        return CPUSet()

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
)
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology

__all__ = ["packed_mask_or_none", "take_by_topology_numa_packed"]


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
    acc = CPUAccumulator(topo, available, num_cpus, cpu_sorting_strategy, spread_by_topology)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise not_enough(num_cpus, available)
    if _take_steps(acc, prefer_align_by_uncore_cache):
        return acc.result
    raise TakeByTopologyError("failed to allocate cpus")


def _take_steps(acc: CPUAccumulator, prefer_align_by_uncore_cache: bool) -> bool:
    """Upstream's steps in order, each only while CPUs are still needed; True once
    satisfied."""
    acc.take_full_first_level()
    if acc.is_satisfied():
        return True
    acc.take_full_second_level()
    if acc.is_satisfied():
        return True

    if prefer_align_by_uncore_cache:
        acc.take_uncore_cache()
        if acc.is_satisfied():
            return True

    if acc.cpu_sorting_strategy is not CPUSortingStrategy.SPREAD:
        acc.take_full_cores()
        if acc.is_satisfied():
            return True

    acc.take_remaining_cpus()
    return acc.is_satisfied()


def packed_mask_or_none(parent: CPUAccumulator, mask: int, num_cpus: int) -> int:
    """The inner packed calls of the distributed take, whose error upstream ignores
    (``cpus, _ :=``): ``num_cpus`` CPUs of ``mask`` (the parent's topology, strategy and
    spread order), as a mask; 0 (an empty set) where the packed take fails."""
    acc = parent.over(mask, num_cpus)
    if acc.is_satisfied():
        return 0
    if acc.is_failed() or not _take_steps(acc, False):
        return 0
    return acc.result_mask

"""The static policy's ``takeByTopology`` dispatch and ``getAlignedCPUs`` (§2.7; follows
pkg/kubelet/cm/cpumanager/policy_static.go, v1.37 and master as 1.38).

The options pick the algorithm (``app.domain.cpumanager.cpu_assignment``): NUMA-distributed
with ``distribute-cpus-across-numa`` (in groups of the SMT level under ``full-pcpus-only``),
else NUMA-packed (with the uncore preference of ``prefer-align-cpus-by-uncorecache``); the
sorting strategy is ``spread`` with ``distribute-cpus-across-cores``. A take that fails becomes
a ``CPUAllocationError`` with the kubelet's text.

Per release (``app.domain.releases``, all 1.38 = master): the ``align-by-socket`` flag is
handed to the distributed algorithm from kubernetes#139778 (1.35-1.37 never pass it); the
topology hint's NUMA count is its floor from kubernetes#139456 (``min_numas``; the static
policy passes the hint's count for the take on the hint's aligned CPUs and 0 for the other
takes, as the PR description says ``allocateCPUs`` does - its code could not be read); best
combinations are copied from kubernetes#141238.
"""

from __future__ import annotations

from app.domain.cpumanager.cpu_assignment.common import CPUSortingStrategy, TakeByTopologyError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpumanager.errors import CPUAllocationError
from app.domain.cpumanager.policy_options import StaticPolicyOptions
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.bitmask import bits

__all__ = ["aligned_cpus", "take_by_topology"]


def take_by_topology(
    topology: CPUTopology,
    options: StaticPolicyOptions,
    cpu_group_size: int,
    available: CPUSet,
    num_cpus: int,
    *,
    spread_by_topology: bool,
    hang_release: str | None,
    align_by_socket: bool = False,
    copy_best: bool = False,
    min_numas: int = 0,
) -> CPUSet:
    """``takeByTopology`` dispatch (§2.7); failures become ``CPUAllocationError``."""
    strategy = _sorting_strategy(options)
    try:
        if options.distribute_cpus_across_numa:
            group = cpu_group_size if options.full_physical_cpus_only else 1
            return take_by_topology_numa_distributed(
                topology,
                available,
                num_cpus,
                group,
                strategy,
                align_by_socket,
                spread_by_topology=spread_by_topology,
                hang_release=hang_release,
                copy_best=copy_best,
                min_numas_from_hint=min_numas,
            )
        return take_by_topology_numa_packed(
            topology,
            available,
            num_cpus,
            strategy,
            options.prefer_align_by_uncore_cache,
            spread_by_topology=spread_by_topology,
        )
    except TakeByTopologyError as exc:
        raise CPUAllocationError(str(exc)) from exc


def _sorting_strategy(options: StaticPolicyOptions) -> CPUSortingStrategy:
    """``spread`` with ``distribute-cpus-across-cores``, else ``packed``."""
    if options.distribute_cpus_across_cores:
        return CPUSortingStrategy.SPREAD
    return CPUSortingStrategy.PACKED


def aligned_cpus(
    topology: CPUTopology, align_by_socket: bool, mask: int, allocatable: CPUSet
) -> CPUSet:
    """``getAlignedCPUs``: allocatable CPUs on the mask's NUMA nodes (or their sockets)."""
    numa_ids = bits(mask)
    if align_by_socket:
        sockets = topology.sockets_in_numa_nodes(numa_ids)
        return allocatable & topology.cpus_in_sockets(sockets)
    return allocatable & topology.cpus_in_numa_nodes(numa_ids)

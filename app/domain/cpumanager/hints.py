"""CPU topology hints (follows ``generateCPUTopologyHints`` and ``isHintSocketAligned`` of
pkg/kubelet/cm/cpumanager/policy_static.go, v1.37).

For every NUMA mask (``IterateBitMasks`` order over the NUMA ids present in the topology), a
mask is a hint when every reusable CPU lies on a mask node and the reusable CPUs plus the
available CPUs on the mask nodes cover the request. Hints on the fewest NUMA nodes able to
hold the request (counting all of the machine's CPUs) are preferred; with ``align-by-socket``
so are hints spanning the fewest sockets.
"""

from __future__ import annotations

from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology
from app.domain.topologymanager.bitmask import bits, iterate_bitmasks
from app.domain.topologymanager.hint import TopologyHint

_MASK_TABLES: dict[int, tuple[CPUTopology, list[tuple[int, int, int]]]] = {}


def _mask_table(topology: CPUTopology) -> list[tuple[int, int, int]]:
    """``(numa mask, CPU mask, CPU count)`` for every NUMA mask in IterateBitMasks order.

    Computed once per topology: on an 8-NUMA machine there are 255 masks and hints are asked
    for on every admission.
    """
    entry = _MASK_TABLES.get(id(topology))
    if entry is not None and entry[0] is topology:
        return entry[1]
    table = []
    for mask in iterate_bitmasks(topology.numa_node_ids()):
        cpus = 0
        for n in bits(mask):
            cpus |= topology.cpus_of_numa_node(n).mask
        table.append((mask, cpus, cpus.bit_count()))
    if len(_MASK_TABLES) > 64:
        _MASK_TABLES.clear()
    _MASK_TABLES[id(topology)] = (topology, table)
    return table


def is_hint_socket_aligned(topology: CPUTopology, mask: int, min_affinity_size: int) -> bool:
    """``isHintSocketAligned``: the mask's nodes span exactly the minimal number of sockets."""
    per_socket = topology.num_numa_nodes // topology.num_sockets if topology.num_sockets else 0
    if per_socket == 0:
        return False
    min_sockets = (min_affinity_size + per_socket - 1) // per_socket
    return len(topology.sockets_in_numa_nodes(bits(mask))) == min_sockets


def generate_cpu_topology_hints(
    topology: CPUTopology,
    available: CPUSet,
    reusable: CPUSet,
    request: int,
    align_by_socket: bool = False,
) -> list[TopologyHint]:
    """``generateCPUTopologyHints``."""
    numa_ids = topology.numa_node_ids()
    min_affinity_size = len(numa_ids)
    avail = available.mask
    reuse = reusable.mask
    n_reusable = reuse.bit_count()
    masks: list[int] = []
    for mask, cpus, n_cpus in _mask_table(topology):
        if n_cpus >= request and mask.bit_count() < min_affinity_size:
            min_affinity_size = mask.bit_count()
        if reuse & ~cpus:
            continue  # a reusable CPU lies outside the mask
        if n_reusable + (avail & cpus).bit_count() < request:
            continue
        masks.append(mask)
    hints = []
    for mask in masks:
        preferred = (
            align_by_socket and is_hint_socket_aligned(topology, mask, min_affinity_size)
        ) or mask.bit_count() == min_affinity_size
        hints.append(TopologyHint(mask, preferred))
    return hints

"""CPU topology hints (follows ``generateCPUTopologyHints`` and ``isHintSocketAligned`` of
pkg/kubelet/cm/cpumanager/policy_static.go, v1.37).

For every NUMA mask (``IterateBitMasks`` order over the NUMA ids present in the topology), a
mask is a hint when every reusable CPU lies on a mask node and the reusable CPUs plus the
available CPUs on the mask nodes cover the request. Hints on the fewest NUMA nodes able to
hold the request (counting all of the machine's CPUs) are preferred; with ``align-by-socket``
so are hints spanning the fewest sockets.

A CPU the topology does not know (a stale default set, say) is looked up in Go as
``CPUDetails[cpu]``, the zero ``CPUInfo``: it counts as a CPU of NUMA node 0. So an unknown
available CPU adds to every mask holding node 0, and an unknown reusable CPU rules out every
mask without node 0 (every mask, when the machine has no node 0).
"""

from __future__ import annotations

from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.bitmask import bits
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.mask_table import MaskRow, mask_table, subset_sums

_CPU_TABLES: dict[int, tuple[CPUTopology, _Table]] = {}


class _Table:
    """Per topology: the NUMA ids, the rows of ``mask_table``, the CPU mask of each NUMA node
    by position, the machine's CPUs under each mask (by position mask) and the minimal
    affinity size for each request size."""

    __slots__ = ("all_mask", "min_sizes", "n_cpus", "node_cpus", "nodes", "rows")

    def __init__(self, topology: CPUTopology) -> None:
        self.all_mask = topology.all_cpus.mask
        self.nodes = sorted(topology.numa_node_ids())
        self.rows: list[MaskRow] = mask_table(self.nodes)
        self.node_cpus = [topology.cpus_of_numa_node(n).mask for n in self.nodes]
        self.n_cpus = subset_sums([cpus.bit_count() for cpus in self.node_cpus])
        self.min_sizes: dict[int, int] = {}

    def min_affinity_size(self, request: int, default: int) -> int:
        """The fewest NUMA nodes whose CPUs (all of them, used or not) can hold ``request``."""
        size = self.min_sizes.get(request)
        if size is None:
            size = default
            for _, pm, count, _, _ in self.rows:
                if self.n_cpus[pm] >= request and count < size:
                    size = count
            if len(self.min_sizes) < 4096:
                self.min_sizes[request] = size
        return size


def _cpu_table(topology: CPUTopology) -> _Table:
    """The table of ``topology``, computed once: hints are asked for on every admission."""
    entry = _CPU_TABLES.get(id(topology))
    if entry is not None and entry[0] is topology:
        return entry[1]
    table = _Table(topology)
    if len(_CPU_TABLES) > 64:
        _CPU_TABLES.clear()
    _CPU_TABLES[id(topology)] = (topology, table)
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
    """``generateCPUTopologyHints``.

    NUMA nodes own disjoint CPU sets, so the available and reusable CPUs inside a mask are
    sums of per-node counts over the mask's nodes (``subset_sums``): one doubling pass
    instead of an intersection of 512-bit sets per mask.
    """
    table = _cpu_table(topology)
    min_size = table.min_affinity_size(request, len(table.nodes))
    n_reusable = reusable.mask.bit_count()
    avail_in, reuse_in = _counts_per_node(table, available.mask, reusable.mask)
    avail_sums = subset_sums(avail_in)
    need = request - n_reusable
    if n_reusable:  # every reusable CPU must lie on the mask
        reuse_sums = subset_sums(reuse_in)
        found = [
            row
            for row in table.rows
            if reuse_sums[row[1]] == n_reusable and avail_sums[row[1]] >= need
        ]
    else:
        found = [row for row in table.rows if avail_sums[row[1]] >= need]
    if not align_by_socket:
        return [row[3] if row[2] == min_size else row[4] for row in found]
    return [
        row[3]
        if row[2] == min_size or is_hint_socket_aligned(topology, row[0], min_size)
        else row[4]
        for row in found
    ]


def _counts_per_node(table: _Table, avail: int, reuse: int) -> tuple[list[int], list[int]]:
    """Available and reusable CPUs per NUMA node, by position."""
    avail_in = [(avail & cpus).bit_count() for cpus in table.node_cpus]
    reuse_in = [(reuse & cpus).bit_count() for cpus in table.node_cpus] if reuse else []
    unknown = (avail | reuse) & ~table.all_mask
    if unknown and table.nodes and table.nodes[0] == 0:
        # Unknown CPUs: Go's zero CPUInfo puts them on NUMA node 0 (the first position).
        avail_in[0] += (avail & ~table.all_mask).bit_count()
        if reuse_in:
            reuse_in[0] += (reuse & ~table.all_mask).bit_count()
    return avail_in, reuse_in

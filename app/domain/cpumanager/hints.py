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
from app.domain.topologymanager.bitmask import bits, iterate_bitmasks
from app.domain.topologymanager.hint import TopologyHint

_MASK_TABLES: dict[int, tuple[CPUTopology, _Table]] = {}


class _Table:
    """Per topology: every NUMA mask in IterateBitMasks order as ``(mask, lowest bit, mask
    without it, NUMA count, CPU count, preferred hint, other hint)`` (hints are immutable
    values, shared by every answer), the CPU mask of each NUMA node by bit, and the
    minimal affinity size for each request size."""

    __slots__ = ("all_mask", "masks", "min_sizes", "node_cpus")

    def __init__(self, topology: CPUTopology) -> None:
        self.all_mask = topology.all_cpus.mask
        self.node_cpus: dict[int, int] = {
            1 << n: topology.cpus_of_numa_node(n).mask for n in topology.numa_node_ids()
        }
        self.masks: list[tuple[int, int, int, int, int, TopologyHint, TopologyHint]] = []
        n_cpus: dict[int, int] = {0: 0}
        for mask in iterate_bitmasks(topology.numa_node_ids()):
            low = mask & -mask
            rest = mask ^ low
            n_cpus[mask] = n_cpus[rest] + self.node_cpus[low].bit_count()
            self.masks.append(
                (
                    mask,
                    low,
                    rest,
                    mask.bit_count(),
                    n_cpus[mask],
                    TopologyHint(mask, True),
                    TopologyHint(mask, False),
                )
            )
        self.min_sizes: dict[int, int] = {}

    def min_affinity_size(self, request: int, default: int) -> int:
        """The fewest NUMA nodes whose CPUs (all of them, used or not) can hold ``request``."""
        size = self.min_sizes.get(request)
        if size is None:
            size = default
            for _, _, _, count, n_cpus, _, _ in self.masks:
                if n_cpus >= request and count < size:
                    size = count
            if len(self.min_sizes) < 4096:
                self.min_sizes[request] = size
        return size


def _mask_table(topology: CPUTopology) -> _Table:
    """The table of ``topology``, computed once: on an 8-NUMA machine there are 255 masks and
    hints are asked for on every admission."""
    entry = _MASK_TABLES.get(id(topology))
    if entry is not None and entry[0] is topology:
        return entry[1]
    table = _Table(topology)
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
    """``generateCPUTopologyHints``.

    NUMA nodes own disjoint CPU sets, so the available and reusable CPUs inside a mask are
    the counts of the mask without its lowest node plus that node's count: one addition per
    mask instead of an intersection of 512-bit sets.
    """
    table = _mask_table(topology)
    min_affinity_size = table.min_affinity_size(request, len(table.node_cpus))
    n_reusable = reusable.mask.bit_count()
    avail_in, reuse_in = _counts_per_node(table, available.mask, reusable.mask)
    hints: list[TopologyHint] = []
    append = hints.append
    need = request - n_reusable
    for mask, low, rest, count, _, preferred_hint, other_hint in table.masks:
        if count > 1:
            n_avail = avail_in[mask] = avail_in[rest] + avail_in[low]
            n_reuse = reuse_in[mask] = reuse_in[rest] + reuse_in[low]
        else:
            n_avail, n_reuse = avail_in[mask], reuse_in[mask]
        if n_reuse != n_reusable:
            continue  # a reusable CPU lies outside the mask
        if n_avail < need:
            continue
        if count == min_affinity_size or (
            align_by_socket and is_hint_socket_aligned(topology, mask, min_affinity_size)
        ):
            append(preferred_hint)
        else:
            append(other_hint)
    return hints


def _counts_per_node(
    table: _Table, avail: int, reuse: int
) -> tuple[dict[int, int], dict[int, int]]:
    """Available and reusable CPUs per single-node mask (and 0 for the empty mask); the
    caller fills in the multi-node masks as it goes."""
    avail_in: dict[int, int] = {0: 0}
    reuse_in: dict[int, int] = {0: 0}
    any_reusable = bool(reuse)
    for bit, cpus in table.node_cpus.items():
        avail_in[bit] = (avail & cpus).bit_count()
        reuse_in[bit] = (reuse & cpus).bit_count() if any_reusable else 0
    if 1 in avail_in and (avail | reuse) & ~table.all_mask:
        # Unknown CPUs: Go's zero CPUInfo puts them on NUMA node 0 (bit 1).
        avail_in[1] += (avail & ~table.all_mask).bit_count()
        reuse_in[1] += (reuse & ~table.all_mask).bit_count()
    return avail_in, reuse_in

"""The per-topology index of take-by-topology (supports
pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37 and master as 1.38).

Everything works on int bitmasks: per-element masks and parent/child pairs are precomputed once
per topology (a small cache keyed by the topology object). "Free" checks compare against the
whole topology exactly as upstream does, so the index also keeps each element's CPU count and
the machine averages upstream uses (``CPUsPerSocket()``, ``CPUsPerCore()``,
``CPUsPerUncore()``). NUMA-first ordering iff ``topo.num_sockets >= topo.num_numa_nodes`` (the
machine's counts, not the available subset).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.topology.model import CPUTopology

__all__ = ["Pairs", "SiblingPairs", "TopologyIndex", "index_of"]

# (child id, CPUs of the child inside the parent, all CPUs of the child), by child id; when the
# child lies wholly inside the parent both masks are the same object.
Pairs = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True, slots=True)
class TopologyIndex:
    """Masks and parent/child relations of one topology, computed once."""

    numa_mask: dict[int, int]
    socket_mask: dict[int, int]
    core_mask: dict[int, int]
    uncore_mask: dict[int, int]
    numa_items: Pairs
    socket_items: Pairs
    sockets_in_numa: dict[int, Pairs]
    numas_in_socket: dict[int, Pairs]
    cores_in_socket: dict[int, Pairs]
    cores_in_numa: dict[int, Pairs]
    uncores_in_numa: dict[int, Pairs]
    cores_in_uncore: dict[int, Pairs]
    numa_sockets: dict[int, frozenset[int]]
    numa_of_cpu: dict[int, int]
    size: dict[str, dict[int, int]]  # level -> element id -> CPUs in the whole topology
    smallest: dict[str, int]  # level -> CPUs of its smallest element (0 when it has none)
    numa_first: bool
    cpus_per_core: int
    cpus_per_socket: int
    cpus_per_uncore: int
    all_mask: int
    num_numa_ids: int
    num_cpu_ids: int
    siblings: SiblingPairs | None = None


@dataclass(frozen=True, slots=True)
class SiblingPairs:
    """Cores of two CPUs each, ``low`` and ``low + stride`` (Linux numbers a core's second
    thread one core count above its first), whose ids are in the order of their ``low``
    CPUs and which lie wholly inside their NUMA node and socket: then a core's available
    count is two bits of the available mask, and every core's count comes from a few mask
    operations (``counts``). ``keys`` holds the ``low`` CPU of every core, ``keys_in_numa``
    and ``keys_in_socket`` those of each parent's cores."""

    stride: int
    keys: int
    keys_in_numa: dict[int, int]
    keys_in_socket: dict[int, int]

    def counts(self, avail: int) -> tuple[int, int]:
        """The keys of the cores with one available CPU and of those with both."""
        first = avail & self.keys
        second = (avail >> self.stride) & self.keys
        return first ^ second, first & second

    def cpus(self, keys: int) -> int:
        """Both CPUs of the cores with these keys."""
        return keys | (keys << self.stride)


def _sibling_pairs(
    core_mask: dict[int, int], cores_in_numa: dict[int, Pairs], cores_in_socket: dict[int, Pairs]
) -> SiblingPairs | None:
    """The machine's cores as ``SiblingPairs``, or ``None`` when they are not laid out so."""
    stride = 0
    keys = 0
    previous = -1
    for c in sorted(core_mask):
        m = core_mask[c]
        low = (m & -m).bit_length() - 1
        if m.bit_count() != 2 or low <= previous or (stride and m.bit_length() - 1 - low != stride):
            return None
        stride = m.bit_length() - 1 - low
        previous = low
        keys |= 1 << low
    parents = (cores_in_numa, cores_in_socket)
    if any(
        inside is not whole for by in parents for pairs in by.values() for _, inside, whole in pairs
    ):
        return None

    def keys_in(by: dict[int, Pairs]) -> dict[int, int]:
        return {
            p: sum(1 << (core_mask[c] & -core_mask[c]).bit_length() - 1 for c, _, _ in pairs)
            for p, pairs in by.items()
        }

    return SiblingPairs(stride, keys, keys_in(cores_in_numa), keys_in(cores_in_socket))


def _pairs(
    topo: CPUTopology, parent: str, child: str, child_masks: dict[int, int]
) -> dict[int, Pairs]:
    """For each parent id: its children as ``Pairs``."""
    acc: dict[int, dict[int, int]] = {}
    for cpu, info in topo.cpu_details.items():
        p = getattr(info, parent)
        c = getattr(info, child)
        by_child = acc.setdefault(p, {})
        by_child[c] = by_child.get(c, 0) | (1 << cpu)
    out: dict[int, Pairs] = {}
    for p, children in acc.items():
        rows = []
        for c, inside in sorted(children.items()):
            whole = child_masks[c]
            rows.append((c, whole if inside == whole else inside, whole))
        out[p] = tuple(rows)
    return out


def _cpu_counts(masks: dict[str, dict[int, int]]) -> dict[str, dict[int, int]]:
    """Per level, each element's CPU count in the whole topology."""
    return {level: {i: m.bit_count() for i, m in by_id.items()} for level, by_id in masks.items()}


def _build_index(topo: CPUTopology) -> TopologyIndex:
    numa_mask = {n: topo.cpus_of_numa_node(n).mask for n in topo.numa_node_ids()}
    socket_mask = {s: topo.cpus_of_socket(s).mask for s in topo.socket_ids()}
    core_mask = {c: topo.cpus_of_core(c).mask for c in topo.core_ids()}
    uncore_mask = {u: topo.cpus_of_uncore_cache(u).mask for u in topo.uncore_cache_ids()}
    sockets_in_numa = _pairs(topo, "numa_node_id", "socket_id", socket_mask)
    cores_in_socket = _pairs(topo, "socket_id", "core_id", core_mask)
    cores_in_numa = _pairs(topo, "numa_node_id", "core_id", core_mask)
    size = _cpu_counts(
        {"numa": numa_mask, "socket": socket_mask, "core": core_mask, "uncore": uncore_mask}
    )
    return TopologyIndex(
        numa_mask=numa_mask,
        socket_mask=socket_mask,
        core_mask=core_mask,
        uncore_mask=uncore_mask,
        numa_items=tuple((n, m, m) for n, m in sorted(numa_mask.items())),
        socket_items=tuple((s, m, m) for s, m in sorted(socket_mask.items())),
        sockets_in_numa=sockets_in_numa,
        numas_in_socket=_pairs(topo, "socket_id", "numa_node_id", numa_mask),
        cores_in_socket=cores_in_socket,
        cores_in_numa=cores_in_numa,
        uncores_in_numa=_pairs(topo, "numa_node_id", "uncore_cache_id", uncore_mask),
        cores_in_uncore=_pairs(topo, "uncore_cache_id", "core_id", core_mask),
        numa_sockets={n: frozenset(s for s, _, _ in p) for n, p in sockets_in_numa.items()},
        numa_of_cpu={cpu: info.numa_node_id for cpu, info in topo.cpu_details.items()},
        size=size,
        smallest={level: min(sizes.values(), default=0) for level, sizes in size.items()},
        numa_first=topo.num_sockets >= topo.num_numa_nodes,
        cpus_per_core=topo.cpus_per_core(),
        cpus_per_socket=topo.cpus_per_socket(),
        cpus_per_uncore=topo.cpus_per_uncore(),
        all_mask=topo.all_cpus.mask,
        num_numa_ids=len(numa_mask),
        num_cpu_ids=len(topo.cpu_details),
        siblings=_sibling_pairs(core_mask, cores_in_numa, cores_in_socket),
    )


_INDEX_CACHE: dict[int, tuple[CPUTopology, TopologyIndex]] = {}
_INDEX_CACHE_SIZE = 32


def index_of(topo: CPUTopology) -> TopologyIndex:
    """The index of ``topo``; the cache holds the topology itself so its id cannot be reused."""
    hit = _INDEX_CACHE.get(id(topo))
    if hit is not None and hit[0] is topo:
        return hit[1]
    ix = _build_index(topo)
    if len(_INDEX_CACHE) >= _INDEX_CACHE_SIZE:
        _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
    _INDEX_CACHE[id(topo)] = (topo, ix)
    return ix

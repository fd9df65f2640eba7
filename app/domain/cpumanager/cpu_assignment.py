"""CPU assignment: the CPU accumulator and take-by-topology (follows
pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37 and master as 1.38).

This module decides *which* logical CPUs an exclusive allocation gets once the static policy knows
*how many* it needs and from which pool. It owns:

* ``CPUAccumulator`` - upstream's ``cpuAccumulator``: the CPUs still available (``details``),
  the CPUs taken so far (``result``), how many are still needed, and the topology orderings it
  sorts elements by;
* ``take_by_topology_numa_packed`` - ``takeByTopologyNUMAPacked`` (the default algorithm:
  whole NUMA nodes / sockets, optionally whole and partial uncore caches, whole cores, then
  single CPUs);
* ``take_by_topology_numa_distributed`` - ``takeByTopologyNUMADistributed``
  (``distribute-cpus-across-numa``: spread the CPUs evenly over the fewest NUMA nodes, judged by a
  balance score, with the ``align-by-socket`` preference of the newest code line).

Go's orderings are kept exactly:

* ``sort`` orders element ids by their number of currently available CPUs, then by id. The
  comparison is a total order, so Go's unstable ``sort.Slice`` and Python's ``sorted`` agree.
* NUMA-first ordering iff ``topo.num_sockets >= topo.num_numa_nodes`` (the machine's counts, not
  the available subset). Concatenated per-parent lists may hold an element twice (an element
  spanning two parents); like upstream they are used as they are.
* "Free" checks compare against the whole topology exactly as upstream does: NUMA nodes and uncore
  caches against their own CPU count, sockets against ``CPUsPerSocket()`` and cores against
  ``CPUsPerCore()`` (the machine averages).
* ``take(cpus)`` adds ``cpus`` to the result, drops them from the available CPUs and lowers the
  need by ``|cpus|`` (even for CPUs already taken, as upstream does).
* Uncore step (``takeUncoreCache``): for each uncore cache in uncore order (computed once), whole
  free caches are taken only while at least ``CPUsPerUncore()`` (the machine average) is needed,
  then a partial take is tried on that cache; ``CoresNeededInUncoreCache`` picks the lowest core
  ids that still have an available CPU.
* Distributed + ``align_by_socket``: a combination is "in one socket" when all CPUs of its NUMA
  nodes (whole topology) sit in a single socket (upstream ``AreNUMANodesInSameSocket``).

Go slice aliasing is reproduced: Go's ``iterateCombinations`` builds each combination with
``append`` on its parent's slice, so sibling combinations share a backing array whenever the
parent has spare capacity, and a remembered ``bestCombo`` / ``bestLocalRemainder`` (a slice,
not a copy) of length 4, 6, 7 or 8 is overwritten by the later siblings before it is used
(upstream issue kubernetes/kubernetes#141237; the "deep copy bestCombo" fix #141238 is not
merged in the code this module follows). ``go_iterate_combinations`` models the slices with
Go's append growth (capacity 0, 1, 2, 4, 8, ...) and the chosen combination is read when Go
reads it, so the kubelet's decision - including the accounting error it can end in - is the
one reproduced. It only matters on machines with more than four NUMA nodes.

Per release (``app.domain.releases``):

* 1.38 (upstream master) counts the capacity of NUMA combinations and remainder subsets in
  whole CPU groups (kubernetes#140730) - the functions' default. A 1.35-1.37 kubelet checks
  raw CPU sums and, on a subset whose leftovers are all smaller than a group, loops forever;
  with ``hang_release`` that case raises ``DistributedAllocationHangError`` (a rejection that
  says so) and everything else is decided identically.
* 1.38 orders single CPUs for ``distribute-cpus-across-cores`` round-robin over the cores of
  each socket (``spread_by_topology``, kubernetes#140766); older releases list a socket's CPUs
  by id, which only spreads when siblings are numbered apart.
* Where the final remainder loop could still not progress (it cannot after the checks), this
  module stops and reports the kubelet's ``accounting error`` instead of spinning.

Everything works on int bitmasks: per-element masks and parent/child pairs are precomputed once
per topology (a small cache keyed by the topology object), and each accumulator caches its
orderings until the next ``take``. Standard library only.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology

__all__ = [
    "CPUAccumulator",
    "CPUAssignmentInputError",
    "CPUSortingStrategy",
    "DistributedAllocationHangError",
    "TakeByTopologyError",
    "iterate_combinations",
    "standard_deviation",
    "take_by_topology_numa_distributed",
    "take_by_topology_numa_packed",
]

_MAX_FLOAT64 = sys.float_info.max


class CPUSortingStrategy(StrEnum):
    """How single CPUs are ordered (``CPUSortingStrategy``).

    ``packed`` (default) lists the CPUs core by core, so SMT siblings end up together;
    ``spread`` (option ``distribute-cpus-across-cores``) lists them socket by socket in id order,
    so siblings are not adjacent, and the whole-core step is skipped.
    """

    PACKED = "packed"
    SPREAD = "spread"


class TakeByTopologyError(ValueError):
    """The kubelet could not take the CPUs; ``str(e)`` is the kubelet's exact text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CPUAssignmentInputError(ValueError):
    """The arguments of a CPU assignment call are malformed (a caller bug, not a kubelet error)."""


# -- small Go-compatible helpers ---------------------------------------------------------------


def _go_round(x: float) -> float:
    """Go's ``math.Round``: half away from zero, exact for every float64."""
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def _mean(xs: Sequence[int]) -> float:
    total = 0.0
    for x in xs:
        total += float(x)
    return _go_round(total / float(len(xs)) * 1000) / 1000


def standard_deviation(xs: Sequence[int]) -> float:
    """Population standard deviation rounded like upstream (mean and result to 3 decimals)."""
    if not xs:
        raise CPUAssignmentInputError("standard deviation of an empty list")
    m = _mean(xs)
    total = 0.0
    for x in xs:
        d = float(x) - m
        total += d * d
    return _go_round(math.sqrt(total / float(len(xs))) * 1000) / 1000


def iterate_combinations(items: Sequence[int], k: int) -> Iterator[tuple[int, ...]]:
    """Every k-element combination of ``items`` by position, lexicographically (Go's order).

    ``k < 1`` yields nothing, as upstream's ``iterateCombinations``.
    """
    if k < 1:
        return iter(())
    return itertools.combinations(items, k)


class GoSlice:
    """A Go ``[]int`` view: ``length`` elements of a shared backing array ``array``."""

    __slots__ = ("array", "length")

    def __init__(self, array: list[int], length: int) -> None:
        self.array = array
        self.length = length

    def values(self) -> tuple[int, ...]:
        """The elements as Go would read them now (later appends may have changed them)."""
        return tuple(self.array[: self.length])


def _go_append(parent: GoSlice, value: int) -> GoSlice:
    """``append(parent, value)``: in place when capacity allows, else a doubled new array."""
    n = parent.length
    if n < len(parent.array):
        parent.array[n] = value
        return GoSlice(parent.array, n + 1)
    cap = 1 if n == 0 else 2 * n  # growslice for small []int (size classes keep powers of two)
    array = parent.array[:n] + [value] + [0] * (cap - n - 1)
    return GoSlice(array, n + 1)


def go_iterate_combinations(items: Sequence[int], k: int) -> Iterator[GoSlice]:
    """``iterateCombinations`` with Go's slice sharing: each yielded slice is valid when it is
    yielded; a kept reference may change as later siblings are generated."""
    if k < 1:
        return

    def helper(k: int, start: int, accum: GoSlice) -> Iterator[GoSlice]:
        if k == 0:
            yield accum
            return
        for i in range(start, len(items) - k + 1):
            yield from helper(k - 1, i + 1, _go_append(accum, items[i]))

    yield from helper(k, 0, GoSlice([], 0))


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _strategy(value: CPUSortingStrategy | str) -> CPUSortingStrategy:
    try:
        return CPUSortingStrategy(value)
    except ValueError:
        raise CPUAssignmentInputError(
            f"unknown CPU sorting strategy {value!r} (expected 'packed' or 'spread')"
        ) from None


def _check_args(topo: object, available: object, num_cpus: object) -> None:
    if not isinstance(topo, CPUTopology):
        raise CPUAssignmentInputError(f"topology must be a CPUTopology, not {type(topo).__name__}")
    if not isinstance(available, CPUSet):
        raise CPUAssignmentInputError(
            f"available CPUs must be a CPUSet, not {type(available).__name__}"
        )
    if not isinstance(num_cpus, int) or isinstance(num_cpus, bool):
        raise CPUAssignmentInputError(
            f"number of CPUs must be an integer, not {type(num_cpus).__name__}"
        )


# -- per-topology index ----------------------------------------------------------------------

# (child id, CPUs of the child inside the parent, all CPUs of the child), by child id; when the
# child lies wholly inside the parent both masks are the same object.
Pairs = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True, slots=True)
class _TopologyIndex:
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
    size: dict[str, dict[int, int]]  # level -> element id -> CPUs in the whole topology
    numa_first: bool
    cpus_per_core: int
    cpus_per_socket: int
    cpus_per_uncore: int
    all_mask: int
    num_numa_ids: int
    num_cpu_ids: int


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


def _build_index(topo: CPUTopology) -> _TopologyIndex:
    numa_mask = {n: topo.cpus_of_numa_node(n).mask for n in topo.numa_node_ids()}
    socket_mask = {s: topo.cpus_of_socket(s).mask for s in topo.socket_ids()}
    core_mask = {c: topo.cpus_of_core(c).mask for c in topo.core_ids()}
    uncore_mask = {u: topo.cpus_of_uncore_cache(u).mask for u in topo.uncore_cache_ids()}
    numa_sockets: dict[int, set[int]] = {}
    for info in topo.cpu_details.values():
        numa_sockets.setdefault(info.numa_node_id, set()).add(info.socket_id)
    num_uncore = topo.num_uncore_cache
    return _TopologyIndex(
        numa_mask=numa_mask,
        socket_mask=socket_mask,
        core_mask=core_mask,
        uncore_mask=uncore_mask,
        numa_items=tuple((n, m, m) for n, m in sorted(numa_mask.items())),
        socket_items=tuple((s, m, m) for s, m in sorted(socket_mask.items())),
        sockets_in_numa=_pairs(topo, "numa_node_id", "socket_id", socket_mask),
        numas_in_socket=_pairs(topo, "socket_id", "numa_node_id", numa_mask),
        cores_in_socket=_pairs(topo, "socket_id", "core_id", core_mask),
        cores_in_numa=_pairs(topo, "numa_node_id", "core_id", core_mask),
        uncores_in_numa=_pairs(topo, "numa_node_id", "uncore_cache_id", uncore_mask),
        cores_in_uncore=_pairs(topo, "uncore_cache_id", "core_id", core_mask),
        numa_sockets={n: frozenset(s) for n, s in numa_sockets.items()},
        size={
            level: {i: m.bit_count() for i, m in masks.items()}
            for level, masks in (
                ("numa", numa_mask),
                ("socket", socket_mask),
                ("core", core_mask),
                ("uncore", uncore_mask),
            )
        },
        numa_first=topo.num_sockets >= topo.num_numa_nodes,
        cpus_per_core=topo.cpus_per_core(),
        cpus_per_socket=topo.cpus_per_socket(),
        cpus_per_uncore=topo.num_cpus // num_uncore if num_uncore else 0,
        all_mask=topo.all_cpus.mask,
        num_numa_ids=len(numa_mask),
        num_cpu_ids=len(topo.cpu_details),
    )


_NUMA, _SOCKET, _CORE, _UNCORE = 1, 2, 3, 4  # level tags of the per-state count cache

_INDEX_CACHE: dict[int, tuple[CPUTopology, _TopologyIndex]] = {}
_INDEX_CACHE_SIZE = 32


def _index_of(topo: CPUTopology) -> _TopologyIndex:
    """The index of ``topo``; the cache holds the topology itself so its id cannot be reused."""
    hit = _INDEX_CACHE.get(id(topo))
    if hit is not None and hit[0] is topo:
        return hit[1]
    ix = _build_index(topo)
    if len(_INDEX_CACHE) >= _INDEX_CACHE_SIZE:
        _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
    _INDEX_CACHE[id(topo)] = (topo, ix)
    return ix


# -- the accumulator -------------------------------------------------------------------------


class CPUAccumulator:
    """Upstream's ``cpuAccumulator``: what is still available, what was taken, what is needed.

    ``available`` is reduced to the CPUs the topology knows (``CPUDetails.KeepOnly``). Every
    ordering reflects the CPUs available *now* and is recomputed after each ``take``.
    """

    __slots__ = (
        "_avail",
        "_cache",
        "_counts",
        "_ix",
        "_result",
        "cpu_sorting_strategy",
        "num_cpus_needed",
        "spread_by_topology",
        "topo",
    )

    def __init__(
        self,
        topo: CPUTopology,
        available: CPUSet,
        num_cpus: int,
        cpu_sorting_strategy: CPUSortingStrategy | str = CPUSortingStrategy.PACKED,
        spread_by_topology: bool = False,
    ) -> None:
        _check_args(topo, available, num_cpus)
        self.topo = topo
        self.spread_by_topology = spread_by_topology
        self._ix = _index_of(topo)
        self._avail = available.mask & self._ix.all_mask
        self._result = 0
        self.num_cpus_needed = num_cpus
        self.cpu_sorting_strategy = _strategy(cpu_sorting_strategy)
        self._cache: dict[str, tuple[int, ...]] = {}
        self._counts: dict[int, dict[int, int]] = {}  # level -> id -> available CPUs now

    # -- state ---------------------------------------------------------------------------------
    @property
    def result(self) -> CPUSet:
        """The CPUs accumulated so far."""
        return CPUSet.from_mask(self._result)

    @property
    def details(self) -> CPUSet:
        """The CPUs still available (upstream: ``details.CPUs()``)."""
        return CPUSet.from_mask(self._avail)

    @property
    def numa_first(self) -> bool:
        """NUMA nodes are the first level iff the machine has at least as many sockets."""
        return self._ix.numa_first

    def take(self, cpus: CPUSet) -> None:
        """Claim ``cpus``: add to the result, drop from the available CPUs, lower the need."""
        if not isinstance(cpus, CPUSet):
            raise CPUAssignmentInputError(f"take() needs a CPUSet, not {type(cpus).__name__}")
        self._take_mask(cpus.mask)

    def _take_mask(self, mask: int) -> None:
        self._result |= mask
        self._avail &= ~self._result
        self.num_cpus_needed -= mask.bit_count()
        self._cache = {}
        self._counts = {}

    def needs_at_least(self, n: int) -> bool:
        return self.num_cpus_needed >= n

    def is_satisfied(self) -> bool:
        return self.num_cpus_needed < 1

    def is_failed(self) -> bool:
        return self.num_cpus_needed > self._avail.bit_count()

    # -- "free" checks against the whole topology --------------------------------------------
    def is_numa_node_free(self, numa_id: int) -> bool:
        m = self._ix.numa_mask.get(numa_id, 0)
        return (m & self._avail).bit_count() == m.bit_count()

    def is_socket_free(self, socket_id: int) -> bool:
        m = self._ix.socket_mask.get(socket_id, 0)
        return (m & self._avail).bit_count() == self._ix.cpus_per_socket

    def is_core_free(self, core_id: int) -> bool:
        m = self._ix.core_mask.get(core_id, 0)
        return (m & self._avail).bit_count() == self._ix.cpus_per_core

    def is_uncore_cache_free(self, uncore_id: int) -> bool:
        m = self._ix.uncore_mask.get(uncore_id, 0)
        return (m & self._avail).bit_count() == m.bit_count()

    # -- orderings (sortAvailable*) ------------------------------------------------------------
    def _sorted(self, items: Pairs, level: int) -> list[int]:
        """Ids of ``items`` with an available CPU inside the parent, by (available count, id).

        The count is over the whole element (``details.CPUsInX(id)``). The counts are
        remembered (per level) for the free checks of the same state.
        """
        av = self._avail
        keyed = [
            (n, i)
            for i, inside, whole in items
            if (n := (whole & av).bit_count()) and (inside is whole or inside & av)
        ]
        keyed.sort()
        counts = self._counts.setdefault(level, {})
        for n, i in keyed:
            counts[i] = n
        return [i for _, i in keyed]

    def _numa_order(self) -> tuple[int, ...]:
        hit = self._cache.get("numa")
        if hit is None:
            ix = self._ix
            if ix.numa_first:
                hit = tuple(self._sorted(ix.numa_items, _NUMA))
            else:
                out: list[int] = []
                for s in self._socket_order():
                    out += self._sorted(ix.numas_in_socket.get(s, ()), _NUMA)
                hit = tuple(out)
            self._cache["numa"] = hit
        return hit

    def _socket_order(self) -> tuple[int, ...]:
        hit = self._cache.get("socket")
        if hit is None:
            ix = self._ix
            if ix.numa_first:
                out: list[int] = []
                for n in self._numa_order():
                    out += self._sorted(ix.sockets_in_numa.get(n, ()), _SOCKET)
                hit = tuple(out)
            else:
                hit = tuple(self._sorted(ix.socket_items, _SOCKET))
            self._cache["socket"] = hit
        return hit

    def _core_order(self) -> tuple[int, ...]:
        hit = self._cache.get("core")
        if hit is None:
            ix = self._ix
            out: list[int] = []
            if ix.numa_first:
                for s in self._socket_order():
                    out += self._sorted(ix.cores_in_socket.get(s, ()), _CORE)
            else:
                for n in self._numa_order():
                    out += self._sorted(ix.cores_in_numa.get(n, ()), _CORE)
            hit = tuple(out)
            self._cache["core"] = hit
        return hit

    def _uncore_order(self) -> tuple[int, ...]:
        hit = self._cache.get("uncore")
        if hit is None:
            ix = self._ix
            out: list[int] = []
            for n in self._numa_order():
                out += self._sorted(ix.uncores_in_numa.get(n, ()), _UNCORE)
            hit = tuple(out)
            self._cache["uncore"] = hit
        return hit

    def sort_available_numa_nodes(self) -> list[int]:
        """NUMA nodes with an available CPU (NUMA-first: by count; else per socket in order)."""
        return list(self._numa_order())

    def sort_available_sockets(self) -> list[int]:
        """Sockets with an available CPU (socket-first: by count; else per NUMA node in order)."""
        return list(self._socket_order())

    def sort_available_cores(self) -> list[int]:
        """Cores with an available CPU: per socket (NUMA-first) or per NUMA node, by count."""
        return list(self._core_order())

    def sort_available_uncore_caches(self) -> list[int]:
        """Uncore caches with an available CPU, per NUMA node in NUMA order, by count."""
        return list(self._uncore_order())

    def sort_available_cpus_packed(self) -> list[int]:
        """Every available CPU: core by core in core order, ascending within a core."""
        av = self._avail
        cm = self._ix.core_mask
        out: list[int] = []
        for c in self._core_order():
            out.extend(_bits(cm[c] & av))
        return out

    def sort_available_cpus_spread(self) -> list[int]:
        """Every available CPU: socket by socket in socket order, ascending within a socket."""
        av = self._avail
        sm = self._ix.socket_mask
        out: list[int] = []
        for s in self._socket_order():
            out.extend(_bits(sm[s] & av))
        return out

    def sort_available_cpus_spread_by_topology(self) -> list[int]:
        """1.38 (kubernetes#140766): socket by socket in socket order; within a socket the
        cores with an available CPU in core order (available count, then id), and their CPUs
        taken round-robin: the lowest available CPU of every core, then the next one..."""
        av = self._avail
        ix = self._ix
        out: list[int] = []
        for s in self._socket_order():
            per_core = [
                list(_bits(ix.core_mask[c] & av))
                for c in self._sorted(ix.cores_in_socket.get(s, ()), _CORE)
            ]
            depth = max((len(cpus) for cpus in per_core), default=0)
            for i in range(depth):
                out.extend(cpus[i] for cpus in per_core if i < len(cpus))
        return out

    # -- free elements --------------------------------------------------------------------------
    def _free(self, order: tuple[int, ...], level: int, want: dict[int, int] | int) -> list[int]:
        """Elements of ``order`` whose available count equals ``want`` (per id, or one value)."""
        counts = self._counts.get(level, {})
        if isinstance(want, int):
            return [i for i in order if counts[i] == want]
        return [i for i in order if counts[i] == want[i]]

    def free_numa_nodes(self) -> list[int]:
        """Fully available NUMA nodes, in NUMA order."""
        return self._free(self._numa_order(), _NUMA, self._ix.size["numa"])

    def free_sockets(self) -> list[int]:
        """Sockets with ``CPUsPerSocket()`` available CPUs, in socket order."""
        return self._free(self._socket_order(), _SOCKET, self._ix.cpus_per_socket)

    def free_cores(self) -> list[int]:
        """Cores with ``CPUsPerCore()`` available CPUs, in core order."""
        return self._free(self._core_order(), _CORE, self._ix.cpus_per_core)

    def free_uncore_caches(self) -> list[int]:
        """Fully available uncore caches, in uncore order."""
        return self._free(self._uncore_order(), _UNCORE, self._ix.size["uncore"])

    def free_cpus(self) -> list[int]:
        """Available CPUs in the order of the accumulator's sorting strategy."""
        if self.cpu_sorting_strategy is CPUSortingStrategy.PACKED:
            return self.sort_available_cpus_packed()
        if self.spread_by_topology:
            return self.sort_available_cpus_spread_by_topology()
        return self.sort_available_cpus_spread()

    # -- taking steps -----------------------------------------------------------------------------
    def _take_whole(self, ids: list[int], masks: dict[int, int], sizes: dict[int, int]) -> None:
        """Take each listed element (all its CPUs in the topology) while it fits the need."""
        for i in ids:
            if self.num_cpus_needed < 1:
                break  # every element has a CPU, so nothing later can be needed
            if not self.needs_at_least(sizes[i]):
                continue
            self._take_mask(masks[i])

    def take_full_numa_nodes(self) -> None:
        ix = self._ix
        self._take_whole(self.free_numa_nodes(), ix.numa_mask, ix.size["numa"])

    def take_full_sockets(self) -> None:
        ix = self._ix
        self._take_whole(self.free_sockets(), ix.socket_mask, ix.size["socket"])

    def take_full_first_level(self) -> None:
        """Whole NUMA nodes when NUMA-first, else whole sockets."""
        if self._ix.numa_first:
            self.take_full_numa_nodes()
        else:
            self.take_full_sockets()

    def take_full_second_level(self) -> None:
        """Whole sockets when NUMA-first, else whole NUMA nodes."""
        if self._ix.numa_first:
            self.take_full_sockets()
        else:
            self.take_full_numa_nodes()

    def take_full_uncore(self) -> None:
        ix = self._ix
        self._take_whole(self.free_uncore_caches(), ix.uncore_mask, ix.size["uncore"])

    def take_partial_uncore(self, uncore_id: int) -> None:
        """Take the lowest cores of one uncore cache, only if they give exactly what is needed."""
        cpc = self._ix.cpus_per_core
        if cpc < 1:
            raise CPUAssignmentInputError("topology has no cores (CPUs per core is 0)")
        need = self.num_cpus_needed
        cores_needed = _go_div(need + cpc - 1, cpc)
        av = self._avail
        cores = [c for c, inside, _ in self._ix.cores_in_uncore.get(uncore_id, ()) if inside & av]
        if len(cores) > cores_needed:
            cores = cores[:cores_needed]
        cm = self._ix.core_mask
        free = 0
        for c in cores:
            free |= cm[c] & av
        if need % 2 != 0 and cpc > 1 and free.bit_count() > need:
            free &= ~(1 << (free.bit_length() - 1))  # drop the highest-numbered CPU
        if need == free.bit_count():
            self._take_mask(free)

    def take_uncore_cache(self) -> None:
        """Whole free uncore caches (when a cache's worth is needed), then a partial one."""
        per_uncore = self._ix.cpus_per_uncore
        for u in self._uncore_order():
            if self.needs_at_least(per_uncore):
                self.take_full_uncore()
            if self.is_satisfied():
                return
            self.take_partial_uncore(u)
            if self.is_satisfied():
                return

    def take_full_cores(self) -> None:
        ix = self._ix
        self._take_whole(self.free_cores(), ix.core_mask, ix.size["core"])

    def take_remaining_cpus(self) -> None:
        for cpu in self.free_cpus():
            self._take_mask(1 << cpu)
            if self.is_satisfied():
                return

    # -- distributed helpers ------------------------------------------------------------------
    def range_numa_nodes_needed_to_satisfy(self, cpu_group_size: int) -> tuple[int, int]:
        """Fewest and most NUMA nodes that could hold the need in groups of ``cpu_group_size``."""
        g = _check_group_size(cpu_group_size)
        ix = self._ix
        numas_available = sum(1 for _, _, m in ix.numa_items if m & self._avail)
        groups_total = (ix.num_cpu_ids - 1) // g + 1
        groups_per_numa = (groups_total - 1) // ix.num_numa_ids + 1
        groups_needed = _go_div(self.num_cpus_needed - 1, g) + 1
        min_numas = _go_div(groups_needed - 1, groups_per_numa) + 1
        max_numas = min(groups_needed, numas_available)
        return min_numas, max_numas

    def _numa_count(self, numa_id: int) -> int:
        return (self._ix.numa_mask.get(numa_id, 0) & self._avail).bit_count()


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _check_group_size(cpu_group_size: object) -> int:
    if (
        not isinstance(cpu_group_size, int)
        or isinstance(cpu_group_size, bool)
        or cpu_group_size < 1
    ):
        raise CPUAssignmentInputError(
            f"CPU group size must be a positive integer, got {cpu_group_size!r}"
        )
    return cpu_group_size


def _not_enough(num_cpus: int, available: CPUSet) -> TakeByTopologyError:
    return TakeByTopologyError(
        f"not enough cpus available to satisfy request: requested={num_cpus}, "
        f"available={available.size()}"
    )


# -- takeByTopologyNUMAPacked ----------------------------------------------------------------


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
    strategy = _strategy(cpu_sorting_strategy)
    acc = CPUAccumulator(topo, available, num_cpus, strategy, spread_by_topology)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise _not_enough(num_cpus, available)

    acc.take_full_first_level()
    if acc.is_satisfied():
        return acc.result
    acc.take_full_second_level()
    if acc.is_satisfied():
        return acc.result

    if prefer_align_by_uncore_cache:
        acc.take_uncore_cache()
        if acc.is_satisfied():
            return acc.result

    if strategy is not CPUSortingStrategy.SPREAD:
        acc.take_full_cores()
        if acc.is_satisfied():
            return acc.result

    acc.take_remaining_cpus()
    if acc.is_satisfied():
        return acc.result
    raise TakeByTopologyError("failed to allocate cpus")


def _packed_or_empty(
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


# -- takeByTopologyNUMADistributed -----------------------------------------------------------


@dataclass(slots=True)
class _Choice:
    """The best NUMA combination seen so far for one combination size."""

    balance: float = _MAX_FLOAT64
    remainder: tuple[int, ...] | None = None
    combo: tuple[int, ...] | None = None
    in_one_socket: bool = False


def _numas_in_same_socket(ix: _TopologyIndex, combo: Iterable[int]) -> bool:
    sockets: set[int] = set()
    for n in combo:
        sockets |= ix.numa_sockets.get(n, frozenset())
    return len(sockets) == 1


class DistributedAllocationHangError(TakeByTopologyError):
    """A kubelet without kubernetes#140730 would loop forever here (1.35-1.37)."""


def _hang(remainder: int, g: int, release: str) -> DistributedAllocationHangError:
    return DistributedAllocationHangError(
        f"a {release} kubelet never finishes this allocation: takeByTopologyNUMADistributed "
        f"keeps handing out the remaining {remainder} CPUs in groups of {g} over NUMA nodes "
        "whose leftovers are smaller than a group, holding the CPU manager lock (upstream "
        "kubernetes#140730, fixed in 1.38); the simulator rejects the pod instead of hanging"
    )


def _best_remainder_split(
    remainder: int,
    remainder_combo: Sequence[int],
    after: dict[int, int],
    g: int,
    release: str | None,
) -> tuple[float, tuple[int, ...] | None]:
    """Best balance when handing ``remainder`` out in groups of ``g`` over a subset.

    ``release`` set: a kubelet without the whole-group check of kubernetes#140730, which
    checks a subset's raw CPU sum and then spins on a subset whose groups cannot hold the
    remainder; that is reported as ``DistributedAllocationHangError``.
    """
    best_balance = _MAX_FLOAT64
    best_subset: GoSlice | None = None
    k = len(remainder_combo)
    while remainder > 0 and k >= 1:
        for subset_slice in go_iterate_combinations(remainder_combo, k):
            subset = subset_slice.values()
            if release is not None and sum(after[n] for n in subset) < remainder:
                continue
            if sum(after[n] // g for n in subset) * g < remainder:
                if release is not None:
                    raise _hang(remainder, g, release)
                continue
            left = dict(after)
            rem = remainder
            while rem > 0:
                before = rem
                for n in subset:
                    if rem == 0:
                        break
                    if left[n] < g:
                        continue
                    left[n] -= g
                    rem -= g
                if rem == before:  # cannot happen after the group check; never spin
                    break
            balance = standard_deviation(list(left.values()))
            if balance < best_balance:
                best_balance = balance
                best_subset = subset_slice  # a reference, as in Go
        k -= 1
    return best_balance, None if best_subset is None else best_subset.values()


def _choose_combo(
    acc: CPUAccumulator,
    numas: Sequence[int],
    k: int,
    num_cpus: int,
    g: int,
    align_by_socket: bool,
    release: str | None,
) -> _Choice:
    ix = acc._ix
    avail_of = {n: acc._numa_count(n) for n in numas}
    best = _Choice()
    best_slice: GoSlice | None = None
    for combo_slice in go_iterate_combinations(numas, k):
        combo = combo_slice.values()
        if best.balance == 0 and (not align_by_socket or best.in_one_socket):
            break

        union = 0
        for n in combo:
            union |= ix.numa_mask[n]
        if (union & acc._avail).bit_count() < num_cpus:
            continue
        if release is None and sum(avail_of[n] // g for n in combo) * g < num_cpus:
            continue

        distribution = num_cpus // len(combo) // g * g
        if align_by_socket:
            for n in combo:
                distribution = min(distribution, avail_of[n] // g * g)
        if any(avail_of[n] < distribution for n in combo):
            continue

        after = dict(avail_of)
        for n in combo:
            after[n] -= distribution
        remainder = num_cpus - distribution * len(combo)
        remainder_combo = [n for n in combo if after[n] >= g]

        local_balance = _MAX_FLOAT64
        local_remainder: tuple[int, ...] | None = None
        if remainder == 0:
            local_balance = standard_deviation(list(after.values()))
        else:
            local_balance, local_remainder = _best_remainder_split(
                remainder, remainder_combo, after, g, release
            )

        in_same_socket = align_by_socket and _numas_in_same_socket(ix, combo)
        is_better = local_balance < best.balance
        if align_by_socket and in_same_socket != best.in_one_socket:
            is_better = in_same_socket
        if is_better:
            best.balance = local_balance
            best.remainder = local_remainder
            best_slice = combo_slice  # a reference, as in Go: later siblings may rewrite it
            if align_by_socket:
                best.in_one_socket = in_same_socket
    if best_slice is not None:
        best.combo = best_slice.values()
    return best


def take_by_topology_numa_distributed(
    topo: CPUTopology,
    available: CPUSet,
    num_cpus: int,
    cpu_group_size: int,
    cpu_sorting_strategy: CPUSortingStrategy | str = CPUSortingStrategy.PACKED,
    align_by_socket: bool = False,
    *,
    spread_by_topology: bool = False,
    hang_release: str | None = None,
) -> CPUSet:
    """``num_cpus`` CPUs spread evenly over NUMA nodes (``takeByTopologyNUMADistributed``).

    CPUs are handed out in groups of ``cpu_group_size`` (the SMT level under
    ``full-pcpus-only``, else 1). For k = the fewest to the most NUMA nodes that could do,
    every k-combination of the NUMA order is scored by the standard deviation of the CPUs left
    per NUMA node; the first best combination wins (with ``align_by_socket`` a single-socket
    combination beats any cross-socket one). When no combination fits, or the request is not a
    multiple of the group size, the NUMA-packed algorithm is used. The uncore option never
    applies here.

    Capacity is counted in whole groups (kubernetes#140730, 1.38). ``hang_release`` names an
    older kubelet (1.35-1.37) whose raw-sum check passes subsets that then loop forever: such
    a request raises ``DistributedAllocationHangError`` instead; every request that terminates
    there gets the same CPUs either way.
    """
    strategy = _strategy(cpu_sorting_strategy)
    g = _check_group_size(cpu_group_size)
    _check_args(topo, available, num_cpus)
    sbt = spread_by_topology
    if num_cpus % g != 0:
        return take_by_topology_numa_packed(
            topo, available, num_cpus, strategy, False, spread_by_topology=sbt
        )

    acc = CPUAccumulator(topo, available, num_cpus, strategy, sbt)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise _not_enough(num_cpus, available)

    ix = acc._ix
    numas = acc.sort_available_numa_nodes()
    min_numas, max_numas = acc.range_numa_nodes_needed_to_satisfy(g)

    for k in range(min_numas, max_numas + 1):
        best = _choose_combo(acc, numas, k, num_cpus, g, align_by_socket, hang_release)
        if best.combo is None:
            continue

        combo = best.combo
        distribution = num_cpus // len(combo) // g * g
        for n in combo:
            distribution = min(distribution, acc._numa_count(n) // g * g)
        for n in combo:
            pool = CPUSet.from_mask(ix.numa_mask[n] & acc._avail)
            acc._take_mask(_packed_or_empty(topo, pool, distribution, strategy, sbt).mask)

        remainder = num_cpus - distribution * len(combo)
        while remainder > 0:
            before = remainder
            for n in best.remainder or ():
                if remainder == 0:
                    break
                if acc._numa_count(n) < g:
                    continue
                pool = CPUSet.from_mask(ix.numa_mask[n] & acc._avail)
                acc._take_mask(_packed_or_empty(topo, pool, g, strategy, sbt).mask)
                remainder -= g
            if remainder == before:  # Go would loop forever here; report the shortfall instead
                break

        if acc.num_cpus_needed > 0:
            raise TakeByTopologyError(
                f"accounting error, not enough CPUs allocated, remaining: {acc.num_cpus_needed}"
            )
        if acc.num_cpus_needed < 0:
            raise TakeByTopologyError(
                f"accounting error, too many CPUs allocated, remaining: {acc.num_cpus_needed}"
            )
        return acc.result

    return take_by_topology_numa_packed(
        topo, available, num_cpus, strategy, False, spread_by_topology=sbt
    )

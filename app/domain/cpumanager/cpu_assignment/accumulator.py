"""Upstream's ``cpuAccumulator`` (follows pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37 and
master as 1.38): the CPUs still available (``details``), the CPUs taken so far (``result``), how
many are still needed, the topology orderings it sorts elements by, and the taking steps.

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
* 1.38 orders single CPUs for ``distribute-cpus-across-cores`` round-robin over the cores of
  each socket (``spread_by_topology``, kubernetes#140766); older releases list a socket's CPUs
  by id, which only spreads when siblings are numbered apart.

Each accumulator caches its orderings until the next ``take``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app.domain.cpumanager.cpu_assignment.common import (
    CPUAssignmentInputError,
    CPUSortingStrategy,
    check_args,
    check_group_size,
    parse_strategy,
)
from app.domain.cpumanager.cpu_assignment.gomath import go_div
from app.domain.cpumanager.cpu_assignment.topology_index import Pairs, SiblingPairs, index_of
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology

__all__ = ["CPUAccumulator"]

_NUMA, _SOCKET, _CORE, _UNCORE = 1, 2, 3, 4  # level tags of the per-state count cache


def _lowest(mask: int, count: int) -> int:
    """The ``count`` lowest set bits of ``mask``: bit by bit for a few, else the shortest
    prefix of ``mask`` holding ``count`` set bits, found by bisection on its length (a bit
    count per step instead of a step per bit)."""
    if count <= 8:
        out = 0
        for _ in range(count):
            low = mask & -mask
            out |= low
            mask ^= low
        return out
    lo, hi = 0, mask.bit_length()  # a prefix of hi bits holds count bits, or all there are
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (mask & ((1 << mid) - 1)).bit_count() >= count:
            hi = mid
        else:
            lo = mid
    return mask & ((1 << hi) - 1)


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class CPUAccumulator:
    """Upstream's ``cpuAccumulator``: what is still available, what was taken, what is needed.

    ``available`` is reduced to the CPUs the topology knows (``CPUDetails.KeepOnly``). Every
    ordering reflects the CPUs available *now* and is recomputed after each ``take``.
    """

    __slots__ = (
        "_cache",
        "_counts",
        "_result",
        "avail_mask",
        "cpu_sorting_strategy",
        "ix",
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
        check_args(topo, available, num_cpus)
        self.topo = topo
        self.spread_by_topology = spread_by_topology
        self.ix = index_of(topo)
        self.avail_mask = available.mask & self.ix.all_mask
        self._result = 0
        self.num_cpus_needed = num_cpus
        self.cpu_sorting_strategy = parse_strategy(cpu_sorting_strategy)
        self._cache: dict[str, tuple[int, ...]] = {}
        self._counts: dict[int, dict[int, int]] = {}  # level -> id -> available CPUs now

    def over(self, mask: int, num_cpus: int) -> CPUAccumulator:
        """A new accumulator for ``num_cpus`` of the CPUs in ``mask``, with this one's
        topology, strategy and spread order (already checked: nothing is checked again)."""
        acc = CPUAccumulator.__new__(CPUAccumulator)
        acc.topo = self.topo
        acc.spread_by_topology = self.spread_by_topology
        acc.ix = self.ix
        acc.avail_mask = mask & self.ix.all_mask
        acc._result = 0
        acc.num_cpus_needed = num_cpus
        acc.cpu_sorting_strategy = self.cpu_sorting_strategy
        acc._cache = {}
        acc._counts = {}
        return acc

    # -- state ---------------------------------------------------------------------------------
    @property
    def result(self) -> CPUSet:
        """The CPUs accumulated so far."""
        return CPUSet.from_mask(self._result)

    @property
    def result_mask(self) -> int:
        """The CPUs accumulated so far, as a mask."""
        return self._result

    @property
    def details(self) -> CPUSet:
        """The CPUs still available (upstream: ``details.CPUs()``)."""
        return CPUSet.from_mask(self.avail_mask)

    @property
    def numa_first(self) -> bool:
        """NUMA nodes are the first level iff the machine has at least as many sockets."""
        return self.ix.numa_first

    def take(self, cpus: CPUSet) -> None:
        """Claim ``cpus``: add to the result, drop from the available CPUs, lower the need."""
        if not isinstance(cpus, CPUSet):
            raise CPUAssignmentInputError(f"take() needs a CPUSet, not {type(cpus).__name__}")
        self.take_mask(cpus.mask)

    def take_mask(self, mask: int) -> None:
        self._result |= mask
        self.avail_mask &= ~self._result
        self.num_cpus_needed -= mask.bit_count()
        self._cache = {}
        self._counts = {}

    def needs_at_least(self, n: int) -> bool:
        return self.num_cpus_needed >= n

    def is_satisfied(self) -> bool:
        return self.num_cpus_needed < 1

    def is_failed(self) -> bool:
        return self.num_cpus_needed > self.avail_mask.bit_count()

    # -- "free" checks against the whole topology --------------------------------------------
    def is_numa_node_free(self, numa_id: int) -> bool:
        m = self.ix.numa_mask.get(numa_id, 0)
        return (m & self.avail_mask).bit_count() == m.bit_count()

    def is_socket_free(self, socket_id: int) -> bool:
        m = self.ix.socket_mask.get(socket_id, 0)
        return (m & self.avail_mask).bit_count() == self.ix.cpus_per_socket

    def is_core_free(self, core_id: int) -> bool:
        m = self.ix.core_mask.get(core_id, 0)
        return (m & self.avail_mask).bit_count() == self.ix.cpus_per_core

    def is_uncore_cache_free(self, uncore_id: int) -> bool:
        m = self.ix.uncore_mask.get(uncore_id, 0)
        return (m & self.avail_mask).bit_count() == m.bit_count()

    # -- orderings (sortAvailable*) ------------------------------------------------------------
    def _sorted(self, items: Pairs, level: int) -> list[int]:
        """Ids of ``items`` with an available CPU inside the parent, by (available count, id).

        The count is over the whole element (``details.CPUsInX(id)``). The counts are
        remembered (per level) for the free checks of the same state.
        """
        av = self.avail_mask
        # A loop, not a comprehension: most lists are a few sockets or NUMA nodes, where the
        # comprehension's own call costs a fifth of the sort; on 128 cores they are even.
        keyed = []
        for i, inside, whole in items:
            n = (whole & av).bit_count()
            if n and (inside is whole or inside & av):
                keyed.append((n, i))
        keyed.sort()
        if level != _CORE:  # the free checks read these; cores are checked by mask
            counts = self._counts.get(level)
            if counts is None:
                counts = self._counts[level] = {}
            for n, i in keyed:
                counts[i] = n
        return [i for _, i in keyed]

    def _in_one_numa_node(self) -> bool:
        """When every available CPU lies in one NUMA node that lies in one socket (a take
        from one NUMA node's CPUs, as the distributed take makes), the NUMA and socket orders
        are that node and that socket, with every available CPU: recorded without sorting."""
        av = self.avail_mask
        if not av:
            return False
        ix = self.ix
        n = ix.numa_of_cpu[(av & -av).bit_length() - 1]
        if av & ~ix.numa_mask[n]:
            return False
        sockets = ix.numa_sockets[n]
        if len(sockets) != 1:
            return False
        (s,) = sockets
        count = av.bit_count()
        self._cache["numa"] = (n,)
        self._cache["socket"] = (s,)
        self._counts.setdefault(_NUMA, {})[n] = count
        self._counts.setdefault(_SOCKET, {})[s] = count
        return True

    def _numa_order(self) -> tuple[int, ...]:
        hit = self._cache.get("numa")
        if hit is None and self._in_one_numa_node():
            return self._cache["numa"]
        if hit is None:
            ix = self.ix
            if ix.numa_first:
                hit = tuple(self._sorted(ix.numa_items, _NUMA))
            else:
                out: list[int] = []
                for s in self._cache.get("socket") or self._sorted_sockets():
                    out += self._sorted(ix.numas_in_socket.get(s, ()), _NUMA)
                hit = tuple(out)
            self._cache["numa"] = hit
        return hit

    def numa_counts(self) -> dict[int, int]:
        """Each NUMA node of the NUMA order with its available CPUs, in that order (the
        counts its sorting read)."""
        order = self._numa_order()
        counts = self._counts[_NUMA]
        return {n: counts[n] for n in order}

    def _socket_order(self) -> tuple[int, ...]:
        hit = self._cache.get("socket")
        if hit is None and self._in_one_numa_node():
            return self._cache["socket"]
        if hit is None:
            hit = self._sorted_sockets()
        return hit

    def _sorted_sockets(self) -> tuple[int, ...]:
        """The socket order when the available CPUs are not in one NUMA node (cached)."""
        ix = self.ix
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
            ix = self.ix
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
            ix = self.ix
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

    def _iter_cpus_packed(self) -> Iterator[int]:
        av = self.avail_mask
        cm = self.ix.core_mask
        for c in self._core_order():
            yield from _bits(cm[c] & av)

    def _iter_cpus_spread(self) -> Iterator[int]:
        av = self.avail_mask
        sm = self.ix.socket_mask
        for s in self._socket_order():
            yield from _bits(sm[s] & av)

    def sort_available_cpus_packed(self) -> list[int]:
        """Every available CPU: core by core in core order, ascending within a core."""
        return list(self._iter_cpus_packed())

    def sort_available_cpus_spread(self) -> list[int]:
        """Every available CPU: socket by socket in socket order, ascending within a socket."""
        return list(self._iter_cpus_spread())

    def sort_available_cpus_spread_by_topology(self) -> list[int]:
        """1.38 (kubernetes#140766): socket by socket in socket order; within a socket the
        cores with an available CPU in core order (available count, then id), and their CPUs
        taken round-robin: the lowest available CPU of every core, then the next one..."""
        av = self.avail_mask
        ix = self.ix
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
        return self._free(self._numa_order(), _NUMA, self.ix.size["numa"])

    def free_sockets(self) -> list[int]:
        """Sockets with ``CPUsPerSocket()`` available CPUs, in socket order."""
        return self._free(self._socket_order(), _SOCKET, self.ix.cpus_per_socket)

    def free_cores(self) -> list[int]:
        """Cores with ``CPUsPerCore()`` available CPUs, in core order."""
        return list(self._iter_free_cores())

    def _iter_free_cores(self) -> Iterator[int]:
        """``free_cores`` read lazily, without sorting every core: the free cores of a parent
        all have the same count (``CPUsPerCore()``), so their (count, id) order is the id order
        of the parent's list. The state is read at the first element."""
        ix = self.ix
        av = self.avail_mask
        cpc = ix.cpus_per_core
        if cpc < 1:
            return
        if ix.numa_first:
            parents, pairs = self._socket_order(), ix.cores_in_socket
        else:
            parents, pairs = self._numa_order(), ix.cores_in_numa
        for p in parents:
            for c, inside, whole in pairs.get(p, ()):
                if (whole & av).bit_count() == cpc and (inside is whole or inside & av):
                    yield c

    def free_uncore_caches(self) -> list[int]:
        """Fully available uncore caches, in uncore order."""
        return self._free(self._uncore_order(), _UNCORE, self.ix.size["uncore"])

    def free_cpus(self) -> list[int]:
        """Available CPUs in the order of the accumulator's sorting strategy."""
        return list(self._iter_free_cpus())

    def _iter_free_cpus(self) -> Iterator[int]:
        if self.cpu_sorting_strategy is CPUSortingStrategy.PACKED:
            return self._iter_cpus_packed()
        if self.spread_by_topology:
            return iter(self.sort_available_cpus_spread_by_topology())
        return self._iter_cpus_spread()

    # -- taking steps -----------------------------------------------------------------------------
    def _take_whole(self, ids: Iterable[int], masks: dict[int, int], sizes: dict[int, int]) -> None:
        """Take each listed element (all its CPUs in the topology) while it fits the need.

        The elements are read before anything is taken, so the takes are one take of their
        union; the need drops by every listed take (an element listed twice, in two parents,
        counts twice, as upstream's ``take`` does)."""
        need = self.num_cpus_needed
        mask = 0
        for i in ids:
            if need < 1:
                break  # every element has a CPU, so nothing later can be needed
            if need < sizes[i]:
                continue
            mask |= masks[i]
            need -= sizes[i]
        if mask:
            self.take_mask(mask)
            self.num_cpus_needed = need

    def _could_fit(self, level: str) -> bool:
        """Whether the need could take a whole element of ``level``; when not, the free ones
        are not listed (listing sorts every element; nothing would be taken)."""
        return self.num_cpus_needed >= self.ix.smallest[level]

    def take_full_numa_nodes(self) -> None:
        ix = self.ix
        if self._could_fit("numa"):
            self._take_whole(self.free_numa_nodes(), ix.numa_mask, ix.size["numa"])

    def take_full_sockets(self) -> None:
        ix = self.ix
        if self._could_fit("socket"):
            self._take_whole(self.free_sockets(), ix.socket_mask, ix.size["socket"])

    def take_full_first_level(self) -> None:
        """Whole NUMA nodes when NUMA-first, else whole sockets."""
        if self.ix.numa_first:
            self.take_full_numa_nodes()
        else:
            self.take_full_sockets()

    def take_full_second_level(self) -> None:
        """Whole sockets when NUMA-first, else whole NUMA nodes."""
        if self.ix.numa_first:
            self.take_full_sockets()
        else:
            self.take_full_numa_nodes()

    def take_full_uncore(self) -> None:
        ix = self.ix
        if self._could_fit("uncore"):
            self._take_whole(self.free_uncore_caches(), ix.uncore_mask, ix.size["uncore"])

    def take_partial_uncore(self, uncore_id: int) -> None:
        """Take the lowest cores of one uncore cache, only if they give exactly what is needed."""
        cpc = self.ix.cpus_per_core
        if cpc < 1:
            raise CPUAssignmentInputError("topology has no cores (CPUs per core is 0)")
        need = self.num_cpus_needed
        cores_needed = go_div(need + cpc - 1, cpc)
        av = self.avail_mask
        cores = [c for c, inside, _ in self.ix.cores_in_uncore.get(uncore_id, ()) if inside & av]
        if len(cores) > cores_needed:
            cores = cores[:cores_needed]
        cm = self.ix.core_mask
        free = 0
        for c in cores:
            free |= cm[c] & av
        if need % 2 != 0 and cpc > 1 and free.bit_count() > need:
            free &= ~(1 << (free.bit_length() - 1))  # drop the highest-numbered CPU
        if need == free.bit_count():
            self.take_mask(free)

    def take_uncore_cache(self) -> None:
        """Whole free uncore caches (when a cache's worth is needed), then a partial one."""
        per_uncore = self.ix.cpus_per_uncore
        for u in self._uncore_order():
            if self.needs_at_least(per_uncore):
                self.take_full_uncore()
            if self.is_satisfied():
                return
            self.take_partial_uncore(u)
            if self.is_satisfied():
                return

    def take_full_cores(self) -> None:
        ix = self.ix
        if not self._could_fit("core"):
            return
        if ix.siblings is not None:
            self._take_free_pairs(ix.siblings)
            return
        self._take_whole(self._iter_free_cores(), ix.core_mask, ix.size["core"])

    def _core_parents(self, siblings: SiblingPairs) -> tuple[tuple[int, ...], dict[int, int]]:
        """The parents whose core lists make the core order (sockets when NUMA-first, else
        NUMA nodes, in order) and their cores' keys."""
        if self.ix.numa_first:
            return self._socket_order(), siblings.keys_in_socket
        return self._numa_order(), siblings.keys_in_numa

    def _take_free_pairs(self, siblings: SiblingPairs) -> None:
        """``take_full_cores`` on ``SiblingPairs``: the free cores of each parent are those
        with both CPUs available, in id (key) order; each takes two CPUs while two are
        needed (a parent listed twice is read twice, from the state before the take)."""
        _, both = siblings.counts(self.avail_mask)
        need = self.num_cpus_needed
        keys = 0
        parents, keys_in = self._core_parents(siblings)
        for p in parents:
            if need < 2:
                break
            free = both & keys_in.get(p, 0)
            count = free.bit_count()
            if 2 * count > need:
                free = _lowest(free, need // 2)
                count = need // 2
            keys |= free
            need -= 2 * count
        if keys:
            self.take_mask(siblings.cpus(keys))
            self.num_cpus_needed = need

    def take_remaining_cpus(self) -> None:
        """Single CPUs in strategy order until satisfied. Upstream takes them one by one from
        the order computed once; each take lowers the need by one, so that is the first
        ``need`` CPUs of the order (all of them when fewer), read lazily and taken at once."""
        need = max(self.num_cpus_needed, 0)
        if self.cpu_sorting_strategy is CPUSortingStrategy.PACKED:
            self.take_mask(self._first_packed(need))
            return
        if not self.spread_by_topology:
            # the older spread order: socket by socket in socket order
            self.take_mask(self._first_in(self._socket_order(), self.ix.socket_mask, need))
            return
        if self.ix.siblings is not None:
            self.take_mask(self._first_spread_pairs(self.ix.siblings, need))
            return
        self.take_mask(self._first_round_robin(need))

    def _first_round_robin(self, need: int) -> int:
        """The first ``need`` CPUs of the 1.38 spread order on any topology
        (``sort_available_cpus_spread_by_topology``): a socket whose CPUs are all needed is
        taken whole, the next one round by round (the lowest CPU left of each core, in core
        order), without listing the CPUs of the sockets not reached."""
        av = self.avail_mask
        ix = self.ix
        mask = 0
        for s in self._socket_order():
            if need <= 0:
                break
            cores = [
                ix.core_mask[c] & av for c in self._sorted(ix.cores_in_socket.get(s, ()), _CORE)
            ]
            total = sum(cpus.bit_count() for cpus in cores)
            if total <= need:  # a socket listed twice counts twice, as in Go
                for cpus in cores:
                    mask |= cpus
                need -= total
                continue
            while need > 0:
                rest = []
                for cpus in cores[:need]:
                    low = cpus & -cpus
                    mask |= low
                    if cpus != low:
                        rest.append(cpus ^ low)
                need -= min(need, len(cores))
                cores = rest
        return mask

    def _first_in(self, order: Iterable[int], masks: dict[int, int], need: int) -> int:
        """The first ``need`` available CPUs of the elements in ``order`` (ascending within
        an element), an element's CPUs at a time."""
        av = self.avail_mask
        mask = 0
        for i in order:
            if need <= 0:
                break
            cpus = masks[i] & av  # an element listed twice (in two parents) counts twice, as in Go
            count = cpus.bit_count()
            if count > need:
                return mask | _lowest(cpus, need)
            mask |= cpus
            need -= count
        return mask

    def _first_spread_pairs(self, siblings: SiblingPairs, need: int) -> int:
        """The first ``need`` CPUs of the 1.38 spread order on ``SiblingPairs``. A socket's
        cores in (count, id) order are those with one available CPU by key, then those with
        both by key; round-robin over them lists the one CPU of each of the first, the lower
        CPU of each of the others, then their upper CPUs: three runs in key order."""
        av = self.avail_mask
        one, both = siblings.counts(av)
        keys_in = siblings.keys_in_socket
        stride = siblings.stride
        mask = 0
        for s in self._socket_order():
            inside = keys_in.get(s, 0)
            single, pairs = one & inside, both & inside
            # (keys of the run, their CPUs): each key gives one CPU of its run
            for keys, cpus in (
                (single, siblings.cpus(single) & av),
                (pairs, pairs),
                (pairs, pairs << stride),
            ):
                if need <= 0:
                    return mask
                count = keys.bit_count()
                if count > need:
                    low = _lowest(keys, need)
                    return mask | (siblings.cpus(low) & cpus)
                mask |= cpus
                need -= count
        return mask

    def _first_packed(self, need: int) -> int:
        """The first ``need`` CPUs of the packed order (core by core in core order, ascending
        within a core), a whole core's CPUs at a time."""
        siblings = self.ix.siblings
        if siblings is not None:
            return self._first_packed_pairs(siblings, need)
        return self._first_in(self._core_order(), self.ix.core_mask, need)

    def _first_packed_pairs(self, siblings: SiblingPairs, need: int) -> int:
        """``_first_packed`` on ``SiblingPairs``: a parent's cores in (count, id) order are
        those with one available CPU by key, then those with both by key."""
        av = self.avail_mask
        one, both = siblings.counts(av)
        mask = 0
        parents, keys_in = self._core_parents(siblings)
        for p in parents:
            if need <= 0:
                break
            inside = keys_in.get(p, 0)
            single = one & inside
            count = single.bit_count()
            if count >= need:
                return mask | (siblings.cpus(_lowest(single, need)) & av)
            mask |= siblings.cpus(single) & av
            need -= count
            pairs = both & inside
            count = pairs.bit_count()
            if 2 * count > need:
                whole = _lowest(pairs, need // 2)
                mask |= siblings.cpus(whole)
                if need % 2:  # the next core gives its lower CPU
                    rest = pairs ^ whole
                    mask |= rest & -rest
                return mask
            mask |= siblings.cpus(pairs)
            need -= 2 * count
        return mask

    # -- distributed helpers ------------------------------------------------------------------
    def range_numa_nodes_needed_to_satisfy(self, cpu_group_size: int) -> tuple[int, int]:
        """Fewest and most NUMA nodes that could hold the need in groups of ``cpu_group_size``."""
        g = check_group_size(cpu_group_size)
        ix = self.ix
        numas_available = len(set(self._numa_order()))  # the NUMA nodes with a free CPU
        groups_total = (ix.num_cpu_ids - 1) // g + 1
        groups_per_numa = (groups_total - 1) // ix.num_numa_ids + 1
        groups_needed = go_div(self.num_cpus_needed - 1, g) + 1
        min_numas = go_div(groups_needed - 1, groups_per_numa) + 1
        max_numas = min(groups_needed, numas_available)
        return min_numas, max_numas

    def numa_count(self, numa_id: int) -> int:
        return (self.ix.numa_mask.get(numa_id, 0) & self.avail_mask).bit_count()

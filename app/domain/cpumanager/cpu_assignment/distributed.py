"""``takeByTopologyNUMADistributed`` (follows pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37
and master as 1.38): ``distribute-cpus-across-numa`` spreads the CPUs evenly over the fewest NUMA
nodes, judged by a balance score, with the ``align-by-socket`` preference of the newest code line.

* Distributed + ``align_by_socket``: a combination is "in one socket" when all CPUs of its NUMA
  nodes (whole topology) sit in a single socket (upstream ``AreNUMANodesInSameSocket``).
* The combinations are Go's, slice sharing included (``go_slices``, kubernetes#141237).

Per release (``app.domain.releases``):

* 1.38 (upstream master) remembers the best combination and remainder subset as copies
  (kubernetes#141238, CHANGELOG-1.38 alpha.1, content id 70363611792): ``copy_best``. Before,
  the remembered Go slice is overwritten by later combinations (kubernetes#141237).
* 1.38 receives the ``align-by-socket`` flag (kubernetes#139778; before, ``takeByTopology``
  never passes it, so the single-socket preference and the per-NUMA distribution cap below
  are inert - ``app.domain.cpumanager.take``).
* 1.38 receives the topology hint's NUMA count as the floor of the combination sizes tried
  (kubernetes#139456, ``minNUMAsFromHint``): ``min_numas_from_hint``. The function's code was
  not readable, only its signature and doc comment (PR review thread) and the PR description:
  the count raises the fewest NUMA nodes tried, and a count beyond what the request can use
  (more than the most NUMA nodes tried) leaves the original behaviour.

* 1.38 (upstream master) counts the capacity of NUMA combinations and remainder subsets in
  whole CPU groups (kubernetes#140730) - the functions' default. A 1.35-1.37 kubelet checks
  raw CPU sums and, on a subset whose leftovers are all smaller than a group, loops forever;
  with ``hang_release`` that case raises ``DistributedAllocationHangError`` (a rejection that
  says so) and everything else is decided identically.
* Where the final remainder loop could still not progress (it cannot after the checks), this
  module stops and reports the kubelet's ``accounting error`` instead of spinning.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.domain import releases
from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.common import (
    CPUSortingStrategy,
    DistributedAllocationHangError,
    TakeByTopologyError,
    check_args,
    check_group_size,
    not_enough,
    parse_strategy,
)
from app.domain.cpumanager.cpu_assignment.go_slices import GoSlice, go_iterate_combinations
from app.domain.cpumanager.cpu_assignment.gomath import standard_deviation
from app.domain.cpumanager.cpu_assignment.packed import (
    packed_or_empty,
    take_by_topology_numa_packed,
)
from app.domain.cpumanager.cpu_assignment.topology_index import TopologyIndex
from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology

__all__ = ["take_by_topology_numa_distributed"]

_MAX_FLOAT64 = sys.float_info.max


@dataclass(slots=True)
class _Choice:
    """The best NUMA combination seen so far for one combination size."""

    balance: float = _MAX_FLOAT64
    remainder: tuple[int, ...] | None = None
    combo: tuple[int, ...] | None = None
    in_one_socket: bool = False


def _numas_in_same_socket(ix: TopologyIndex, combo: Iterable[int]) -> bool:
    sockets: set[int] = set()
    for n in combo:
        sockets |= ix.numa_sockets.get(n, frozenset())
    return len(sockets) == 1


def _hang(remainder: int, g: int, release: str) -> DistributedAllocationHangError:
    return DistributedAllocationHangError(
        f"a {release} kubelet never finishes this allocation: takeByTopologyNUMADistributed "
        f"keeps handing out the remaining {remainder} CPUs in groups of {g} over NUMA nodes "
        "whose leftovers are smaller than a group, holding the CPU manager lock (upstream "
        f"{releases.PULL_REQUEST[releases.DISTRIBUTED_GROUP_CHECK]}, fixed in "
        f"{releases.INTRODUCED[releases.DISTRIBUTED_GROUP_CHECK]}); the simulator rejects the "
        "pod instead of hanging"
    )


def _best_remainder_split(
    remainder: int,
    remainder_combo: Sequence[int],
    after: dict[int, int],
    g: int,
    release: str | None,
    copy_best: bool,
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
                # A reference, as in Go before kubernetes#141238; a copy from 1.38.
                best_subset = _copy(subset_slice) if copy_best else subset_slice
        k -= 1
    return best_balance, None if best_subset is None else best_subset.values()


def _copy(s: GoSlice) -> GoSlice:
    values = list(s.values())
    return GoSlice(values, len(values))


def _choose_combo(
    acc: CPUAccumulator,
    numas: Sequence[int],
    k: int,
    num_cpus: int,
    g: int,
    align_by_socket: bool,
    release: str | None,
    copy_best: bool,
) -> _Choice:
    ix = acc.ix
    avail_of = {n: acc.numa_count(n) for n in numas}
    best = _Choice()
    best_slice: GoSlice | None = None
    for combo_slice in go_iterate_combinations(numas, k):
        combo = combo_slice.values()
        if best.balance == 0 and (not align_by_socket or best.in_one_socket):
            break

        union = 0
        for n in combo:
            union |= ix.numa_mask[n]
        if (union & acc.avail_mask).bit_count() < num_cpus:
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
                remainder, remainder_combo, after, g, release, copy_best
            )

        in_same_socket = align_by_socket and _numas_in_same_socket(ix, combo)
        is_better = local_balance < best.balance
        if align_by_socket and in_same_socket != best.in_one_socket:
            is_better = in_same_socket
        if is_better:
            best.balance = local_balance
            best.remainder = local_remainder
            # A reference, as in Go before kubernetes#141238 (later siblings may rewrite it);
            # a copy from 1.38.
            best_slice = _copy(combo_slice) if copy_best else combo_slice
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
    copy_best: bool = False,
    min_numas_from_hint: int = 0,
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
    strategy = parse_strategy(cpu_sorting_strategy)
    g = check_group_size(cpu_group_size)
    check_args(topo, available, num_cpus)
    sbt = spread_by_topology
    if num_cpus % g != 0:
        return take_by_topology_numa_packed(
            topo, available, num_cpus, strategy, False, spread_by_topology=sbt
        )

    acc = CPUAccumulator(topo, available, num_cpus, strategy, sbt)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise not_enough(num_cpus, available)

    ix = acc.ix
    numas = acc.sort_available_numa_nodes()
    min_numas, max_numas = acc.range_numa_nodes_needed_to_satisfy(g)
    if min_numas < min_numas_from_hint <= max_numas:  # kubernetes#139456 (1.38)
        min_numas = min_numas_from_hint

    for k in range(min_numas, max_numas + 1):
        best = _choose_combo(acc, numas, k, num_cpus, g, align_by_socket, hang_release, copy_best)
        if best.combo is None:
            continue

        combo = best.combo
        distribution = num_cpus // len(combo) // g * g
        for n in combo:
            distribution = min(distribution, acc.numa_count(n) // g * g)
        for n in combo:
            pool = CPUSet.from_mask(ix.numa_mask[n] & acc.avail_mask)
            acc.take_mask(packed_or_empty(topo, pool, distribution, strategy, sbt).mask)

        remainder = num_cpus - distribution * len(combo)
        while remainder > 0:
            before = remainder
            for n in best.remainder or ():
                if remainder == 0:
                    break
                if acc.numa_count(n) < g:
                    continue
                pool = CPUSet.from_mask(ix.numa_mask[n] & acc.avail_mask)
                acc.take_mask(packed_or_empty(topo, pool, g, strategy, sbt).mask)
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

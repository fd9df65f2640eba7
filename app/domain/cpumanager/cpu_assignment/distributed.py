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

Search space, time and memory. The search is upstream's, pruned:

* The k-combinations are generated lazily, depth first in Go's order (``_candidate_combos``);
  a combination is left out only when it fails Go's own capacity or distribution check, or
  when its floor (``BalanceFloor``: no remainder split of it scores below it) is at or above
  the balance it would have to beat - then Go would compute it and discard it. A whole
  subtree of prefixes is left out on the same two grounds (``_hopeless``). The search stops
  where Go's does (a perfect balance), so it visits a subset of Go's combinations, in Go's
  order: it never visits more combinations than Go.
* Remainder subsets: per first ``q`` positions only the first subset in Go's order is scored
  (``_subsets_to_score``, a closed form, no set of seen prefixes). Where the hand-out is a
  closed form (distinct nodes, every node giving in every round) the subsets are searched in
  Go's order with an exact bound on what any completion of a prefix can lower the squares by
  (``_subsets_reaching``), under the balance of one subset Go scores (``achieved``).
* Sizes whose k largest NUMA nodes cannot hold the request (or take the even share) are not
  searched (``_sizes_to_try``); up to ``_FEW`` combinations are listed rather than walked.
* Memory, for N entries in the NUMA order (at most NUMA nodes x sockets) and k <= N: at most
  ``_LOOKAHEAD`` (16) candidates of O(k) each, one walk path (k positions, recursion depth
  k), the suffix table of the k - 1 largest counts ((N + 1) x k integers), one remainder
  subset at a time with its bound table (k x m integers) and ``BalanceFloor``'s memo of at
  most 4,096 sums: O(N^2) integers plus a constant, whatever the input. (The first fast version listed every candidate: 4+ GiB on a
  NUMA order of 32 entries, combinations of 8 among 32.)
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

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
from app.domain.cpumanager.cpu_assignment.go_slices import kept_combination
from app.domain.cpumanager.cpu_assignment.gomath import BalanceFloor, standard_deviation
from app.domain.cpumanager.cpu_assignment.packed import (
    packed_mask_or_none,
    take_by_topology_numa_packed,
)
from app.domain.cpumanager.cpu_assignment.topology_index import TopologyIndex
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology

__all__ = ["take_by_topology_numa_distributed"]

_MAX_FLOAT64 = sys.float_info.max
# Candidates read ahead to pick the one scored first (its balance then bounds the search); the
# most candidates a combination search holds at once.
_LOOKAHEAD = 16
# Up to this many combinations of the usable nodes, they are listed and checked one by one
# rather than walked with completion bounds (same combinations, same order).
_FEW = 64


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


class _Scores:
    """The balance of candidates of one combination size: the per-NUMA counts, their integer
    sums and the floor that lets a candidate be skipped; ``distinct`` when the NUMA order
    holds no node twice (the remainder shortcuts that count nodes need it). Only balances are
    skipped, never checks with an outcome (the 1.35-1.37 hang)."""

    __slots__ = ("_fails", "_passes", "avail_of", "distinct", "floor", "squares", "total")

    def __init__(self, avail_of: dict[int, int], distinct: bool) -> None:
        self.avail_of = avail_of
        self.distinct = distinct
        self.total = sum(avail_of.values())
        self.squares = sum(v * v for v in avail_of.values())
        self.floor = BalanceFloor(len(avail_of))
        # per total: the sums of squares and floor of the last floor worked out at or above
        # (``_fails``) or below (``_passes``) the bound it was asked against
        self._fails: dict[int, tuple[int, float]] = {}
        self._passes: dict[int, tuple[int, float]] = {}

    def at_least(self, total: int, squares: int) -> float:
        """The floor of a list of every NUMA node's CPUs with these sums."""
        return self.floor.at_least(total, squares)

    def cannot_beat(self, total: int, squares: int, bound: float) -> bool:
        """No list with these sums scores strictly below ``bound``."""
        return self.floor.at_least(total, squares) >= bound

    def reaches(self, low: tuple[int, int] | None, bound: float) -> bool:
        """A candidate's floor - that of the sums ``low``; ``None``: no hand-out of its
        remainder exists - is at or above ``bound``. As the floor never decreases as the
        squares grow (for one total), a floor worked out before often decides: larger squares
        than a floor at or above ``bound``, or smaller than one below it."""
        if low is None:
            return True
        total, squares = low
        fail = self._fails.get(total)
        if fail is not None and squares >= fail[0] and bound <= fail[1]:
            return True
        held = self._passes.get(total)
        if held is not None and squares <= held[0] and bound > held[1]:
            return False
        floor = self.floor.at_least(total, squares)
        if floor >= bound:
            if fail is None or squares <= fail[0]:
                self._fails[total] = squares, floor
            return True
        if held is None or squares >= held[0]:
            self._passes[total] = squares, floor
        return False

    def single_floor(self, need: int, count: int) -> float:
        """The floor of every NUMA node's CPUs once ``need`` are taken from one node holding
        ``count``."""
        return self.floor.at_least(self.total - need, self.squares + need * need - 2 * need * count)

    def exact(self, changed: dict[int, int]) -> float:
        """The kubelet's balance: every NUMA node in order, ``changed`` ones replaced."""
        return standard_deviation([changed.get(n, v) for n, v in self.avail_of.items()])


def _hands_out_fully(left: dict[int, int], subset: Sequence[int], remainder: int, g: int) -> int:
    """Hand ``remainder`` out in groups of ``g`` round-robin over ``subset`` (``left`` holds
    every listed node's CPUs and is updated); what could not be handed out is returned."""
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
    return rem


def _most_squares_removed(values: list[int], groups: int, g: int) -> int | None:
    """The most the sum of squares of ``values`` can drop when ``groups`` groups of ``g`` are
    taken from them (each from a value of at least ``g``): greedily from the largest value,
    which is optimal because the drop ``2*g*x - g*g`` of a take shrinks as ``x`` does. Any
    round-robin hand-out is one such sequence, so its sum of squares is at least the result's.
    ``None``: no sequence exists (no subset can take the remainder)."""
    heap = [-v for v in values]
    heapq.heapify(heap)
    removed = 0
    for _ in range(groups):
        if not heap or -heap[0] < g:
            return None
        x = -heapq.heappop(heap)
        removed += 2 * g * x - g * g
        heapq.heappush(heap, -(x - g))
    return removed


def _check_hang(
    remainder_combo: Sequence[int], after: dict[int, int], remainder: int, g: int, release: str
) -> None:
    """Raise what a 1.35-1.37 kubelet does on this combination's remainder subsets without
    scoring them: a subset whose raw CPUs reach the remainder but whose whole groups do not.
    Every node listed has at least one group, so only subsets of fewer than ``remainder / g``
    nodes can be such a subset (and none can when ``g`` is 1)."""
    if g == 1:
        return
    for kk in range(min(len(remainder_combo), remainder // g - 1), 0, -1):
        for subset in itertools.combinations(remainder_combo, kk):
            if sum(after[n] for n in subset) < remainder:
                continue
            if sum(after[n] // g for n in subset) * g < remainder:
                raise _hang(remainder, g, release)


class _RemainderSplit:
    """One combination's remainder step (upstream: the loop over the subsets of
    ``remainderCombo``, sizes from ``len(remainderCombo)`` down): hand ``remainder`` out in
    groups of ``g`` over a subset, score what every NUMA node is left with, keep the first
    best subset.

    ``changed`` holds the combination's NUMA nodes after the even distribution, ``base_total``
    and ``base_squares`` the sums over every NUMA node then. ``release`` set: a kubelet
    without the whole-group check of kubernetes#140730, which checks a subset's raw CPU sum
    and then spins on a subset whose groups cannot hold the remainder; that is reported as
    ``DistributedAllocationHangError``. ``best`` is the best balance so far and ``ceiling``
    what a subset must score below to matter (both only ever lowered); ``need`` the least
    a hand-out of the whole remainder must lower the sum of squares by to score below them.
    """

    __slots__ = (
        "base_squares",
        "base_total",
        "best",
        "ceiling",
        "changed",
        "distinct",
        "drop",
        "g",
        "groups",
        "need",
        "q",
        "release",
        "remainder",
        "remainder_combo",
        "scores",
        "values",
    )

    def __init__(
        self, scores: _Scores, cand: _Candidate, g: int, release: str | None, bound: float
    ) -> None:
        self.scores = scores
        self.remainder = cand.remainder
        self.remainder_combo = cand.remainder_combo
        self.changed = cand.changed
        self.g = g
        self.release = release
        self.base_total = cand.total
        self.base_squares = cand.squares
        self.distinct = scores.distinct
        values = [self.changed[n] for n in self.remainder_combo]  # each has a group or more
        self.values = values
        self.groups = [v // g for v in values]
        self.drop = [(v - g) ** 2 - v * v for v in values]
        self.q = self.remainder // g  # the remainder is a whole number of groups
        self.best = _MAX_FLOAT64
        self.ceiling = min(bound, math.nextafter(self.achieved(), math.inf))
        self._set_need()

    def achieved(self) -> float:
        """The balance of one subset Go scores, worked out first so that its balance bounds
        the search: the ``q`` nodes with the most CPUs left each giving one group (it passes
        Go's checks, every listed node having a group). ``MAX`` when there is no such subset
        or nodes are listed twice."""
        q, m = self.q, len(self.values)
        if not self.distinct or q > m:
            return _MAX_FLOAT64
        largest = heapq.nlargest(q, range(m), key=self.values.__getitem__)
        g = self.g
        left = {self.remainder_combo[i]: self.values[i] - g for i in largest}
        return self.scores.exact({**self.changed, **left})

    def could_win(self, removed: int) -> bool:
        """Whether a hand-out of the whole remainder that lowers the sum of squares by
        ``removed`` could score below both the best subset so far and the ceiling."""
        return removed >= self.need

    def lower(self, best: float) -> None:
        """A subset scored ``best``, below every one before it."""
        self.best = best
        self._set_need()

    def _set_need(self) -> None:
        # could_win: the floor of the squares left is below the limit, i.e. they are at most
        # ``squares_below`` (the floor never decreases as the squares grow)
        most = self.scores.floor.squares_below(
            self.base_total - self.remainder, min(self.ceiling, self.best)
        )
        self.need = self.base_squares - most if most >= 0 else self.base_squares + 1

    def gains(self, kk: int) -> tuple[list[list[int]] | None, int, int, tuple[int, ...]] | None:
        """The subsets of ``kk`` nodes Go scores as ``head + tail``, the head any
        ``len(gains)``-subset of the first ``width`` positions, and what each lowers the sum
        of squares by: ``fixed`` plus ``gains[p][i]`` for position ``i`` at place ``p`` of
        the head. ``None`` where that is not exact (nodes listed twice, or a node that may run
        out of groups before the last round); the table is ``None`` when no head can lower
        the squares by ``need`` (the largest gains paired, best first: rearrangement).

        From q nodes on: the subsets whose q-th node is ``j = m - 1 - (kk - q)``
        (``_subsets_to_score``), the first q nodes giving a group each. Below q, when every
        node can give a group in every round: place ``p`` gives ``t_p`` CPUs (``hand_out``),
        lowering the squares by ``2*t_p*v - t_p**2``."""
        if not self.distinct:
            return None
        q, g, values = self.q, self.g, self.values
        m = len(values)
        if kk >= q:
            if q > m:
                return None
            j = m - 1 - (kk - q)
            lowers = [-d for d in self.drop[:j]]
            fixed, tail = -self.drop[j], (j, *range(j + 1, m))
            if fixed + sum(heapq.nlargest(q - 1, lowers)) < self.need:
                return None, j, fixed, tail
            return [lowers] * (q - 1), j, fixed, tail
        if min(values) < g * (q // kk + 1):
            return None
        rounds, extra = divmod(q, kk)
        gives = [(rounds + (p < extra)) * g for p in range(kk)]  # largest first
        largest = heapq.nlargest(kk, values)
        if sum(2 * t * v - t * t for t, v in zip(gives, largest, strict=True)) < self.need:
            return None, m, 0, ()
        return [[2 * t * v - t * t for v in values] for t in gives], m, 0, ()

    def size_is_hopeless(self, kk: int) -> bool:
        """No subset of ``kk`` < q distinct nodes can score below the bound: every such
        subset hands its q groups to at most kk nodes, and no such hand-out leaves a smaller
        sum of squares than the greedy one over the kk largest values
        (``_most_squares_removed``)."""
        removed = _most_squares_removed(heapq.nlargest(kk, self.values), self.q, self.g)
        return removed is None or not self.could_win(removed)

    def passes(self, pos: tuple[int, ...]) -> bool:
        """Go's check that the subset can take the remainder (or the 1.35-1.37 hang). From q
        nodes on it always passes: every listed node has a group."""
        if len(pos) >= self.q:
            return True
        if self.release is not None:
            if sum(self.values[i] for i in pos) < self.remainder:
                return False
            if sum(self.groups[i] for i in pos) * self.g < self.remainder:
                raise _hang(self.remainder, self.g, self.release)
            return True
        return sum(self.groups[i] for i in pos) * self.g >= self.remainder

    def hand_out(self, pos: tuple[int, ...]) -> tuple[int, int, dict[int, int]]:
        """The sums over every NUMA node and the subset's nodes after the remainder is handed
        out over ``pos`` round-robin (as Go's loop), in closed form where it can be."""
        values, g, q = self.values, self.g, self.q
        combo = self.remainder_combo
        after = self.base_total - self.remainder
        if self.distinct and len(pos) >= q:
            # One round hands the remainder out: the first q nodes give a group each.
            first = pos[:q]
            squares = self.base_squares + sum(self.drop[i] for i in first)
            return after, squares, {combo[i]: values[i] - g for i in first}
        kk = len(pos)
        if self.distinct and min(values[i] for i in pos) >= g * (q // kk + 1):
            # Every node can give a group in every round: the first q % kk nodes give
            # q // kk + 1 groups, the others q // kk.
            rounds, extra = divmod(q, kk)
            taken = [(i, (rounds + (p < extra)) * g) for p, i in enumerate(pos)]
            squares = self.base_squares + sum(t * t - 2 * t * values[i] for i, t in taken)
            return after, squares, {combo[i]: values[i] - t for i, t in taken}
        subset = [combo[i] for i in pos]
        changed = self.changed
        left = {n: changed[n] for n in subset}
        rem = _hands_out_fully(left, subset, self.remainder, g)
        total = self.base_total - (self.remainder - rem)
        squares = self.base_squares + sum(v * v - changed[n] ** 2 for n, v in left.items())
        return total, squares, left

    def subsets(self, kk: int) -> Iterable[tuple[int, ...]]:
        """The kk-subsets to try, in Go's order: every one Go scores, less those that provably
        cannot win (none where a skipped subset could raise the 1.35-1.37 hang)."""
        q, m = self.q, len(self.values)
        no_hang = kk >= q or self.release is None or self.g == 1
        gains = self.gains(kk) if no_hang else None
        if gains is not None:
            table, width, fixed, tail = gains
            if table is None:
                return ()
            return (head + tail for head in _subsets_reaching(table, width, fixed, self.could_win))
        if self.distinct and kk < q and no_hang and self.size_is_hopeless(kk):
            return ()
        return _subsets_to_score(m, kk, q if self.distinct else m + 1)


def _subsets_reaching(
    gains: Sequence[Sequence[int]], width: int, fixed: int, could_win: Callable[[int], bool]
) -> Iterator[tuple[int, ...]]:
    """The ``len(gains)``-subsets of ``range(width)``, lexicographically (Go's order), whose
    ``fixed + sum(gains[p][pos[p]])`` ``could_win``, less every prefix that no completion
    makes ``could_win`` (the most a completion adds is exact: ``most[p][s]``, the best of
    places p.. over positions s.., by dynamic programming). ``could_win`` must be monotone
    (a larger sum never loses) and is asked again at every step, so it may tighten."""
    kk = len(gains)
    never = -(1 << 62)
    most = [[never] * (width + 2) for _ in range(kk)] + [[0] * (width + 2)]
    for p in range(kk - 1, -1, -1):
        row, after, gp = most[p], most[p + 1], gains[p]
        top = never
        for s in range(width - (kk - p), -1, -1):
            here = gp[s] + after[s + 1]
            if here > top:
                top = here
            row[s] = top
    path: list[int] = []

    def walk(p: int, start: int, have: int) -> Iterator[tuple[int, ...]]:
        gp, after = gains[p], most[p + 1]
        for i in range(start, width - (kk - p) + 1):
            if not could_win(have + gp[i] + after[i + 1]):
                continue
            path.append(i)
            if p == kk - 1:
                yield tuple(path)
            else:
                yield from walk(p + 1, i + 1, have + gp[i])
            path.pop()

    if kk == 0:
        if could_win(fixed):
            yield ()
        return
    yield from walk(0, 0, fixed)


def _best_remainder_split(
    scores: _Scores,
    cand: _Candidate,
    g: int,
    release: str | None,
    copy_best: bool,
    bound: float,
) -> tuple[float, tuple[int, ...] | None]:
    """Best balance when handing the candidate's remainder out in groups of ``g`` over a
    subset of its ``remainder_combo`` (every subset, largest first, in Go's order; the first
    best wins), with the subset kept (``kept_combination``: Go reads its slice after the
    iteration ran to its end; 1.38 keeps a copy).

    Shortcuts that cannot change the answer: a subset is scored only when ``BalanceFloor``
    says it could score below the best subset so far (a tie keeps the earlier one), below
    ``bound`` (the caller's best combination, which a combination only replaces when it scores
    strictly below it) and at or below ``achieved()`` (a subset Go scores: the best one ends
    at or below it, so a subset whose floor is above it never ends as the best); whole
    prefixes of subsets are passed over on the same grounds (``_RemainderSplit.subsets``)."""
    split = _RemainderSplit(scores, cand, g, release, bound)
    best_pos: tuple[int, ...] | None = None
    m = len(split.values)
    for kk in range(m, 0, -1):
        for pos in split.subsets(kk):
            if not split.passes(pos):
                continue
            total, squares, left = split.hand_out(pos)
            if scores.cannot_beat(total, squares, min(split.ceiling, split.best)):
                continue
            balance = scores.exact({**split.changed, **left})
            if balance < split.best:
                split.lower(balance)
                best_pos = pos
    if best_pos is None:
        return split.best, None
    combo = split.remainder_combo
    if copy_best:  # kubernetes#141238 (1.38): a copy
        return split.best, tuple(combo[i] for i in best_pos)
    last = tuple(range(m - len(best_pos), m))
    return split.best, kept_combination(combo, best_pos, last)


def _subsets_to_score(m: int, kk: int, q: int) -> Iterator[tuple[int, ...]]:
    """The kk-subsets (positions out of ``m``, Go's order) a remainder of ``q`` groups is
    scored on, the sizes visited from ``m`` down.

    Below ``q`` (or with ``q > m``) every subset. From ``q`` on, one round hands the
    remainder out over the first ``q`` nodes of a subset, so every subset with the same first
    ``q`` positions ends the same and only the first of them in Go's order can win (a tie keeps
    the earlier one). In that order, first ``p`` (ascending, last element ``p[-1]``) is met at
    the largest size it can be completed to, ``q + (m - 1 - p[-1])``, completed by every
    position after ``p[-1]``. So size kk scores exactly the subsets whose ``q``-th position is
    ``m - 1 - (kk - q)``, followed by all later positions: no set of seen prefixes is kept.
    """
    if kk < q or q > m:
        yield from itertools.combinations(range(m), kk)
        return
    j = m - 1 - (kk - q)
    tail = (j, *range(j + 1, m))
    for head in itertools.combinations(range(j), q - 1):
        yield head + tail


def _candidate_combos(
    counts: Sequence[int],
    usable: Sequence[bool],
    k: int,
    need: int,
    hopeless: Callable[[int], bool] | None = None,
) -> Iterator[tuple[tuple[int, ...], int]]:
    """The k-combinations (ascending positions, Go's order) that can pass the capacity and
    distribution checks, each with the sum of its counts (at least ``need``): a position
    whose node cannot take the even distribution is left out (``usable``), and a prefix is abandoned when even its best completion - the largest counts
    still to come - holds fewer than ``need`` CPUs (a count sum is at least the CPUs of the
    union, so nothing abandoned could have passed the capacity check), or when ``hopeless``
    says no combination whose counts sum to at most that completion can be chosen."""
    n = len(counts)
    if k == 1:  # single nodes: no completion to bound
        for i, c in enumerate(counts):
            if usable[i] and c >= need and (hopeless is None or not hopeless(c)):
                yield (i,), c
        return
    if k < 1 or sum(heapq.nlargest(k, [c for i, c in enumerate(counts) if usable[i]])) < need:
        return  # no k usable nodes hold ``need`` (the walk would find none)
    ok = [i for i in range(n) if usable[i]]
    if math.comb(len(ok), k) <= _FEW:  # few combinations: each checked whole is quicker
        for pos in itertools.combinations(ok, k):
            have = sum([counts[i] for i in pos])
            if have >= need and (hopeless is None or not hopeless(have)):
                yield pos, have
        return
    yield from _walk(counts, usable, k, need, hopeless)


def _walk(
    counts: Sequence[int],
    usable: Sequence[bool],
    k: int,
    need: int,
    hopeless: Callable[[int], bool] | None,
) -> Iterator[tuple[tuple[int, ...], int]]:
    """``_candidate_combos`` depth first over many combinations: a prefix is extended only
    while its best completion (the largest usable counts after it) can pass."""
    n = len(counts)
    top = _best_completions(counts, usable, k)
    path: list[int] = []

    def walk(start: int, left: int, have: int) -> Iterator[tuple[tuple[int, ...], int]]:
        for i in range(start, n - left + 1):
            if not usable[i]:
                continue
            rest = top[i + 1]
            if len(rest) < left:
                break  # too few usable nodes after i, and fewer after any later i
            most = have + counts[i] + rest[left - 1]
            if most < need or (hopeless is not None and hopeless(most)):
                continue
            path.append(i)
            if left == 1:
                yield tuple(path), most
            else:
                yield from walk(i + 1, left - 1, have + counts[i])
            path.pop()

    yield from walk(0, k, 0)


def _best_completions(counts: Sequence[int], usable: Sequence[bool], k: int) -> list[list[int]]:
    """The suffix table of ``_walk``: ``top[start][r]`` is the sum of the ``r`` largest usable
    counts from ``start`` on (``r < k``), the most ``r`` more nodes after a prefix can add."""
    top: list[list[int]] = [[0] for _ in range(len(counts) + 1)]
    largest: list[int] = []  # ascending, at most k - 1 of them
    for start in range(len(counts) - 1, -1, -1):
        if k > 1 and usable[start]:
            bisect.insort(largest, counts[start])
            if len(largest) > k - 1:
                del largest[0]
        sums = [0]
        for v in reversed(largest):
            sums.append(sums[-1] + v)
        top[start] = sums
    return top


def _following_combination(pos: tuple[int, ...], n: int) -> tuple[int, ...] | None:
    """The combination Go generates after ``pos`` (positions out of ``n``), if any."""
    k = len(pos)
    for i in range(k - 1, -1, -1):
        if pos[i] < n - k + i:
            first = pos[i] + 1
            return pos[:i] + tuple(range(first, first + k - i))
    return None


@dataclass(slots=True, eq=False)
class _Candidate:
    """A combination that passed Go's checks, evenly distributed, with its sums; its NUMA
    nodes and what the distribution leaves per NUMA node are worked out only for a
    combination that is looked at (most are passed over on their floor)."""

    pos: tuple[int, ...]
    numas: Sequence[int]
    avail_of: dict[int, int]
    distribution: int
    g: int
    remainder: int
    total: int  # sum and sum of squares of every NUMA node's CPUs afterwards
    squares: int
    # no remainder subset of it scores below the floor of these sums (None: no subset)
    low: tuple[int, int] | None
    _combo: tuple[int, ...] | None = field(default=None, init=False)
    _changed: dict[int, int] | None = field(default=None, init=False)

    @property
    def combo(self) -> tuple[int, ...]:
        """The combination's NUMA nodes, in the NUMA order."""
        if self._combo is None:
            numas = self.numas
            self._combo = tuple([numas[i] for i in self.pos])
        return self._combo

    @property
    def changed(self) -> dict[int, int]:
        """The combination's NUMA nodes after the even distribution (a node listed twice
        gives twice)."""
        if self._changed is None:
            changed: dict[int, int] = {}
            for n in self.combo:
                changed[n] = changed.get(n, self.avail_of[n]) - self.distribution
            self._changed = changed
        return self._changed

    @property
    def remainder_combo(self) -> list[int]:
        """The combination's nodes that can still give a group, in combination order."""
        changed = self.changed
        return [n for n in self.combo if changed[n] >= self.g]


def _floor_with_remainder(
    cand: _Candidate, changed: dict[int, int], g: int
) -> tuple[int, int] | None:
    """The sums whose floor is a candidate's, from its exact sums (a NUMA order with a node
    twice): every hand-out of the remainder is a sequence of group takes from the distinct
    nodes that can give one, so it removes at most what ``_most_squares_removed`` says from
    the squares (``None``: no hand-out)."""
    if cand.remainder == 0:
        return cand.total, cand.squares
    values = [changed[n] for n in dict.fromkeys(cand.combo) if changed[n] >= g]
    removed = _most_squares_removed(values, cand.remainder // g, g)
    if removed is None:
        return None
    return cand.total - cand.remainder, cand.squares - removed


class _Bound:
    """The balance a candidate must score strictly below to matter (only ever lowered)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = _MAX_FLOAT64


def _hopeless(
    take: _Take, bound: _Bound | None, k: int, d: int, most: int
) -> Callable[[int], bool] | None:
    """Whether no k-combination whose counts sum to at most ``s`` has a floor below
    ``bound``, every node giving ``d`` and the remainder handed out afterwards; ``None``
    where no such test may prune (no ``bound``; align-by-socket, whose distribution differs
    per combination; or a skipped combination could raise the 1.35-1.37 hang).

    Why: a node listed m times leaves ``a - m*d``, so the squares change by
    ``m*m*d*d - 2*m*d*a >= m*d*d - 2*m*d*a``; summed, the squares after the distribution are
    at least ``squares + k*d*d - 2*d*s``. Each of the ``remainder / g`` group takes then
    removes ``2*g*x - g*g`` with ``x <= most - d``. The total is fixed (``total - d*k -
    remainder``), and for a fixed total the floor never decreases as the squares grow.
    """
    if bound is None or take.align_by_socket or (take.release is not None and take.g > 1):
        return None
    scores, g = take.scores, take.g
    remainder = take.num_cpus - d * k
    q = remainder // g
    removed = q * max(0, 2 * g * (most - d) - g * g)
    total = scores.total - d * k - remainder
    base = scores.squares + k * d * d - removed

    def hopeless(s: int) -> bool:
        if bound.value == _MAX_FLOAT64:  # nothing scored yet: every floor is below it
            return False
        squares = base - 2 * d * s
        return squares >= 0 and scores.at_least(total, squares) >= bound.value

    return hopeless


@dataclass(frozen=True, slots=True)
class _Take:
    """One distributed take's question, as every step of its search reads it: the CPUs at
    hand (``acc``), the NUMA nodes in their order with their scores, how many CPUs in groups
    of ``g``, align-by-socket, and the release whose 1.35-1.37 hang is raised (``None``:
    none)."""

    acc: CPUAccumulator
    numas: Sequence[int]
    scores: _Scores
    num_cpus: int
    g: int
    align_by_socket: bool
    release: str | None

    @classmethod
    def of(
        cls, acc: CPUAccumulator, num_cpus: int, g: int, align_by_socket: bool, release: str | None
    ) -> _Take:
        """The question once ``acc`` holds the CPUs at hand: its NUMA nodes in Go's order
        (``sortAvailableNUMANodes``) with their scores."""
        numas = acc.sort_available_numa_nodes()
        avail_of = acc.numa_counts()
        scores = _Scores(avail_of, distinct=len(avail_of) == len(numas))
        return cls(acc, numas, scores, num_cpus, g, align_by_socket, release)


def _candidates(take: _Take, k: int, bound: _Bound | None = None) -> Iterator[_Candidate]:
    """The k-combinations that pass Go's capacity, group and distribution checks, in Go's
    order (``_candidate_combos`` leaves out only combinations that fail them), less those
    whose floor is at or above ``bound`` (when given: only where no skipped combination
    could raise the 1.35-1.37 hang and the distribution is the same for every combination)."""
    acc, numas, scores, num_cpus, g = take.acc, take.numas, take.scores, take.num_cpus, take.g
    align_by_socket, release = take.align_by_socket, take.release
    avail_of = scores.avail_of
    distinct = scores.distinct
    counts = [avail_of[n] for n in numas]
    even = num_cpus // k // g * g
    # Without align-by-socket a node with fewer CPUs than the even share fails the check.
    usable = [align_by_socket or c >= even for c in counts]
    whole = [c // g for c in counts]
    hopeless = _hopeless(take, bound, k, even, max(counts))
    # Groups of one, or one node (a whole number of groups): the group check is the capacity one.
    check_groups = release is None and g > 1 and k > 1
    for pos, have in _candidate_combos(counts, usable, k, num_cpus, hopeless):
        if not distinct and _union_count(acc, numas, pos) < num_cpus:
            continue  # Go counts the CPUs of the union
        if check_groups and sum([whole[i] for i in pos]) * g < num_cpus:
            continue
        distribution = even
        if align_by_socket:
            distribution = min(distribution, min([whole[i] for i in pos]) * g)
        # Go's next check (a node with fewer CPUs than the distribution) cannot fail here: the
        # distribution is capped by every node's CPUs with align-by-socket, and without it the
        # nodes below the even share are not ``usable``.
        remainder = num_cpus - distribution * k
        if not distinct:
            yield _candidate_with_repeats(take, pos, distribution, remainder)
            continue
        total = scores.total - distribution * k  # the sums over every NUMA node afterwards
        squares = scores.squares + k * distribution * distribution - 2 * distribution * have
        low = (
            (total, squares)
            if remainder == 0
            else _remainder_floor(counts, pos, distribution, g, remainder, total, squares)
        )
        yield _Candidate(pos, numas, avail_of, distribution, g, remainder, total, squares, low)


def _union_count(acc: CPUAccumulator, numas: Sequence[int], pos: tuple[int, ...]) -> int:
    """Go's capacity count of a combination that may list a node twice: the available CPUs
    of the union of its NUMA nodes."""
    ix = acc.ix
    union = 0
    for i in pos:
        union |= ix.numa_mask[numas[i]]
    return (union & acc.avail_mask).bit_count()


def _candidate_with_repeats(
    take: _Take, pos: tuple[int, ...], distribution: int, remainder: int
) -> _Candidate:
    """A candidate of a NUMA order that lists a node twice: its sums worked out from what the
    distribution leaves per node (a node listed twice gives twice), its floor from them
    (``_floor_with_remainder``)."""
    scores, g = take.scores, take.g
    avail_of = scores.avail_of
    cand = _Candidate(pos, take.numas, avail_of, distribution, g, remainder, 0, 0, None)
    changed = cand.changed
    cand.total = scores.total + sum(v - avail_of[n] for n, v in changed.items())
    cand.squares = scores.squares + sum(v * v - avail_of[n] ** 2 for n, v in changed.items())
    cand.low = _floor_with_remainder(cand, changed, g)
    return cand


def _remainder_floor(
    counts: Sequence[int],
    pos: tuple[int, ...],
    d: int,
    g: int,
    remainder: int,
    total: int,
    squares: int,
) -> tuple[int, int] | None:
    """The sums whose floor is that of a candidate of distinct nodes with a remainder: its
    hand-out removes at most what ``_most_squares_removed`` says from the squares (``None``:
    no hand-out)."""
    left = [v for i in pos if (v := counts[i] - d) >= g]
    removed = _most_squares_removed(left, remainder // g, g)
    if removed is None:
        return None
    return total - remainder, squares - removed


def _lowest_floor(scores: _Scores, ahead: list[_Candidate]) -> _Candidate:
    """A candidate with the lowest floor among ``ahead``: per total the least squares has the
    lowest floor (it never decreases as the squares grow), so one floor per total is worked
    out."""
    least: dict[int, tuple[int, _Candidate]] = {}
    for cand in ahead:
        if cand.low is not None:
            total, squares = cand.low
            held = least.get(total)
            if held is None or squares < held[0]:
                least[total] = squares, cand
    if not least:
        return ahead[0]
    return min(least.values(), key=lambda t: scores.at_least(*t[1].low or (0, 0)))[1]


def _choose_combo(take: _Take, k: int, copy_best: bool) -> _Choice:
    """The best k-combination of ``numas`` (Go's iteration and checks, first best wins), by
    ``_ComboSearch`` with the shortcuts it lists; combinations that cannot pass the capacity
    or distribution checks are not generated (``_candidate_combos``). The kept combination
    is read as Go reads its slice (``kept_combination``).

    The candidates are generated lazily in Go's order and at most ``_LOOKAHEAD`` are held, so
    the search visits a subset of the combinations Go visits, in the same order, and never
    holds more than ``_LOOKAHEAD`` of them (see the module docstring for the memory bound).
    """
    acc, numas, scores, g = take.acc, take.numas, take.scores, take.g
    align_by_socket, release = take.align_by_socket, take.release
    if k == 1 and not align_by_socket and scores.distinct:
        return _choose_single(take, copy_best)
    cut = _Bound()
    stream = _candidates(take, k, cut)
    ahead = list(itertools.islice(stream, _LOOKAHEAD))
    search = _ComboSearch(acc, scores, cut, g, align_by_socket, release, copy_best)
    if ahead and not align_by_socket and (release is None or g == 1):
        search.score_first(_lowest_floor(scores, ahead))
    last = search.run(itertools.chain(ahead, stream), len(numas), k)
    best = search.best
    if search.best_pos is not None:
        best.combo = _kept(numas, search.best_pos, last, copy_best)
    return best


def _choose_single(take: _Take, copy_best: bool) -> _Choice:
    """``_choose_combo`` of single NUMA nodes (distinct, without align-by-socket): each node
    holding the request is a combination with no remainder (one node takes it whole), so
    nothing can hang and its balance is that of every node's CPUs with the request taken
    from it. Scored as the search scores: the first node with the most CPUs (the lowest
    floor) first, giving ``U``; then in Go's order every node whose floor is at most ``U``
    (one above it can never be the best) and below the best so far (Go keeps the first
    best), the first strictly lowest kept, stopping after a perfect balance. Same answer,
    none of the candidate machinery."""
    numas, scores, need = take.numas, take.scores, take.num_cpus
    counts = [scores.avail_of[n] for n in numas]
    fits = [i for i, c in enumerate(counts) if c >= need]
    best = _Choice()
    if not fits:
        return best
    first = counts.index(max(counts))  # the first node with the most CPUs (it fits)

    def balance(i: int) -> float:
        return scores.exact({numas[i]: counts[i] - need})

    ceiling = balance(first)
    last: tuple[int, ...] = (len(numas) - 1,)  # where Go's iteration ends
    best_pos: tuple[int, ...] | None = None
    floors = _single_floors_in_reach(scores, counts, fits, first, need, ceiling)
    for i in fits:
        if i != first and floors.get(counts[i], _MAX_FLOAT64) >= best.balance:
            continue  # above U (never the best), or cannot score below the best so far
        score = ceiling if i == first else balance(i)
        if score < best.balance:
            best.balance = score
            best_pos = (i,)
            if score == 0:
                last = _following_combination(best_pos, len(numas)) or best_pos
                break
    assert best_pos is not None  # the first node with the most CPUs scores at most U
    best.combo = _kept(numas, best_pos, last, copy_best)
    return best


def _single_floors_in_reach(
    scores: _Scores,
    counts: Sequence[int],
    fits: Sequence[int],
    first: int,
    need: int,
    ceiling: float,
) -> dict[int, float]:
    """The single-node floor (``_Scores.single_floor``) per count of the nodes of ``fits``
    other than ``first`` (scored first, giving ``U``: ``ceiling``) whose floor is at most
    ``U``: as the floor grows when the count falls, the largest counts down to the first
    whose floor is above ``U``. A floor depends on the count only: each is worked out once."""
    floors: dict[int, float] = {}
    for c in sorted({counts[i] for i in fits if i != first}, reverse=True):
        floor = scores.single_floor(need, c)
        if floor > ceiling:
            break
        floors[c] = floor
    return floors


@dataclass(slots=True)
class _ComboSearch:
    """Go's loop over the k-combinations (``iterateCombinations(numas, k, ...)``): score each
    combination that passed the checks, keep the first best (with align-by-socket a
    single-socket combination beats any other), stop after a perfect balance.

    ``cut`` is what a candidate's floor must be below to be looked at (the candidate stream
    reads it too); ``ceiling`` is just above the balance of the candidate scored first.

    Shortcuts that cannot change the answer:

    * a combination is not scored when its floor (``BalanceFloor`` of the best any remainder
      subset could do) is at or above the best balance so far - Go replaces the best only on a
      strictly lower balance - unless the single-socket preference decides instead of the
      balance;
    * without align-by-socket, and where no hang can be raised (1.38, or groups of one), the
      candidate with the lowest floor among the first ``_LOOKAHEAD`` is scored first
      (``score_first``): its balance ``U`` is achieved, so the final best scores at most ``U``
      (or Go stopped earlier at a perfect 0), and a combination whose floor is strictly above
      ``U`` can never be the final best (it may only be a passing best that a later one
      replaces, and it cannot end the search: that needs a balance of 0). It is skipped;
    * the 1.35-1.37 hang is checked on every combination the kubelet would score, in order.

    The break once a perfect balance is found happens where Go's happens (``run``)."""

    acc: CPUAccumulator
    scores: _Scores
    cut: _Bound
    g: int
    align: bool
    release: str | None
    copy_best: bool
    best: _Choice = field(default_factory=_Choice)
    best_pos: tuple[int, ...] | None = None
    ceiling: float = _MAX_FLOAT64
    first: _Candidate | None = None
    first_scored: tuple[float, tuple[int, ...] | None] = (_MAX_FLOAT64, None)

    def run(self, cands: Iterable[_Candidate], n: int, k: int) -> tuple[int, ...]:
        """Go's turns of ``cands`` in order (k-combinations of positions out of ``n``); where
        Go's iteration ends: the last combination, or the one after a perfect balance."""
        for cand in cands:
            if self.consider(cand):
                # Go generates the next combination, sees the perfect balance and breaks.
                return _following_combination(cand.pos, n) or cand.pos
        return tuple(range(n - k, n))

    def score_first(self, cand: _Candidate) -> None:
        """Score ``cand`` (the lowest floor read ahead) before its turn; its balance ``U`` is
        achieved, so a combination whose floor is above ``U`` never ends as the best."""
        self.first = cand
        # (Read ahead only where no hang can be raised: no hang check.)
        self.first_scored = self._score(cand, _MAX_FLOAT64, skip=False, check_hang=False)
        if self.first_scored[0] < _MAX_FLOAT64:  # "floor > U" as "floor >= ceiling"
            self.ceiling = self.cut.value = math.nextafter(self.first_scored[0], math.inf)

    def consider(self, cand: _Candidate) -> bool:
        """Go's turn of ``cand``: score it (or skip what cannot win), keep it when better;
        True when Go breaks after it (a perfect balance)."""
        best = self.best
        cut = self.cut.value
        if not self.align and cand is not self.first and self.scores.reaches(cand.low, cut):
            if self.release is not None and cand.remainder > 0:
                self._score(cand, self.cut.value, skip=True)  # the hang check
            return False  # Go scores it and discards it
        in_same_socket = self.align and _numas_in_same_socket(self.acc.ix, cand.combo)
        decided_by_socket = self.align and in_same_socket != best.in_one_socket
        bound = _MAX_FLOAT64 if decided_by_socket else min(best.balance, self.ceiling)
        if cand is self.first:  # scored in full before; a full score decides as a pruned one
            balance, remainder = self.first_scored
        else:
            skip = (decided_by_socket and not in_same_socket) or self.scores.reaches(
                cand.low, bound
            )
            balance, remainder = self._score(cand, bound, skip=skip)
        if not (in_same_socket if decided_by_socket else balance < best.balance):
            return False
        best.balance = balance
        best.remainder = remainder
        self.best_pos = cand.pos
        self.cut.value = min(balance, self.ceiling)
        if self.align:
            best.in_one_socket = in_same_socket
        return balance == 0 and (not self.align or best.in_one_socket)

    def _score(
        self, cand: _Candidate, bound: float, *, skip: bool, check_hang: bool = True
    ) -> tuple[float, tuple[int, ...] | None]:
        """A combination's balance and remainder subset, or ``(MAX, None)`` when ``skip`` (it
        provably cannot score below ``bound``, or it loses on the socket preference) - the
        caller then discards it. The 1.35-1.37 hang is checked either way, unless
        ``check_hang`` is false."""
        hang = self.release if check_hang else None
        scores, g = self.scores, self.g
        if skip:
            if hang is not None and cand.remainder > 0:
                after = {n: cand.changed.get(n, v) for n, v in scores.avail_of.items()}
                _check_hang(cand.remainder_combo, after, cand.remainder, g, hang)
            return _MAX_FLOAT64, None
        if cand.remainder == 0:
            return scores.exact(cand.changed), None
        return _best_remainder_split(scores, cand, g, hang, self.copy_best, bound)


def _kept(
    numas: Sequence[int], pos: tuple[int, ...], last: tuple[int, ...], copy_best: bool
) -> tuple[int, ...]:
    """The combination Go allocates from: a copy (kubernetes#141238, 1.38), or the Go slice
    read once the iteration stopped at ``last`` (later combinations may have rewritten it)."""
    if copy_best:
        return tuple(numas[i] for i in pos)
    return kept_combination(numas, pos, last)


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
    ``full-pcpus-only``, else 1) from the best combination of the fewest NUMA nodes that could
    do (``_best_combination``); when none fits, or the request is not a multiple of the group
    size, the NUMA-packed algorithm is used. The uncore option never applies here.

    Capacity is counted in whole groups (kubernetes#140730, 1.38). ``hang_release`` names an
    older kubelet (1.35-1.37) that counts raw CPUs and then loops forever on some requests:
    they raise ``DistributedAllocationHangError`` instead; all others get the same CPUs.
    """
    strategy = parse_strategy(cpu_sorting_strategy)
    g = check_group_size(cpu_group_size)
    check_args(topo, available, num_cpus)
    if num_cpus % g == 0:
        acc = CPUAccumulator(topo, available, num_cpus, strategy, spread_by_topology)
        if acc.is_satisfied():
            return acc.result
        if acc.is_failed():
            raise not_enough(num_cpus, available)
        take = _Take.of(acc, num_cpus, g, align_by_socket, hang_release)
        best = _best_combination(take, min_numas_from_hint, copy_best)
        if best is not None:
            return _allocate(acc, best, num_cpus, g)
    return take_by_topology_numa_packed(
        topo, available, num_cpus, strategy, False, spread_by_topology=spread_by_topology
    )


def _best_combination(take: _Take, min_numas_from_hint: int, copy_best: bool) -> _Choice | None:
    """The combination Go allocates from: for k = the fewest to the most NUMA nodes that
    could do (``_sizes_to_try``), every k-combination of the NUMA order is scored by the
    standard deviation of the CPUs left per NUMA node and the first best wins (with
    align-by-socket a single-socket combination beats any cross-socket one); Go stops at the
    first size with one. ``None``: no combination fits."""
    for k in _sizes_to_try(take, min_numas_from_hint):
        best = _choose_combo(take, k, copy_best)
        if best.combo is not None:
            return best
    return None


def _sizes_to_try(take: _Take, min_numas_from_hint: int) -> Iterator[int]:
    """The combination sizes Go tries, fewest NUMA nodes first
    (``rangeNUMANodesNeededToSatisfy``, raised to the hint's count by kubernetes#139456 in
    1.38), less the sizes where Go's capacity or even-share check turns down every
    combination: the k largest entries hold too few CPUs, or one of them is below the even
    share (without align-by-socket)."""
    acc, numas, avail_of, g = take.acc, take.numas, take.scores.avail_of, take.g
    align_by_socket = take.align_by_socket
    num_cpus = acc.num_cpus_needed
    min_numas, max_numas = acc.range_numa_nodes_needed_to_satisfy(g)
    if min_numas < min_numas_from_hint <= max_numas:
        min_numas = min_numas_from_hint
    largest = sorted((avail_of[n] for n in numas), reverse=True)
    most = list(itertools.accumulate(largest))  # most[k - 1]: CPUs of the k largest entries
    for k in range(min_numas, max_numas + 1):
        if most[k - 1] < num_cpus:
            continue
        if not align_by_socket and largest[k - 1] < num_cpus // k // g * g:
            continue
        yield k


def _allocate(acc: CPUAccumulator, best: _Choice, num_cpus: int, g: int) -> CPUSet:
    """Go's allocation from the chosen combination: the even distribution from each of its
    NUMA nodes (a packed take from that node's free CPUs), then the remainder a group at a
    time, round-robin over the remainder subset; then the accounting checks."""
    ix = acc.ix
    combo = best.combo or ()
    distribution = num_cpus // len(combo) // g * g
    for n in combo:
        distribution = min(distribution, acc.numa_count(n) // g * g)
    for n in combo:
        acc.take_mask(packed_mask_or_none(acc, ix.numa_mask[n] & acc.avail_mask, distribution))

    remainder = num_cpus - distribution * len(combo)
    while remainder > 0:
        before = remainder
        for n in best.remainder or ():
            if remainder == 0:
                break
            if acc.numa_count(n) < g:
                continue
            acc.take_mask(packed_mask_or_none(acc, ix.numa_mask[n] & acc.avail_mask, g))
            remainder -= g
        if remainder == before:  # Go would loop forever here; report the shortfall instead
            break

    left = acc.num_cpus_needed
    if left:
        which = "not enough" if left > 0 else "too many"
        raise TakeByTopologyError(f"accounting error, {which} CPUs allocated, remaining: {left}")
    return acc.result

"""Combinations the way Go builds them (follows ``iterateCombinations`` in
pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37 and master as 1.38).

Go slice aliasing is reproduced: Go's ``iterateCombinations`` builds each combination with
``append`` on its parent's slice, so sibling combinations share a backing array whenever the
parent has spare capacity, and a remembered ``bestCombo`` / ``bestLocalRemainder`` (a slice,
not a copy) of length 4, 6, 7 or 8 is overwritten by the later siblings before it is used
(upstream issue kubernetes/kubernetes#141237). The fix, kubernetes#141238 (copy the best
combination), is merged on master: a 1.38 kubelet keeps copies (``distributed.copy_best``), a
1.35-1.37 kubelet the aliased slices modelled here. ``go_iterate_combinations`` models the slices with
Go's append growth (capacity 0, 1, 2, 4, 8, ...) and the chosen combination is read when Go
reads it, so the kubelet's decision - including the accounting error it can end in - is the
one reproduced. It only matters on machines with more than four NUMA nodes.

``kept_combination`` says what such a kept slice reads without generating the combinations in
between: the distributed take prunes its search (it visits only the combinations that can fit)
and asks it for the one it keeps. ``go_iterate_combinations`` is the slice-by-slice model it is
tested against.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

__all__ = ["GoSlice", "go_iterate_combinations", "iterate_combinations", "kept_combination"]


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


def _array_depth(k: int) -> int:
    """The depth whose ``append`` allocated the backing array of a k-element combination.

    Arrays are allocated where the parent is full: at depths 1, 2, 3, 5, 9, 17, ... (capacity
    1, 2, 4, 8, 16, ...); deeper appends write into the array in place.
    """
    depth = 1
    while True:
        following = 2 if depth == 1 else 2 * (depth - 1) + 1
        if following > k:
            return depth
        depth = following


def kept_combination(
    items: Sequence[int], kept: tuple[int, ...], last: tuple[int, ...]
) -> tuple[int, ...]:
    """What a kept k-combination slice reads once ``iterateCombinations`` has generated
    ``last`` (both given as ascending positions in ``items``; ``last`` is the final
    combination when the iteration ran to its end, else the one it broke at).

    The first ``c`` elements (``c`` = the depth that allocated the slice's array) are the kept
    combination's own. The later positions hold what the last combination generated from the
    same depth-``c`` prefix wrote: ``last``'s own elements when ``last`` shares the prefix,
    otherwise the final combination of that prefix, which ends with the last ``k - c`` items.
    """
    k = len(kept)
    c = _array_depth(k)
    if last[:c] == kept[:c]:
        tail: Sequence[int] = last[c:]
    else:
        tail = range(len(items) - (k - c), len(items))
    return tuple(items[i] for i in kept[:c]) + tuple(items[i] for i in tail)

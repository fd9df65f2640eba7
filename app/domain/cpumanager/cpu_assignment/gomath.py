"""Go-exact arithmetic for take-by-topology (follows pkg/kubelet/cm/cpumanager/cpu_assignment.go,
v1.37 and master as 1.38): Go's ``math.Round`` (half away from zero), Go's truncating integer
division, and the standard deviation upstream scores NUMA balance by (mean and result rounded to
three decimals, exactly as the kubelet rounds them, so ties break the same way).

``BalanceFloor`` bounds that standard deviation from below using two integers (the sum and the
sum of squares of the list), so the distributed take can skip a candidate that provably cannot
score strictly better than the best one so far without summing its list in floats.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence

from app.domain.cpumanager.cpu_assignment.common import CPUAssignmentInputError

__all__ = ["BalanceFloor", "go_div", "standard_deviation"]

_UNBOUNDED = 1e300  # a limit this large is met by every finite balance
_EVERY_SQUARE = 1 << 120


def _go_round(x: float) -> float:
    """Go's ``math.Round``: half away from zero, exact for every float64."""
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def _mean(xs: Sequence[int]) -> float:
    n = len(xs)
    if -_EXACT_SUM // n < min(xs) and max(xs) < _EXACT_SUM // n:
        # Every partial sum is an integer below 2**53: Go's float sum is the exact sum.
        total = float(sum(xs))
    else:
        total = 0.0
        for x in xs:
            total += float(x)
    return _go_round(total / float(n) * 1000) / 1000


_EXACT_SUM = 1 << 53


def standard_deviation(xs: Sequence[int]) -> float:
    """Population standard deviation rounded like upstream (mean and result to 3 decimals)."""
    if not xs:
        raise CPUAssignmentInputError("standard deviation of an empty list")
    m = _mean(xs)
    deviations = [float(x) - m for x in xs]
    # Go's loop: the squares added one by one, left to right, from 0 (reduce does that in C).
    total = functools.reduce(operator.add, map(operator.mul, deviations, deviations), 0.0)
    return _go_round(math.sqrt(total / float(len(xs))) * 1000) / 1000


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class BalanceFloor:
    """A lower bound of ``standard_deviation`` over lists of ``count`` non-negative integers,
    from their sum ``total`` and sum of squares ``squares``.

    Why it is a bound: ``standard_deviation`` first rounds the mean to ``m``; the mean of
    integers is summed exactly in floats (the sums stay far below 2**53), so ``m`` depends on
    ``total`` only. The exact value of the sum it then computes is
    ``E = squares - 2*m*total + count*m*m`` (``m`` taken as the exact value of the float).
    Here ``E`` is evaluated in floats - five roundings, each off by at most 2**-53 of
    ``M = squares + 2*|m|*total + count*m*m``, so ``16 * 2**-53 * M`` below the result is
    below ``E``. The kubelet's float sum rounds ``count + 2`` times per term chain (a
    subtraction, a product, the additions, all of non-negative terms), so it is at least
    ``E * (1 - (count + 2) * 2**-53)``; the bound is scaled down by ``8 * (count + 8) *
    2**-53``, more than that plus its own rounding. The remaining steps (divide by ``count``,
    square root, times 1000, Go's round, divide by 1000) are each non-decreasing, so the bound's
    result never exceeds the kubelet's.

    Its memo keeps at most ``MEMO`` sums (then starts over), so a long search cannot grow it.
    """

    MEMO = 4096

    __slots__ = ("_count", "_known", "_means", "_slack")

    def __init__(self, count: int) -> None:
        if count < 1:
            raise CPUAssignmentInputError("standard deviation of an empty list")
        self._count = count
        self._slack = 1.0 - (count + 8) * 2.0**-50
        self._means: dict[int, float] = {}
        self._known: dict[tuple[int, int], float] = {}

    def at_least(self, total: int, squares: int) -> float:
        known = self._known.get((total, squares))
        if known is not None:
            return known
        n = self._count
        m = self._means.get(total)
        if m is None:
            m = _go_round(float(total) / float(n) * 1000) / 1000
            self._means[total] = m
        sq = float(squares)
        cross = 2 * m * float(total)
        tail = n * m * m
        near = sq - cross + tail
        low = max(0.0, (near - (sq + abs(cross) + tail) * 2.0**-49) * self._slack)
        x = math.sqrt(low / float(n)) * 1000
        t = float(int(x))  # Go's Round of a non-negative number, inlined (a hot path)
        if x - t >= 0.5:
            t += 1.0
        result = t / 1000
        if len(self._known) >= self.MEMO:
            self._known.clear()
            self._means.clear()
        self._known[(total, squares)] = result
        return result

    def squares_below(self, total: int, limit: float) -> int:
        """The largest sum of squares ``S >= 0`` with ``at_least(total, S) < limit`` (-1 when
        there is none): as ``at_least`` never decreases as the squares grow, a list with these
        sums could score below ``limit`` iff its squares are at most this. Found from the
        closed form of the bound and then a few ``at_least`` calls around it."""
        if self.at_least(total, 0) >= limit:
            return -1
        if limit >= _UNBOUNDED:
            return _EVERY_SQUARE
        n = self._count
        m = _go_round(float(total) / float(n) * 1000) / 1000
        guess = max(0, int(n * limit * limit + 2 * m * total - n * m * m))
        step = 1
        if self.at_least(total, guess) < limit:
            low = guess
            while self.at_least(total, low + step) < limit:
                low += step
                step *= 2
            high = low + step
        else:
            high = guess
            while high - step > 0 and self.at_least(total, high - step) >= limit:
                high -= step
                step *= 2
            low = max(0, high - step)
        while high - low > 1:  # at_least(low) < limit <= at_least(high)
            mid = (low + high) // 2
            if self.at_least(total, mid) < limit:
                low = mid
            else:
                high = mid
        return low

"""Go-exact arithmetic for take-by-topology (follows pkg/kubelet/cm/cpumanager/cpu_assignment.go,
v1.37 and master as 1.38): Go's ``math.Round`` (half away from zero), Go's truncating integer
division, and the standard deviation upstream scores NUMA balance by (mean and result rounded to
three decimals, exactly as the kubelet rounds them, so ties break the same way).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.domain.cpumanager.cpu_assignment.common import CPUAssignmentInputError

__all__ = ["go_div", "standard_deviation"]


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


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q

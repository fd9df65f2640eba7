"""NUMA bitmasks (follows pkg/kubelet/cm/topologymanager/bitmask/bitmask.go, v1.37).

A mask is a plain non-negative ``int``: bit *i* is NUMA node *i*. Upstream keeps a 64-bit
unsigned integer; we keep the same comparisons so hint orderings match.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import combinations

MAX_NUMA_ID = 63


class BitMaskError(ValueError):
    """A NUMA id outside 0..63 (upstream ``Add``'s error text)."""


def new_mask(*ids: int) -> int:
    """``bitmask.NewBitMask(ids...)``."""
    return mask_of(ids)


def mask_of(ids: Iterable[int]) -> int:
    mask = 0
    for i in ids:
        if not 0 <= i <= MAX_NUMA_ID:
            raise BitMaskError("bit number must be in range 0-63")
        mask |= 1 << i
    return mask


def bits(mask: int) -> list[int]:
    """``GetBits``: the NUMA ids in ascending order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def count(mask: int) -> int:
    return mask.bit_count()


def is_set(mask: int, bit: int) -> bool:
    return bool(mask >> bit & 1)


def is_equal(a: int, b: int) -> bool:
    return a == b


def is_less_than(a: int, b: int) -> bool:
    """``IsLessThan``: a plain integer comparison."""
    return a < b


def is_greater_than(a: int, b: int) -> bool:
    return a > b


def is_narrower_than(a: int, b: int) -> bool:
    """``IsNarrowerThan``: fewer bits wins; equal counts -> numerically smaller wins."""
    ca, cb = a.bit_count(), b.bit_count()
    if ca == cb:
        return a < b
    return ca < cb


def and_masks(*masks: int) -> int:
    """``And``: the empty argument list gives the empty mask, as upstream."""
    if not masks:
        return 0
    out = masks[0]
    for m in masks[1:]:
        out &= m
    return out


def or_masks(*masks: int) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def iterate_bitmasks(ids: Iterable[int]) -> Iterator[int]:
    """``IterateBitMasks``: every non-empty subset, by size, then lexicographically."""
    nodes = sorted(ids)
    for size in range(1, len(nodes) + 1):
        for combo in combinations(nodes, size):
            yield mask_of(combo)


def format_mask(mask: int | None) -> str:
    """Readable form, e.g. ``01`` style is upstream's String(); we show ``{0,1}``."""
    if mask is None:
        return "<nil>"
    return "{" + ",".join(str(b) for b in bits(mask)) + "}"

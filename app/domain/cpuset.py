"""CPU sets in the Linux cpu-list syntax (follows k8s.io/utils/cpuset/cpuset.go).

A ``CPUSet`` is an immutable set of logical CPU ids kept as an int bitmask, so set
algebra on 1,024-CPU machines is a handful of big-int operations. ``str(s)`` is the
kubelet's canonical text (ascending, runs of two or more ids as ``a-b``), which is
what appears in checkpoints and error messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# Linux caps NR_CPUS at 8192 on every architecture we know of; leave head-room but
# refuse ids that would only make sense as typos or attacks ("0-99999999999").
MAX_CPU_ID = 65535

_NUMBER = re.compile(r"\+?[0-9]+\Z")


class CPUSetError(ValueError):
    """A cpu-list text could not be parsed; ``text`` is the whole input."""

    def __init__(self, text: str, detail: str) -> None:
        super().__init__(f"invalid cpuset {text!r}: {detail}")
        self.text = text
        self.detail = detail


def _atoi(text: str, item: str, part: str) -> int:
    # Go's strconv.Atoi accepts an optional sign; a '-' sign can never reach here
    # because the item was already split on '-'.
    if not _NUMBER.match(part):
        if part == "":
            raise CPUSetError(text, f"empty number in element {item!r}")
        raise CPUSetError(text, f"{part!r} in element {item!r} is not a CPU id")
    value = int(part)
    if value > MAX_CPU_ID:
        raise CPUSetError(text, f"CPU id {value} is larger than {MAX_CPU_ID}")
    return value


class CPUSet:
    """An immutable set of CPU ids."""

    __slots__ = ("_mask",)

    _mask: int

    def __init__(self, cpus: Iterable[int] = ()) -> None:
        mask = 0
        for cpu in cpus:
            if not isinstance(cpu, int) or isinstance(cpu, bool) or cpu < 0:
                raise CPUSetError(str(cpu), "CPU ids are non-negative integers")
            if cpu > MAX_CPU_ID:
                raise CPUSetError(str(cpu), f"CPU id {cpu} is larger than {MAX_CPU_ID}")
            mask |= 1 << cpu
        object.__setattr__(self, "_mask", mask)

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_mask(cls, mask: int) -> CPUSet:
        if mask < 0:
            raise CPUSetError(hex(mask), "a CPU bitmask cannot be negative")
        s = cls.__new__(cls)
        object.__setattr__(s, "_mask", mask)
        return s

    @classmethod
    def range(cls, first: int, last: int) -> CPUSet:
        """CPUs ``first..last`` inclusive."""
        if first > last:
            return EMPTY
        return cls.from_mask((1 << (last + 1)) - (1 << first))

    @classmethod
    def parse(cls, text: str) -> CPUSet:
        """Parse ``"0-3,8,10-11"``; ``""`` is the empty set (like cpuset.Parse)."""
        if not isinstance(text, str):
            raise CPUSetError(repr(text), "a cpuset must be given as text")
        if text == "":
            return EMPTY
        mask = 0
        for item in text.split(","):
            dash = item.find("-")
            if dash < 0:
                mask |= 1 << _atoi(text, item, item)
                continue
            start = _atoi(text, item, item[:dash])
            end = _atoi(text, item, item[dash + 1 :])
            if start > end:
                raise CPUSetError(text, f"invalid range {item!r} ({start} > {end})")
            mask |= (1 << (end + 1)) - (1 << start)
        return cls.from_mask(mask)

    # -- queries ------------------------------------------------------------------
    @property
    def mask(self) -> int:
        return self._mask

    def size(self) -> int:
        return self._mask.bit_count()

    def __len__(self) -> int:
        return self._mask.bit_count()

    def is_empty(self) -> bool:
        return self._mask == 0

    def __bool__(self) -> bool:
        return self._mask != 0

    def __contains__(self, cpu: object) -> bool:
        return isinstance(cpu, int) and cpu >= 0 and bool(self._mask >> cpu & 1)

    def __iter__(self) -> Iterator[int]:
        """CPU ids in ascending order."""
        mask = self._mask
        while mask:
            low = mask & -mask
            yield low.bit_length() - 1
            mask ^= low

    def ids(self) -> list[int]:
        return list(self)

    def list(self) -> list[int]:
        """Sorted ids, as cpuset.List()."""
        return list(self)

    def min(self) -> int:
        if not self._mask:
            raise ValueError("empty CPUSet has no minimum")
        return (self._mask & -self._mask).bit_length() - 1

    def max(self) -> int:
        if not self._mask:
            raise ValueError("empty CPUSet has no maximum")
        return self._mask.bit_length() - 1

    def is_subset_of(self, other: CPUSet) -> bool:
        return self._mask & ~other._mask == 0

    def is_superset_of(self, other: CPUSet) -> bool:
        return other._mask & ~self._mask == 0

    def runs(self) -> Iterator[tuple[int, int]]:
        """Maximal runs of consecutive ids as ``(first, last)``."""
        mask = self._mask
        while mask:
            low = mask & -mask
            carried = mask + low  # clears the lowest run and sets the bit above it
            last = (mask ^ carried).bit_length() - 2
            yield low.bit_length() - 1, last
            mask &= carried

    # -- algebra ------------------------------------------------------------------
    def union(self, *others: CPUSet) -> CPUSet:
        mask = self._mask
        for o in others:
            mask |= o._mask
        return CPUSet.from_mask(mask)

    def intersection(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask & other._mask)

    def difference(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask & ~other._mask)

    def __or__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask | other._mask)

    def __and__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask & other._mask)

    def __sub__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask & ~other._mask)

    def __xor__(self, other: CPUSet) -> CPUSet:
        return CPUSet.from_mask(self._mask ^ other._mask)

    # -- identity and text --------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, CPUSet) and other._mask == self._mask

    def __hash__(self) -> int:
        return hash(self._mask)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CPUSet is immutable")

    def __str__(self) -> str:
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in self.runs())

    def __repr__(self) -> str:
        return f"CPUSet({str(self)!r})"

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (CPUSet.from_mask, (self._mask,))


EMPTY = CPUSet.from_mask(0)


def parse(text: str) -> CPUSet:
    return CPUSet.parse(text)


def format_ids(cpus: Iterable[int]) -> str:
    return str(CPUSet(cpus))

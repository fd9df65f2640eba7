"""CPU sets in the Linux cpu-list syntax (follows k8s.io/utils/cpuset/cpuset.go).

A ``CPUSet`` is an immutable set of logical CPU ids kept as an int bitmask, so set
algebra on 1,024-CPU machines is a handful of big-int operations. ``str(s)`` is the
kubelet's canonical text (ascending, runs of two or more ids as ``a-b``), which is
what appears in checkpoints and error messages.

Speed (bench/bench_cpuset.py): ``parse`` has a fast path for sorted, non-overlapping lists of
plain decimal ids below ``_FAST_IDS`` (everything the kubelet writes; its tables grow to the
largest id met); it converts all numbers with C-level ``map`` calls and builds the mask as
sum(2^(last+1)) - sum(2^first). Any other
input (unsorted, overlapping, ``+1``, ``007``, errors) takes the general item-by-item path, so
results and error texts are the same either way. A set parsed from canonical text keeps that
text, and ``str()`` caches its result on the (immutable) set, like upstream
``resource.Quantity`` does for canonical strings. Formatting many runs selects tokens from a
precomputed ``,id``/``-id`` table with ``itertools.compress`` instead of a Python loop.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from itertools import compress, islice

from app.domain.topologymanager.bitmask import bits

# Linux caps NR_CPUS at 8192 on every architecture we know of; leave head-room but
# refuse ids that would only make sense as typos or attacks ("0-99999999999").
MAX_CPU_ID = 65535

_NUMBER = re.compile(r"\+?[0-9]+\Z")

# -- fast-path tables (grown on demand) -------------------------------------------------
# Plain decimal ids below _FAST_IDS are looked up instead of int()-converted; this also
# validates them (no sign, no leading zero, no spaces). The tables cover the ids below
# len(_ID_LIST), grown to the next power of two (at least _MIN_IDS) when an id beyond them is
# met: sized to the machine, not to _FAST_IDS (8,192 ids cost 2 MiB, a node agent's 512 CPUs
# an eighth of that; issue 20 pt 7).
_FAST_IDS = 8192
_MIN_IDS = 64
_ID_OF: dict[str, int] = {}
_ID_LIST: list[int] = []
# _TOKENS[2*i] = ",i" (a run starts at i), _TOKENS[2*i+1] = "-i" (a run of 2+ ends at i).
_TOKENS: list[str] = []
_GROWING = threading.Lock()
_SEPARATOR_FLAGS = bytes.maketrans(b",-", b"\x01\x00")
_DIGITS = b"0123456789"
_BIT_FLAGS = bytes.maketrans(b"01", b"\x00\x01")
# The separator flags of "a-b,c-d,...": '-' (0), ',' (1), '-' (0), ...
_ALL_RANGES = b"\x00\x01" * _FAST_IDS
_TWO_SHL = (2).__lshift__
_ONE_SHL = (1).__lshift__
# Below this many runs a plain loop beats scanning the token table.
_LOOP_RUNS = 24


def _cover(n: int) -> None:
    """Grow the tables to cover the ids below ``n`` (at most ``_FAST_IDS``)."""
    if len(_ID_LIST) >= n:
        return
    with _GROWING:
        have = len(_ID_LIST)
        if have >= n:
            return
        new = range(have, min(_FAST_IDS, max(_MIN_IDS, 1 << (n - 1).bit_length())))
        # Readers need no lock: _ID_LIST grows last, in one step, and its length says what
        # the other two cover; a lookup that misses meanwhile takes the general path.
        _TOKENS.extend([t for i in new for t in (f",{i}", f"-{i}")])
        _ID_OF.update({str(i): i for i in new})
        _ID_LIST.extend(new)


def _grow_for(tokens: list[str]) -> bool:
    """Grow the tables for the plain decimal ids of ``tokens`` they do not cover yet; False
    when there is none (the tokens need the general path)."""
    have = len(_ID_LIST)
    top = max((int(t) for t in tokens if len(t) < 5 and t.isascii() and t.isdigit()), default=-1)
    if top < have or top >= _FAST_IDS:
        return False
    _cover(top + 1)
    return True


def _parse_fast(text: str) -> tuple[int, bool] | None:
    """(mask, text is canonical) for a list of plain decimal ids; None for anything the
    general path must look at (signs, leading zeros, big ids, reversed ranges, errors)."""
    tokens = text.replace("-", ",").split(",")
    try:
        ids = list(map(_ID_OF.__getitem__, tokens))
    except KeyError:
        grown = _ids_after_growing(tokens)
        if grown is None:
            return None
        ids = grown
    ranges = text.count("-")
    if ranges:
        flags = text.encode().translate(_SEPARATOR_FLAGS, _DIGITS)
        if b"\x00\x00" in flags:
            return None  # "1-2-3": let the general path report it
        if ranges * 2 == len(ids) and flags == _ALL_RANGES[: len(flags)]:
            firsts, lasts = ids[0::2], ids[1::2]  # every item is "a-b"
        else:
            firsts = list(compress(ids, b"\x01" + flags))
            lasts = list(compress(ids, flags + b"\x01"))
    else:
        firsts = lasts = ids
    if ids == sorted(ids):
        # Each item adds its range mask; the sum equals the union iff no two items overlap,
        # which is exactly when no carries happened, i.e. when the bit counts add up.
        mask = 0
        for first, last in zip(firsts, lasts, strict=True):
            mask += (2 << last) - (1 << first)
        if mask.bit_count() == sum(lasts) - sum(firsts) + len(firsts):
            # Sorted, disjoint items are canonical iff none touch (one run per item) and no
            # range item is a single CPU ("5-5").
            starts = mask & ~(mask << 1)
            items = len(firsts)
            singles = (starts & ~(mask >> 1)).bit_count()
            return mask, starts.bit_count() == items and singles == items - ranges
    union = _union_of_ranges(firsts, lasts)
    return None if union is None else (union, False)


def _ids_after_growing(tokens: list[str]) -> list[int] | None:
    """The ids of ``tokens`` once the tables cover them; None when a token is no plain
    decimal id below ``_FAST_IDS``."""
    if not _grow_for(tokens):
        return None
    try:
        return list(map(_ID_OF.__getitem__, tokens))
    except KeyError:
        return None


def _union_of_ranges(firsts: list[int], lasts: list[int]) -> int | None:
    """The mask of the ranges ``firsts[i]-lasts[i]`` in any order, overlaps allowed; None
    when one is reversed (the general path raises the error)."""
    mask = 0
    for first, last in zip(firsts, lasts, strict=True):
        if first > last:
            return None
        mask |= (2 << last) - (1 << first)
    return mask


def _ids_of(mask: int) -> list[int]:
    """The set bits of ``mask``, ascending."""
    n = mask.bit_length()
    if mask.bit_count() * 32 < n or n > _FAST_IDS:
        return bits(mask)  # sparse: one step per set bit
    _cover(n)
    return list(compress(_ID_LIST, bin(mask)[:1:-1].encode().translate(_BIT_FLAGS)))


def _format_mask(mask: int) -> str:
    if not mask:
        return ""
    firsts = mask & ~(mask << 1)
    runs = firsts.bit_count()
    n = mask.bit_length()
    if runs >= _LOOP_RUNS and n <= _FAST_IDS:
        _cover(n)
        # One flag byte per token: (run starts at i, run of 2+ ends at i) for i = low..n-1.
        low = (firsts & -firsts).bit_length() - 1
        width = n - low
        range_lasts = mask & ~(mask >> 1) & ~firsts
        flags = bytearray(2 * width)
        flags[0::2] = format(firsts >> low, f"0{width}b").encode().translate(_BIT_FLAGS)[::-1]
        flags[1::2] = format(range_lasts >> low, f"0{width}b").encode().translate(_BIT_FLAGS)[::-1]
        return "".join(compress(islice(_TOKENS, 2 * low, None), flags))[1:]
    out = []
    while mask:
        low = mask & -mask
        carried = mask + low
        first = low.bit_length() - 1
        last = (mask ^ carried).bit_length() - 2
        out.append(str(first) if first == last else f"{first}-{last}")
        mask &= carried
    return ",".join(out)


class CPUSetError(ValueError):
    """A cpu-list text could not be parsed; ``text`` is the whole input."""

    def __init__(self, text: str, detail: str) -> None:
        super().__init__(f"invalid cpuset {text!r}: {detail}")
        self.text = text
        self.detail = detail


def _cut(text: str, keep: int = 40) -> str:
    """``text`` shortened for a message (a 5,000-digit id is not worth repeating)."""
    return text if len(text) <= keep else f"{text[:keep]}… ({len(text)} characters)"


def _atoi(text: str, item: str, part: str) -> int:
    # Go's strconv.Atoi accepts an optional sign; a '-' sign can never reach here
    # because the item was already split on '-'.
    if not _NUMBER.match(part):
        if part == "":
            raise CPUSetError(text, f"empty number in element {item!r}")
        raise CPUSetError(text, f"{part!r} in element {item!r} is not a CPU id")
    digits = part.lstrip("+").lstrip("0") or "0"
    if len(digits) > 6:
        # Larger than MAX_CPU_ID whatever the digits; int() would refuse 4,300 of them.
        raise CPUSetError(_cut(text), f"CPU id {_cut(part)} is larger than {MAX_CPU_ID}")
    value = int(digits)
    if value > MAX_CPU_ID:
        raise CPUSetError(text, f"CPU id {value} is larger than {MAX_CPU_ID}")
    return value


class CPUSet:
    """An immutable set of CPU ids."""

    __slots__ = ("_mask", "_text")

    _mask: int
    _text: str  # canonical text, set lazily by __str__ (or by parse of canonical text)

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
        fast = _parse_fast(text)
        if fast is not None:
            s = cls.from_mask(fast[0])
            if fast[1]:
                object.__setattr__(s, "_text", text)
            return s
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
        return iter(_ids_of(self._mask))

    def ids(self) -> list[int]:
        return _ids_of(self._mask)

    def list(self) -> list[int]:
        """Sorted ids, as cpuset.List()."""
        return _ids_of(self._mask)

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
        try:
            return self._text
        except AttributeError:
            text = _format_mask(self._mask)
            object.__setattr__(self, "_text", text)
            return text

    def __repr__(self) -> str:
        return f"CPUSet({str(self)!r})"

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (CPUSet.from_mask, (self._mask,))


EMPTY = CPUSet.from_mask(0)


def parse(text: str) -> CPUSet:
    return CPUSet.parse(text)


def format_ids(cpus: Iterable[int]) -> str:
    return str(CPUSet(cpus))

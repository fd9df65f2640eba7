"""Checkpoint checksums (follows pkg/kubelet/checkpointmanager/checksum/checksum.go, v1.37).

Every checksum is FNV-1a 32-bit (offset basis 2166136261, prime 16777619) over UTF-8 bytes:

* **struct checksum** (CPU V1/V2/V3, memory V1/V2, the inline part of CPU V4 / memory V3):
  the hash of ``dump.ForHash(&checkpoint)`` with ``Checksum`` set to 0, with the header type
  name replaced by the legacy name where the version requires it;
* **string checksum** (``dataChecksum``): the hash of ``dump.ForHash(data)``, i.e. of
  ``"(string)" + data``.

``fnv1a_32_parts`` hashes a text given as parts, some of them ``HashedText``: a part whose
summary is known costs O(1) whatever its length (the incremental writers hash a 250-pod file
re-reading only what changed).
"""

from __future__ import annotations

import functools
import sys
from array import array
from collections.abc import Iterable
from typing import Any

from app.domain.checkpoint.gojson_scan import FORGET
from app.domain.checkpoint.gospew import sdump_for_hash, sdump_string
from app.domain.checkpoint.gotypes import GoType

FNV32_OFFSET = 2166136261
FNV32_PRIME = 16777619


def fnv1a_32(data: bytes, h: int = FNV32_OFFSET) -> int:
    """FNV-1a 32-bit hash of ``data`` (continued from state ``h``)."""
    if len(data) >= _BITSLICE_MIN:
        return _fnv1a_32_bitsliced(data, h)
    return _fnv1a_32_loop(data, h)


def _fnv1a_32_loop(data: bytes, h: int = FNV32_OFFSET) -> int:
    # Two bytes per iteration: masking only every second step is exact (the low 32 bits of
    # a product depend only on the low 32 bits of its factors) and halves the loop overhead.
    p = FNV32_PRIME
    m = len(data) & ~1
    for a, b in zip(data[0:m:2], data[1:m:2], strict=False):
        h = ((((h ^ a) * p) ^ b) * p) & 0xFFFFFFFF
    if m != len(data):
        h = ((h ^ data[m]) * p) & 0xFFFFFFFF
    return h


# Above this size the bit-sliced form is faster than the byte loop (about twice at 40 KB).
_BITSLICE_MIN = 2048
# The prime is 1 + 2 + 16 + 128 + 256 + 2**24: x * prime = x + (x<<1) + ... + (x<<24).
_PRIME_SHIFTS = (1, 4, 7, 8, 24)


def _repeat64(pattern: int, words: int) -> int:
    return int.from_bytes(pattern.to_bytes(8, "little") * words, "little")


def _bit_planes(data: bytes) -> list[int]:
    """Eight integers; bit ``i`` of the ``k``-th is bit ``k`` of ``data[i]``.

    Each 8-byte word is an 8x8 bit matrix; three delta swaps (with masks repeated over the
    whole number, and shifts that never cross a word) transpose every word at once, after
    which byte ``k`` of each word holds plane ``k`` for those 8 positions.
    """
    pad = -len(data) % 8
    words = (len(data) + pad) // 8
    x = int.from_bytes(data + b"\0" * pad, "little")
    t = (x ^ (x >> 7)) & _repeat64(0x00AA00AA00AA00AA, words)
    x ^= t ^ (t << 7)
    t = (x ^ (x >> 14)) & _repeat64(0x0000CCCC0000CCCC, words)
    x ^= t ^ (t << 14)
    t = (x ^ (x >> 28)) & _repeat64(0x00000000F0F0F0F0, words)
    x ^= t ^ (t << 28)
    raw = x.to_bytes(words * 8, "little")
    return [int.from_bytes(raw[k::8], "little") for k in range(8)]


def _prefix_xor(p: int, n: int) -> int:
    """Bit ``i`` of the result is the XOR of bits ``0..i`` of ``p`` (``n`` bits), in
    log2(n) shift-XOR steps."""
    step = 1
    while step < n:
        p ^= p << step
        step <<= 1
    return p


def _fnv1a_32_bitsliced(data: bytes, start: int = FNV32_OFFSET) -> int:
    """FNV-1a over all positions at once, one bit plane at a time.

    With ``x_i = h_i ^ b_i``, ``h_{i+1} = x_i * prime``. The prime is odd, so bit ``k`` of the
    product is ``x_k`` XOR a function ``G_k`` of the lower bits of ``x`` (the shifted terms and
    the carries of the additions). Hence plane ``k`` of the state is a prefix XOR over the
    positions of ``b_k ^ G_k``, and ``G_k`` only needs the planes below ``k``, which are
    already known for every position. Python integers hold a plane (bit ``i`` = position
    ``i``) and do the boolean work for all positions in C; the prefix XOR takes log2(n)
    shift-XOR steps.

    A position is ``r`` bytes (``_STRIDE``), each byte one interleaved stream with its own
    planes and carries: over a position the state's plane ``k`` changes by the XOR of every
    stream's ``b_k ^ G_k``, so the prefix XOR (the costly part) runs over ``n / r`` bits, and
    the streams then follow one another within each position. The last ``n % r`` bytes go
    through the byte loop. Exact: the tests compare it with the byte loop.
    """
    r = _STRIDE if len(data) >= _STRIDE_MIN else 2
    m = len(data) // r
    if m == 0:
        return _fnv1a_32_loop(data, start)
    mask = (1 << m) - 1
    inputs = [_bit_planes(data[s : m * r : r]) + [0] * 24 for s in range(r)]
    xs = [[0] * 32 for _ in range(r)]  # x_k of each stream at each position
    carries = [[0] * len(_PRIME_SHIFTS) for _ in range(r)]  # into bit k of each addition
    result = 0
    for k in range(32):
        # the additions with a term at bit k, and the plane of x that term is
        active = [(j, k - shift) for j, shift in enumerate(_PRIME_SHIFTS) if k >= shift]
        flips = []  # b_k ^ G_k of each stream
        y = 0
        for s in range(r):
            x, c = xs[s], carries[s]
            f = inputs[s][k]
            for j, below in active:
                f ^= c[j] ^ x[below]
            flips.append(f)
            y ^= f
        p = _prefix_xor(y, m)
        init = (start >> k) & 1
        result |= (init ^ ((p >> (m - 1)) & 1)) << k  # the state after the last position
        if k == 31:
            break
        h = (p << 1) & mask  # h_k at each position: exclusive prefix
        if init:
            h ^= mask
        for s in range(r):
            total = h ^ inputs[s][k]  # x_k of this stream
            x, c = xs[s], carries[s]
            x[k] = total
            h ^= flips[s]  # h_k before the next stream's byte
            for j, below in active:
                term, cj = x[below], c[j]
                c[j] = (total & term) | (cj & (total ^ term))
                total ^= term ^ cj
    return _fnv1a_32_loop(data[m * r :], result)


# Bytes per position of the bit-sliced form: 3 is fastest from about 16 KB (2.2 ms against
# 3.4 ms with 1 at 77 KB), 2 below.
_STRIDE = 3
_STRIDE_MIN = 16384


# -- hashing from cached parts ---------------------------------------------------------------
#
# FNV-1a xors a byte into the low 8 bits only: with ``lo = h & 255``, ``h ^ b = h + d`` where
# ``d = (lo ^ b) - lo`` depends on ``lo`` alone, and the low byte of the next state depends only
# on ``lo`` and ``b``. So over a text of ``m`` bytes, ``f(h) = P**m * (h - lo) + f(lo)``
# (mod 2**32): the 256 values ``f(0..255)`` summarise the text for every starting state.

_LANES = 256
_LANE_BITS = 64  # a 32-bit state times the 25-bit prime stays inside its lane
_ONES = sum(1 << (_LANE_BITS * i) for i in range(_LANES))
_LANE_MASK = 0xFFFFFFFF * _ONES
_LANE_START = sum(i << (_LANE_BITS * i) for i in range(_LANES))
_BROADCAST: list[int] = []  # byte value -> that byte in every lane (built on first use)
# The lanes' bytes read as one native array of 32-bit words, of which every other one (a lane's
# low half) is a state; else the lanes are taken out one by one.
_NATIVE_LANES = sys.byteorder == "little" and array("I").itemsize == 4


class HashedText:
    """A text with its FNV-1a summary (computed on first use): hashing it from any state
    costs O(1). Made for parts that recur unchanged in many hashes."""

    __slots__ = ("_scale", "_table", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._table: array[int] | None = None
        self._scale = 0

    def advance(self, h: int) -> int:
        """The FNV-1a state after this text, from state ``h``."""
        table = self._table
        if table is None:
            table = self._summarise()
        lo = h & 255
        return (self._scale * (h - lo) + table[lo]) & 0xFFFFFFFF

    def _summarise(self) -> array[int]:
        # All 256 starting low bytes at once, one 64-bit lane each, in Python integers.
        if not _BROADCAST:
            _BROADCAST.extend(b * _ONES for b in range(256))
        data = self.text.encode("utf-8")
        v, p, lanes, mask = _LANE_START, FNV32_PRIME, _BROADCAST, _LANE_MASK
        for b in data:
            v = ((v ^ lanes[b]) * p) & mask
        if _NATIVE_LANES:
            table = array("I", v.to_bytes(_LANES * _LANE_BITS // 8, "little"))[::2]
        else:
            table = array("L", [(v >> (_LANE_BITS * i)) & 0xFFFFFFFF for i in range(_LANES)])
        self._scale = pow(FNV32_PRIME, len(data), 1 << 32)
        self._table = table
        return table


def fnv1a_32_parts(parts: Iterable[str | HashedText]) -> int:
    """FNV-1a 32 of the UTF-8 bytes of the concatenated ``parts``."""
    h = FNV32_OFFSET
    for part in parts:
        if part.__class__ is HashedText:
            # ``advance``, inlined: a 250-pod file has about 500 of these.
            table = part._table
            if table is None:
                table = part._summarise()
            lo = h & 255
            h = (part._scale * (h - lo) + table[lo]) & 0xFFFFFFFF
        elif part:
            h = fnv1a_32(part.encode("utf-8"), h)  # type: ignore[union-attr]
    return h


#: Texts up to this length are remembered by the thousand (a few MB at most), longer ones
#: only the last few.
SHORT_TEXT = 2048
SHORT_KEPT = 16384
LONG_KEPT = 32


def text_checksum(text: str) -> int:
    """FNV-1a 32 of the UTF-8 bytes of ``text`` (what ``fmt.Fprintf(hash, "%v", s)`` feeds).

    Remembered: one file's inspection hashes the same dump for every check and reader that
    verifies it (about 30 times per node in a fleet upgrade check), and the reader hashes the
    dump the writer hashed. A fleet worker renders its whole shard's files when it starts
    (about 3 short dumps per node): keeping thousands of short dumps lets its first upgrade
    check reuse those hashes instead of hashing them again."""
    if len(text) <= SHORT_TEXT:
        return _short_checksum(text)
    return _long_checksum(text)


def _text_checksum(text: str) -> int:
    return fnv1a_32(text.encode("utf-8"))


_short_checksum = functools.lru_cache(maxsize=SHORT_KEPT)(_text_checksum)
_long_checksum = functools.lru_cache(maxsize=LONG_KEPT)(_text_checksum)
FORGET.extend((_short_checksum.cache_clear, _long_checksum.cache_clear))


def string_checksum(data: str) -> int:
    """``checksum.New(data)`` for a Go string: FNV-1a 32 of ``"(string)" + data``."""
    return text_checksum(sdump_string(data))


def struct_checksum(value: dict[str, Any], t: GoType, header: str, field: str = "Checksum") -> int:
    """The struct checksum of ``value`` hashed under ``(*header)``; ``value[field]`` is zeroed
    for the hash (and restored), as the kubelet's verifiers do."""
    saved = value.get(field, 0)
    value[field] = 0
    try:
        return text_checksum(sdump_for_hash(value, t, header))
    finally:
        value[field] = saved

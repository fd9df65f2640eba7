"""Checkpoint checksums (follows pkg/kubelet/checkpointmanager/checksum/checksum.go, v1.37).

Every checksum is FNV-1a 32-bit (offset basis 2166136261, prime 16777619) over UTF-8 bytes:

* **struct checksum** (CPU V1/V2/V3, memory V1/V2, the inline part of CPU V4 / memory V3):
  the hash of ``dump.ForHash(&checkpoint)`` with ``Checksum`` set to 0, with the header type
  name replaced by the legacy name where the version requires it;
* **string checksum** (``dataChecksum``): the hash of ``dump.ForHash(data)``, i.e. of
  ``"(string)" + data``.
"""

from __future__ import annotations

from typing import Any

from app.domain.checkpoint.gospew import sdump_for_hash, sdump_string
from app.domain.checkpoint.gotypes import GoType

FNV32_OFFSET = 2166136261
FNV32_PRIME = 16777619


def fnv1a_32(data: bytes) -> int:
    """FNV-1a 32-bit hash of ``data``."""
    # Two bytes per iteration: masking only every second step is exact (the low 32 bits of
    # a product depend only on the low 32 bits of its factors) and halves the loop overhead.
    h = FNV32_OFFSET
    p = FNV32_PRIME
    m = len(data) & ~1
    for a, b in zip(data[0:m:2], data[1:m:2], strict=False):
        h = ((((h ^ a) * p) ^ b) * p) & 0xFFFFFFFF
    if m != len(data):
        h = ((h ^ data[m]) * p) & 0xFFFFFFFF
    return h


def text_checksum(text: str) -> int:
    """FNV-1a 32 of the UTF-8 bytes of ``text`` (what ``fmt.Fprintf(hash, "%v", s)`` feeds)."""
    return fnv1a_32(text.encode("utf-8"))


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

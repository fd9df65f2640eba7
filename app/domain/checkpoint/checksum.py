"""Checkpoint checksums (follows pkg/kubelet/checkpointmanager/checksum/checksum.go, v1.37).

Every checksum is FNV-1a 32-bit (offset basis 2166136261, prime 16777619) over UTF-8 bytes:

* **struct checksum** (CPU V1/V2/V3, memory V1/V2, the inline part of CPU V4 / memory V3):
  the hash of ``dump.ForHash(&checkpoint)`` with ``Checksum`` set to 0, with the header type
  name replaced by the legacy name where the version requires it;
* **string checksum** (``dataChecksum``): the hash of ``dump.ForHash(data)``, i.e. of
  ``"(string)" + data``.

The hash itself is ``fnv_c`` (C, MIT): about 25 times faster than Python on a 77 KB dump, so
a 250-pod file is hashed whole at every write (0.1 ms) instead of from cached per-pod parts.
"""

from __future__ import annotations

import functools
from typing import Any

import fnv_c

from app.domain.checkpoint.gojson_scan import FORGET
from app.domain.checkpoint.gospew import sdump_for_hash, sdump_string
from app.domain.checkpoint.gotypes import GoType


def fnv1a_32(data: bytes) -> int:
    """FNV-1a 32-bit hash of ``data`` (Go's ``hash/fnv.New32a``)."""
    return int(fnv_c.fnv1a_32(data))


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

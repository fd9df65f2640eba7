"""The C heap of a long-lived process: giving freed memory back to the system (glibc's
``malloc_trim``) and bounding its per-thread arenas (``mallopt(M_ARENA_MAX)``).

A fleet fit at 5,000 nodes moves some 10 MiB of rows through the hub (a worker's answer
unpickled, merged, joined into the response) in thousands of allocations of about 1 KiB each.
glibc keeps what is freed in its arenas for reuse, so the hub's RSS kept the high-water mark
of every fit (17 MiB of 52 after eight fits, measured with tracemalloc beside RSS).
``malloc_trim(0)`` returns the free pages of every arena.

glibc also gives each thread that allocates its own arena (up to eight per CPU), and each
keeps its own free memory: the hub's request threads, the demo fleet's builder and the
threads of ``asyncio.to_thread`` each held a share of the pages' and fits' garbage. The GIL
lets one thread allocate at a time anyway, so two arenas cost no waiting; at 5,000 demo nodes
the hub's RSS after the fleet's pages went 238 → 225 MiB (``bench/bench_fleet_fit.py``).

Elsewhere than glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

#: glibc's ``M_ARENA_MAX`` (malloc.h).
_M_ARENA_MAX = -8
#: Arenas a hub process keeps at most.
HUB_ARENAS = 2

_libc: Any = None
_looked = False


def _glibc() -> Any:
    """glibc, or ``None`` elsewhere (looked up once)."""
    global _libc, _looked
    if not _looked:
        _looked = True
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name) if name else None
            _libc = libc if libc is not None and hasattr(libc, "malloc_trim") else None
        except OSError:
            _libc = None
    return _libc


def release_free_heap() -> bool:
    """Give the free pages of the C heap back to the system (glibc only; a few ms; ctypes
    releases the GIL meanwhile); whether any were given back."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1


def limit_arenas(arenas: int = HUB_ARENAS) -> bool:
    """At most ``arenas`` malloc arenas from now on (glibc only: whether it took); call it
    before the process starts its threads."""
    libc = _glibc()
    return libc is not None and hasattr(libc, "mallopt") and libc.mallopt(_M_ARENA_MAX, arenas) == 1

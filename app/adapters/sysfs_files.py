"""Read sysfs attribute files the way cAdvisor's Go code parses them.

cAdvisor (``lib/utils/sysfs/sysfs.go`` and ``lib/utils/sysinfo/sysinfo.go``, google/cadvisor
lib/v0.60.5, the version Kubernetes 1.37 vendors) parses each file with one of a few Go
idioms, and what a file may contain depends on the idiom, so each has its own reader here:

* ``strconv.Atoi(strings.TrimSpace(s))`` for ``core_id``, ``physical_package_id`` and
  friends: an optional sign, then decimal digits only;
* ``fmt.Sscanf(s, "%d")`` for cache ``id``/``level`` and ``nr_hugepages``: leading blanks,
  a number, and anything after it ignored (``"3\\n\\0"`` reads as 3);
* ``strconv.ParseUint`` for distances, hugepage sizes and hex cache masks;
* the online-CPU list of ``cpu/online`` scanned range by range for one CPU at a time
  (``isCPUOnline``): a malformed range makes every CPU it reaches offline.

``strings.TrimSpace`` trims ASCII white space, never NUL bytes. Nothing is ever written.
"""

from __future__ import annotations

import functools
import os
import re

_GO_SPACE = b" \t\n\v\f\r"
_ATOI = re.compile(rb"[+-]?[0-9]+\Z")
_SSCANF_INT = re.compile(rb"[ \t]*([+-]?[0-9]+)")
_UINT = re.compile(r"[0-9]+\Z")
_HEX_UINT = re.compile(r"[0-9a-fA-F]+\Z")


class FileError(Exception):
    """A file is unreadable (other than missing) or does not parse; ``path`` names it."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def read(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist (``os.IsNotExist``)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise FileError(f"cannot read {path}: {err.strerror or err}", path) from err
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as err:
        raise FileError(f"cannot read {path}: {err.strerror or err}", path) from err
    finally:
        os.close(fd)


def trim(data: bytes) -> bytes:
    """``strings.TrimSpace`` on ASCII content."""
    return data.strip(_GO_SPACE)


def shown(data: bytes) -> str:
    return repr(data.decode("ascii", errors="replace"))


def atoi(data: bytes, path: str) -> int:
    """``strconv.Atoi(strings.TrimSpace(data))``."""
    text = trim(data)
    if _ATOI.match(text) is None:
        raise FileError(f"{path}: expected an integer, found {shown(text)}", path)
    return int(text)


def sscanf_int(data: bytes) -> int | None:
    """``fmt.Sscanf(data, "%d")``: the leading number, or None when there is none."""
    match = _SSCANF_INT.match(data)
    return None if match is None else int(match.group(1))


def sscanf_size_kb(data: bytes) -> int | None:
    """``fmt.Sscanf(data, "%dK")`` of a cache ``size`` file."""
    match = _SSCANF_INT.match(data)
    if match is None or data[match.end() : match.end() + 1] != b"K":
        return None
    return int(match.group(1))


def parse_uint(text: str) -> int | None:
    """``strconv.ParseUint(text, 10, 64)``."""
    if _UINT.match(text) is None:
        return None
    value = int(text)
    return value if value < 1 << 64 else None


@functools.lru_cache(maxsize=4096)
def count_mask_bits(data: bytes) -> int | None:
    """Bits set in a ``shared_cpu_map`` (comma separated 64-bit hex words), or None.

    Memoised: the threads of a cache share one map, so a 512-CPU tree repeats each text
    many times."""
    count = 0
    for word in data.decode("ascii", errors="replace").split(","):
        word = word.strip(" \t\n\v\f\r")
        if _HEX_UINT.match(word) is None or len(word.lstrip("0")) > 16:
            return None
        count += int(word, 16).bit_count()
    return count


class OnlineList:
    """``isCPUOnline`` over the content of ``devices/system/cpu/online``.

    Upstream scans the comma separated ranges left to right for each CPU and stops at the
    first range that holds it or that does not parse (then the CPU counts as offline).
    The ranges are parsed once here; ``None`` stands for a range that does not parse.
    """

    __slots__ = ("_ranges",)

    def __init__(self, data: bytes) -> None:
        self._ranges: list[tuple[int, int] | None] = []
        if not data:
            self._ranges.append(None)  # "found to be empty"
            return
        for part in trim(data).decode("ascii", errors="replace").split(","):
            bounds = part.split("-", 2)
            if len(bounds) == 3:
                self._ranges.append(None)
                continue
            low = _uint16(bounds[0])
            high = low if len(bounds) == 1 else _uint16(bounds[1])
            if low is None or high is None or low > high:
                self._ranges.append(None)
            else:
                self._ranges.append((low, high))

    def is_online(self, cpu_id: int) -> bool:
        cpu = cpu_id & 0xFFFF  # upstream compares uint16 ids
        for bounds in self._ranges:
            if bounds is None:
                return False
            if bounds[0] <= cpu <= bounds[1]:
                return True
        return False


def _uint16(text: str) -> int | None:
    value = parse_uint(text)
    return value if value is not None and value <= 0xFFFF else None

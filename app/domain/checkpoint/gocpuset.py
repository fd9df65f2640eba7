"""``cpuset.Parse`` with Go's error texts (follows k8s.io/utils/cpuset/cpuset.go).

The kubelet's messages embed the parser's error, e.g.
``could not parse default cpu set "1.3": strconv.Atoi: parsing "1.3": invalid syntax``, so the
reader models need Go's exact wording rather than ``CPUSet.parse``'s own. ``parse_cpuset``
tries the fast ``CPUSet.parse`` first and falls back to Go's parser (and texts) on any doubt.

Go accepts any CPU id that fits an ``int``; a range like ``0-99999999999`` would make the
kubelet allocate a map with that many entries. The project refuses ids above
``MAX_GO_CPU_ID`` with its own message instead of trying.
"""

from __future__ import annotations

import functools
import re

from app.domain.checkpoint.gojson_scan import FORGET
from app.domain.cpuset import CPUSet, CPUSetError
from app.domain.golang.strconv import go_quote

MAX_GO_CPU_ID = (1 << 20) - 1
_ATOI = re.compile(r"[+-]?[0-9]+\Z")
_INT64_MAX = (1 << 63) - 1


class GoCPUSetError(ValueError):
    """``cpuset.Parse`` failed; ``str(err)`` is Go's error text."""


def _atoi(text: str) -> int:
    if not _ATOI.match(text):
        raise GoCPUSetError(f"strconv.Atoi: parsing {go_quote(text)}: invalid syntax")
    if len(text.lstrip("+-").lstrip("0")) > 19:
        # Beyond int64 whatever the digits (and beyond int()'s 4,300-digit limit).
        raise GoCPUSetError(f"strconv.Atoi: parsing {go_quote(text)}: value out of range")
    sign, digits = (text[0], text[1:]) if text[0] in "+-" else ("", text)
    v = int(sign + (digits.lstrip("0") or "0"))
    if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
        raise GoCPUSetError(f"strconv.Atoi: parsing {go_quote(text)}: value out of range")
    return v


def parse_go_cpuset(text: str) -> CPUSet:
    """Parse a cpu-list as ``cpuset.Parse`` does; raises ``GoCPUSetError`` with Go's text."""
    if text == "":
        return CPUSet()
    mask = 0
    for item in text.split(","):
        lo, sep, hi = item.partition("-")
        if not sep:
            cpu = _atoi(lo)
            _check_id(cpu)
            mask |= 1 << cpu
            continue
        start = _atoi(lo)
        end = _atoi(hi)
        if start > end:
            raise GoCPUSetError(f"invalid range {go_quote(item)} ({start} > {end})")
        _check_id(start)
        _check_id(end)
        mask |= (1 << (end + 1)) - (1 << start)
    return CPUSet.from_mask(mask)


def _check_id(cpu: int) -> None:
    # Atoi accepts "+5"; a negative id cannot get here except through "+-" forms that Atoi
    # refuses, but guard anyway: a negative shift would be a Python error, not Go's.
    if cpu < 0:
        raise GoCPUSetError(f"CPU id {cpu} is negative")
    if cpu > MAX_GO_CPU_ID:
        raise GoCPUSetError(
            f"CPU id {cpu} is larger than {MAX_GO_CPU_ID} (refused by this tool; "
            "the kubelet would try to allocate every id in the range)"
        )


def parse_cpuset(text: str) -> CPUSet:
    """``cpuset.Parse``: the fast project parser, Go's parser (and texts) on any doubt.
    Remembered by text (a ``CPUSet`` is immutable; an error is raised again each time): one
    file's sets are parsed by each reader, the inspector and the start-up model, and a
    fleet's files repeat a few sets."""
    return _parse_kept(text)


def _parse(text: str) -> CPUSet:
    try:
        return CPUSet.parse(text)
    except CPUSetError:
        return parse_go_cpuset(text)


_parse_kept = functools.lru_cache(maxsize=8192)(_parse)
FORGET.append(_parse_kept.cache_clear)

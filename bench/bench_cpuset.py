"""CPUSet speed figures (issue "Foundation", item 8).

Target: parse + format of a 1,024-CPU cpuset written as 100 ranges, median <= 50 us.

Every figure is the median of many single calls timed with ``time.perf_counter``. Each
repetition parses a fresh copy of the text (so nothing is served from a str hash or a
previous result), and "format" timings use a set without a cached text. A reference
figure (``sum(range(1000))``) is printed so numbers from different machines can be compared.

Run: ``.venv/bin/python bench/bench_cpuset.py`` (exit status 0; figures only).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from _common import time_calls

from app.domain.cpuset import CPUSet

TARGET_US = 50.0
REPEAT = 3000


def median_us(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    return time_calls(fn, repeat, warmup=0).median_us


def fresh(text: str) -> str:
    """An equal string object without a cached hash."""
    return "".join(list(text))


def hundred_ranges() -> str:
    # 100 runs of 8 CPUs spread over 0..1023 (the last one ends at 1023).
    starts = [i * 1016 // 99 for i in range(100)]
    return ",".join(f"{s}-{s + 7}" for s in starts)


def main() -> int:
    text = hundred_ranges()
    s = CPUSet.parse(text)
    assert str(s) == text and s.max() == 1023 and len(text.split(",")) == 100
    shuffled = ",".join(reversed(text.split(",")))  # same set, not canonical
    singles = ",".join(str(i) for i in range(0, 1024, 2))  # 512 single ids
    other = CPUSet.parse("0-511")

    def uncached(cpus: CPUSet) -> CPUSet:
        return CPUSet.from_mask(cpus.mask)

    def feed(source: str) -> Callable[[], str]:
        """Fresh equal copies of ``source``, made before timing starts."""
        return iter([fresh(source) for _ in range(REPEAT)]).__next__

    many_singles = CPUSet.parse(singles)
    canonical, reversed_text, singles_text, parse_only = (
        feed(text),
        feed(shuffled),
        feed(singles),
        feed(text),
    )

    ref = median_us(lambda: sum(range(1000)), 2000)
    rows: list[tuple[str, float]] = [
        ("parse+format, 100 ranges, canonical", median_us(lambda: str(CPUSet.parse(canonical())))),
        (
            "parse+format, 100 ranges, reversed",
            median_us(lambda: str(CPUSet.parse(reversed_text()))),
        ),
        ("parse, 100 ranges", median_us(lambda: CPUSet.parse(parse_only()))),
        ("format, 100 ranges (no cached text)", median_us(lambda: str(uncached(s)))),
        ("parse+format, 512 single ids", median_us(lambda: str(CPUSet.parse(singles_text())))),
        ("format, 512 single ids (no cached text)", median_us(lambda: str(uncached(many_singles)))),
        ("union |", median_us(lambda: s | other)),
        ("intersection &", median_us(lambda: s & other)),
        ("difference -", median_us(lambda: s - other)),
        ("size()", median_us(s.size)),
        ("iterate 800 ids", median_us(lambda: list(s))),
        ("is_subset_of", median_us(lambda: s.is_subset_of(other))),
    ]
    print(f"CPUSet benchmark (python {sys.version.split()[0]}, median of {REPEAT} calls)")
    print(f"  {'reference: sum(range(1000))':44} {ref:9.2f} us")
    for name, us in rows:
        print(f"  {name:44} {us:9.2f} us")
    headline = rows[0][1]
    verdict = "meets" if headline <= TARGET_US else "MISSES"
    print(
        f"target: parse+format of 100 ranges <= {TARGET_US:.0f} us median: {verdict} ({headline:.2f} us)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Markup of the fleet table's busiest cell, built in Python: one ``<span class="nb">`` bar per
NUMA node (its CPU pools as custom properties, ``static/css/fleet.css`` draws them; the numbers
as its title, so colour is never the only signal). A 1,000-node fleet has thousands of these;
as a Jinja loop they were most of ``/fleet``'s server time (``bench/bench_fleet_pages.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from markupsafe import Markup, escape


def _share(part: int, whole: int) -> int:
    return part * 100 // (whole or 1)


def numa_bars(numa: Iterable[dict[str, Any]]) -> Markup:
    """The bars of one fleet row (``numa``: the checked summary rows of ``fleet_rows``)."""
    out = []
    for r in numa:
        total = r["total"] or 1
        memory = r["memory"][0] if r.get("memory") else None
        title = (
            f"NUMA {r['numaNode']}: {r['exclusive']} exclusive, {r['podShared']} pod shared, "
            f"{r['nodeShared']} node shared, {r['reserved']} reserved, {r['available']} available"
        )
        reserved = 0
        if memory is not None:
            reserved = _share(memory["reserved"], memory["allocatable"])
            title += f"; memory {reserved}% reserved"
        style = (
            f"--e:{r['exclusive'] * 100 // total};--p:{r['podShared'] * 100 // total};"
            f"--n:{r['nodeShared'] * 100 // total};--m:{reserved}"
        )
        out.append(f'<span class="nb" title="{escape(title)}" style="{style}"></span>')
    return Markup("".join(out))

"""A fleet fit as the hub holds and serves it (issue 20: a fit over 5,000 nodes within 1 s of
CPU, ``/healthz`` within 100 ms meanwhile).

Each node's fit row (``FitRow``, scored: ``app.services.fleet.score``) becomes one ``Entry``
where the row is made, in a fleet worker for the demo fleet and in the hub for an agent's node:
its rank (``score.fit_order``), what it counts as (the ``ADMITTED``, ``FLAGGED``, ``CHECKED``
and ``ERROR`` bits) and the row as the JSON bytes an answer carries. The hub merges the entries
by rank, counts by the bits and answers by joining bytes (``RankedFit``): no row is validated,
decoded or encoded again on its event loop, and only the rows of a page it renders are decoded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

from app.services.encoded_json import json_bytes
from app.services.fleet.score import RankKey, fit_order

ADMITTED, FLAGGED, CHECKED, ERROR = 1, 2, 4, 8
#: A fit row's rank, the bits of what it counts as, and its JSON.
Entry = tuple[RankKey, int, bytes]
_rank, _kind = itemgetter(0), itemgetter(1)


def kind(row: Mapping[str, Any]) -> int:
    """What a fit row counts as, as bits."""
    return (
        (ADMITTED if row["admitted"] else 0)
        | (FLAGGED if row.get("flags") else 0)
        | (CHECKED if row.get("checked", True) else 0)
        | (ERROR if row.get("error") else 0)
    )


def entry(row: Mapping[str, Any]) -> Entry:
    """A scored fit row as an entry."""
    return (fit_order(row), kind(row), json_bytes(row))


def ranked(entries: list[Entry]) -> list[Entry]:
    """``entries`` best first (in place)."""
    entries.sort(key=_rank)
    return entries


def merged(parts: Iterable[Sequence[Entry]]) -> list[Entry]:
    """The entries of every part best first (each part already is: the sort merges runs)."""
    return ranked(list(chain.from_iterable(parts)))


def spliced(head: dict[str, Any], rows: Iterable[bytes], tail: dict[str, Any]) -> bytes:
    """The JSON of ``{**head, "results": rows, **tail}`` (``head`` and ``tail`` not empty) as
    ``JSONResponse`` writes it, with the rows' bytes joined as they are."""
    return b"".join(
        (json_bytes(head)[:-1], b',"results":[', b",".join(rows), b"],", json_bytes(tail)[1:])
    )


@dataclass(frozen=True, slots=True)
class RankedFit:
    """Every node's fit, best first (``POST /api/v1/fleet/fit``'s ``FitAnswer``)."""

    strategy: str
    entries: Sequence[Entry]
    unreachable: list[dict[str, Any]]

    def body(self) -> bytes:
        """The ``FitAnswer`` as JSON."""
        rows = (e[2] for e in self.entries)
        return spliced({"strategy": self.strategy}, rows, {"unreachable": self.unreachable})

    def counts(self) -> dict[str, int]:
        """Nodes by what their rows count as (``fit_view``'s counters)."""
        by_kind = Counter(map(_kind, self.entries))

        def total(test: Any) -> int:
            return sum(n for k, n in by_kind.items() if test(k))

        return {
            "total": len(self.entries),
            "fits": total(lambda k: k & ADMITTED),
            "clean": total(lambda k: k & ADMITTED and not k & FLAGGED),
            "refused": total(lambda k: not k & (ADMITTED | ERROR) and k & CHECKED),
            "errors": total(lambda k: k & ERROR and k & CHECKED),
            "notChecked": total(lambda k: not k & CHECKED),
        }

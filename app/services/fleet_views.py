"""The fleet pages' views, each the one loader of a page, its htmx fragment and its JSON twin:

* ``fleet_view``: the hub's nodes filtered (name, release, findings, a free single-NUMA block of
  at least N CPUs), sorted (name, release, largest free single-NUMA block, findings) and paged
  (``/fleet``, ``/fleet.json``);
* ``fit_view``: a fleet fit, ranked best first (``app.services.fleet_score``), counted, filtered
  (every node, the fits, the fits without flags) and paged (``/fleet/fit``, ``/fleet/fit.json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.services.fleet_score import STRATEGIES

SORTS = ("name", "release", "free", "findings")
FINDINGS = ("any", "with", "without")
DEFAULT_LIMIT = 500
MAX_LIMIT = 1000


class FleetQueryError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True, slots=True)
class FleetQuery:
    q: str = ""
    release: str = ""
    findings: str = "any"
    min_free: int = 0
    sort: str = "name"
    offset: int = 0
    limit: int = DEFAULT_LIMIT

    def check(self) -> FleetQuery:
        if self.sort not in SORTS:
            raise FleetQueryError(
                f"sort: Unsupported value: {self.sort!r}: use {', '.join(SORTS)}", "sort"
            )
        if self.findings not in FINDINGS:
            raise FleetQueryError(
                f"findings: Unsupported value: {self.findings!r}: use {', '.join(FINDINGS)}",
                "findings",
            )
        if self.min_free < 0 or self.offset < 0 or not 1 <= self.limit <= MAX_LIMIT:
            raise FleetQueryError("minFree/offset/limit: out of range", "limit")
        return self

    def params(self, **change: Any) -> dict[str, Any]:
        values = {
            "q": self.q,
            "release": self.release,
            "findings": self.findings,
            "minFree": self.min_free,
            "sort": self.sort,
            "offset": self.offset,
            "limit": self.limit,
        }
        values.update(change)
        return {k: v for k, v in values.items() if v not in ("", None)}


def _key(sort: str) -> Any:
    if sort == "release":
        return lambda n: (_release_key(n.get("release")), n["node"])
    if sort == "free":
        return lambda n: (-int(n.get("largestFreeNuma") or 0), n["node"])
    if sort == "findings":
        return lambda n: (-len(n.get("findings") or []), n["node"])
    return lambda n: (n["node"], n.get("agent") or "")


def _release_key(release: Any) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in str(release).split("."))
    except ValueError:
        return (0,)


def fleet_view(doc: dict[str, Any], query: FleetQuery) -> dict[str, Any]:
    q = query.q.strip().lower()
    nodes = [
        n
        for n in doc["nodes"]
        if (not q or q in n["node"].lower())
        and (not query.release or n.get("release") == query.release)
        and (query.findings == "any" or (query.findings == "with") == bool(n.get("findings")))
        and int(n.get("largestFreeNuma") or 0) >= query.min_free
    ]
    nodes.sort(key=_key(query.sort))
    page = nodes[query.offset : query.offset + query.limit]
    releases = sorted(
        {str(n.get("release")) for n in doc["nodes"] if n.get("release")}, key=_release_key
    )
    status: dict[str, int] = {}
    for a in doc["agents"]:
        status[a["status"]] = status.get(a["status"], 0) + 1
    return {
        "agents": doc["agents"],
        "agentStatus": status,
        "discovery": doc.get("discovery"),
        "total": len(doc["nodes"]),
        "matched": len(nodes),
        "offset": query.offset,
        "limit": query.limit,
        "nodes": page,
        "releases": releases,
        # The filter without the offset: the pager links add their own.
        "query": query.params(offset=None),
    }


# -- fit --------------------------------------------------------------------------------------

FIT_SHOWS = ("fits", "clean", "all")
FIT_LIMIT = 100


@dataclass(frozen=True, slots=True)
class FitQuery:
    """What a fit page shows: ``strategy`` (the scheduler plugin's scoring strategy), ``show``
    (``fits``; ``clean``: fits on exclusive CPUs of one NUMA node; ``all``: every node)."""

    strategy: str
    show: str = "fits"
    offset: int = 0
    limit: int = FIT_LIMIT

    def check(self) -> FitQuery:
        if self.strategy not in STRATEGIES:
            raise FleetQueryError(
                f"strategy: Unsupported value: {self.strategy!r}: supported values: "
                + ", ".join(f'"{s}"' for s in STRATEGIES),
                "strategy",
            )
        if self.show not in FIT_SHOWS:
            raise FleetQueryError(
                f"show: Unsupported value: {self.show!r}: use {', '.join(FIT_SHOWS)}", "show"
            )
        if self.offset < 0 or not 1 <= self.limit <= MAX_LIMIT:
            raise FleetQueryError("offset/limit: out of range", "limit")
        return self


def fit_view(result: dict[str, Any], query: FitQuery) -> dict[str, Any]:
    """The ranked fit counted (fits, clean fits, refusals, errors, not checked) and paged."""
    rows = result["results"]
    fits = [r for r in rows if r["admitted"]]
    clean = [r for r in fits if not r.get("flags")]
    shown = {"fits": fits, "clean": clean, "all": rows}[query.show]
    return {
        "strategy": query.strategy,
        "show": query.show,
        "total": len(rows),
        "fits": len(fits),
        "clean": len(clean),
        "refused": sum(
            1 for r in rows if not r["admitted"] and r.get("checked", True) and not r.get("error")
        ),
        "errors": sum(1 for r in rows if r.get("error") and r.get("checked", True)),
        "notChecked": sum(1 for r in rows if not r.get("checked", True)),
        "matched": len(shown),
        "offset": query.offset,
        "limit": query.limit,
        "results": shown[query.offset : query.offset + query.limit],
        "unreachable": result["unreachable"],
    }

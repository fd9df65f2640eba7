"""The fleet page's view: the hub's nodes filtered (name, release, findings, a free single-NUMA
block of at least N CPUs), sorted (name, release, largest free single-NUMA block, findings) and
paged; the same loader feeds ``/fleet``, its htmx fragment and ``/fleet.json``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

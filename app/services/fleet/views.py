"""The fleet pages' views, each the one loader of a page, its htmx fragment and its JSON twin:

* ``fleet_view``: the hub's nodes filtered (name, release, findings, a free single-NUMA block of
  at least N CPUs), sorted (name, release, largest free single-NUMA block, findings) and paged
  (``/fleet``, ``/fleet.json``);
* ``fit_view``: a fleet fit, ranked best first (``app.services.fleet.score``), counted, filtered
  (every node, the fits, the fits without flags) and paged (``/fleet/fit``); ``fit_view_json``
  is its JSON twin (``/fleet/fit.json``) made of the rows' bytes (``app.services.fleet.ranked``).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

from app.domain.restart import with_node_names
from app.services.fleet.ranked import ADMITTED, FLAGGED, Entry, RankedFit, spliced
from app.services.fleet.score import STRATEGIES

SORTS = ("name", "release", "free", "findings")
FINDINGS = ("any", "with", "without")
DEFAULT_LIMIT = 500
MAX_LIMIT = 1000


class FleetQueryError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _one_of(field: str, value: str, allowed: tuple[str, ...]) -> None:
    """Refuse a query value that is not one of ``allowed``, naming the field."""
    if value not in allowed:
        raise FleetQueryError(
            f"{field}: Unsupported value: {value!r}: use {', '.join(allowed)}", field
        )


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
        _one_of("sort", self.sort, SORTS)
        _one_of("findings", self.findings, FINDINGS)
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

FIT_SHOWS = ("all", "fits", "clean")
FIT_LIMIT = 100


@dataclass(frozen=True, slots=True)
class FitQuery:
    """What a fit page shows: ``strategy`` (the scheduler plugin's scoring strategy), ``show``
    (``all``: every node, best fits first; ``fits``; ``clean``: fits on exclusive CPUs of one
    NUMA node)."""

    strategy: str
    show: str = "all"
    offset: int = 0
    limit: int = FIT_LIMIT

    def check(self) -> FitQuery:
        if self.strategy not in STRATEGIES:
            raise FleetQueryError(
                f"strategy: Unsupported value: {self.strategy!r}: supported values: "
                + ", ".join(f'"{s}"' for s in STRATEGIES),
                "strategy",
            )
        _one_of("show", self.show, FIT_SHOWS)
        if self.offset < 0 or not 1 <= self.limit <= MAX_LIMIT:
            raise FleetQueryError("offset/limit: out of range", "limit")
        return self


def _fit_page(result: RankedFit, query: FitQuery) -> tuple[dict[str, Any], list[Entry]]:
    """The fit page's counters and the entries of its page."""
    entries = result.entries
    if query.show != "all":
        mask = ADMITTED | FLAGGED if query.show == "clean" else ADMITTED
        entries = [e for e in entries if (e[1] & mask) == ADMITTED]
    head = {
        "strategy": query.strategy,
        "show": query.show,
        **result.counts(),
        "matched": len(entries),
        "offset": query.offset,
        "limit": query.limit,
    }
    return head, list(entries[query.offset : query.offset + query.limit])


def fit_view(result: RankedFit, query: FitQuery) -> dict[str, Any]:
    """The ranked fit counted (fits, clean fits, refusals, errors, not checked) and paged."""
    head, page = _fit_page(result, query)
    rows = [json.loads(e[2]) for e in page]
    return {**head, "results": rows, "unreachable": result.unreachable}


def fit_view_json(result: RankedFit, query: FitQuery) -> bytes:
    """``fit_view`` as JSON, the page's rows as the workers encoded them."""
    head, page = _fit_page(result, query)
    return spliced(head, (e[2] for e in page), {"unreachable": result.unreachable})


# -- upgrade: the drain plan -------------------------------------------------------------------

STARTS = ("compatible", "compatible-with-loss")
#: Longest value of a label (``kubernetes.io/hostname`` holds the node's name).
MAX_LABEL_VALUE = 63


def _failing_files(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The files of a node's answer that keep its kubelet from starting (not ``missing``)."""
    return [f for f in row.get("files") or [] if f.get("status") not in (*STARTS, "missing")]


def _cause(row: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a node fail, the same for every node it makes fail: the verdict and each
    failing file's name, version, status and the kubelet's error."""
    files = tuple(
        (f["name"], f.get("version"), f.get("status"), (f.get("verdict") or {}).get("error"))
        for f in _failing_files(row)
    )
    return (row["verdict"], files or row.get("error"))


def _alternatives(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ways out for one failing node: per failing file, the conversions that make the
    kubelet start, as alternatives (one of them per file), with how much each loses."""
    out = []
    for f in files:
        options = [
            {
                "toVersion": r.get("toVersion"),
                "verdict": r.get("verdict"),
                "lost": len(r.get("lost") or []),
                "command": r["command"],
            }
            for r in f.get("rescues") or []
            if r.get("verdict") in STARTS and r.get("command")
        ]
        if options:
            out.append({"file": f["name"], "options": options})
    return out


def _drain_line(nodes: list[str]) -> str:
    return "kubectl drain --ignore-daemonsets --delete-emptydir-data " + " ".join(nodes)


def _selector(nodes: list[str]) -> str | None:
    """A label selector of the nodes (``kubernetes.io/hostname``, the node's name on most
    clusters); none when a name is longer than a label value may be."""
    if not nodes or any(len(n) > MAX_LABEL_VALUE for n in nodes):
        return None
    return f"kubernetes.io/hostname in ({','.join(nodes)})"


def _new_cause(row: dict[str, Any]) -> dict[str, Any]:
    """A cause as its first failing node shows it (its nodes are added as they come)."""
    files = _failing_files(row)
    return {
        "verdict": row["verdict"],
        "error": row.get("error"),
        "files": [
            {"name": f["name"], "version": f.get("version"), "status": f.get("status")}
            for f in files
        ],
        "alternatives": _alternatives(files),
        "advice": sorted({a for f in files for a in f.get("advice") or []}),
        "nodes": [],
    }


def _causes(failing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failing nodes grouped by cause, the largest group first, each numbered with its
    ``kubectl drain`` line, its label selector and its advice naming its nodes."""
    causes: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in failing:
        key = _cause(row)
        cause = causes.get(key)
        if cause is None:
            cause = causes[key] = _new_cause(row)
        cause["nodes"].append({"node": row["node"], "agent": row.get("agent")})
    plan = sorted(causes.values(), key=lambda c: (-len(c["nodes"]), c["verdict"]))
    for i, cause in enumerate(plan, 1):
        names = sorted({n["node"] for n in cause["nodes"]})
        cause["id"] = f"cause-{i}"
        cause["kubectl"] = _drain_line(names)
        cause["advice"] = [with_node_names(a, names) for a in cause["advice"]]
        cause["selector"] = _selector(names)
    return plan


def upgrade_view(result: dict[str, Any]) -> dict[str, Any]:
    """The fleet's upgrade readiness as a drain plan: the failing nodes grouped by cause (one
    recovery per cause, its alternatives as alternatives, a ``kubectl drain`` line and a label
    selector per cause and for all), the nodes that start collapsed to a count and a list, the
    nodes not checked yet (never counted as failing) and those whose agent gave no verdict."""
    rows = result["results"]
    starts = [r for r in rows if r.get("verdict") in STARTS]
    not_checked = [r for r in rows if not r.get("checked", True)]
    no_verdict = [r for r in rows if r.get("checked", True) and r.get("verdict") is None]
    failing = [r for r in rows if r.get("verdict") is not None and r["verdict"] not in STARTS]
    drain = sorted({r["node"] for r in failing})
    return {
        "release": result["release"],
        "total": len(rows),
        "drain": {
            "count": len(failing),
            "nodes": drain,
            "kubectl": _drain_line(drain) if drain else None,
            "selector": _selector(drain),
            "causes": _causes(failing),
        },
        "starts": {
            "count": len(starts),
            "withLoss": sum(1 for r in starts if r["verdict"] == "compatible-with-loss"),
            "nodes": sorted({r["node"] for r in starts}),
        },
        "notChecked": [
            {"node": r["node"], "agent": r.get("agent"), "why": r.get("error")} for r in not_checked
        ],
        "noVerdict": [
            {"node": r["node"], "agent": r.get("agent"), "error": r.get("error")}
            for r in no_verdict
        ],
        "unreachable": result["unreachable"],
        # How far the check got ("3,120 of 5,000 checked"; ``complete`` once every node answered).
        "progress": result.get("progress")
        or {"checked": len(rows), "total": len(rows), "complete": True},
        "results": rows,
    }


def drain_csv(view: dict[str, Any]) -> str:
    """The nodes to drain as CSV (node, agent, verdict, cause, kubelet error)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["node", "agent", "verdict", "cause", "error"])
    for cause in view["drain"]["causes"]:
        for n in cause["nodes"]:
            cells = [n["node"], n["agent"] or "", cause["verdict"], cause["id"], cause["error"]]
            writer.writerow([_cell(c or "") for c in cells])
    return out.getvalue()


def _cell(text: str) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula (an agent's error text)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text

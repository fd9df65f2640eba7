"""Find on a node's pods table (issue 11 "Find") and its paging (issue 10 pt 2).

The node page lists its pods a page at a time (``PAGE_SIZE`` rows; 250 pods of four
containers are 600 KB of table), the whole list one click away (``show_all``). The search box
filters on the server, so it works with paging and without JavaScript; the page, its htmx
fragment and its JSON twin (``/nodes/{node}/pods[.json]?q=…``) all come from ``pods_page``.

A query is words separated by spaces; a pod is listed when it matches every word:

=====================  ==========================================================
``web``                ``namespace/name`` contains it (any case)
``burstable``          a QoS class (``guaranteed``, ``burstable``, ``besteffort``)
``12``                 a CPU id: pods with a container that runs on CPU 12
``name:web-1``         the pod name contains it
``ns:telco``           the namespace contains it (``namespace:`` too)
``qos:g``              the QoS class starts with it
``numa:1`` ``numa:0,2``  the pod is on one of these NUMA nodes
``cpu:4-7,12``         a container runs on one of these CPUs (the cpuset syntax)
=====================  ==========================================================

A CPU finds the pod that *holds* it: an exclusive slice of one of its containers, or its
pod shared pool (``pod_held_cpus``). A CPU of the node shared pool (or a reserved one) belongs
to no pod, so it finds none, and the page says so (``note``) instead of naming every pod that
happens to run there (issue 21 point 7; before, the Burstable pods "owned" it). The rows keep
``data-cpus`` = what their containers run on (the table's "runs on"), and the page carries
``lit``: the CPUs the matched pods hold, which static/js/cpu-map.js lights on the CPU map.
A malformed word raises ``PodQueryError`` naming the field ``q``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.domain.cpuset import CPUSet, CPUSetError
from app.services.node_views.models import NodeSummary, PodRow, _View

PAGE_SIZE = 25
MAX_QUERY_CHARS = 200
QOS_CLASSES = ("guaranteed", "burstable", "besteffort")
FIELDS = ("name", "ns", "namespace", "qos", "numa", "cpu")


class PodQueryError(ValueError):
    """A query that cannot be read; ``field`` is the request parameter (``q``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = "q"


@dataclass(frozen=True, slots=True)
class _Word:
    field: str  # "" for a bare word
    text: str
    cpus: CPUSet | None = None
    numa: frozenset[int] = frozenset()


def parse_query(query: str) -> tuple[_Word, ...]:
    """The words of ``query`` (see the module docstring); raises ``PodQueryError``."""
    if len(query) > MAX_QUERY_CHARS:
        raise PodQueryError(f"q: is longer than {MAX_QUERY_CHARS} characters")
    words = []
    for raw in query.split():
        field, sep, text = raw.partition(":")
        if not sep:
            field, text = "", raw
        field = field.lower()
        if sep and field not in FIELDS:
            raise PodQueryError(
                f"q: unknown field {field!r} in {raw!r} (use name:, ns:, qos:, numa: or cpu:)"
            )
        if sep and not text:
            raise PodQueryError(f"q: {raw!r} needs a value after the colon")
        if field == "cpu" or (not field and text.isdigit()):
            try:
                cpus = CPUSet.parse(text)
            except CPUSetError as err:
                raise PodQueryError(f"q: {raw!r} is not a CPU list: {err}") from None
            words.append(_Word("cpu", text, cpus=cpus))
        elif field == "numa":
            try:
                numa = frozenset(CPUSet.parse(text))
            except CPUSetError:
                raise PodQueryError(f"q: {raw!r} is not a list of NUMA node ids") from None
            words.append(_Word("numa", text, numa=numa))
        else:
            words.append(_Word("ns" if field == "namespace" else field, text.lower()))
    return tuple(words)


def pod_cpus(row: PodRow) -> CPUSet:
    """The CPUs the pod's containers run on (what the row shows per container)."""
    mask = 0
    for c in row.containers:
        mask |= CPUSet.parse(c.runs_on.cpus).mask
    return CPUSet.from_mask(mask)


def pod_held_cpus(row: PodRow) -> CPUSet:
    """The CPUs the pod holds: its containers' exclusive slices and its pod shared pool (not
    the node shared pool its other containers run in)."""
    mask = 0
    for c in row.containers:
        if c.isolation in ("container", "pod"):
            mask |= CPUSet.parse(c.runs_on.cpus).mask
    return CPUSet.from_mask(mask)


def _matches(row: PodRow, word: _Word) -> bool:
    if word.field == "cpu":
        assert word.cpus is not None
        return bool(pod_held_cpus(row) & word.cpus)
    if word.field == "numa":
        return not word.numa.isdisjoint(row.numa_nodes)
    if word.field == "name":
        return word.text in row.name.lower()
    if word.field == "ns":
        return word.text in row.namespace.lower()
    qos = row.qos_class.lower()
    if word.field == "qos":
        return qos.startswith(word.text)
    return word.text in row.key.lower() or (word.text in QOS_CLASSES and word.text == qos)


class PodListRow(_View):
    """A row of the pods table with the CPUs it runs on (``data-cpus``, for highlighting)."""

    pod: PodRow
    cpus: str


class PodsPage(_View):
    """``/nodes/{node}/pods``: one page of the node's pods that match ``query``."""

    summary: NodeSummary
    query: str  # the query applied (empty when ``error`` refused what was typed)
    typed: str = ""  # what the search box shows: the query, or the one refused
    error: str | None = None
    total: int
    matched: int
    page: int
    pages: int
    page_size: int
    show_all: bool
    first: int  # 1-based position of the first row shown (0 when none)
    rows: list[PodListRow]
    lit: str = ""  # the CPUs the matched pods hold (a query only): lit on the CPU map
    note: str = ""  # asked-for CPUs no pod holds: where they are instead


def pods_page(
    rows: list[PodRow],
    summary: NodeSummary,
    *,
    query: str = "",
    page: int = 1,
    show_all: bool = False,
    page_size: int = PAGE_SIZE,
) -> PodsPage:
    """The page ``page`` (from 1; past the end gives the last) of ``rows`` matching ``query``,
    or all of them with ``show_all``. Raises ``PodQueryError`` for a malformed query."""
    words = parse_query(query)
    found = [row for row in rows if all(_matches(row, w) for w in words)]
    lit = CPUSet.from_mask(_union(pod_held_cpus(r) for r in found)) if words else CPUSet()
    note = _unheld_note(rows, words)
    pages = max(1, -(-len(found) // page_size))
    page = min(max(1, page), pages)
    start = 0 if show_all else (page - 1) * page_size
    shown = found if show_all else found[start : start + page_size]
    return PodsPage(
        summary=summary,
        query=query.strip(),
        typed=query.strip(),
        total=len(rows),
        matched=len(found),
        page=1 if show_all else page,
        pages=pages,
        page_size=page_size,
        show_all=show_all,
        first=start + 1 if shown else 0,
        rows=[PodListRow(pod=row, cpus=str(pod_cpus(row))) for row in shown],
        lit=str(lit),
        note=note,
    )


def _union(sets: Iterable[CPUSet]) -> int:
    mask = 0
    for s in sets:
        mask |= s.mask
    return mask


def _unheld_note(rows: list[PodRow], words: tuple[_Word, ...]) -> str:
    asked = _union(w.cpus for w in words if w.cpus is not None)
    if not asked:
        return ""
    free = CPUSet.from_mask(asked & ~_union(pod_held_cpus(r) for r in rows))
    if not free:
        return ""
    many = free.size() > 1
    return (
        f"CPU{'s' if many else ''} {free} belong{'' if many else 's'} to no pod: "
        f"{'they are' if many else 'it is'} in the node shared pool or reserved, where every "
        "container without exclusive CPUs or a pod budget runs."
    )

"""The agent contract: a compact summary of each node an agent (any ``numascope serve``) holds,
what a hub polls (``GET /api/v1/summary``, ``GET /api/v1/nodes/{node}/summary``), built as the
contract's models (``app.contracts.summary``: ``NodeSummaryV1``, ``SummaryDocumentV1``) which the
hub parses the answers with.

A summary is built from the same ``NodeViews`` as the node's page and JSON, so its numbers are
the node's numbers: per NUMA node the CPUs ``total`` / ``reserved`` / ``nodeShared`` /
``podShared`` / ``exclusive`` and ``available`` (the node JSON's ``numaPools[].available``:
allocatable minus pod budgets and exclusive slices), regular memory and each hugepage size
(``allocatable`` / ``reserved`` / ``free``), pods, rejections, findings, the release, its feature
gates and the state-file versions. Texts longer than the contract allows (an error message of a
broken observation) are cut to fit, so the agent never writes a summary the hub refuses.

``SummaryCache`` keeps the encoded bytes of each node's summary and a strong ETag (SHA-256 of
the bytes), and gives each node a ``version`` that grows by one whenever its summary changes,
so an unchanged node costs the hub a 304. The views of a simulated node are cached by the
node service until it changes; an observed node is re-observed after its TTL.

``SummaryFeed`` turns the summaries into a stream of changes (``GET /api/v1/summary/watch``,
the events of ``app.contracts.summary.SummaryWatchEventV1``), with the semantics of a
Kubernetes watch: a ``resourceVersion`` ``<epoch>-<n>`` (the epoch is new in every process, so
a version from before a restart, or from another worker, is unknown), the changes after a
version still held in its history (``HISTORY`` events), ``410 Expired`` for one that is not
(the client lists again), every node as ``ADDED`` then an ``initialEventsEnd`` bookmark for an
empty version, and a ``BOOKMARK`` after each quiet ``bookmark`` seconds. What drives it is the
nodes' own change tokens (``app.services.watch``: a simulated node's record version, the
observed node's view digest, recomputed once per observation): one task per process, running
only while someone watches, reads them every ``tick`` seconds in a thread and rebuilds only the
summary of a node whose token moved; every watcher then wakes on one condition. Watchers cost
nothing between changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from app.contracts.base import MAX_TEXT
from app.contracts.summary import (
    MAX_FINDINGS,
    SUMMARY_FORMAT,
    AgentInfo,
    Finding,
    MemoryRow,
    NodeSummaryV1,
    NumaRow,
    Policies,
    StateFiles,
    SummaryDocumentV1,
    SummaryWatchEventV1,
    TopologyBrief,
    WatchStatus,
)
from app.domain.node.state_files import state_file_versions
from app.services.node_views import NodeSummary, NodeViews

log = logging.getLogger(__name__)


def numa_rows(views: NodeViews) -> list[NumaRow]:
    """Per NUMA node: CPU pools and memory, the numbers of the node's own JSON."""
    memory = views.memory
    rows = []
    for row in views.numa_pools:
        mem = memory.get(row.numa_node)
        rows.append(
            NumaRow(
                numa_node=row.numa_node,
                **row.counts.model_dump(),  # the CPUs by pool, under the same names
                available=row.available,
                memory=[
                    MemoryRow(
                        resource=r.resource,
                        allocatable=r.allocatable,
                        reserved=r.reserved,
                        free=r.free,
                    )
                    for r in (mem.resources if mem is not None else [])
                ],
            )
        )
    return rows


def _text(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _finding(code: str, severity: str, message: str) -> Finding:
    return Finding.model_validate(
        {"code": code[:128], "severity": severity, "message": _text(message)}
    )


def _findings(views: NodeViews | None, summary: NodeSummary) -> list[Finding]:
    out: list[Finding] = []
    if summary.load_error:
        out.append(_finding("load-error", "error", summary.load_error))
    obs = views.observation if views is not None else None
    if obs is not None:
        for e in obs.errors:
            if not summary.load_error or e["message"] not in summary.load_error:
                out.append(_finding(f"{e['source']}-error", "error", e["message"]))
        for s in obs.stale:
            message = f"{s.get('file')}: entry of pod {s.get('uid')} that the node no longer has"
            out.append(_finding("stale-entry", "warning", message))
        for f in obs.files:
            bad = [c for c in f.get("checksums", []) if c.get("status") == "invalid"]
            if bad:
                out.append(
                    _finding(
                        "checksum-invalid", "error", f"{f.get('file')}: checksum does not verify"
                    )
                )
    return out[:MAX_FINDINGS]


def _state_files(views: NodeViews) -> StateFiles:
    obs = views.observation
    if obs is not None:
        versions: dict[str, str | None] = {"cpu": None, "memory": None}
        for f in obs.files:
            manager = f.get("manager")
            if manager in versions and f.get("present"):
                versions[manager] = f.get("version")
        return StateFiles.model_validate(versions)
    v = state_file_versions(views.snapshot.config)
    return StateFiles(cpu=v.cpu, memory=v.memory)


def build_summary(summary: NodeSummary, views: NodeViews | None) -> NodeSummaryV1:
    """The summary of one node (``views`` is ``None`` for an observed node that cannot be
    observed: its summary then says so and has no NUMA rows)."""
    config = views.snapshot.config if views is not None else None
    topology = summary.topology
    return NodeSummaryV1(
        node=summary.name,
        source=summary.source,
        simulated=summary.simulated,
        release=summary.release,
        feature_gates=dict(sorted(config.gates().items())) if config is not None else {},
        policies=Policies.model_validate(summary.policies.model_dump(by_alias=True)),
        topology=TopologyBrief(
            name=topology.name,
            sockets=topology.sockets,
            numa_nodes=topology.numa_nodes,
            cpus=topology.cpus,
            memory_bytes=topology.memory_bytes,
        ),
        numa=numa_rows(views) if views is not None else [],
        pods=summary.pods,
        rejected=summary.rejected,
        findings=_findings(views, summary),
        state_files=_state_files(views) if views is not None else StateFiles(),
        load_error=_text(summary.load_error) if summary.load_error else None,
        url=summary.url,
    )


@dataclass(frozen=True, slots=True)
class Encoded:
    """A JSON document as bytes with its strong ETag."""

    body: bytes
    etag: str


def encode(doc: Any) -> Encoded:
    """``doc`` (plain JSON values or a contract model) as compact JSON with sorted keys."""
    if isinstance(doc, BaseModel):
        doc = doc.model_dump(mode="json", by_alias=True)
    return encoded_bytes(encode_json(doc))


def encode_json(doc: Any) -> bytes:
    """Plain JSON values as ``encode`` writes them (compact, sorted keys), without the ETag:
    parts of a document encoded once and joined (the hub's fleet rows)."""
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, allow_nan=False).encode()


def encoded_bytes(body: bytes) -> Encoded:
    """``body`` with its strong ETag (SHA-256 of the bytes)."""
    return Encoded(body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 §13.1.2 (weak comparison, as If-None-Match uses): ``*`` or any listed tag."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


class SummaryCache:
    """Per node: the last summary's digest and its version (1, 2, … as it changes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, tuple[str, int, NodeSummaryV1]] = {}

    def versioned(self, summary: NodeSummaryV1) -> NodeSummaryV1:
        """``summary`` with its ``version`` (bumped when the content differs from last time)."""
        digest = encode(summary).etag
        name = summary.node
        with self._lock:
            seen = self._nodes.get(name)
            if seen is not None and seen[0] == digest:
                return seen[2]
            version = 1 if seen is None else seen[1] + 1
            out = summary.model_copy(update={"version": version})
            self._nodes[name] = (digest, version, out)
            return out

    def document(
        self, names: Sequence[str], build: Callable[[str], NodeSummaryV1], agent: AgentInfo
    ) -> SummaryDocumentV1:
        nodes = [self.versioned(build(n)) for n in names]
        with self._lock:
            for gone in set(self._nodes) - set(names):
                del self._nodes[gone]
        return SummaryDocumentV1(format=SUMMARY_FORMAT, agent=agent, nodes=nodes)


ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]
#: Change events a feed keeps for watchers resuming from an older version.
HISTORY = 4096
#: Seconds between two reads of the nodes' change tokens while someone watches.
TICK = 0.25


def _line(event: SummaryWatchEventV1) -> bytes:
    return event.model_dump_json(by_alias=True, exclude_defaults=True).encode() + b"\n"


class SummaryFeed:
    """The summaries of one process as a watch stream (see the module docstring).

    ``refresh`` (blocking, run in a thread) answers every node's current summary, versioned by
    a ``SummaryCache``; it is called once per ``tick`` while at least one stream is open."""

    def __init__(
        self,
        refresh: Callable[[], list[NodeSummaryV1]],
        *,
        tick: float = TICK,
        history: int = HISTORY,
    ) -> None:
        self.refresh = refresh
        self.tick = tick
        self.epoch = secrets.token_hex(6)
        self.counter = 0
        self.nodes: dict[str, NodeSummaryV1] = {}
        self.log: deque[tuple[int, ChangeType, NodeSummaryV1]] = deque(maxlen=history)
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._fresh = asyncio.Event()  # set once the running task has read the nodes
        self._watchers = 0

    def rv(self, n: int | None = None) -> str:
        return f"{self.epoch}-{self.counter if n is None else n}"

    def apply(self, summaries: list[NodeSummaryV1]) -> bool:
        """Record what differs from the last state as events; ``True`` when anything did."""
        before = self.counter
        seen = set()
        for summary in summaries:
            seen.add(summary.node)
            old = self.nodes.get(summary.node)
            if old is summary or old == summary:
                continue
            self.counter += 1
            self.nodes[summary.node] = summary
            kind: ChangeType = "ADDED" if old is None else "MODIFIED"
            self.log.append((self.counter, kind, summary))
        for name in [n for n in self.nodes if n not in seen]:
            self.counter += 1
            self.log.append((self.counter, "DELETED", self.nodes.pop(name)))
        return self.counter != before

    async def _update(self) -> None:
        summaries = await asyncio.to_thread(self.refresh)
        if self.apply(summaries):
            async with self._changed:
                self._changed.notify_all()

    async def _run(self, fresh: asyncio.Event) -> None:
        while self._watchers:
            try:
                await self._update()
            except Exception:  # a failing read must not end every stream
                log.exception("summary feed refresh failed")
            fresh.set()
            await asyncio.sleep(self.tick)
        self._task = None

    def _since(self, n: int) -> list[tuple[int, ChangeType, NodeSummaryV1]] | None:
        """The events after version ``n`` (``None``: the history no longer reaches back)."""
        if n == self.counter:
            return []
        if not self.log or self.log[0][0] > n + 1:
            return None
        return [e for e in self.log if e[0] > n]

    def _expired(self, message: str) -> bytes:
        status = WatchStatus(code=410, reason="Expired", message=message)
        return _line(SummaryWatchEventV1(type="ERROR", resource_version=self.rv(), status=status))

    def _start(self, rv: str) -> tuple[list[bytes], int | None]:
        """The first lines of a stream from ``rv`` and the version it then stands at (``None``:
        the stream ends after them)."""
        if not rv:
            lines = [
                _line(SummaryWatchEventV1(type="ADDED", resource_version=self.rv(), object=s))
                for s in self.nodes.values()
            ]
            end = SummaryWatchEventV1(
                type="BOOKMARK", resource_version=self.rv(), initial_events_end=True
            )
            return [*lines, _line(end)], self.counter
        epoch, _, number = rv.rpartition("-")
        if epoch != self.epoch or not number.isdigit() or int(number) > self.counter:
            return [self._expired(f"resourceVersion {rv!r} is not of this agent process")], None
        n = int(number)
        events = self._since(n)
        if events is None:
            return [self._expired(f"too old resource version: {rv}")], None
        return [self._event(e) for e in events], self.counter

    def _event(self, event: tuple[int, ChangeType, NodeSummaryV1]) -> bytes:
        n, kind, summary = event
        return _line(SummaryWatchEventV1(type=kind, resource_version=self.rv(n), object=summary))

    async def watch(self, rv: str, bookmark: float) -> AsyncIterator[bytes]:
        """The lines of one stream from ``rv`` (see the class docstring)."""
        self._watchers += 1
        try:
            if self._task is None:  # not running: what it held may be old
                self._fresh = asyncio.Event()
                self._task = asyncio.create_task(self._run(self._fresh), name="summary-feed")
            await self._fresh.wait()
            lines, at = self._start(rv)
            for line in lines:
                yield line
            while at is not None:
                if self.counter == at:
                    async with self._changed:
                        if self.counter == at:
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(self._changed.wait(), bookmark)
                if self.counter == at:
                    bookmark_event = SummaryWatchEventV1(
                        type="BOOKMARK", resource_version=self.rv()
                    )
                    yield _line(bookmark_event)
                    continue
                events = self._since(at)
                if events is None:
                    yield self._expired(f"too old resource version: {self.rv(at)}")
                    return
                at = self.counter
                for event in events:
                    yield self._event(event)
        finally:
            self._watchers -= 1

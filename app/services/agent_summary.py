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
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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
    TopologyBrief,
)
from app.domain.node_state_files import state_file_versions
from app.services.node_views import NodeSummary, NodeViews


def numa_rows(views: NodeViews) -> list[NumaRow]:
    """Per NUMA node: CPU pools and memory, the numbers of the node's own JSON."""
    memory = views.memory
    rows = []
    for row in views.numa_pools:
        c = row.counts
        mem = memory.get(row.numa_node)
        rows.append(
            NumaRow(
                numa_node=row.numa_node,
                total=c.total,
                reserved=c.reserved,
                node_shared=c.node_shared,
                pod_shared=c.pod_shared,
                exclusive=c.exclusive,
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
    body = json.dumps(doc, separators=(",", ":"), sort_keys=True, allow_nan=False).encode()
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

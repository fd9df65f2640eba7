"""A simulated node's past, rebuilt from its admission log.

The log (``admissions`` table) records every admission, dry run and removal with the pod's
normalised manifest, in order. Replaying its admitted pods and removals in that order, each at
its recorded time, on a fresh engine gives the node exactly as it was after any entry: the
engine is deterministic, and it is how ``NodeService`` itself rebuilds a node without state
files. This module owns that replay:

* ``log_rows`` — the raw log, oldest first (``find_row``: one entry of it);
* ``Builder`` — fresh engine nodes of the node's machine and its pods from log rows;
* ``replay`` / ``node_at`` — the engine node as it was just before or after an entry (with
  ``batch``, the pods a multi-pod dry run had admitted on its scratch copy before that entry
  count too).

A ``restart`` entry (a kubelet restart applied to the node, ``app.services.nodes.restart``)
is replayed as it happened: the kubelet of the new release starts on the replayed node's
state files (``app.domain.restart``, the same start-up model) and re-admits its pods; the
entries before the first restart are replayed under the configuration that ran then.

Entry ``0`` is the node as created (nothing admitted). Built on it: the history pages
(``app.services.history.views``), where an attempt placed its pod
(``app.services.placements``), rejection explanations (``app.services.history.rejections``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.adapters.db import node_repo
from app.adapters.db.tables import (
    ACTION_ADMIT,
    ACTION_DRY_RUN,
    ACTION_REMOVE,
    ACTION_RESTART,
    as_utc,
)
from app.domain.kubelet_config import KubeletConfig
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Pod
from app.domain.restart import restart_node
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.inputs import build_engine_node, parse_config, resolve_topology
from app.services.nodes.service import NodeService


class UnknownEntryError(NodeServiceError, LookupError):
    """No admission log entry of this node has this number (or it is not of the asked kind)."""

    def __init__(
        self, node: str, entry: int, what: str = "admission log entry", field: str = "entry"
    ) -> None:
        self.node = node
        self.entry = entry
        super().__init__(f"node {node!r} has no {what} {entry}", field)


@dataclass(frozen=True, slots=True)
class LogRow:
    id: int  # global to all nodes (old rejection links' key)
    seq: int  # the entry's number in this node's log: what pages, links and exports show
    batch: str
    action: str
    namespace: str
    name: str
    uid: str
    admitted: bool
    reason: str
    message: str
    manifest: dict[str, Any]
    at: datetime

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_restart(self) -> bool:
        return self.action == ACTION_RESTART

    @property
    def label(self) -> str:
        """What the entry is about: the pod's ``namespace/name``, or the kubelet's releases."""
        if self.is_restart:
            return f"kubelet {self.manifest.get('fromRelease')} → {self.manifest.get('toRelease')}"
        return self.key

    @property
    def changes_node(self) -> bool:
        return self.action in (ACTION_REMOVE, ACTION_RESTART) or (
            self.action == ACTION_ADMIT and self.admitted
        )


def log_rows(service: NodeService, node: str) -> list[LogRow]:
    """Every log entry of a simulated node, oldest first."""
    return [
        LogRow(
            id=r.id or 0,
            seq=r.seq,
            **r.decision(),
            manifest=json.loads(r.manifest),
            at=as_utc(r.created_at),
        )
        for r in node_repo.history(service.registry.engine, service.registry.log_node_id(node))
    ]


def find_row(rows: Sequence[LogRow], node: str, entry: int) -> LogRow:
    """The row of global log id ``entry``."""
    for r in rows:
        if r.id == entry:
            return r
    raise UnknownEntryError(node, entry)


def find_entry(rows: Sequence[LogRow], node: str, seq: int, field: str = "entry") -> LogRow:
    """The row numbered ``seq`` in this node's log (an old link's global id that is not one
    of the node's numbers is unknown, naming ``field``)."""
    for r in rows:
        if r.seq == seq:
            return r
    raise UnknownEntryError(node, seq, field=field)


def after_entry(rows: Sequence[LogRow], node: str, seq: int, field: str = "entry") -> int:
    """The ``before`` bound of ``replay`` for the node right after entry ``seq`` (0: as
    created)."""
    return 0 if seq == 0 else find_entry(rows, node, seq, field).id + 1


class Builder:
    """Fresh engine nodes of one simulated node's machine (any kubelet configuration)."""

    def __init__(self, service: NodeService, node: str) -> None:
        definition = service.registry.definition(node)
        self.name = node
        self.definition = definition
        _, self.topology = resolve_topology(definition.topology)
        self.config = parse_config(definition.kubelet_config, definition.release)
        self.clock = service.registry.clock

    def first_config(self, rows: Sequence[LogRow]) -> KubeletConfig:
        """The configuration the node was created with: before its first restart, if any."""
        first = next((r for r in rows if r.is_restart), None)
        if first is None:
            return self.config
        return parse_config(first.manifest["fromConfig"], first.manifest["fromRelease"])

    def restarted(self, node: Node, row: LogRow) -> Node:
        """``node`` after the kubelet restart of ``row`` (its pods re-admitted as they were)."""
        config = parse_config(row.manifest["toConfig"], row.manifest["toRelease"])
        pods = [(p, node.admitted_at.get(uid, 0.0)) for uid, p in node.pods.items()]
        result = restart_node(
            self.topology,
            config,
            render_state_files(node),
            pods,
            name=self.name,
            previous_release=node.config.release,
            clock=self.clock,
        )
        return node if result.node is None else result.node

    def __call__(self, config: Any = None) -> Node:
        return build_engine_node(
            self.name, self.topology, config if config is not None else self.config, self.clock
        )

    def pod(self, row: LogRow) -> Pod:
        return pod_from_manifest(
            row.manifest, pod_level_resources_enabled=self.config.gate("PodLevelResources")
        )


def replayed(
    builder: Builder, rows: Sequence[LogRow], *, before: int | None = None, batch: str = ""
) -> Iterator[tuple[LogRow | None, Node]]:
    """The node as created (``None``, node), then after each change logged before entry
    ``before`` (all of them when ``None``; with ``batch``, the dry run pods of that batch
    admitted before it count too): one pass, the same node object changed in place except
    across a restart. Read each node before asking for the next."""
    node = builder(builder.first_config(rows))
    clock = node.clock
    yield None, node
    try:
        for r in rows:
            if before is not None and r.id >= before:
                break
            if r.is_restart:
                node.clock = clock
                node = builder.restarted(node, r)
                yield r, node
                continue
            counts = r.changes_node or (
                batch and r.batch == batch and r.action == ACTION_DRY_RUN and r.admitted
            )
            if not counts:
                continue
            if r.action == ACTION_REMOVE:
                if r.uid in node.pods:
                    node.remove(r.uid)
                yield r, node
                continue
            pod = builder.pod(r)
            if pod.uid in node.pods or node.find_pod(pod.key) is not None:
                continue
            node.clock = lambda at=r.at: at.timestamp()  # type: ignore[misc]
            node.admit(pod)
            node.clock = clock
            yield r, node
    finally:
        node.clock = clock


def replay(builder: Builder, rows: Sequence[LogRow], *, before: int, batch: str = "") -> Node:
    """The node after every change logged before entry ``before`` (and, with ``batch``, the
    dry run pods of that batch admitted before it)."""
    last = None
    for step in replayed(builder, rows, before=before, batch=batch):
        last = step
    assert last is not None  # the node as created comes first
    return last[1]


def node_at(service: NodeService, node: str, entry: int) -> tuple[Node, list[LogRow]]:
    """The node as it was right after entry ``entry`` (0: as created)."""
    rows = log_rows(service, node)
    return replay(Builder(service, node), rows, before=after_entry(rows, node, entry)), rows

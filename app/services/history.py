"""A simulated node's past, rebuilt from its admission log.

The log (``admissions`` table) records every admission, dry run and removal with the pod's
normalised manifest, in order. Replaying its admitted pods and removals in that order, each at
its recorded time, on a fresh engine gives the node exactly as it was after any entry: the
engine is deterministic, and it is how ``NodeService`` itself rebuilds a node without state
files. This module owns that replay and what is built on it:

* ``log_rows`` — the raw log, oldest first;
* ``node_at`` — the engine node as it was just before or after an entry (with ``batch``, the
  pods a multi-pod dry run had admitted on its scratch copy before that entry count too);
* ``timeline`` — the history page: one event per entry, what it changed;
* ``map_at`` — the CPU map (the same view model as the node page) after an entry;
* ``diff`` — what moved, what was taken and what was freed between two entries.

Entry ``0`` is the node as created (nothing admitted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db import node_repo
from app.adapters.db.tables import (
    ACTION_ADMIT,
    ACTION_DRY_RUN,
    ACTION_REMOVE,
    as_utc,
)
from app.domain.cpuset import CPUSet
from app.domain.node import Node
from app.domain.pod import Pod, pod_from_manifest
from app.services.node_views import (
    NodeMapView,
    NodeViews,
    iso,
    node_topology_view,
    node_url,
    pod_url,
)
from app.services.nodes import (
    NodeService,
    NodeServiceError,
    build_engine_node,
    parse_config,
    resolve_topology,
)


class UnknownEntryError(NodeServiceError, LookupError):
    """No admission log entry of this node has this id (or it is not of the asked kind)."""

    def __init__(self, node: str, entry: int, what: str = "admission log entry") -> None:
        self.node = node
        self.entry = entry
        super().__init__(f"node {node!r} has no {what} {entry}", "entry")


@dataclass(frozen=True, slots=True)
class LogRow:
    id: int
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
    def changes_node(self) -> bool:
        return self.action == ACTION_REMOVE or (self.action == ACTION_ADMIT and self.admitted)


def log_rows(service: NodeService, node: str) -> list[LogRow]:
    """Every log entry of a simulated node, oldest first."""
    return [
        LogRow(
            id=r.id or 0,
            batch=r.batch,
            action=r.action,
            namespace=r.namespace,
            name=r.name,
            uid=r.uid,
            admitted=r.admitted,
            reason=r.reason,
            message=r.message,
            manifest=json.loads(r.manifest),
            at=as_utc(r.created_at),
        )
        for r in node_repo.history(service.engine, service.log_node_id(node))
    ]


def find_row(rows: Sequence[LogRow], node: str, entry: int) -> LogRow:
    for r in rows:
        if r.id == entry:
            return r
    raise UnknownEntryError(node, entry)


class Builder:
    """Fresh engine nodes of one simulated node's machine (any kubelet configuration)."""

    def __init__(self, service: NodeService, node: str) -> None:
        definition = service.definition(node)
        self.name = node
        self.definition = definition
        _, self.topology = resolve_topology(definition.topology)
        self.config = parse_config(definition.kubelet_config, definition.release)
        self.clock = service.clock

    def __call__(self, config: Any = None) -> Node:
        return build_engine_node(
            self.name, self.topology, config if config is not None else self.config, self.clock
        )

    def pod(self, row: LogRow) -> Pod:
        return pod_from_manifest(
            row.manifest, pod_level_resources_enabled=self.config.gate("PodLevelResources")
        )


def replay(builder: Builder, rows: Sequence[LogRow], *, before: int, batch: str = "") -> Node:
    """The node after every change logged before entry ``before`` (and, with ``batch``, the
    dry run pods of that batch admitted before it)."""
    node = builder()
    clock = node.clock
    try:
        for r in rows:
            if r.id >= before:
                break
            counts = r.changes_node or (
                batch and r.batch == batch and r.action == ACTION_DRY_RUN and r.admitted
            )
            if not counts:
                continue
            if r.action == ACTION_REMOVE:
                if r.uid in node.pods:
                    node.remove(r.uid)
                continue
            pod = builder.pod(r)
            if pod.uid in node.pods or node.find_pod(pod.key) is not None:
                continue
            node.clock = lambda at=r.at: at.timestamp()  # type: ignore[misc]
            node.admit(pod)
    finally:
        node.clock = clock
    return node


def node_at(service: NodeService, node: str, entry: int) -> tuple[Node, list[LogRow]]:
    """The node as it was right after entry ``entry`` (0: as created)."""
    rows = log_rows(service, node)
    if entry != 0:
        find_row(rows, node, entry)
    return replay(Builder(service, node), rows, before=entry + 1), rows


# -- view models ---------------------------------------------------------------------------


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class HistoryEvent(_View):
    id: int
    at: str
    action: str
    pod: str
    admitted: bool
    reason: str = ""
    message: str = ""
    changed: bool  # whether the node's CPUs/memory changed here
    map_url: str
    explain_url: str | None = None
    pod_url: str | None = None


class HistoryView(_View):
    node: str
    node_url: str
    events: list[HistoryEvent]  # oldest first


class HistoryPointView(_View):
    node: str
    node_url: str
    entry: int
    at: str
    label: str
    pods: list[str]
    map: NodeMapView


class PodMove(_View):
    pod: str
    change: str  # "added" | "removed" | "moved" | "unchanged"
    before: str  # CPU list the pod held (budget and exclusive slices)
    after: str
    freed: str  # CPUs the pod held before and not after
    taken: str  # CPUs the pod holds after and not before


class DiffView(_View):
    node: str
    node_url: str
    from_entry: int
    to_entry: int
    from_label: str
    to_label: str
    moves: list[PodMove]
    freed: str  # CPUs held by a pod at "from" and by nobody at "to"
    taken: str  # CPUs held by nobody at "from" and by some pod at "to"
    free_before: dict[int, int]  # NUMA node -> CPUs available for exclusive requests
    free_after: dict[int, int]


def _label(rows: Sequence[LogRow], entry: int) -> str:
    if entry == 0:
        return "as created"
    r = next(r for r in rows if r.id == entry)
    verdict = {True: "admitted", False: "rejected"}[r.admitted]
    what = "removed" if r.action == ACTION_REMOVE else f"{r.action} {verdict}"
    return f"#{r.id} · {iso(r.at)} · {r.key} {what}"


def timeline(service: NodeService, node: str) -> HistoryView:
    rows = log_rows(service, node)
    base = node_url(node)
    on_node = {p.uid for p in service.snapshot(node).pods}
    events = [
        HistoryEvent(
            id=r.id,
            at=iso(r.at),
            action=r.action,
            pod=r.key,
            admitted=r.admitted,
            reason=r.reason,
            message=r.message,
            changed=r.changes_node,
            map_url=f"{base}/history/{r.id}",
            explain_url=None if r.admitted else f"{base}/admissions/{r.id}",
            pod_url=pod_url(node, r.namespace, r.name)
            if r.action == ACTION_ADMIT and r.admitted and r.uid in on_node
            else None,
        )
        for r in rows
    ]
    return HistoryView(node=node, node_url=base, events=events)


def _views(builder: Builder, engine_node: Node, node: str) -> NodeViews:
    return NodeViews(
        engine_node.snapshot(),
        node=node,
        topology=node_topology_view(
            builder.topology, builder.definition.topology, builder.definition.topology_kind
        ),
        created_at=builder.definition.created_at,
        kubelet_config_text=builder.definition.kubelet_config,
        demo=builder.definition.demo,
        pod_memory_requests={},
    )


def map_at(service: NodeService, node: str, entry: int) -> HistoryPointView:
    rows = log_rows(service, node)
    if entry != 0:
        find_row(rows, node, entry)
    builder = Builder(service, node)
    engine_node = replay(builder, rows, before=entry + 1)
    views = _views(builder, engine_node, node)
    return HistoryPointView(
        node=node,
        node_url=node_url(node),
        entry=entry,
        at=iso(next(r.at for r in rows if r.id == entry)) if entry else "",
        label=_label(rows, entry),
        pods=[p.key for p in engine_node.pods.values()],
        map=views.map,
    )


def _held(engine_node: Node) -> dict[str, CPUSet]:
    """Pod key -> every CPU it holds (budget and exclusive slices)."""
    out: dict[str, CPUSet] = {}
    for p in engine_node.snapshot().pods:
        m = p.pod_cpuset.mask if p.pod_cpuset is not None else 0
        for c in p.containers:
            if c.isolation == "container":
                m |= c.cpuset.mask
        out[f"{p.namespace}/{p.name}"] = CPUSet.from_mask(m)
    return out


def _free_per_numa(engine_node: Node) -> dict[int, int]:
    snap = engine_node.snapshot()
    available = snap.default_cpuset - snap.reserved_cpus
    topo = engine_node.topology
    return {n: (available & topo.cpus_in_numa_nodes([n])).size() for n in topo.numa_node_ids()}


def diff(service: NodeService, node: str, from_entry: int, to_entry: int) -> DiffView:
    rows = log_rows(service, node)
    for e in (from_entry, to_entry):
        if e != 0:
            find_row(rows, node, e)
    builder = Builder(service, node)
    a = replay(builder, rows, before=from_entry + 1)
    b = replay(builder, rows, before=to_entry + 1)
    held_a, held_b = _held(a), _held(b)
    moves: list[PodMove] = []
    for key in [*held_a, *(k for k in held_b if k not in held_a)]:
        before = held_a.get(key, CPUSet())
        after = held_b.get(key, CPUSet())
        if key not in held_b:
            change = "removed"
        elif key not in held_a:
            change = "added"
        elif before != after:
            change = "moved"
        else:
            change = "unchanged"
        moves.append(
            PodMove(
                pod=key,
                change=change,
                before=str(before),
                after=str(after),
                freed=str(before - after),
                taken=str(after - before),
            )
        )
    all_a = CPUSet.from_mask(_union(held_a.values()))
    all_b = CPUSet.from_mask(_union(held_b.values()))
    return DiffView(
        node=node,
        node_url=node_url(node),
        from_entry=from_entry,
        to_entry=to_entry,
        from_label=_label(rows, from_entry),
        to_label=_label(rows, to_entry),
        moves=moves,
        freed=str(all_a - all_b),
        taken=str(all_b - all_a),
        free_before=_free_per_numa(a),
        free_after=_free_per_numa(b),
    )


def _union(sets: Any) -> int:
    m = 0
    for s in sets:
        m |= s.mask
    return m


# -- placement of an admitted attempt ------------------------------------------------------


class ContainerPlacement(_View):
    name: str
    isolation: str
    cpus: str  # what it runs on: its slice, its pod's shared pool or the node shared pool


class PlacementView(_View):
    """Where an admitted (or would-be-admitted) pod got its CPUs and memory."""

    entry: int
    pod: str
    cpus: str  # every CPU the pod holds (budget and slices); "" when it holds none
    numa_nodes: list[int]
    containers: list[ContainerPlacement]


def _placement(entry: int, alloc: Any, topo: Any, node_shared: CPUSet) -> PlacementView:
    m = alloc.pod_cpuset.mask if alloc.pod_cpuset is not None else 0
    containers = []
    for c in alloc.containers:
        if c.isolation == "container":
            m |= c.cpuset.mask
        runs = node_shared if c.isolation == "host" else c.cpuset
        containers.append(ContainerPlacement(name=c.name, isolation=c.isolation, cpus=str(runs)))
    held = CPUSet.from_mask(m)
    numa = {topo.cpu_details[cpu].numa_node_id for cpu in held}
    blocks = [*alloc.pod_memory, *(b for c in alloc.containers for b in c.memory)]
    numa.update(n for b in blocks for n in b.numa_affinity)
    return PlacementView(
        entry=entry,
        pod=f"{alloc.namespace}/{alloc.name}",
        cpus=str(held),
        numa_nodes=sorted(numa),
        containers=containers,
    )


def placements(service: NodeService, node: str, entries: Sequence[Any]) -> dict[int, PlacementView]:
    """Placement per admitted entry of one submission (``AdmissionLogEntry`` values): an
    admitted pod's from the node as it is; a dry run's replayed from the log (nothing of it
    was kept)."""
    wanted = [e for e in entries if e.admitted and e.action in (ACTION_ADMIT, ACTION_DRY_RUN)]
    if not wanted or node not in service.simulated_names():
        return {}
    out: dict[int, PlacementView] = {}
    snap = service.snapshot(node)
    node_shared = snap.default_cpuset - snap.reserved_cpus
    dry = [e for e in wanted if e.action == ACTION_DRY_RUN]
    for e in wanted:
        if e.action == ACTION_ADMIT and (alloc := snap.pod(e.namespace, e.name)) is not None:
            out[e.id] = _placement(e.id, alloc, snap.topology, node_shared - _held_all(snap))
    if dry:
        rows = log_rows(service, node)
        builder = Builder(service, node)
        for e in dry:
            row = find_row(rows, node, e.id)
            state = replay(builder, rows, before=row.id, batch=row.batch)
            result = state.dry_run(builder.pod(row))
            if result.admitted and result.allocation is not None:
                after = state.snapshot()
                free = after.default_cpuset - after.reserved_cpus - _held_all(after)
                taken = _placement(e.id, result.allocation, after.topology, free)
                out[e.id] = taken
    return out


def _held_all(snap: Any) -> CPUSet:
    m = 0
    for p in snap.pods:
        if p.pod_cpuset is not None:
            m |= p.pod_cpuset.mask
        for c in p.containers:
            if c.isolation == "container":
                m |= c.cpuset.mask
    return CPUSet.from_mask(m)

"""The history pages of a simulated node, replayed from its admission log
(``app.services.history.replay``): ``timeline`` (one event per entry, what it changed), ``map_at``
(the CPU map after an entry, the same view model as the node page) and ``diff`` (what moved,
what was taken and what was freed between two entries). Entry ``0`` is the node as created.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db.tables import ACTION_ADMIT, ACTION_DRY_RUN, ACTION_REMOVE
from app.domain.cpuset import CPUSet
from app.domain.node.model import Node
from app.services.history.replay import Builder, LogRow, after_entry, log_rows, replay
from app.services.node_views import (
    NodeMapView,
    NodeViews,
    iso,
    node_topology_view,
    node_url,
    pod_url,
)
from app.services.nodes.service import NodeService


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class HistoryEvent(_View):
    id: int  # the log row's global id (kept for compatibility)
    seq: int  # the entry's number in this node's log: what links and forms use
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
    # A kubelet restart: the maps before and after it side by side (the diff from the entry
    # before it), and the releases and gate of the restart.
    diff_url: str | None = None
    restart: dict[str, Any] | None = None
    # A dry run of several pods, collapsed to one event: its verdicts' page and size.
    batch_url: str | None = None
    batch_size: int = 1


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
    r = next(r for r in rows if r.seq == entry)
    verdict = {True: "admitted", False: "rejected"}[r.admitted]
    if r.is_restart:
        what = "restart"
    elif r.action == ACTION_REMOVE:
        what = "removed"
    else:
        what = f"{r.action} {verdict}"
    return f"#{r.seq} · {iso(r.at)} · {r.label} {what}"


def _restart_fields(r: LogRow) -> dict[str, Any]:
    m = r.manifest
    return {
        "fromRelease": m.get("fromRelease"),
        "toRelease": m.get("toRelease"),
        "podLevelResourceManagers": m.get("podLevelResourceManagers"),
    }


def timeline(service: NodeService, node: str) -> HistoryView:
    """One event per log entry, oldest first; a dry run of several pods is one event (its
    totals, and a link to its verdicts), so it does not bury the node's history."""
    rows = log_rows(service, node)
    base = node_url(node)
    on_node = {p.uid for p in service.reads.snapshot(node).pods}
    previous = {r.seq: prev.seq for prev, r in pairwise(rows)}
    dry_runs: dict[str, list[LogRow]] = {}
    for r in rows:
        if r.action == ACTION_DRY_RUN:
            dry_runs.setdefault(r.batch, []).append(r)
    events = []
    for r in rows:
        group = dry_runs.get(r.batch, []) if r.action == ACTION_DRY_RUN else []
        if len(group) > 1:
            if r is group[0]:
                events.append(_dry_run_event(base, group))
            continue
        pod_on_node = r.action == ACTION_ADMIT and r.admitted and r.uid in on_node
        events.append(_event(node, r, previous.get(r.seq, 0), pod_on_node))
    return HistoryView(node=node, node_url=base, events=events)


def _event(node: str, r: LogRow, previous: int, pod_on_node: bool) -> HistoryEvent:
    """The event of one log entry; ``previous`` is the entry before it (a restart's diff
    compares the two), ``pod_on_node`` whether its pod is still there to link to."""
    base = node_url(node)
    return HistoryEvent(
        id=r.id,
        seq=r.seq,
        at=iso(r.at),
        action=r.action,
        pod=r.label,
        admitted=r.admitted,
        reason=r.reason,
        message=r.message,
        changed=r.changes_node,
        map_url=f"{base}/history/{r.seq}",
        explain_url=None if r.admitted else f"{base}/rejections/{r.seq}",
        pod_url=pod_url(node, r.namespace, r.name) if pod_on_node else None,
        diff_url=f"{base}/diff?from={previous}&to={r.seq}" if r.is_restart else None,
        restart=_restart_fields(r) if r.is_restart else None,
    )


def _dry_run_event(base: str, group: Sequence[LogRow]) -> HistoryEvent:
    """One event for a dry run of several pods: how many would be admitted and rejected."""
    first = group[0]
    admitted = sum(1 for r in group if r.admitted)
    reasons = Counter(r.reason for r in group if not r.admitted)
    message = f"{admitted:,} would be admitted, {len(group) - admitted:,} would be rejected"
    if reasons:
        message += " (" + ", ".join(f"{k} {n:,}" for k, n in reasons.most_common()) + ")"
    return HistoryEvent(
        id=first.id,
        seq=first.seq,
        at=iso(first.at),
        action=first.action,
        pod=f"{len(group):,} pods",
        admitted=admitted == len(group),
        reason=reasons.most_common(1)[0][0] if reasons else "",
        message=message,
        changed=False,
        map_url=f"{base}/history/{first.seq}",
        batch_url=f"{base}/batches/{first.batch}",
        batch_size=len(group),
    )


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


def map_at(service: NodeService, node: str, entry: int, field: str = "entry") -> HistoryPointView:
    """The node right after its entry number ``entry`` (0: as created)."""
    rows = log_rows(service, node)
    before = after_entry(rows, node, entry, field)
    builder = Builder(service, node)
    engine_node = replay(builder, rows, before=before)
    views = _views(builder, engine_node, node)
    return HistoryPointView(
        node=node,
        node_url=node_url(node),
        entry=entry,
        at=iso(next(r.at for r in rows if r.seq == entry)) if entry else "",
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


def default_range(
    service: NodeService, node: str, from_entry: int | None, to_entry: int | None
) -> tuple[int, int]:
    """The entries a comparison means when one is not given: from the node as created (0), to
    its latest change (0 when nothing changed it yet)."""
    if to_entry is None:
        to_entry = max((r.seq for r in log_rows(service, node) if r.changes_node), default=0)
    return (0 if from_entry is None else from_entry), to_entry


def diff(service: NodeService, node: str, from_entry: int, to_entry: int) -> DiffView:
    rows = log_rows(service, node)
    before_a = after_entry(rows, node, from_entry, "from")
    before_b = after_entry(rows, node, to_entry, "to")
    builder = Builder(service, node)
    a = replay(builder, rows, before=before_a)
    b = replay(builder, rows, before=before_b)
    held_a, held_b = _held(a), _held(b)
    moves = _moves(held_a, held_b)
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


def _moves(held_a: dict[str, CPUSet], held_b: dict[str, CPUSet]) -> list[PodMove]:
    """What became of each pod's CPUs between two points: the pods of the first in their
    order, then those only the second has."""
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
    return moves


def _union(sets: Any) -> int:
    m = 0
    for s in sets:
        m |= s.mask
    return m

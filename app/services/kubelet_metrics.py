"""The kubelet's resource-manager metrics of a simulated node (``app.domain.kubelet_metrics``).

A kubelet counts admission events in memory. A simulated node's engine lives in every server
worker and is rebuilt from its state files whenever it is reloaded, so its own counters would
depend on which worker answers and when it started. Instead the counters come from replaying
the node's admission log on a fresh engine: every admission attempt (admitted or rejected)
and every removal, in order, each at its recorded time; dry runs are no kubelet events and are
skipped. The figures are then the counters of one kubelet that has run since the node was
created, the same from every worker and across restarts. Each worker keeps the replayed engine
and runs only the rows added since (a scrape after no change costs one log read).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db.tables import ACTION_ADMIT, ACTION_REMOVE
from app.domain.kubelet_metrics import Family, exposition, kubelet_families
from app.domain.memorymanager.metrics import MemoryManagerMetrics
from app.domain.node.model import Node, NodeError
from app.services.history.replay import Builder, LogRow, log_rows
from app.services.nodes.service import NodeService

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_CACHE_SIZE = 64


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class SampleView(_View):
    labels: dict[str, str]
    value: float


class FamilyView(_View):
    name: str
    type: str
    help: str
    samples: list[SampleView]


class KubeletMetricsView(_View):
    node: str
    release: str
    counted_since: str  # what the counters cover
    admission_attempts: int
    series: list[FamilyView]


def replay_rows(builder: Builder, node: Node, rows: list[LogRow]) -> None:
    """Run ``rows`` through ``node``: admission attempts (admitted or rejected) and removals
    in log order, each at its recorded time; dry runs are skipped."""
    clock = node.clock
    try:
        for r in rows:
            if r.action == ACTION_REMOVE:
                if r.uid in node.pods:
                    node.remove(r.uid)
                continue
            if r.action != ACTION_ADMIT:
                continue
            pod = builder.pod(r)
            node.clock = lambda at=r.at: at.timestamp()  # type: ignore[misc]
            try:
                node.admit(pod)
            except NodeError:
                continue  # a duplicate the live node refused too; no manager saw it
    finally:
        node.clock = clock


def replay_all(builder: Builder, rows: list[LogRow]) -> Node:
    """A fresh engine that went through every logged admission attempt and removal."""
    node = builder()
    replay_rows(builder, node, rows)
    return node


def families_of(node: Node) -> list[Family]:
    memory = getattr(node.memory.policy, "metrics", None) if node.memory is not None else None
    return kubelet_families(
        node.config.release,
        node.cpu_policy.metrics if node.cpu_policy is not None else None,
        memory if isinstance(memory, MemoryManagerMetrics) else None,
        pod_level_resource_managers=node.config.pod_level_resource_managers,
    )


@dataclass(slots=True)
class _Replayed:
    """One node's replay so far: the engine after the first ``count`` log rows."""

    definition: tuple[object, ...]
    builder: Builder
    node: Node
    count: int = 0
    last_id: int = 0
    families: list[Family] | None = None

    def extended_by(self, definition: tuple[object, ...], rows: list[LogRow]) -> bool:
        """``rows`` is the log this replay saw plus (maybe) new rows, of the same node."""
        if definition != self.definition or self.count > len(rows):
            return False
        return self.count == 0 or rows[self.count - 1].id == self.last_id


class KubeletMetrics:
    """Per-node kubelet series, computed by replay (one per app).

    The log only grows, so the engine of the last replay is kept and only the new rows are
    run through it; a changed definition (or a log that does not extend the one seen) starts
    over on a fresh engine.
    """

    def __init__(self, service: NodeService) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._replays: dict[str, _Replayed] = {}

    def _families(self, name: str) -> tuple[str, int, list[Family]]:
        rows = log_rows(self.service, name)  # UnknownNodeError (404) for observed nodes
        d = self.service.registry.definition(name)
        definition = (d.kubelet_config, d.release, d.topology, d.created_at)
        with self._lock:
            done = self._replays.get(name)
            if done is None or not done.extended_by(definition, rows):
                builder = Builder(self.service, name)
                done = _Replayed(definition, builder, builder())
            if done.families is None or done.count < len(rows):
                replay_rows(done.builder, done.node, rows[done.count :])
                done.count, done.last_id = len(rows), rows[-1].id if rows else 0
                done.families = families_of(done.node)
            if name not in self._replays and len(self._replays) >= _CACHE_SIZE:
                self._replays.pop(next(iter(self._replays)))
            self._replays[name] = done
            families = done.families
            release = done.node.config.release
        attempts = sum(1 for r in rows if r.action == ACTION_ADMIT)
        return release, attempts, families

    def text(self, name: str) -> str:
        """The Prometheus text exposition of node ``name``'s kubelet series."""
        return exposition(self._families(name)[2])

    def view(self, name: str) -> KubeletMetricsView:
        release, attempts, families = self._families(name)
        return KubeletMetricsView(
            node=name,
            release=release,
            counted_since="node creation (replayed admission log, dry runs excluded)",
            admission_attempts=attempts,
            series=[
                FamilyView(
                    name=f.name,
                    type=f.type,
                    help=f.help,
                    samples=[SampleView(labels=dict(s.labels), value=s.value) for s in f.samples],
                )
                for f in families
            ],
        )

"""The kubelet's resource-manager metrics of a simulated node (``app.domain.kubelet_metrics``).

A kubelet counts admission events in memory. A simulated node's engine lives in every server
worker and is rebuilt from its state files whenever it is reloaded, so its own counters would
depend on which worker answers and when it started. Instead the counters come from replaying
the node's admission log on a fresh engine: every admission attempt (admitted or rejected)
and every removal, in order, each at its recorded time; dry runs are no kubelet events and are
skipped. The figures are then the counters of one kubelet that has run since the node was
created, the same from every worker and across restarts. The replay is cached per log length
and last entry, so a scrape after no change costs one log read.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db.tables import ACTION_ADMIT, ACTION_REMOVE
from app.domain.kubelet_metrics import Family, exposition, kubelet_families
from app.domain.memorymanager.metrics import MemoryManagerMetrics
from app.domain.node import Node, NodeError
from app.services.history import Builder, LogRow, log_rows
from app.services.nodes import NodeService

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


def replay_all(builder: Builder, rows: list[LogRow]) -> Node:
    """A fresh engine that went through every logged admission attempt and removal."""
    node = builder()
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
    return node


def families_of(node: Node) -> list[Family]:
    memory = getattr(node.memory.policy, "metrics", None) if node.memory is not None else None
    return kubelet_families(
        node.config.release,
        node.cpu_policy.metrics if node.cpu_policy is not None else None,
        memory if isinstance(memory, MemoryManagerMetrics) else None,
        pod_level_resource_managers=node.config.pod_level_resource_managers,
    )


class KubeletMetrics:
    """Per-node kubelet series, computed by replay and cached (one per app)."""

    def __init__(self, service: NodeService) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._cache: dict[tuple[Any, ...], tuple[str, int, list[Family]]] = {}

    def _families(self, name: str) -> tuple[str, int, list[Family]]:
        rows = log_rows(self.service, name)  # UnknownNodeError (404) for observed nodes
        definition = self.service.definition(name)
        key = (
            name,
            definition.kubelet_config,
            definition.release,
            definition.topology,
            definition.created_at,
            len(rows),
            rows[-1].id if rows else 0,
        )
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        node = replay_all(Builder(self.service, name), rows)
        attempts = sum(1 for r in rows if r.action == ACTION_ADMIT)
        value = (node.config.release, attempts, families_of(node))
        with self._lock:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = value
        return value

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

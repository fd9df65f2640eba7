"""The observed node of the dashboard: ``NodeObserver`` re-observes the real node Numascope runs
on (``app.services.observe.observation.observe_node``) on request when its last observation is
older than ``ttl`` (2 s), caches its views (``app.services.observe.views``) and answers what the
pages, the API and the metrics ask of it; the catalog serves it as a node like the others
(``app.services.nodes.observed.ObservedSource``). Nothing is ever written.

Each error of an observation is reported to ``on_error`` (which the app counts in
``numascope_source_errors_total{source}``). Its PodResources routes answer what the kubelet
answered (not a rebuild from the snapshot).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from app.adapters.kubelet import KubeletDirError, KubeletRootDir
from app.domain.observed import (
    SOURCE_CHECKPOINT,
    SOURCE_PODRESOURCES,
    SOURCE_SYSFS,
    ObservedNode,
    SourceStatus,
)
from app.domain.podresources import GetPodResourcesResponse
from app.services.node_views import NodeDetail, NodeSummary, NodeView, NodeViews, PodView
from app.services.nodes.errors import NodeServiceError, UnknownPodError
from app.services.observe.observation import node_name_of, observe_node
from app.services.observe.views import ObservedViews, build_views
from app.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_TTL = 2.0
#: The sources counted in ``numascope_source_errors_total`` (users.md §5.4).
METRIC_SOURCES = (SOURCE_PODRESOURCES, SOURCE_CHECKPOINT, SOURCE_SYSFS)


def _canonical_json(value: Any) -> dict[str, Any]:
    """The canonical proto3 JSON of a PodResources answer: protobuf comes with the first
    request for one, never into an agent that only answers probes and summaries (3.4 MiB,
    issue 20 pt 7)."""
    from app.adapters.podresources_json import message_to_dict

    return message_to_dict(value)


class ObservedNodeUnavailableError(NodeServiceError):
    """What was asked of the observed node could not be read (its source failed)."""


class NodeObserver:
    """The observed node of one app: re-observed on request after ``ttl`` seconds.

    ``observe`` (default ``observe_node``) is injectable for tests; ``on_error(source)`` is
    called once per error of an observation (``numascope_source_errors_total``)."""

    def __init__(
        self,
        settings: Settings,
        *,
        name: str | None = None,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
        observe: Callable[[Settings], ObservedNode] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.name = name if name is not None else node_name_of(settings)
        self.ttl = ttl
        self.clock = clock
        self._observe = observe if observe is not None else self._default_observe
        self.on_error = on_error
        self._lock = threading.Lock()
        self._cached: ObservedViews | None = None
        self._at = 0.0
        self.ready = False
        self.observations = 0

    def _default_observe(self, settings: Settings) -> ObservedNode:
        return observe_node(settings, name=self.name)

    def state_file_copies(self) -> tuple[dict[str, bytes | None], str]:
        """The kubelet's two state files as they are now, read into memory (``None``: absent
        or unreadable), and its root dir: a copy a restart rehearsal may work on."""
        root = KubeletRootDir(
            self.settings.kubelet_root, config_file=self.settings.kubelet_config_file
        )
        copies: dict[str, bytes | None] = {}
        for manager in ("cpu", "memory"):
            try:
                copies[root.state_path(manager).name] = root.read_state(manager)
            except KubeletDirError:
                copies[root.state_path(manager).name] = None
        return copies, str(root.path)

    # -- observing -----------------------------------------------------------------------
    def _current(self) -> ObservedViews:
        with self._lock:
            now = self.clock()
            if self._cached is None or now - self._at >= self.ttl:
                try:
                    observed = self._observe(self.settings)
                except Exception as exc:  # a bug must not take the nodes pages down
                    log.exception("observing node %s failed", self.name)
                    observed = ObservedNode(
                        name=self.name,
                        observed_at=time.time(),
                        snapshot=None,
                        sources=(
                            SourceStatus(
                                "observer",
                                time.time(),
                                False,
                                errors=(f"observation failed: {exc.__class__.__name__}: {exc}",),
                            ),
                        ),
                    )
                if observed.name != self.name:
                    observed = replace(observed, name=self.name)
                self._cached = build_views(observed, self.settings.sysfs_root)
                self._at = now
                self.observations += 1
                if observed.serving:
                    self.ready = True
                self._count(observed)
            return self._cached

    def _count(self, observed: ObservedNode) -> None:
        for source, message in observed.errors:
            log.debug("observed node %s: %s: %s", self.name, source, message)
            if self.on_error is not None and source in METRIC_SOURCES:
                self.on_error(source)

    def latest(self) -> ObservedNode | None:
        """The latest observation made, without observing (``None`` before the first)."""
        cached = self._cached
        return None if cached is None else cached.observed

    def current(self) -> ObservedNode:
        """The latest observation (observing again when it is older than ``ttl``)."""
        return self._current().observed

    def refresh(self) -> ObservedNode:
        """Observe now, whatever the age of the last observation."""
        with self._lock:
            self._cached = None
        return self.current()

    # -- what the pages and the API ask -------------------------------------------------
    def _views(self) -> tuple[ObservedNode, NodeViews, NodeSummary]:
        cached = self._current()
        if cached.views is None:
            raise ObservedNodeUnavailableError(
                f"node {self.name} cannot be observed: {cached.summary.load_error}"
            )
        return cached.observed, cached.views, cached.summary

    def views(self) -> NodeViews:
        return self._views()[1]

    def summary(self) -> NodeSummary:
        return self._current().summary

    def node_view(self) -> NodeView:
        _, views, summary = self._views()
        return views.node_view(summary)

    def node_detail(self) -> NodeDetail:
        return NodeDetail.of(self.node_view())

    def pod_view(self, namespace: str, name: str) -> PodView:
        observed, views, summary = self._views()
        row = views.pod_row(namespace, name)
        if row is None:
            raise UnknownPodError(self.name, namespace, name)
        pod = observed.podresources_pod(namespace, name)
        podresources = _canonical_json(GetPodResourcesResponse(pod)) if pod is not None else {}
        return views.pod_view(summary, row, podresources)

    def _podresources(self) -> ObservedNode:
        observed = self.current()
        if observed.list_response is None or observed.allocatable is None:
            status = observed.source(SOURCE_PODRESOURCES)
            why = "; ".join(status.errors) if status is not None else "not read"
            raise ObservedNodeUnavailableError(
                f"PodResources of node {self.name} is unavailable: {why}"
            )
        return observed

    def podresources_list(self) -> dict[str, Any]:
        observed = self._podresources()
        assert observed.list_response is not None
        return _canonical_json(observed.list_response)

    def podresources_get(self, namespace: str, name: str) -> dict[str, Any]:
        observed = self._podresources()
        pod = observed.podresources_pod(namespace, name)
        if pod is None:
            raise UnknownPodError(self.name, namespace, name)
        return _canonical_json(GetPodResourcesResponse(pod))

    def allocatable(self) -> dict[str, Any]:
        observed = self._podresources()
        assert observed.allocatable is not None
        return _canonical_json(observed.allocatable)

    def metric_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        cached = self._current()
        if cached.views is not None:
            yield from cached.views.metric_samples()

    def checkpoint_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """``checkpoint_info``, ``checkpoint_checksum_valid`` and
        ``stale_checkpoint_entries`` of users.md §5.4 for the observed state files (each with
        the ``node`` label first, as the other per-node series)."""
        observed = self.current()
        stale = observed.stale_counts()
        for f in observed.files:
            if not f.present or f.read_error is not None:
                continue
            yield (
                "checkpoint_info",
                {
                    "node": self.name,
                    "file": f.file,
                    "version": f.version or "unknown",
                    "policy": f.policy_name or "",
                },
                1.0,
            )
            valid = bool(f.checksums) and all(c.status == "valid" for c in f.checksums)
            yield ("checkpoint_checksum_valid", {"node": self.name, "file": f.file}, float(valid))
            if observed.pod_uids is not None or observed.list_response is not None:
                yield (
                    "stale_checkpoint_entries",
                    {"node": self.name, "file": f.file},
                    float(stale.get(f.file, 0)),
                )


__all__ = ["DEFAULT_TTL", "NodeObserver", "ObservedNodeUnavailableError"]

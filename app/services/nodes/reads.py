"""The read side of the simulated-node service: the cached views of each node (pages, JSON
twins, summaries), its admission log, PodResources JSON and Prometheus samples.

``NodeReads`` reads a ``app.services.nodes.registry.NodeRegistry`` (``NodeService.reads``);
every read first catches up with the database (``NodeRegistry.refresh``: nodes changed
through another worker) and then answers from the node's
``NodeViews``, rebuilt only when the node's version changed. Only simulated nodes are read here;
the catalog (``app.services.nodes.catalog``) lists them beside nodes of other kinds.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from app.adapters.db import node_repo
from app.adapters.db.change_probe import probe_for
from app.adapters.db.tables import ACTION_REMOVE, AdmissionRecord, as_utc
from app.adapters.podresources_cache import PodResourcesCache
from app.adapters.podresources_json import allocatable_json
from app.domain.podresources import PodNotFoundError
from app.domain.snapshot import NodeSnapshot
from app.services.encoded_json import EncodedJSON
from app.services.node_views import (
    AdmissionLogEntry,
    NodeDetail,
    NodeSummary,
    NodeView,
    NodeViews,
    PodRow,
    PodView,
    iso,
    node_topology_view,
    pod_url,
)
from app.services.nodes.errors import UnknownPodError
from app.services.nodes.inputs import pod_memory_requests
from app.services.nodes.store import Live

if TYPE_CHECKING:
    from app.services.nodes.registry import NodeRegistry

log = logging.getLogger(__name__)

#: Log answers remembered while the database is unchanged (all dropped at this many).
LOG_MEMO_LIMIT = 256


class NodeReads:
    """Reads of a registry's nodes (see the module docstring), with the caches of answers
    that do not live in a node's views (PodResources of one pod, log pages)."""

    def __init__(self, registry: NodeRegistry) -> None:
        self.registry = registry
        self._podresources = PodResourcesCache(maxsize=4096)
        self._log_memo: dict[tuple[Any, ...], tuple[int, list[AdmissionLogEntry]]] = {}

    def version_token(self, name: str) -> str:
        """``<record id>-<version>`` of a simulated node: changes with every change to it,
        through any worker (``app.services.watch``)."""
        live = self.registry.fresh(name)
        return f"{live.record_id}-{live.version}"

    # -- log -------------------------------------------------------------------------------
    def log_entry(self, live: Live, r: AdmissionRecord) -> AdmissionLogEntry:
        url = None
        if r.action != ACTION_REMOVE and r.admitted and r.uid in live.node.pods:
            url = pod_url(live.definition.name, r.namespace, r.name)
        assert r.id is not None
        return AdmissionLogEntry(
            id=r.id,
            seq=r.seq,
            **r.decision(),
            at=iso(as_utc(r.created_at)),
            pod_url=url,
        )

    def admissions(
        self,
        name: str,
        *,
        limit: int = 100,
        batch: str | None = None,
        offset: int = 0,
        dry_runs: bool = True,
    ) -> list[AdmissionLogEntry]:
        """The node's log, newest first (or one submission's entries, in order, from
        ``offset``); ``dry_runs=False`` leaves dry runs out (the page's Recent admissions)."""
        live = self.registry.fresh(name)
        # Pages and JSON twins ask for the same entries on every request: while the
        # database's change counter stays put (no commit by anyone) they are the last answer.
        probe = probe_for(self.registry.engine)
        stamp = probe.stamp() if probe is not None else None  # read before the query
        key = (live.record_id, live.version, limit, batch, offset, dry_runs)
        seen = self._log_memo.get(key)
        if seen is not None and stamp is not None and seen[0] == stamp:
            return list(seen[1])
        rows = node_repo.log_rows(
            self.registry.engine,
            live.record_id,
            limit=limit,
            batch=batch,
            offset=offset,
            dry_runs=dry_runs,
        )
        with self.registry.lock:
            entries = [self.log_entry(live, r) for r in rows]
            if stamp is not None:
                if len(self._log_memo) >= LOG_MEMO_LIMIT:
                    self._log_memo.clear()
                self._log_memo[key] = (stamp, entries)
        return list(entries)

    # -- views -----------------------------------------------------------------------------
    def views_of(self, live: Live) -> NodeViews:
        if live.views is None or live.views_version != live.version:
            snapshot = live.node.snapshot()
            live.views = NodeViews(
                snapshot,
                node=live.definition.name,
                topology=node_topology_view(
                    live.topology, live.definition.topology, live.definition.topology_kind
                ),
                created_at=live.definition.created_at,
                kubelet_config_text=live.definition.kubelet_config,
                demo=live.definition.demo,
                pod_memory_requests={
                    uid: pod_memory_requests(p) for uid, p in live.node.pods.items()
                },
            )
            live.views_version = live.version
        return live.views

    def views(self, name: str) -> NodeViews:
        live = self.registry.fresh(name)
        with self.registry.lock:
            return self.views_of(live)

    def snapshot(self, name: str) -> NodeSnapshot:
        return self.views(name).snapshot

    def _summary(self, live: Live) -> NodeSummary:
        return self.views_of(live).summary(rejected=live.rejected, load_error=live.load_error)

    def summary(self, name: str) -> NodeSummary:
        live = self.registry.fresh(name)
        with self.registry.lock:
            return self._summary(live)

    def summaries(self, *, hidden: Collection[str] = ()) -> list[NodeSummary]:
        """Every simulated node's summary by name, but those named in ``hidden`` (a node of
        another kind has their name: ``app.services.nodes.catalog``)."""
        self.registry.refresh()
        with self.registry.lock:
            return [
                self._summary(self.registry.nodes[n])
                for n in sorted(self.registry.nodes)
                if n not in hidden
            ]

    def node_view(self, name: str, *, batch: str | None = None, log_limit: int = 20) -> NodeView:
        live = self.registry.fresh(name)
        with self.registry.lock:
            views = self.views_of(live)
            summary = self._summary(live)
        view = views.node_view(summary)
        recent = self.admissions(name, limit=log_limit, dry_runs=False)
        update: dict[str, Any] = {"admissions": recent}
        if batch:
            update["last_batch"] = self.admissions(name, batch=batch)
        return view.model_copy(update=update)

    def node_detail(self, name: str) -> NodeDetail:
        live = self.registry.fresh(name)
        with self.registry.lock:
            views = self.views_of(live)
            summary = self._summary(live)
        return NodeDetail.of(views.node_view(summary))

    def pod_view(self, name: str, namespace: str, pod_name: str) -> PodView:
        return self._pod_view(*self._pod_parts(name, namespace, pod_name))

    def _pod_parts(
        self, name: str, namespace: str, pod_name: str
    ) -> tuple[NodeViews, NodeSummary, PodRow, list[AdmissionLogEntry]]:
        live = self.registry.fresh(name)
        with self.registry.lock:
            views = self.views_of(live)
            summary = self._summary(live)
        row = views.pod_row(namespace, pod_name)
        if row is None:
            raise UnknownPodError(name, namespace, pod_name)
        log_rows = [
            e
            for e in self.admissions(name, limit=200)
            if e.uid == row.uid or (e.namespace == namespace and e.name == pod_name)
        ]
        return views, summary, row, log_rows[:20]

    def _pod_view(
        self, views: NodeViews, summary: NodeSummary, row: PodRow, log: list[AdmissionLogEntry]
    ) -> PodView:
        podresources = self._podresources.get_json(views.snapshot, row.namespace, row.name)
        view = views.pod_view(summary, row, podresources)
        return view.model_copy(update={"admissions": log})

    # -- the same views as JSON bytes, encoded once per node version ------------------------
    # A key names everything the bytes depend on beyond the node's version (the views'
    # identity): the summary's log-derived fields and the ids of the log entries shown.

    def peek_json(self, name: str, *key: str) -> EncodedJSON | None:
        """The already encoded answer ``key`` (``("podresources",)``, ``("podresources", ns,
        pod)``, ``("allocatable",)`` or ``("detail",)``) of node ``name`` if it is at hand:
        every node held is at the database's version, this one's views are built and hold it.
        Never loads, builds or encodes anything, so a route may call it on the event loop and
        take the thread pool only when it answers ``None``. The version query is its one
        blocking call: on SQLite a local read of microseconds; on PostgreSQL a network round
        trip, which must not hold the loop, so there it always answers ``None``."""
        registry = self.registry
        if not registry.started or registry.engine.dialect.name != "sqlite" or registry.taken(name):
            return None  # (a node of another kind with this name is the catalog's answer)
        try:
            current = node_repo.versions(registry.engine)
        except SQLAlchemyError:
            return None
        with self.registry.lock:
            if current.keys() != self.registry.nodes.keys():
                return None
            for n, v in current.items():
                held = self.registry.nodes[n]
                if v.version != held.version or v.id != held.record_id:
                    return None
            live = self.registry.nodes.get(name)
            if live is None or live.views is None or live.views_version != live.version:
                return None
            full: tuple[object, ...] = key
            if key == ("detail",):
                full = (*key, live.rejected, live.load_error)
            return live.views.encoded.peek(full)

    def node_view_json(self, name: str, *, batch: str | None = None) -> EncodedJSON:
        live = self.registry.fresh(name)
        with self.registry.lock:
            views = self.views_of(live)
            summary = self._summary(live)
        admissions = self.admissions(name, limit=20, dry_runs=False)
        last = self.admissions(name, batch=batch) if batch else []
        key = ("node", summary.rejected, summary.load_error, _ids(admissions), _ids(last))

        def build() -> NodeView:
            view = views.node_view(summary)
            return view.model_copy(update={"admissions": admissions, "last_batch": last})

        return views.encoded.get(key, build)

    def node_detail_json(self, name: str) -> EncodedJSON:
        live = self.registry.fresh(name)
        with self.registry.lock:
            views = self.views_of(live)
            summary = self._summary(live)
        key = ("detail", summary.rejected, summary.load_error)
        return views.encoded.get(key, lambda: NodeDetail.of(views.node_view(summary)))

    def pod_view_json(self, name: str, namespace: str, pod_name: str) -> EncodedJSON:
        views, summary, row, log = self._pod_parts(name, namespace, pod_name)
        key = ("pod", namespace, pod_name, summary.rejected, summary.load_error, _ids(log))
        return views.encoded.get(key, lambda: self._pod_view(views, summary, row, log))

    def podresources_list_json(self, name: str) -> EncodedJSON:
        views = self.views(name)
        return views.encoded.get(
            ("podresources",), lambda: self._podresources.list_json(views.snapshot)
        )

    def podresources_get_json(self, name: str, namespace: str, pod_name: str) -> EncodedJSON:
        views = self.views(name)
        try:
            return views.encoded.get(
                ("podresources", namespace, pod_name),
                lambda: self._podresources.get_json(views.snapshot, namespace, pod_name),
            )
        except PodNotFoundError:
            raise UnknownPodError(name, namespace, pod_name) from None

    def allocatable_json(self, name: str) -> EncodedJSON:
        views = self.views(name)
        return views.encoded.get(("allocatable",), lambda: allocatable_json(views.snapshot))

    # -- PodResources ----------------------------------------------------------------------
    def podresources_list(self, name: str) -> dict[str, Any]:
        return self._podresources.list_json(self.snapshot(name))

    def podresources_get(self, name: str, namespace: str, pod_name: str) -> dict[str, Any]:
        snapshot = self.snapshot(name)
        try:
            return self._podresources.get_json(snapshot, namespace, pod_name)
        except PodNotFoundError:
            raise UnknownPodError(name, namespace, pod_name) from None

    def allocatable(self, name: str) -> dict[str, Any]:
        return allocatable_json(self.snapshot(name))

    # -- metrics ---------------------------------------------------------------------------
    def metric_samples(
        self, *, hidden: Collection[str] = ()
    ) -> Iterable[tuple[str, dict[str, str], float]]:
        """Samples of every simulated node but those named in ``hidden``, for the Prometheus
        collector (users.md §5.4)."""
        self.registry.refresh()
        with self.registry.lock:
            views = [
                self.views_of(self.registry.nodes[n])
                for n in sorted(self.registry.nodes)
                if n not in hidden
            ]
        for v in views:
            yield from v.metric_samples()


def _ids(entries: list[AdmissionLogEntry]) -> tuple[int, ...]:
    return tuple(e.id for e in entries)

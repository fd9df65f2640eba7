"""Observe the real node Numascope runs on (read-only): ``observe_node(settings)`` and the
cached ``NodeObserver`` the dashboard lists beside its simulated nodes.

An observation reads, in this order and each at most once:

* **sysfs** (``Settings.sysfs_root``): the topology, as the kubelet discovers it
  (``app.adapters.sysfs.discover_host``);
* **the kubelet root dir** (``Settings.kubelet_root``, through the read-only, size-capped
  ``app.adapters.kubelet.KubeletRootDir``): ``cpu_manager_state`` and ``memory_manager_state``
  read the way the newest kubelet reads them (``app.domain.observed.read_state_file``), and the
  pod UIDs of ``pods/``;
* **the kubelet configuration**: ``Settings.kubelet_config_file``, else ``<root>/config.yaml``
  when it exists; parsed for the release the state files point to;
* **PodResources** ``List`` and ``GetAllocatableResources`` on ``Settings.podresources_socket``
  (``app.adapters.grpc.client.PodResourcesClient``: 10 s timeout, 16 MiB receive limit),
  the way node-feature-discovery's topology-updater and resource-topology-exporter read them.

``app.domain.observed.build_observed_node`` merges the answers into a ``NodeSnapshot``
(``simulated=False``). A source that fails does not stop the others: its error is kept on its
``SourceStatus`` (and reported to ``on_error``, which the app counts in
``numascope_source_errors_total{source}``), and the rest is shown. Nothing is ever written.

``NodeObserver`` re-observes on request when its last observation is older than ``ttl`` (2 s),
and builds the node's views from the same ``NodeViews`` code as a simulated node, labelled
``observed``, with the sources, checkpoint files, stale entries and notes attached. Its
PodResources routes answer what the kubelet answered (not a rebuild from the snapshot).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from app.adapters.grpc.client import DEFAULT_TIMEOUT, PodResourcesClient, PodResourcesClientError
from app.adapters.kubelet import KubeletDirError, KubeletRootDir
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.podresources_json import message_to_dict
from app.adapters.sysfs import SysfsError, discover_host
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError
from app.domain.observed import (
    SOURCE_CHECKPOINT,
    SOURCE_CONFIG,
    SOURCE_PODRESOURCES,
    SOURCE_SYSFS,
    Observation,
    ObservedNode,
    SourceStatus,
    StateFileReading,
    build_observed_node,
    infer_config,
    read_state_file,
)
from app.domain.podresources import (
    AllocatableResourcesResponse,
    GetPodResourcesResponse,
    ListPodResourcesResponse,
)
from app.domain.topology import CPUTopology
from app.services.node_errors import NodeServiceError, UnknownPodError
from app.services.node_inputs import AdmissionBatch
from app.services.node_views import (
    NodeDetail,
    NodeSummary,
    NodeView,
    NodeViews,
    ObservationView,
    PodView,
    iso,
    node_topology_view,
    node_url,
)
from app.services.observed_dryrun import dry_run_observed
from app.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_TTL = 2.0
#: The sources counted in ``numascope_source_errors_total`` (users.md §5.4).
METRIC_SOURCES = (SOURCE_PODRESOURCES, SOURCE_CHECKPOINT, SOURCE_SYSFS)


class ObservedNodeUnavailableError(NodeServiceError):
    """What was asked of the observed node could not be read (its source failed)."""


def node_name_of(settings: Settings) -> str:
    """The observed node's name: ``NODE_NAME`` (downward API) or the host name."""
    name = (settings.node_name or "").strip()
    return name or socket.gethostname() or "localhost"


# -- one observation -------------------------------------------------------------------------


def _read_topology(
    settings: Settings, name: str, now: float
) -> tuple[CPUTopology | None, SourceStatus]:
    detail = str(settings.sysfs_root)
    try:
        topo = discover_host(settings.sysfs_root, use_cpuinfo=settings.cpuinfo, name=name)
    except SysfsError as exc:
        return None, SourceStatus(SOURCE_SYSFS, now, False, detail, (str(exc),))
    except OSError as exc:
        return None, SourceStatus(SOURCE_SYSFS, now, False, detail, (f"{detail}: {exc}",))
    return topo, SourceStatus(SOURCE_SYSFS, now, True, detail)


def _read_state_files(
    root: KubeletRootDir, now: float
) -> tuple[StateFileReading | None, StateFileReading | None, tuple[str, ...] | None, SourceStatus]:
    detail = str(root.path)
    try:
        root.check()
    except KubeletDirError as exc:
        return None, None, None, SourceStatus(SOURCE_CHECKPOINT, now, False, detail, (exc.message,))
    readings: dict[str, StateFileReading] = {}
    errors: list[str] = []
    ok = True
    for manager in ("cpu", "memory"):
        path = root.state_path(manager)
        content: bytes | None = None
        read_error: str | None = None
        try:
            content = root.read_state(manager)
        except KubeletDirError as exc:
            read_error = exc.message
            ok = False
        reading = read_state_file(
            content,
            manager,
            path=str(path),
            state_dir=str(root.path),
            observed_at=now,
            read_error=read_error,
        )
        readings[manager] = reading
        if reading.file.problem is not None:
            errors.append(reading.file.problem)
    uids = root.pod_uids()
    status = SourceStatus(SOURCE_CHECKPOINT, now, ok, detail, tuple(errors))
    return (
        readings["cpu"],
        readings["memory"],
        tuple(uids) if uids is not None else None,
        status,
    )


def _read_config(
    root: KubeletRootDir, release: str, now: float
) -> tuple[KubeletConfig | None, str | None, str | None, SourceStatus]:
    path = root.config_path()
    if path is None:
        return None, None, None, SourceStatus(SOURCE_CONFIG, now, True, "no configuration file")
    try:
        text = root.read_config_text()
    except KubeletDirError as exc:
        return (
            None,
            str(path),
            None,
            SourceStatus(SOURCE_CONFIG, now, False, str(path), (exc.message,)),
        )
    if text is None:
        return None, None, None, SourceStatus(SOURCE_CONFIG, now, True, "no configuration file")
    notes: tuple[str, ...] = ()
    try:
        config = parse_kubelet_config_text(text, release)
    except KubeletConfigError as exc:
        config = None
        if exc.field.startswith("featureGates."):
            # The kubelet runs with these gates, so it accepted them: the gate table of this
            # release is behind it, or the node runs another release. Read on, but say so.
            try:
                config = parse_kubelet_config_text(text, release, check_gates=False)
            except KubeletConfigError:
                config = None
            notes = (
                f"{path}: {exc} (a kubelet {release} would refuse this; the running kubelet "
                "accepted it, so its release or Numascope's gate table differs)",
            )
        if config is None:
            return (
                None,
                str(path),
                text,
                SourceStatus(SOURCE_CONFIG, now, False, str(path), (f"{path}: {exc}",)),
            )
    return config, str(path), text, SourceStatus(SOURCE_CONFIG, now, True, str(path), notes)


def _read_podresources(
    address: str, timeout: float, now: float
) -> tuple[ListPodResourcesResponse | None, AllocatableResourcesResponse | None, SourceStatus]:
    try:
        with PodResourcesClient(address, timeout=timeout) as client:
            listed = client.list()
            allocatable = client.allocatable()
    except PodResourcesClientError as exc:
        return None, None, SourceStatus(SOURCE_PODRESOURCES, now, False, address, (exc.message,))
    return listed, allocatable, SourceStatus(SOURCE_PODRESOURCES, now, True, address)


def observe_node(
    settings: Settings,
    *,
    name: str | None = None,
    clock: Callable[[], float] = time.time,
    timeout: float = DEFAULT_TIMEOUT,
) -> ObservedNode:
    """Observe the node described by ``settings`` once (never raises for a failing source)."""
    now = clock()
    node = name if name is not None else node_name_of(settings)
    topology, sysfs_status = _read_topology(settings, node, now)
    root = KubeletRootDir(settings.kubelet_root, config_file=settings.kubelet_config_file)
    cpu, memory, pod_uids, checkpoint_status = _read_state_files(root, now)
    release, _ = infer_config(cpu, memory)
    config, config_path, config_text, config_status = _read_config(root, release, now)
    listed, allocatable, pr_status = _read_podresources(settings.podresources_socket, timeout, now)
    notes: list[str] = []
    if pod_uids is None and checkpoint_status.ok:
        notes.append(f"{root.path / 'pods'} cannot be listed: pod directories are not checked")
    observation = Observation(
        name=node,
        observed_at=now,
        topology=topology,
        config=config,
        config_path=config_path,
        config_text=config_text,
        cpu=cpu,
        memory=memory,
        pod_uids=pod_uids,
        list_response=listed,
        allocatable=allocatable,
        sources=(sysfs_status, checkpoint_status, pr_status, config_status),
        notes=tuple(notes),
    )
    return build_observed_node(observation)


# -- views ------------------------------------------------------------------------------------


def observation_view(observed: ObservedNode) -> ObservationView:
    """The provenance part of an observed node's pages and JSON."""

    def stamp(d: dict[str, Any]) -> dict[str, Any]:
        if isinstance(d.get("observedAt"), float | int):
            d["observedAt"] = iso(float(d["observedAt"]))
        return d

    return ObservationView(
        observed_at=iso(observed.observed_at),
        ready=observed.ready,
        sources=[stamp(s.to_dict()) for s in observed.sources],
        files=[stamp(f.to_dict()) for f in observed.files],
        pods=[i.to_dict() for i in observed.identities],
        stale=[s.to_dict() for s in observed.stale],
        errors=[{"source": s, "message": m} for s, m in observed.errors],
        notes=list(observed.notes),
        config_path=observed.config_path,
        config_inferred=observed.config_inferred,
        pod_dirs=None if observed.pod_uids is None else len(observed.pod_uids),
    )


class _Cached:
    __slots__ = ("observed", "summary", "views")

    def __init__(self, observed: ObservedNode, views: NodeViews | None, summary: NodeSummary):
        self.observed = observed
        self.views = views
        self.summary = summary


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
        self._cached: _Cached | None = None
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
    def _current(self) -> _Cached:
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
                self._cached = self._build(observed)
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

    def _build(self, observed: ObservedNode) -> _Cached:
        snapshot = observed.snapshot
        errors = "; ".join(f"{s}: {m}" for s, m in observed.errors) or None
        url = node_url(self.name)
        if snapshot is None:
            summary = NodeSummary.model_validate(
                {
                    "name": self.name,
                    "simulated": False,
                    "source": "observed",
                    "release": "",
                    "topology": {
                        "name": "unknown",
                        "argument": str(self.settings.sysfs_root),
                        "kind": "sysfs",
                        "sockets": 0,
                        "numaNodes": 0,
                        "cores": 0,
                        "cpus": 0,
                        "cpusPerCore": 0,
                        "memoryBytes": 0,
                        "url": None,
                    },
                    "policies": {
                        "cpuManagerPolicy": "",
                        "cpuManagerPolicyOptions": {},
                        "memoryManagerPolicy": "",
                        "topologyManagerPolicy": "",
                        "topologyManagerScope": "",
                        "podLevelResources": False,
                        "podLevelResourceManagers": False,
                    },
                    "cpus": {},
                    "pods": 0,
                    "rejected": 0,
                    "createdAt": iso(observed.observed_at),
                    "loadError": errors or "the node could not be observed",
                    "url": url,
                    "jsonUrl": f"{url}.json",
                    "apiUrl": f"/api/v1{url}",
                }
            )
            return _Cached(observed, None, summary)
        topology = node_topology_view(snapshot.topology, "host", "sysfs").model_copy(
            update={"url": "/topologies/host"}
        )
        views = NodeViews(
            snapshot,
            node=self.name,
            topology=topology,
            created_at=_utc(observed.observed_at),
            kubelet_config_text=observed.config_text or "",
            demo=False,
            pod_memory_requests={},
            simulated=False,
            source="observed",
            pools=observed.pools,
            stale_uids=observed.stale_uids,
            observation=observation_view(observed),
        )
        return _Cached(observed, views, views.summary(rejected=0, load_error=errors))

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
        podresources = message_to_dict(GetPodResourcesResponse(pod)) if pod is not None else {}
        return views.pod_view(summary, row, podresources)

    def dry_run(self, manifest: str) -> AdmissionBatch:
        """Judge pods on a scratch copy of this node (``app.services.observed_dryrun``)."""
        return dry_run_observed(self, manifest)

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
        return message_to_dict(observed.list_response)

    def podresources_get(self, namespace: str, name: str) -> dict[str, Any]:
        observed = self._podresources()
        pod = observed.podresources_pod(namespace, name)
        if pod is None:
            raise UnknownPodError(self.name, namespace, name)
        return message_to_dict(GetPodResourcesResponse(pod))

    def allocatable(self) -> dict[str, Any]:
        observed = self._podresources()
        assert observed.allocatable is not None
        return message_to_dict(observed.allocatable)

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


def _utc(seconds: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC)


__all__ = [
    "DEFAULT_TTL",
    "NodeObserver",
    "ObservedNodeUnavailableError",
    "node_name_of",
    "observation_view",
    "observe_node",
]

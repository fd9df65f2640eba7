"""Simulated nodes of the dashboard: a registry of live ``Node`` engines, their definitions and
admission log in the database, their allocation state in kubelet-format state files.

One ``NodeService`` per app (``create_app`` builds it and calls ``start``). It owns:

* **Definitions** (``nodes`` table): name, topology (a preset name, or a topology spec string —
  anything containing ``=``), the kubelet configuration text as given (YAML or JSON), the
  kubelet release, whether it is a demo node, and when it was created.
* **The admission log** (``admissions`` table): every admission, dry run and removal with the
  pod's namespace, name and uid, the verdict, the kubelet's reason and message, and the pod's
  normalised manifest. Rows of one submission share a ``batch`` id (the pages show a
  submission's result after their POST → 303 redirect from it).
* **Allocation state** under ``state_dir/<node>``: ``cpu_manager_state``,
  ``memory_manager_state`` (the kubelet's formats for the node's release) and ``pods.json``,
  written atomically after every change through ``app.services.simulation`` and
  ``app.adapters.statefiles`` (the same files ``numascope simulate --state-dir`` reads).

On ``start`` every node is rebuilt from its definition and restored from its state directory
the way a restarting kubelet does; a node without state files (or whose files cannot be
restored) is rebuilt by replaying its admission log, and the problem is shown on its page.
With ``demo`` set and no nodes defined, the demo nodes of ``app.services.demo`` are created.

The node this process runs on can be listed too (``attach_observer``, ``Settings.observe``): an
observed node is read-only (``app.services.observer``). Every read goes to its observer; admitting,
removing and deleting raise ``ReadOnlyNodeError`` (409), and no simulated node may take its name.
``add_listener`` tells others (the PodResources sockets) when simulated nodes come and go.

Admission is a critical section: one lock serialises every change and the building of the
cached views (``NodeViews``, recomputed only when a node changed). A rejected pod is not an
error here: ``admit`` returns the verdicts (and logs them); only bad input raises
(``NodeInputError`` naming the field, ``PodConflictError`` for a pod already on the node,
``UnknownNodeError``/``UnknownPodError`` for names that do not exist).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, func
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from app.adapters import statefiles
from app.adapters.db.engine import session_scope
from app.adapters.db.tables import (
    ACTION_ADMIT,
    ACTION_DRY_RUN,
    ACTION_REMOVE,
    AdmissionRecord,
    NodeRecord,
    as_utc,
    utc_now,
)
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.adapters.podresources_json import PodResourcesCache, allocatable_json
from app.domain.checkpoint.cpu import CPU_FILE_NAME
from app.domain.checkpoint.memory import MEMORY_FILE_NAME
from app.domain.kubelet_config import DEFAULT_RELEASE, RELEASES, KubeletConfig, KubeletConfigError
from app.domain.node import AdmissionResult, Node
from app.domain.node_state import (
    PODS_FILE_NAME,
    NodeStateError,
    pod_to_manifest,
    render_state_files,
    restore_node,
)
from app.domain.pod import Pod, PodManifestError, is_hugepage_resource_name, pod_from_manifest
from app.domain.podresources import PodNotFoundError
from app.domain.presets import get_preset, parse_topology_spec, preset_names
from app.domain.snapshot import NodeSnapshot
from app.domain.topology import CPUTopology, TopologyError
from app.services import simulation
from app.services.node_views import (
    AdmissionLogEntry,
    NodeDetail,
    NodeIndexView,
    NodeSummary,
    NodeView,
    NodeViews,
    PodView,
    iso,
    node_topology_view,
    pod_url,
)

if TYPE_CHECKING:
    from app.services.observer import NodeObserver

log = logging.getLogger(__name__)

MAX_MANIFEST_BYTES = 1024 * 1024
MAX_CONFIG_BYTES = 1024 * 1024
MAX_NAME_LENGTH = 253
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
STATE_FILES = (CPU_FILE_NAME, MEMORY_FILE_NAME, PODS_FILE_NAME)


# -- errors --------------------------------------------------------------------------------


class NodeServiceError(Exception):
    """Base of the errors below: ``message`` for people, ``field`` (if any) for forms/API."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class UnknownNodeError(NodeServiceError, LookupError):
    """No simulated node has this name."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        names = ", ".join(self.known) or "none"
        super().__init__(f"node {name!r} not found; simulated nodes: {names}")


class UnknownPodError(NodeServiceError, LookupError):
    """The pod is not on the node (the kubelet's PodResources ``Get`` text)."""

    def __init__(self, node: str, namespace: str, name: str) -> None:
        self.node = node
        self.namespace = namespace
        self.name = name
        super().__init__(f"pod {name} in namespace {namespace} not found")


class NodeExistsError(NodeServiceError):
    """A node with this name already exists."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"node {name!r} already exists", "name")


class NodeInputError(NodeServiceError, ValueError):
    """Bad input: node name, topology, kubelet configuration, release or pod manifest."""


class PodConflictError(NodeServiceError):
    """The pod (same uid, or same namespace/name) is already on the node."""


class ReadOnlyNodeError(NodeServiceError):
    """The node is observed, not simulated: Numascope never changes a real node."""

    def __init__(self, name: str, action: str) -> None:
        self.name = name
        super().__init__(
            f"node {name!r} is an observed node (read-only): Numascope only shows what its "
            f"kubelet recorded and cannot {action}; create a simulated node to try pods"
        )


# -- values --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeDefinition:
    name: str
    topology: str
    topology_kind: str  # "preset" | "spec"
    kubelet_config: str
    release: str = DEFAULT_RELEASE
    demo: bool = False
    created_at: datetime = field(default_factory=utc_now)


@dataclass(frozen=True, slots=True)
class AdmissionBatch:
    """What one submission did: a verdict per pod, in manifest order."""

    node: str
    batch: str
    dry_run: bool
    results: tuple[AdmissionResult, ...]
    entries: tuple[AdmissionLogEntry, ...]

    @property
    def admitted(self) -> int:
        return sum(1 for r in self.results if r.admitted)

    @property
    def rejected(self) -> int:
        return len(self.results) - self.admitted

    @property
    def all_admitted(self) -> bool:
        return self.rejected == 0

    def to_dict(self) -> dict[str, Any]:
        """The API answer: ``admitted``/``reason``/``message`` of the first rejection at the
        top (a single pod reads like one verdict), every pod under ``results``."""
        results = []
        for r in self.results:
            d = r.to_dict()
            if r.admitted and r.allocation is not None:
                d["url"] = pod_url(self.node, r.namespace, r.name)
                d["allocation"] = _allocation_dict(r)
            results.append(d)
        out: dict[str, Any] = {
            "node": self.node,
            "batch": self.batch,
            "dryRun": self.dry_run,
            "admitted": self.all_admitted,
        }
        first = next((r for r in self.results if not r.admitted), None)
        if first is not None:
            out["reason"] = first.reason
            out["message"] = first.message
        out["summary"] = {"admitted": self.admitted, "rejected": self.rejected}
        out["results"] = results
        return out


def _allocation_dict(r: AdmissionResult) -> dict[str, Any]:
    a = r.allocation
    assert a is not None
    return {
        "qosClass": a.qos_class,
        "podCpuset": None if a.pod_cpuset is None else str(a.pod_cpuset),
        "podSharedCpuset": str(a.shared_pool()),
        "podMemory": [b.to_dict() for b in a.pod_memory],
        "containers": [
            {
                "name": c.name,
                "kind": c.kind,
                "isolation": c.isolation,
                "cpuset": str(c.cpuset),
                "memory": [b.to_dict() for b in c.memory],
            }
            for c in a.containers
        ],
    }


class _Live:
    """A node of the registry: its definition, engine and cached views."""

    __slots__ = (
        "config",
        "definition",
        "load_error",
        "node",
        "record_id",
        "rejected",
        "topology",
        "version",
        "views",
        "views_version",
    )

    def __init__(
        self,
        definition: NodeDefinition,
        record_id: int,
        node: Node,
        topology: CPUTopology,
        config: KubeletConfig,
    ) -> None:
        self.definition = definition
        self.record_id = record_id
        self.node = node
        self.topology = topology
        self.config = config
        self.version = 0
        self.views: NodeViews | None = None
        self.views_version = -1
        self.rejected = 0
        self.load_error: str | None = None


# -- input checks ----------------------------------------------------------------------------


def check_node_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise NodeInputError("name: Required value", "name")
    if len(name) > MAX_NAME_LENGTH:
        raise NodeInputError(f"name: must be no more than {MAX_NAME_LENGTH} characters", "name")
    if not _NAME_RE.match(name):
        raise NodeInputError(
            f"name: Invalid value: {name!r}: a lowercase RFC 1123 subdomain must consist of "
            "lower case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character",
            "name",
        )
    if name.endswith(".json"):
        raise NodeInputError(
            f"name: Invalid value: {name!r}: must not end in '.json' (the pages' JSON twins "
            "use that suffix)",
            "name",
        )
    return name


def resolve_topology(text: str) -> tuple[str, CPUTopology]:
    """``("spec", topology)`` for text containing ``=``, else ``("preset", topology)``."""
    if not isinstance(text, str) or not text.strip():
        raise NodeInputError("topology: Required value (a preset name or a spec)", "topology")
    text = text.strip()
    try:
        if "=" in text:
            return "spec", parse_topology_spec(text)
        return "preset", get_preset(text)
    except TopologyError as err:
        raise NodeInputError(f"topology: {err}", "topology") from None


def parse_config(text: str, release: str) -> KubeletConfig:
    if release not in RELEASES:
        raise NodeInputError(
            f"release: unsupported kubelet release {release!r}; use one of {', '.join(RELEASES)}",
            "release",
        )
    if len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
        raise NodeInputError("kubeletConfig: is larger than 1 MiB", "kubeletConfig")
    try:
        return parse_kubelet_config_text(text, release)
    except KubeletConfigError as err:
        raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None


def build_engine_node(
    name: str, topology: CPUTopology, config: KubeletConfig, clock: Callable[[], float]
) -> Node:
    try:
        return Node(name, topology, config, clock=clock)
    except KubeletConfigError as err:
        raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None


def parse_manifests(text: str, config: KubeletConfig) -> list[Pod]:
    if not isinstance(text, str) or not text.strip():
        raise NodeInputError("manifest: Required value (a Pod manifest, YAML or JSON)", "manifest")
    if len(text.encode("utf-8")) > MAX_MANIFEST_BYTES:
        raise NodeInputError("manifest: is larger than 1 MiB", "manifest")
    try:
        pods = parse_pod_manifests(
            text, pod_level_resources_enabled=config.gate("PodLevelResources")
        )
    except PodManifestError as err:
        raise NodeInputError(str(err), err.field or "manifest") from None
    if not pods:
        raise NodeInputError("manifest: no Pod in the manifest", "manifest")
    return pods


def pod_memory_requests(pod: Pod) -> dict[str, int]:
    """Pod-level memory and hugepage requests in bytes (the pod's memory budget)."""
    if pod.resources is None:
        return {}
    return {
        name: q.value()
        for name, q in pod.resources.requests.items()
        if name == "memory" or is_hugepage_resource_name(name)
    }


# -- the service -----------------------------------------------------------------------------


class NodeService:
    """The simulated nodes of one app. Thread-safe."""

    def __init__(
        self,
        engine: Engine,
        *,
        state_dir: Path | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.engine = engine
        self.state_dir = None if state_dir is None else Path(state_dir)
        self.clock = clock if clock is not None else micro_clock
        self._lock = threading.RLock()
        self._nodes: dict[str, _Live] = {}
        self._podresources = PodResourcesCache(maxsize=4096)
        self.started = False
        # The real node this process runs on (read-only; ``attach_observer``).
        self._observer: NodeObserver | None = None
        self._listeners: list[Callable[[str, str], None]] = []

    # -- the observed node and listeners ---------------------------------------------------
    def attach_observer(self, observer: NodeObserver) -> None:
        """List ``observer``'s node beside the simulated ones (its name wins over a simulated
        node of the same name, which is then only reachable after renaming the observed one)."""
        with self._lock:
            if observer.name in self._nodes:
                log.warning(
                    "the observed node %s has the name of a simulated node; the observed one "
                    "is shown",
                    observer.name,
                )
            self._observer = observer

    @property
    def observer(self) -> NodeObserver | None:
        return self._observer

    def _observed(self, name: str) -> NodeObserver | None:
        obs = self._observer
        return obs if obs is not None and obs.name == name else None

    def add_listener(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(event, name)`` after a simulated node is ``created`` or
        ``deleted`` (outside the registry lock)."""
        with self._lock:
            self._listeners.append(listener)

    def _notify(self, event: str, name: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(event, name)
            except Exception:
                log.exception("node listener failed on %s %s", event, name)

    # -- registry ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def names(self) -> list[str]:
        """Every node: the observed one (if any) first, then the simulated ones."""
        with self._lock:
            simulated = sorted(self._nodes)
            obs = self._observer
        if obs is None:
            return simulated
        return [obs.name, *(n for n in simulated if n != obs.name)]

    def simulated_names(self) -> list[str]:
        with self._lock:
            return sorted(self._nodes)

    def _live(self, name: str) -> _Live:
        live = self._nodes.get(name)
        if live is None:
            raise UnknownNodeError(name, sorted(self._nodes))
        return live

    def definition(self, name: str) -> NodeDefinition:
        with self._lock:
            return self._live(name).definition

    def node_dir(self, name: str) -> Path | None:
        return None if self.state_dir is None else self.state_dir / name

    # -- start-up ------------------------------------------------------------------------
    def start(self, *, demo: bool = False) -> None:
        """Rebuild every node from the database and its state files; create the demo nodes
        when ``demo`` is set and there are none."""
        with self._lock:
            with session_scope(self.engine) as session:
                records = list(session.exec(select(NodeRecord).order_by(col(NodeRecord.id))))
                definitions = [(r.id, _definition_of(r)) for r in records]
                rejected = dict(
                    session.exec(
                        select(AdmissionRecord.node_id, func.count())
                        .where(col(AdmissionRecord.action) == ACTION_ADMIT)
                        .where(col(AdmissionRecord.admitted).is_(False))
                        .group_by(col(AdmissionRecord.node_id))
                    ).all()
                )
            for record_id, definition in definitions:
                assert record_id is not None
                try:
                    live = self._load(record_id, definition)
                except NodeServiceError as err:
                    log.error("simulated node %s cannot be rebuilt: %s", definition.name, err)
                    continue
                live.rejected = int(rejected.get(record_id, 0))
                self._nodes[definition.name] = live
            self.started = True
            if demo and not self._nodes:
                from app.services.demo import create_demo_nodes

                create_demo_nodes(self)

    def _load(self, record_id: int, definition: NodeDefinition) -> _Live:
        _, topology = resolve_topology(definition.topology)
        config = parse_config(definition.kubelet_config, definition.release)
        node = build_engine_node(definition.name, topology, config, self.clock)
        live = _Live(definition, record_id, node, topology, config)
        directory = self.node_dir(definition.name)
        restored = False
        if directory is not None and any(name in STATE_FILES for name in _list_files(directory)):
            try:
                simulation.restore_from_dir(node, directory)
                restored = True
            except simulation.SimulationInputError as err:
                live.load_error = (
                    f"the state files could not be restored ({err}); the node was rebuilt "
                    "from its admission log"
                )
                log.warning("simulated node %s: %s", definition.name, live.load_error)
                node = build_engine_node(definition.name, topology, config, self.clock)
                live.node = node
        if not restored:
            self._replay(live)
            self._persist(live)
        return live

    def _replay(self, live: _Live) -> None:
        """Admit the pods the log says are on the node, in their order, at their times."""
        with session_scope(self.engine) as session:
            rows = session.exec(
                select(AdmissionRecord)
                .where(col(AdmissionRecord.node_id) == live.record_id)
                .where(col(AdmissionRecord.action).in_((ACTION_ADMIT, ACTION_REMOVE)))
                .order_by(col(AdmissionRecord.id))
            ).all()
            events = [(r.action, r.admitted, r.uid, r.manifest, as_utc(r.created_at)) for r in rows]
        on_node: dict[str, tuple[str, datetime]] = {}
        for action, admitted, uid, manifest, at in events:
            if action == ACTION_REMOVE:
                on_node.pop(uid, None)
            elif admitted:
                on_node[uid] = (manifest, at)
        gate = live.config.gate("PodLevelResources")
        failures = []
        node = live.node
        clock = node.clock
        try:
            for uid, (manifest, at) in on_node.items():
                try:
                    pod = pod_from_manifest(json.loads(manifest), pod_level_resources_enabled=gate)
                except (ValueError, PodManifestError) as err:
                    failures.append(f"{uid}: {err}")
                    continue
                node.clock = lambda at=at: at.timestamp()  # type: ignore[misc]
                result = node.admit(pod)
                if not result.admitted:
                    failures.append(f"{pod.key}: {result.reason}: {result.message}")
        finally:
            node.clock = clock
        if failures:
            note = "replaying the admission log did not restore every pod: " + "; ".join(failures)
            live.load_error = f"{live.load_error}; {note}" if live.load_error else note

    # -- persistence ---------------------------------------------------------------------
    def _persist(self, live: _Live) -> None:
        """Write the node's state files (atomically); a failure is shown on its page."""
        directory = self.node_dir(live.definition.name)
        if directory is None:
            return
        try:
            with statefiles.StateDirLock(directory):
                statefiles.write_files(directory, simulation.state_files_of(live.node))
        except statefiles.StateFileError as err:
            live.load_error = f"the state files could not be written: {err}"
            log.error("simulated node %s: %s", live.definition.name, live.load_error)

    def _forget_files(self, name: str) -> None:
        """Remove the state files of a node (and its folder when nothing else is in it)."""
        directory = self.node_dir(name)
        if directory is None or not directory.is_dir():
            return
        with statefiles.StateDirLock(directory):
            for file_name in STATE_FILES:
                try:
                    (directory / file_name).unlink(missing_ok=True)
                except OSError as err:
                    log.error("cannot remove %s: %s", directory / file_name, err)
        with contextlib.suppress(OSError):  # not empty (someone else's files) or gone
            directory.rmdir()

    def _changed(self, live: _Live) -> None:
        live.version += 1
        self._persist(live)

    # -- create / delete -----------------------------------------------------------------
    def create(
        self,
        name: str,
        topology: str,
        kubelet_config: str,
        release: str = DEFAULT_RELEASE,
        *,
        demo: bool = False,
    ) -> NodeDefinition:
        """Define a new simulated node (its CPUs all free). Raises ``NodeInputError`` or
        ``NodeExistsError``."""
        check_node_name(name)
        if self._observed(name) is not None:
            raise NodeExistsError(name)
        kind, topo = resolve_topology(topology)
        if not isinstance(kubelet_config, str):
            raise NodeInputError("kubeletConfig: expected YAML or JSON text", "kubeletConfig")
        config = parse_config(kubelet_config, release)
        node = build_engine_node(name, topo, config, self.clock)
        definition = NodeDefinition(
            name=name,
            topology=topology.strip(),
            topology_kind=kind,
            kubelet_config=kubelet_config,
            release=release,
            demo=demo,
            created_at=utc_now(),
        )
        with self._lock:
            if name in self._nodes:
                raise NodeExistsError(name)
            try:
                with session_scope(self.engine) as session:
                    record = NodeRecord(
                        name=name,
                        topology=definition.topology,
                        topology_kind=kind,
                        kubelet_config=kubelet_config,
                        release=release,
                        demo=demo,
                        created_at=definition.created_at,
                    )
                    session.add(record)
                    session.flush()
                    record_id = record.id
            except IntegrityError:
                raise NodeExistsError(name) from None
            assert record_id is not None
            self._forget_files(name)  # leftovers of an older node of that name
            live = _Live(definition, record_id, node, topo, config)
            self._nodes[name] = live
            self._persist(live)
        self._notify("created", name)
        return definition

    def delete(self, name: str) -> None:
        if self._observed(name) is not None:
            raise ReadOnlyNodeError(name, "delete it")
        with self._lock:
            live = self._live(name)
            with session_scope(self.engine) as session:
                record = session.get(NodeRecord, live.record_id)
                if record is not None:
                    for row in session.exec(
                        select(AdmissionRecord).where(
                            col(AdmissionRecord.node_id) == live.record_id
                        )
                    ):
                        session.delete(row)
                    session.delete(record)
            del self._nodes[name]
            self._forget_files(name)
        self._notify("deleted", name)

    # -- pods ------------------------------------------------------------------------------
    def admit(self, name: str, manifest: str, *, dry_run: bool = False) -> AdmissionBatch:
        """Admit (or with ``dry_run`` only judge) every pod of ``manifest`` in order."""
        if self._observed(name) is not None:
            raise ReadOnlyNodeError(name, "admit pods on it (nor dry-run them)")
        with self._lock:
            live = self._live(name)
            pods = parse_manifests(manifest, live.config)
            self._check_conflicts(live, pods)
            if dry_run:
                results = self._dry_run(live, pods)
            else:
                results = [live.node.admit(p) for p in pods]
            batch = str(uuid.uuid4())
            action = ACTION_DRY_RUN if dry_run else ACTION_ADMIT
            now = utc_now()
            admitted_at = {} if dry_run else live.node.admitted_at
            records = [
                AdmissionRecord(
                    node_id=live.record_id,
                    batch=batch,
                    action=action,
                    namespace=r.namespace,
                    name=r.name,
                    uid=r.pod_uid,
                    admitted=r.admitted,
                    reason=r.reason,
                    message=r.message,
                    manifest=json.dumps(pod_to_manifest(p), sort_keys=True),
                    # An admitted pod's row carries the node's admission time (replays use it).
                    created_at=_at(admitted_at[p.uid]) if p.uid in admitted_at else now,
                )
                for p, r in zip(pods, results, strict=True)
            ]
            entries = self._store_log(live, records)
            if not dry_run:
                live.rejected += sum(1 for r in results if not r.admitted)
                if any(r.admitted for r in results):
                    self._changed(live)
            return AdmissionBatch(name, batch, dry_run, tuple(results), tuple(entries))

    def _check_conflicts(self, live: _Live, pods: Sequence[Pod]) -> None:
        uids: set[str] = set()
        keys: set[str] = set()
        for p in pods:
            if p.uid in live.node.pods or p.uid in uids:
                raise PodConflictError(
                    f"pod with uid {p.uid} ({p.key}) is already on node {live.definition.name}",
                    "metadata.uid",
                )
            if live.node.find_pod(p.key) is not None or p.key in keys:
                raise PodConflictError(
                    f"pod {p.key} is already on node {live.definition.name}", "metadata.name"
                )
            uids.add(p.uid)
            keys.add(p.key)

    def _dry_run(self, live: _Live, pods: Sequence[Pod]) -> list[AdmissionResult]:
        if len(pods) == 1:
            return [live.node.dry_run(pods[0])]
        # Several pods: admit them in order on a scratch copy restored from the state files.
        scratch = build_engine_node(live.definition.name, live.topology, live.config, self.clock)
        try:
            restore_node(
                scratch,
                render_state_files(live.node),
                [(p, live.node.admitted_at.get(uid, 0.0)) for uid, p in live.node.pods.items()],
            )
        except NodeStateError as err:  # the engine cannot read its own files: a bug
            raise RuntimeError(f"dry run: cannot copy node {live.definition.name}: {err}") from err
        return [scratch.admit(p) for p in pods]

    def remove_pod(self, name: str, namespace: str, pod_name: str) -> AdmissionLogEntry:
        """Remove a pod from the node (all its containers); its CPUs and memory go back."""
        if self._observed(name) is not None:
            raise ReadOnlyNodeError(name, "remove its pods")
        with self._lock:
            live = self._live(name)
            pod = live.node.find_pod(f"{namespace}/{pod_name}")
            if pod is None:
                raise UnknownPodError(name, namespace, pod_name)
            live.node.remove(pod.uid)
            record = AdmissionRecord(
                node_id=live.record_id,
                batch=str(uuid.uuid4()),
                action=ACTION_REMOVE,
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.uid,
                admitted=True,
                manifest=json.dumps(pod_to_manifest(pod), sort_keys=True),
                created_at=utc_now(),
            )
            (entry,) = self._store_log(live, [record])
            self._changed(live)
            return entry

    # -- log -------------------------------------------------------------------------------
    def _store_log(self, live: _Live, records: list[AdmissionRecord]) -> list[AdmissionLogEntry]:
        with session_scope(self.engine) as session:
            for r in records:
                session.add(r)
            session.flush()
            return [self._log_entry(live, r) for r in records]

    def _log_entry(self, live: _Live, r: AdmissionRecord) -> AdmissionLogEntry:
        url = None
        if r.action != ACTION_REMOVE and r.admitted and r.uid in live.node.pods:
            url = pod_url(live.definition.name, r.namespace, r.name)
        assert r.id is not None
        return AdmissionLogEntry(
            id=r.id,
            batch=r.batch,
            action=r.action,
            namespace=r.namespace,
            name=r.name,
            uid=r.uid,
            admitted=r.admitted,
            reason=r.reason,
            message=r.message,
            at=iso(as_utc(r.created_at)),
            pod_url=url,
        )

    def admissions(
        self, name: str, *, limit: int = 100, batch: str | None = None
    ) -> list[AdmissionLogEntry]:
        """The node's log, newest first (or one submission's entries, in order)."""
        if self._observed(name) is not None:
            return []  # nothing is ever admitted on an observed node
        with self._lock:
            live = self._live(name)
            query = select(AdmissionRecord).where(col(AdmissionRecord.node_id) == live.record_id)
            if batch is not None:
                query = query.where(col(AdmissionRecord.batch) == batch).order_by(
                    col(AdmissionRecord.id)
                )
            else:
                query = query.order_by(col(AdmissionRecord.id).desc())
            with session_scope(self.engine) as session:
                rows = session.exec(query.limit(max(1, min(limit, 1000)))).all()
                return [self._log_entry(live, r) for r in rows]

    # -- views -----------------------------------------------------------------------------
    def _views(self, live: _Live) -> NodeViews:
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
        if (obs := self._observed(name)) is not None:
            return obs.views()
        with self._lock:
            return self._views(self._live(name))

    def snapshot(self, name: str) -> NodeSnapshot:
        return self.views(name).snapshot

    def _summary(self, live: _Live) -> NodeSummary:
        return self._views(live).summary(rejected=live.rejected, load_error=live.load_error)

    def summary(self, name: str) -> NodeSummary:
        if (obs := self._observed(name)) is not None:
            return obs.summary()
        with self._lock:
            return self._summary(self._live(name))

    def index(self) -> NodeIndexView:
        obs = self._observer
        observed = [obs.summary()] if obs is not None else []
        with self._lock:
            summaries = observed + [
                self._summary(self._nodes[n])
                for n in sorted(self._nodes)
                if obs is None or n != obs.name
            ]
        return NodeIndexView(nodes=summaries, presets=preset_names(), releases=list(RELEASES))

    def node_view(self, name: str, *, batch: str | None = None, log_limit: int = 20) -> NodeView:
        if (obs := self._observed(name)) is not None:
            return obs.node_view()
        with self._lock:
            live = self._live(name)
            views = self._views(live)
            summary = self._summary(live)
        view = views.node_view(summary)
        update: dict[str, Any] = {"admissions": self.admissions(name, limit=log_limit)}
        if batch:
            update["last_batch"] = self.admissions(name, batch=batch)
        return view.model_copy(update=update)

    def node_detail(self, name: str) -> NodeDetail:
        if (obs := self._observed(name)) is not None:
            return obs.node_detail()
        with self._lock:
            live = self._live(name)
            views = self._views(live)
            summary = self._summary(live)
        return NodeDetail.of(views.node_view(summary))

    def pod_view(self, name: str, namespace: str, pod_name: str) -> PodView:
        if (obs := self._observed(name)) is not None:
            return obs.pod_view(namespace, pod_name)
        with self._lock:
            live = self._live(name)
            views = self._views(live)
            summary = self._summary(live)
        row = views.pod_row(namespace, pod_name)
        if row is None:
            raise UnknownPodError(name, namespace, pod_name)
        podresources = self._podresources.get_json(views.snapshot, namespace, pod_name)
        view = views.pod_view(summary, row, podresources)
        log_rows = [
            e
            for e in self.admissions(name, limit=200)
            if e.uid == row.uid or (e.namespace == namespace and e.name == pod_name)
        ]
        return view.model_copy(update={"admissions": log_rows[:20]})

    # -- PodResources ----------------------------------------------------------------------
    def podresources_list(self, name: str) -> dict[str, Any]:
        if (obs := self._observed(name)) is not None:
            return obs.podresources_list()
        return self._podresources.list_json(self.snapshot(name))

    def podresources_get(self, name: str, namespace: str, pod_name: str) -> dict[str, Any]:
        if (obs := self._observed(name)) is not None:
            return obs.podresources_get(namespace, pod_name)
        snapshot = self.snapshot(name)
        try:
            return self._podresources.get_json(snapshot, namespace, pod_name)
        except PodNotFoundError:
            raise UnknownPodError(name, namespace, pod_name) from None

    def allocatable(self, name: str) -> dict[str, Any]:
        if (obs := self._observed(name)) is not None:
            return obs.allocatable()
        return allocatable_json(self.snapshot(name))

    # -- metrics ---------------------------------------------------------------------------
    def metric_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """Samples of every node for the Prometheus collector (users.md §5.4)."""
        obs = self._observer
        if obs is not None:
            try:
                yield from obs.metric_samples()
            except Exception:  # a failing observation must not break the scrape
                log.exception("observed node %s: no metrics", obs.name)
        with self._lock:
            views = [
                self._views(self._nodes[n])
                for n in sorted(self._nodes)
                if obs is None or n != obs.name
            ]
        for v in views:
            yield from v.metric_samples()


def micro_clock() -> float:
    """Wall-clock seconds rounded to microseconds, so that admission times survive the
    database's timestamps exactly."""
    return round(time.time(), 6)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _definition_of(r: NodeRecord) -> NodeDefinition:
    return NodeDefinition(
        name=r.name,
        topology=r.topology,
        topology_kind=r.topology_kind,
        kubelet_config=r.kubelet_config,
        release=r.release,
        demo=r.demo,
        created_at=as_utc(r.created_at),
    )


def _list_files(directory: Path) -> list[str]:
    try:
        return statefiles.list_files(directory)
    except statefiles.StateFileError:
        return []

"""Simulated nodes of the dashboard: the registry of live ``Node`` engines and the changes made to
them (create, delete, admit, dry-run, remove).

One ``NodeService`` per process (``create_app`` builds it and calls ``start``). The database is
the source of truth: definitions, the admission log and each node's committed ``version``
(``app.adapters.db.node_repo``); allocation state lives in kubelet-format state files under
``state_dir/<node>`` (``cpu_manager_state``, ``memory_manager_state``, ``pods.json``, the files
``numascope simulate --state-dir`` reads). ``app.services.node_store`` loads nodes and makes
each change durable; the read side (pages, JSON, PodResources, metrics) is
``app.services.node_reads``.

**Durable or nothing.** A change is computed on the node's engine inside the node's database
write transaction (a row lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite: changes through
any worker or replica are serialised, so no CPU is given twice) and the state directory's lock;
it is acknowledged only after the log rows, the new version and the state files are all
committed. If anything fails the files and the transaction are rolled back and the engine is
put back to the last committed state; the caller gets ``StorageFullError`` (507),
``NodeUnavailableError`` (503) or ``DatabaseRefusedError`` (422), each naming the cause.

**Many workers.** Every call first compares the versions in the database with the engines it
holds (one small query): nodes created, deleted or changed through another worker are loaded,
dropped or reloaded from their state files (written by the worker that held the lock).

A rejected pod is not an error: ``admit`` returns the verdicts (and logs them); only bad input
raises (``NodeInputError`` naming the field, ``PodConflictError`` for a pod already on the
node, ``UnknownNodeError``/``UnknownPodError`` for names that do not exist). The node this
process runs on can be listed too (``attach_observer``): it is read-only, and admitting,
removing and deleting raise ``ReadOnlyNodeError`` (409). Demo nodes and the observer plug in
from outside (``start(seed=…)``, ``attach_observer``); this module imports neither.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from app.adapters import statefiles
from app.adapters.db import node_repo
from app.adapters.db.tables import (
    ACTION_REMOVE,
    AdmissionRecord,
    NodeRecord,
    utc_now,
)
from app.adapters.podresources_json import PodResourcesCache
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.domain.node_state import pod_to_manifest
from app.services.node_admission import (
    check_conflicts,
    check_hint_budget,
    dry_run_results,
    log_records,
)
from app.services.node_errors import (
    DatabaseRefusedError,
    NodeExistsError,
    NodeInputError,
    NodeServiceError,
    NodeUnavailableError,
    PodConflictError,
    ReadOnlyNodeError,
    StorageFullError,
    UnknownNodeError,
    UnknownPodError,
    write_failure,
)
from app.services.node_inputs import (
    AdmissionBatch,
    NodeDefinition,
    build_engine_node,
    check_node_name,
    definition_of,
    micro_clock,
    parse_config,
    parse_manifests,
    pod_memory_requests,
    resolve_topology,
)
from app.services.node_reads import NodeReads, ObservedNode
from app.services.node_restart import NodeRestarts, Rehearsal
from app.services.node_store import STATE_FILES, Live, NodeStore
from app.services.node_views import AdmissionLogEntry
from app.services.simulation import state_files_of

log = logging.getLogger(__name__)

__all__ = [
    "STATE_FILES",
    "AdmissionBatch",
    "DatabaseRefusedError",
    "NodeDefinition",
    "NodeExistsError",
    "NodeInputError",
    "NodeService",
    "NodeServiceError",
    "NodeUnavailableError",
    "PodConflictError",
    "ReadOnlyNodeError",
    "Rehearsal",
    "StorageFullError",
    "UnknownNodeError",
    "UnknownPodError",
    "check_node_name",
    "micro_clock",
    "parse_config",
    "parse_manifests",
    "pod_memory_requests",
    "resolve_topology",
]


class NodeService(NodeReads, NodeRestarts):
    """The simulated nodes of one process. Thread-safe. Restarts under another kubelet
    release: ``NodeRestarts.restart``."""

    def __init__(
        self,
        engine: Engine,
        *,
        state_dir: Path | None = None,
        clock: Callable[[], float] | None = None,
        hint_budget: int | None = None,
    ) -> None:
        self.engine = engine
        self.hint_budget = hint_budget  # see app.domain.hint_budget; None: unbounded
        self.state_dir = None if state_dir is None else Path(state_dir)
        self.clock = clock if clock is not None else micro_clock
        self.store = NodeStore(engine, self.state_dir, self.clock)
        self._lock = threading.RLock()
        self._nodes: dict[str, Live] = {}
        self._skipped: dict[str, int] = {}  # definitions that cannot be built, by version
        self._podresources = PodResourcesCache(maxsize=4096)
        self._log_memo = {}
        self.started = False
        self._observer: ObservedNode | None = None
        self._listeners: list[Callable[[str, str], None]] = []

    # -- the observed node and listeners ---------------------------------------------------
    def attach_observer(self, observer: ObservedNode) -> None:
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
    def observer(self) -> ObservedNode | None:
        return self._observer

    def add_listener(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(event, name)`` after a simulated node is ``created`` or
        ``deleted`` (here or through another worker; outside the registry lock)."""
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
        simulated = self.simulated_names()
        obs = self._observer
        if obs is None:
            return simulated
        return [obs.name, *(n for n in simulated if n != obs.name)]

    def simulated_names(self) -> list[str]:
        self._refresh()
        with self._lock:
            return sorted(self._nodes)

    def definition(self, name: str) -> NodeDefinition:
        return self._fresh(name).definition

    def state_files(self, name: str) -> dict[str, str]:
        """A simulated node's state directory as its kubelet would write it now (file name ->
        text: ``cpu_manager_state``, ``memory_manager_state``, ``pods.json``)."""
        if self._observed(name) is not None:
            raise ReadOnlyNodeError(name, "render state files for it (download the kubelet's)")
        live = self._fresh(name)
        with self._lock:
            return state_files_of(live.node)

    def log_node_id(self, name: str) -> int:
        """The database id of a simulated node (``node_id`` of its admission log rows)."""
        if self._observed(name) is not None:
            raise UnknownNodeError(name, self.simulated_names())
        return self._fresh(name).record_id

    def node_dir(self, name: str) -> Path | None:
        return self.store.node_dir(name)

    def _live(self, name: str) -> Live:
        live = self._nodes.get(name)
        if live is None:
            raise UnknownNodeError(name, sorted(self._nodes))
        return live

    # -- start-up and synchronisation ------------------------------------------------------
    def start(self, *, seed: Callable[[NodeService], None] | None = None) -> None:
        """Load every node from the database and its state files (reconciling the two, see
        ``node_store``); then, when there are no nodes, let ``seed`` create some (the demo)."""
        with self._lock:
            self.started = True
            self._refresh()
            empty = not self._nodes
        if seed is not None and empty:
            seed(self)

    def _refresh(self) -> None:
        """Catch up with the database: nodes created, deleted or changed elsewhere."""
        if not self.started:
            return
        try:
            current = node_repo.versions(self.engine)
        except SQLAlchemyError as err:  # serve what is held; /readyz reports the database
            log.warning("node versions could not be read: %s", str(err).splitlines()[0])
            return
        events: list[tuple[str, str]] = []
        with self._lock:
            for name in list(self._nodes):
                v = current.get(name)
                if v is None or v.id != self._nodes[name].record_id:
                    del self._nodes[name]
                    events.append(("deleted", name))
            new = [
                n for n, v in current.items()
                if n not in self._nodes and self._skipped.get(n) != v.version
            ]  # fmt: skip
            if new:
                for record in node_repo.definitions(self.engine, new):
                    if self._add(record):
                        events.append(("created", record.name))
            changed = [n for n, live in self._nodes.items() if current[n].version != live.version]
            if changed:
                # A restart through another worker may have changed the release too.
                records = {r.name: r for r in node_repo.definitions(self.engine, changed)}
                for name in changed:
                    live, redefined = self._nodes[name], records.get(name)
                    if redefined is not None and (
                        redefined.release != live.definition.release
                        or redefined.kubelet_config != live.definition.kubelet_config
                    ):
                        del self._nodes[name]
                        self._add(redefined)
                    else:
                        self._reload(live)
        for event, name in events:
            self._notify(event, name)

    def _add(self, record: NodeRecord) -> bool:
        definition = definition_of(record)
        assert record.id is not None
        try:
            _, topology = resolve_topology(definition.topology)
            config = parse_config(definition.kubelet_config, definition.release)
            node = build_engine_node(definition.name, topology, config, self.clock)
        except NodeServiceError as err:
            log.error("simulated node %s cannot be rebuilt: %s", definition.name, err)
            self._skipped[definition.name] = int(record.version)
            return False
        live = Live(definition, record.id, node, topology, config)
        self._reload(live)
        self._nodes[definition.name] = live
        return True

    def _reload(self, live: Live, *, locked: bool = False) -> None:
        try:
            self.store.load(live, locked=locked)
        except (statefiles.StateFileError, SQLAlchemyError) as err:
            live.load_error = f"the node could not be loaded: {err}"
            live.broken = live.load_error
            log.error("simulated node %s: %s", live.definition.name, live.load_error)

    @contextlib.contextmanager
    def _change(self, live: Live, action: str) -> Iterator[node_repo.NodeWrite]:
        """The node's write transaction and directory lock, with the engine in sync; on any
        failure the engine goes back to the committed state and a mapped error is raised."""
        if live.broken is not None:
            raise NodeUnavailableError(f"{action} on node {live.definition.name!r}: {live.broken}")
        name = live.definition.name
        try:
            with node_repo.write(self.engine, live.record_id) as tx, self._dir_lock(name):
                if tx is None:
                    raise UnknownNodeError(name, sorted(self._nodes))
                if tx.version != live.version:  # changed through another worker
                    self._reload(live, locked=True)
                    if live.broken is not None:
                        raise NodeUnavailableError(f"{action} on node {name!r}: {live.broken}")
                try:
                    yield tx
                except BaseException:
                    self.store.restore_committed(live)
                    raise
        except (statefiles.StateFileError, SQLAlchemyError) as err:
            mapped = write_failure(err, name, action)
            log.error("%s", mapped.message)
            raise mapped from err

    def _dir_lock(self, name: str) -> contextlib.AbstractContextManager[object]:
        directory = self.store.node_dir(name)
        if directory is None:
            return contextlib.nullcontext()
        statefiles.ensure_dir(directory)
        return statefiles.StateDirLock(directory)

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
        record = NodeRecord(
            name=name,
            topology=definition.topology,
            topology_kind=kind,
            kubelet_config=kubelet_config,
            release=release,
            demo=demo,
            created_at=definition.created_at,
        )
        self._refresh()
        with self._lock:
            if name in self._nodes:
                raise NodeExistsError(name)
            try:
                with node_repo.create(self.engine, record) as tx:
                    assert record.id is not None
                    live = Live(definition, record.id, node, topo, config)
                    self.store.forget_files(name)  # leftovers of an older node of that name
                    with self._dir_lock(name):
                        self.store.commit(live, tx)
            except IntegrityError:
                raise NodeExistsError(name) from None
            except (statefiles.StateFileError, SQLAlchemyError) as err:
                raise write_failure(err, name, "creating the node") from err
            self._nodes[name] = live
        self._notify("created", name)
        return definition

    def delete(self, name: str) -> None:
        if self._observed(name) is not None:
            raise ReadOnlyNodeError(name, "delete it")
        self._refresh()
        with self._lock:
            live = self._live(name)
            try:
                node_repo.delete_node(self.engine, live.record_id)
            except SQLAlchemyError as err:
                raise write_failure(err, name, "deleting the node") from err
            del self._nodes[name]
            self.store.forget_files(name)
        self._notify("deleted", name)

    # -- pods ------------------------------------------------------------------------------
    def admit(self, name: str, manifest: str, *, dry_run: bool = False) -> AdmissionBatch:
        """Admit (or with ``dry_run`` only judge) every pod of ``manifest`` in order."""
        if (obs := self._observed(name)) is not None:
            if dry_run:  # judged on a scratch copy of its recorded state (the fleet's fit)
                return obs.dry_run(manifest)
            raise ReadOnlyNodeError(name, "admit pods on it")
        self._refresh()
        with self._lock:
            live = self._live(name)
            pods = parse_manifests(manifest, live.config)
            check_hint_budget(live, pods, self.hint_budget)
            action = "the dry run" if dry_run else "the admission"
            with self._change(live, action) as tx:
                check_conflicts(live, pods)
                if dry_run:
                    results = dry_run_results(live, pods, self.clock)
                else:
                    results = [live.node.admit(p) for p in pods]
                batch = str(uuid.uuid4())
                records = log_records(live, batch, pods, results, dry_run)
                tx.add(records)
                if dry_run:
                    tx.trim_dry_runs()
                    tx.commit()
                else:
                    admitted = any(r.admitted for r in results)
                    self.store.commit(live, tx, write_files=admitted)
                    live.rejected += sum(1 for r in results if not r.admitted)
            entries = [self._log_entry(live, r) for r in records]
            return AdmissionBatch(name, batch, dry_run, tuple(results), tuple(entries))

    def remove_pod(self, name: str, namespace: str, pod_name: str) -> AdmissionLogEntry:
        """Remove a pod from the node (all its containers); its CPUs and memory go back."""
        if self._observed(name) is not None:
            raise ReadOnlyNodeError(name, "remove its pods")
        self._refresh()
        with self._lock:
            live = self._live(name)
            with self._change(live, "the removal") as tx:
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
                tx.add([record])
                self.store.commit(live, tx)
            return self._log_entry(live, record)

    # -- durability ------------------------------------------------------------------------
    def durability_problems(self) -> list[str]:
        """Why some node cannot be written now (its state directory refuses a write, or its
        state could not be loaded); empty when every node can take a change."""
        self._refresh()
        with self._lock:
            nodes = list(self._nodes.values())
        problems = []
        for live in nodes:
            if live.broken is not None:
                problems.append(f"node {live.definition.name}: {live.broken}")
                continue
            why = self.store.probe(live.definition.name)
            if why is not None:
                problems.append(
                    f"node {live.definition.name}: state files cannot be written: {why}"
                )
        return problems

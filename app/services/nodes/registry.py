"""The registry of a process's simulated nodes: the live ``Node`` engines it holds, kept in step
with the database, and the write transaction every change runs in. ``NodeService``
(``app.services.nodes.service``: create, delete, admit, remove) holds one and hands it to its
reads (``app.services.nodes.reads``) and restarts (``app.services.nodes.restart``).

**Many workers.** Every call first compares the versions in the database with the engines it
holds (one small query, ``_refresh``): nodes created, deleted or changed through another worker
are loaded, dropped or reloaded from their state files (written by the worker that held the
lock). A definition that cannot be built is skipped (logged) until its version changes.

**Durable or nothing.** ``change`` is a node's database write transaction (a row lock on
PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite: changes through any worker or replica are
serialised, so no CPU is given twice) and its state directory's lock, with the engine caught up
first. If anything fails inside it the engine is put back to the last committed state and the
error is mapped to ``StorageFullError`` (507), ``NodeUnavailableError`` (503) or
``DatabaseRefusedError`` (422), each naming the cause.

Only simulated nodes live here; the catalog (``app.services.nodes.catalog``) lists them beside
the observed node and the others. Listeners hear of nodes ``created`` and ``deleted`` here or
through another worker.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypedDict, Unpack

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.adapters import statefiles
from app.adapters.db import node_repo, outage
from app.adapters.db.tables import NodeRecord
from app.services.nodes.errors import (
    NodeServiceError,
    NodeUnavailableError,
    UnknownNodeError,
    write_failure,
)
from app.services.nodes.inputs import (
    NodeDefinition,
    build_engine_node,
    definition_of,
    micro_clock,
    parse_config,
    resolve_topology,
)
from app.services.nodes.store import Live, NodeStore
from app.services.simulation import state_files_of

log = logging.getLogger(__name__)


class RegistryOptions(TypedDict, total=False):
    """How a registry (and the ``NodeService`` holding it) keeps its nodes: ``state_dir`` for
    their kubelet state files (``None``: none written), the ``clock`` of admissions and the
    topology manager's ``hint_budget`` (``app.domain.hint_budget``; ``None``: unbounded)."""

    state_dir: Path | None
    clock: Callable[[], float] | None
    hint_budget: int | None


class NodeRegistry:
    """The simulated nodes held by one process and their synchronisation. Thread-safe."""

    def __init__(self, engine: Engine, **options: Unpack[RegistryOptions]) -> None:
        state_dir = options.get("state_dir")
        clock = options.get("clock")
        hint_budget = options.get("hint_budget")
        self.engine = engine
        self.hint_budget = hint_budget  # see app.domain.hint_budget; None: unbounded
        self.state_dir = None if state_dir is None else Path(state_dir)
        self.clock = clock if clock is not None else micro_clock
        self.store = NodeStore(engine, self.state_dir, self.clock)
        self.lock = threading.RLock()
        #: The live engines by node name (read and changed under ``lock``).
        self.nodes: dict[str, Live] = {}
        self._skipped: dict[str, int] = {}  # definitions that cannot be built, by version
        self.started = False
        self._listeners: list[Callable[[str, str], None]] = []
        #: Whether a node of another kind has this name (set by the catalog): no simulated
        #: node may be created under it.
        self.taken: Callable[[str], bool] = lambda name: False

    # -- listeners ---------------------------------------------------
    def add_listener(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(event, name)`` after a simulated node is ``created`` or
        ``deleted`` (here or through another worker; outside the registry lock)."""
        with self.lock:
            self._listeners.append(listener)

    def notify(self, event: str, name: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(event, name)
            except Exception:
                log.exception("node listener failed on %s %s", event, name)

    # -- registry ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    def simulated_names(self) -> list[str]:
        self.refresh()
        with self.lock:
            return sorted(self.nodes)

    def definition(self, name: str) -> NodeDefinition:
        return self.fresh(name).definition

    def state_files(self, name: str) -> dict[str, str]:
        """A simulated node's state directory as its kubelet would write it now (file name ->
        text: ``cpu_manager_state``, ``memory_manager_state``, ``pods.json``)."""
        live = self.fresh(name)
        with self.lock:
            return state_files_of(live.node)

    def log_node_id(self, name: str) -> int:
        """The database id of a simulated node (``node_id`` of its admission log rows)."""
        return self.fresh(name).record_id

    def node_dir(self, name: str) -> Path | None:
        return self.store.node_dir(name)

    def live(self, name: str) -> Live:
        """Node ``name`` as held (call under ``lock``, after ``refresh``)."""
        live = self.nodes.get(name)
        if live is None:
            raise UnknownNodeError(name, sorted(self.nodes))
        return live

    def fresh(self, name: str) -> Live:
        """Node ``name``, caught up with the database first."""
        self.refresh()
        with self.lock:
            return self.live(name)

    # -- synchronisation and the write transaction ------------------------------------------
    def refresh(self) -> None:
        """Catch up with the database: nodes created, deleted or changed elsewhere."""
        if not self.started:
            return
        try:
            current = node_repo.versions(self.engine)
        except SQLAlchemyError as err:  # serve what is held; /readyz reports the database
            if outage.unavailable(err):
                outage.OUTAGE.noticed(err)  # one line per outage, not one per request
            else:
                log.warning("node versions could not be read: %s", str(err).splitlines()[0])
            return
        events: list[tuple[str, str]] = []
        with self.lock:
            for name in list(self.nodes):
                v = current.get(name)
                if v is None or v.id != self.nodes[name].record_id:
                    del self.nodes[name]
                    events.append(("deleted", name))
            new = [
                n for n, v in current.items()
                if n not in self.nodes and self._skipped.get(n) != v.version
            ]  # fmt: skip
            if new:
                for record in node_repo.definitions(self.engine, new):
                    if self._add(record):
                        events.append(("created", record.name))
            changed = [n for n, live in self.nodes.items() if current[n].version != live.version]
            if changed:
                self._follow(changed)
        for event, name in events:
            self.notify(event, name)

    def _follow(self, changed: list[str]) -> None:
        """Take the changes other workers made to these nodes: a node whose release or
        configuration changed (a restart) is built again, any other is reloaded."""
        records = {r.name: r for r in node_repo.definitions(self.engine, changed)}
        for name in changed:
            live, redefined = self.nodes[name], records.get(name)
            if redefined is not None and (
                redefined.release != live.definition.release
                or redefined.kubelet_config != live.definition.kubelet_config
            ):
                del self.nodes[name]
                self._add(redefined)
            else:
                self._reload(live)

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
        self.nodes[definition.name] = live
        return True

    def _reload(self, live: Live, *, locked: bool = False) -> None:
        try:
            self.store.load(live, locked=locked)
        except (statefiles.StateFileError, SQLAlchemyError) as err:
            if outage.unavailable(err):
                # The database is away for now: this request fails (503), and the version no
                # row has makes the next refresh or change load the node again.
                live.version = -1
                raise
            live.load_error = f"the node could not be loaded: {err}"
            live.broken = live.load_error
            log.error("simulated node %s: %s", live.definition.name, live.load_error)

    @contextlib.contextmanager
    def change(self, live: Live, action: str) -> Iterator[node_repo.NodeWrite]:
        """The node's write transaction and directory lock, with the engine in sync; on any
        failure the engine goes back to the committed state and a mapped error is raised."""
        if live.broken is not None:
            raise NodeUnavailableError(f"{action} on node {live.definition.name!r}: {live.broken}")
        name = live.definition.name
        try:
            with node_repo.write(self.engine, live.record_id) as tx, self.dir_lock(name):
                if tx is None:
                    raise UnknownNodeError(name, sorted(self.nodes))
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
            if outage.unavailable(err):
                outage.OUTAGE.noticed(err)  # one line per outage, not one per request
            else:
                log.error("%s", mapped.message)
            raise mapped from err

    def dir_lock(self, name: str) -> contextlib.AbstractContextManager[object]:
        directory = self.store.node_dir(name)
        if directory is None:
            return contextlib.nullcontext()
        statefiles.ensure_dir(directory)
        return statefiles.StateDirLock(directory)

    # -- durability ------------------------------------------------------------------------
    def durability_problems(self) -> list[str]:
        """Why some node cannot be written now (its state directory refuses a write, or its
        state could not be loaded); empty when every node can take a change."""
        self.refresh()
        with self.lock:
            nodes = list(self.nodes.values())
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

"""Persistence of the simulated nodes: loading a node from its state files and its log, and
making a change durable in both as one unit.

**A change** (``NodeStore.commit``) runs inside the node's database write transaction
(``app.adapters.db.node_repo.write``: the cross-process lock) and its state directory's
``StateDirLock``: the log rows are flushed (the database refuses bad values before any file is
touched), the three files are staged through the commit journal (``app.adapters.statejournal``),
the database commits (the decision), then the staged files are renamed into place. If anything
fails before the commit the staged files are removed, the transaction rolled back, and the
caller puts the engine back to the last committed state (``restore_committed``): nothing of the
change remains. After the commit the change stands: a crash or a failed rename is finished by
the journal when the node is next loaded.

**Loading** (``NodeStore.load``), at start and whenever another worker committed a newer
version: an interrupted write is first finished or undone by the journal against the
database's version, temporary files of crashed writes are removed, then the node is restored
from its files. The rule of reconciliation: *the state files are what a kubelet would run on;
the log records what was acknowledged.* The files are restored as they are; each pod on which
they and the log disagree is reported in the node's ``load_error`` (shown on its page and in
its JSON), and no CPU is moved to make them agree. Only a node without any state file is
rebuilt by replaying its log (nothing is running that could move); files that cannot be
restored at all leave the node refusing changes (``NodeUnavailableError``) until it is deleted.

A change costs about the same whatever the number of pods already on the node: each node keeps
what its last render encoded (``RenderCache``): ``pods.json``'s entry of each pod (by uid) and
the document around them, and the kubelet files' incremental writer
(``app.domain.node.state_files.StateFilesWriter``). The bytes equal ``simulation.state_files_of``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from app.adapters import statefiles, statejournal
from app.adapters.db import node_repo
from app.domain.checkpoint.cpu import CPU_FILE_NAME
from app.domain.checkpoint.memory import MEMORY_FILE_NAME
from app.domain.kubelet_config import KubeletConfig
from app.domain.node.model import Node
from app.domain.node.pods import pod_to_manifest, pods_from_document
from app.domain.node.state import restore_node
from app.domain.node.state_files import (
    PODS_FILE_NAME,
    PODS_FORMAT,
    NodeStateError,
    StateFilesWriter,
)
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import PodManifestError
from app.domain.topology.model import CPUTopology
from app.domain.topology.record import topology_to_record
from app.services import simulation
from app.services.node_views import NodeViews
from app.services.nodes.inputs import NodeDefinition, build_engine_node

log = logging.getLogger(__name__)

STATE_FILES = (CPU_FILE_NAME, MEMORY_FILE_NAME, PODS_FILE_NAME)


@dataclass(slots=True, eq=False)
class Live:
    """A node of the registry: its definition, engine, committed files and cached views."""

    definition: NodeDefinition
    record_id: int
    node: Node
    topology: CPUTopology
    config: KubeletConfig
    version: int = 0  # the database version this engine reflects
    views: NodeViews | None = None
    views_version: int = -1
    rejected: int = 0
    load_error: str | None = None
    broken: str | None = None  # why changes are refused (unrestorable files)
    files: dict[str, str] | None = None  # the committed state files
    # What this process knows its directory holds (written by it since the last load): a
    # change stages only the files whose text differs.
    on_disk: dict[str, str] | None = None
    rendered: RenderCache = field(default_factory=lambda: RenderCache())


@dataclass(slots=True, eq=False)
class RenderCache:
    """What the last render of a node's files encoded, for the next one to reuse."""

    fragments: dict[str, str] = field(default_factory=dict)  # uid -> its entry in pods.json
    # The pods of the last render, in order, and their entries joined: an admission appends
    # one (a 250-pod list is about 250 KB, copied once).
    order: tuple[str, ...] = ()
    body: str = ""
    # pods.json around the entries, with the configuration and topology it was made from
    frame: tuple[KubeletConfig, CPUTopology, str, str] | None = None
    writer: StateFilesWriter = field(default_factory=StateFilesWriter)

    def clear(self) -> None:
        """Forget ``pods.json``'s parts (the node's engine or configuration was replaced; the
        kubelet files' writer checks what it reuses)."""
        self.fragments.clear()
        self.order = ()
        self.body = ""
        self.frame = None


_PODS_MARK = "\x00pods\x00"


def _pods_frame(node: Node, cache: RenderCache) -> tuple[str, str]:
    """``pods.json`` before and after its list of pods: the rest of the document (machine,
    configuration) as ``pods_document`` gives it, made once per configuration."""
    frame = cache.frame
    if frame is not None and frame[0] is node.config and frame[1] is node.topology:
        return frame[2], frame[3]
    doc = {
        "format": PODS_FORMAT,
        "node": node.name,
        "release": node.config.release,
        "topology": topology_to_record(node.topology),
        "kubeletConfig": node.config.to_dict(),
        "pods": _PODS_MARK,
    }
    head, _, tail = json.dumps(doc, indent=2).partition(json.dumps(_PODS_MARK))
    cache.frame = (node.config, node.topology, head, tail + "\n")
    return head, tail + "\n"


def _pod_entry(node: Node, uid: str, cache: RenderCache) -> str:
    """``pods.json``'s entry of pod ``uid`` (made once per pod: it never changes)."""
    text = cache.fragments.get(uid)
    if text is None:
        pod = node.pods[uid]
        entry = {"admittedAt": node.admitted_at.get(uid, 0.0), "manifest": pod_to_manifest(pod)}
        try:
            text = "    " + indented_json(entry, "\n    ")
        except TypeError:  # not plain JSON (a key that is not a string): the standard encoder
            text = "\n".join("    " + line for line in json.dumps(entry, indent=2).splitlines())
        cache.fragments[uid] = text
    return text


_escape = json.encoder.encode_basestring_ascii  # what json.dumps uses by default (C)
_INFINITY = float("inf")


def indented_json(value: Any, newline: str = "\n") -> str:
    """``json.dumps(value, indent=2)`` with ``newline`` before each line after the first (a
    newline and the indentation the document has around ``value``): the same text without
    the standard encoder's generators (about 3 times faster). Only plain values with string
    keys: ``TypeError`` for anything else."""
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, dict):
        return _json_object(value, newline)
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        inner = newline + "  "
        items = [_escape(v) if type(v) is str else indented_json(v, inner) for v in value]
        return "[" + inner + ("," + inner).join(items) + newline + "]"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float_json(value)
    raise TypeError(f"{type(value).__name__} is not a plain JSON value")


def _json_object(value: dict[Any, Any], newline: str) -> str:
    if not value:
        return "{}"
    inner = newline + "  "
    items = []
    for key, v in value.items():
        if not isinstance(key, str):
            raise TypeError(f"key {key!r} is not a string")
        items.append(
            _escape(key) + ": " + (_escape(v) if type(v) is str else indented_json(v, inner))
        )
    return "{" + inner + ("," + inner).join(items) + newline + "}"


def _float_json(value: float) -> str:
    """A float as ``json.dumps`` writes it (``allow_nan``: NaN and the infinities too)."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def pods_json(node: Node, cache: RenderCache) -> str:
    """``pods.json`` for ``node`` (as ``simulation.state_files_of`` writes it), reusing and
    updating the cached parts."""
    order = tuple(node.pods)
    last = cache.order
    if order[: len(last)] == last:  # pods only added since (compared in C)
        added = [_pod_entry(node, uid, cache) for uid in order[len(last) :]]
        body = ",\n".join([cache.body, *added] if last else added)
    else:
        body = ",\n".join([_pod_entry(node, uid, cache) for uid in order])
        for uid in [u for u in cache.fragments if u not in node.pods]:
            del cache.fragments[uid]
    cache.order, cache.body = order, body
    head, tail = _pods_frame(node, cache)
    if not order:
        return head + "[]" + tail
    return "".join((head, "[\n", body, "\n  ]", tail))


class NodeStore:
    """Loads nodes and commits their changes (see the module docstring)."""

    def __init__(self, engine: Engine, state_dir: Path | None, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.state_dir = state_dir
        self.clock = clock

    def node_dir(self, name: str) -> Path | None:
        return None if self.state_dir is None else self.state_dir / name

    def files_of(self, live: Live) -> dict[str, str]:
        files = live.rendered.writer.render(live.node)
        files[PODS_FILE_NAME] = pods_json(live.node, live.rendered)
        return files

    # -- changes ---------------------------------------------------------------------------
    def commit(self, live: Live, tx: node_repo.NodeWrite, *, write_files: bool = True) -> None:
        """Bump the version, stage the files (when the state changed), commit and put the
        files in place, as one unit; a failure up to the commit rolls everything back and is
        raised (the caller restores the engine with ``restore_committed``)."""
        version = tx.bump()
        directory = self.node_dir(live.definition.name)
        if directory is None or not write_files:
            if directory is not None:
                # What a change refused by the database staged for this version (and could not
                # remove) must not be taken for this change's by a later recovery.
                statejournal.recover(directory, version - 1)
            tx.commit()
            if write_files:  # no state directory: keep the committed state in memory only
                live.files = self.files_of(live)
            live.version = version
            return
        files = self.files_of(live)
        known = live.on_disk
        changed = {n: t for n, t in files.items() if known is None or known.get(n) != t}
        staged = statejournal.StagedFiles(directory, changed, version).prepare()
        try:
            tx.commit()
        except BaseException:
            staged.discard()
            live.on_disk = None
            raise
        live.files = files
        live.version = version
        try:
            staged.apply()
        except statefiles.StateFileError as err:
            # Committed, and the staged files are complete and synced: the node's next load
            # (its version no longer matches) finishes the renames through ``recover``.
            log.error("node %s: the committed files are not in place yet: %s", live.node.name, err)
            live.on_disk = None
            live.version = -1
            return
        live.on_disk = files

    def restore_committed(self, live: Live) -> None:
        """Put the engine back to its last committed state (after a failed change)."""
        fresh = build_engine_node(live.definition.name, live.topology, live.config, self.clock)
        try:
            if live.files is not None:
                self._restore_files(fresh, live.files)
            live.node = fresh
        except (NodeStateError, simulation.SimulationInputError) as err:  # our own files: a bug
            log.error("node %s: the committed state cannot be restored: %s", live.node.name, err)
            raise
        live.rendered.clear()
        live.views = None

    def _restore_files(self, node: Node, files: dict[str, str]) -> None:
        gate = node.config.gate("PodLevelResources")
        pods = pods_from_document(
            json.loads(files[PODS_FILE_NAME]), pod_level_resources_enabled=gate
        )
        restore_node(node, files, pods)

    # -- loading ---------------------------------------------------------------------------
    def load(self, live: Live, *, locked: bool = False) -> None:
        """(Re)build ``live``'s engine from its state files (or its log), reconcile the two and
        set ``version``, ``rejected``, ``files`` and ``load_error`` (``locked``: the caller
        holds the directory's lock already)."""
        directory = self.node_dir(live.definition.name)
        if directory is None:
            version = node_repo.node_version(self.engine, live.record_id) or 0
            live.load_error = "; ".join(self._rebuild(live)) or None
            live.version = version
            return
        lock = contextlib.nullcontext() if locked else statefiles.StateDirLock(directory)
        with lock:
            version = node_repo.node_version(self.engine, live.record_id) or 0
            notes = _recover(directory, version, live.definition.name)
            present = [n for n in _list_files(directory) if n in STATE_FILES]
            fresh = build_engine_node(live.definition.name, live.topology, live.config, self.clock)
            live.node = fresh
            live.rendered.clear()
            live.on_disk = None
            live.views = None
            live.broken = None
            if not present:
                notes += self._rebuild(live)
                if node_repo.acknowledged(node_repo.events(self.engine, live.record_id)):
                    notes.append("there were no state files; the node was rebuilt from its log")
                self._write_rebuilt(live, directory, version, notes)
            else:
                notes += self._restore(live, directory)
            live.version = version
            live.rejected = node_repo.rejected_count(self.engine, live.record_id)
            live.load_error = "; ".join(notes) or None
            if notes:
                log.warning("simulated node %s: %s", live.definition.name, live.load_error)

    def _restore(self, live: Live, directory: Path) -> list[str]:
        """Restore ``live``'s fresh engine from its state files; what differs from the log (or
        why the node is now refused changes)."""
        try:
            simulation.restore_from_dir(live.node, directory)
            live.files = self.files_of(live)
            return self._differences(live)
        except simulation.SimulationInputError as err:
            live.node = build_engine_node(
                live.definition.name, live.topology, live.config, self.clock
            )
            live.broken = (
                f"the state files could not be restored ({err}); changes are refused "
                "until the node is deleted (nothing was moved)"
            )
            return [live.broken]

    def _write_rebuilt(self, live: Live, directory: Path, version: int, notes: list[str]) -> None:
        files = self.files_of(live)
        try:
            statefiles.write_files(directory, files)
            live.files = live.on_disk = files
        except statefiles.StateFileError as err:
            notes.append(f"the state files could not be written: {err}")

    def _differences(self, live: Live) -> list[str]:
        """What the state files and the log disagree on (reported, never resolved)."""
        acked = node_repo.acknowledged(node_repo.events(self.engine, live.record_id))
        on_node = live.node.pods
        out = []
        for uid, pod in on_node.items():
            if uid not in acked:
                out.append(
                    f"pod {pod.key} ({uid}) holds resources in the state files but its "
                    "admission was never acknowledged in the log"
                )
        for uid, e in acked.items():
            if uid not in on_node:
                out.append(
                    f"pod {e.key} ({uid}) was acknowledged in the log but is not in the state "
                    "files (a kubelet would not run it)"
                )
        return out

    def _rebuild(self, live: Live) -> list[str]:
        """Admit the pods the log says are on the node, in their order, at their times; what
        could not be restored."""
        acked = node_repo.acknowledged(node_repo.events(self.engine, live.record_id))
        gate = live.config.gate("PodLevelResources")
        failures = []
        node = live.node
        clock = node.clock
        try:
            for uid, e in acked.items():
                try:
                    pod = pod_from_manifest(
                        json.loads(e.manifest), pod_level_resources_enabled=gate
                    )
                except (ValueError, PodManifestError) as err:
                    failures.append(f"{uid}: {err}")
                    continue
                node.clock = lambda at=e.at: at.timestamp()  # type: ignore[misc]
                result = node.admit(pod)
                if not result.admitted:
                    failures.append(f"{pod.key}: {result.reason}: {result.message}")
        finally:
            node.clock = clock
        live.rejected = node_repo.rejected_count(self.engine, live.record_id)
        if failures:
            return ["replaying the admission log did not restore every pod: " + "; ".join(failures)]
        return []

    # -- files -----------------------------------------------------------------------------
    def forget_files(self, name: str) -> None:
        """Remove the state files of a node (and its folder when nothing else is in it)."""
        directory = self.node_dir(name)
        if directory is None or not directory.is_dir():
            return
        with statefiles.StateDirLock(directory):
            statejournal.forget(directory)
            statejournal.clean_temp_files(directory)
            for file_name in STATE_FILES:
                try:
                    (directory / file_name).unlink(missing_ok=True)
                except OSError as err:
                    log.error("cannot remove %s: %s", directory / file_name, err)
        with contextlib.suppress(OSError):  # not empty (someone else's files) or gone
            directory.rmdir()

    def probe(self, name: str) -> str | None:
        """``None`` when the node's state directory takes a write now, else why not."""
        directory = self.node_dir(name)
        if directory is None:
            return None
        try:
            statejournal.probe(directory)
        except statefiles.StateFileError as err:
            return str(err)
        return None


def _list_files(directory: Path) -> list[str]:
    try:
        return statefiles.list_files(directory)
    except statefiles.StateFileError:
        return []


def _recover(directory: Path, version: int, name: str) -> list[str]:
    """Finish or roll back an interrupted commit of the node's directory (its journal) and
    remove temporary files; what was done, or why it could not be."""
    notes: list[str] = []
    try:
        done = statejournal.recover(directory, version)
        if done:
            notes.append(done)
        removed = statejournal.clean_temp_files(directory)
        if removed:
            log.info("node %s: removed %d temporary file(s)", name, removed)
    except statefiles.StateFileError as err:
        notes.append(f"the state directory could not be recovered: {err}")
    return notes

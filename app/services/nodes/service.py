"""Simulated nodes of the dashboard: ``NodeService``, the changes made to them (create, delete,
admit, dry-run, remove) on top of the registry of live ``Node`` engines
(``app.services.nodes.registry``).

One ``NodeService`` per process (``create_app`` builds it and calls ``start``). The database is
the source of truth: definitions, the admission log and each node's committed ``version``
(``app.adapters.db.node_repo``); allocation state lives in kubelet-format state files under
``state_dir/<node>`` (``cpu_manager_state``, ``memory_manager_state``, ``pods.json``, the files
``numascope simulate --state-dir`` reads). ``app.services.nodes.store`` loads nodes and makes
each change durable. ``NodeService`` holds the registry (``registry``), its reads (``reads``:
pages, JSON, PodResources, metrics) and its restarts (``restarts``).

**Durable or nothing.** A change is computed on the node's engine inside the node's write
transaction (``NodeRegistry.change``: changes through any worker or replica are serialised, so
no CPU is given twice); it is acknowledged only after the log rows, the new version and the
state files are all committed. If anything fails the files and the transaction are rolled back
and the engine is put back to the last committed state; the caller gets ``StorageFullError``
(507), ``NodeUnavailableError`` (503) or ``DatabaseRefusedError`` (422), each naming the cause.

A rejected pod is not an error: ``admit`` returns the verdicts (and logs them); only bad input
raises (``NodeInputError`` naming the field, ``PodConflictError`` for a pod already on the
node, ``UnknownNodeError``/``UnknownPodError`` for names that do not exist). Only simulated
nodes live here: the catalog (``app.services.nodes.catalog``) lists them beside the observed
node and the others, and refuses changes to nodes that cannot be changed. Demo nodes plug in
from outside (``start(seed=…)``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Unpack

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from app.adapters import statefiles
from app.adapters.db import node_repo
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.services.node_views import AdmissionLogEntry
from app.services.nodes.admission import check_hint_budget, log_records, removal_record
from app.services.nodes.errors import (
    NodeExistsError,
    NodeInputError,
    UnknownPodError,
    write_failure,
)
from app.services.nodes.inputs import (
    AdmissionBatch,
    NodeDefinition,
    build_engine_node,
    check_node_name,
    parse_config,
    parse_manifests,
    record_of,
    resolve_topology,
)
from app.services.nodes.judge import judge
from app.services.nodes.reads import NodeReads
from app.services.nodes.registry import NodeRegistry, RegistryOptions
from app.services.nodes.restart import NodeRestarts
from app.services.nodes.store import Live


class NodeService:
    """The simulated nodes of one process and the changes made to them. Thread-safe. Holds
    the registry and its synchronisation (``registry``), the reads (``reads``) and restarts
    under another kubelet release (``restarts``)."""

    def __init__(self, engine: Engine, **options: Unpack[RegistryOptions]) -> None:
        self.registry = NodeRegistry(engine, **options)
        self.reads = NodeReads(self.registry)
        self.restarts = NodeRestarts(self.registry, self.reads)

    # -- start-up ------------------------------------------------------------------------
    def start(self, *, seed: Callable[[NodeService], None] | None = None) -> None:
        """Load every node from the database and its state files (reconciling the two, see
        ``node_store``); then, when there are no nodes, let ``seed`` create some (the demo)."""
        registry = self.registry
        with registry.lock:
            registry.started = True
            registry.refresh()
            empty = not registry.nodes
        if seed is not None and empty:
            seed(self)

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
        registry = self.registry
        check_node_name(name)
        if registry.taken(name):
            raise NodeExistsError(name)
        kind, topo = resolve_topology(topology)
        if not isinstance(kubelet_config, str):
            raise NodeInputError("kubeletConfig: expected YAML or JSON text", "kubeletConfig")
        config = parse_config(kubelet_config, release)
        node = build_engine_node(name, topo, config, registry.clock)
        definition = NodeDefinition(name, topology.strip(), kind, kubelet_config, release, demo)
        record = record_of(definition)
        registry.refresh()
        with registry.lock:
            if name in registry.nodes:
                raise NodeExistsError(name)
            try:
                with node_repo.create(registry.engine, record) as tx:
                    assert record.id is not None
                    live = Live(definition, record.id, node, topo, config)
                    registry.store.forget_files(name)  # leftovers of an older node of that name
                    with registry.dir_lock(name):
                        registry.store.commit(live, tx)
            except IntegrityError:
                raise NodeExistsError(name) from None
            except (statefiles.StateFileError, SQLAlchemyError) as err:
                raise write_failure(err, name, "creating the node") from err
            registry.nodes[name] = live
        registry.notify("created", name)
        return definition

    def delete(self, name: str) -> None:
        registry = self.registry
        registry.refresh()
        with registry.lock:
            live = registry.live(name)
            try:
                node_repo.delete_node(registry.engine, live.record_id)
            except SQLAlchemyError as err:
                raise write_failure(err, name, "deleting the node") from err
            del registry.nodes[name]
            registry.store.forget_files(name)
        registry.notify("deleted", name)

    # -- pods ------------------------------------------------------------------------------
    def admit(self, name: str, manifest: str, *, dry_run: bool = False) -> AdmissionBatch:
        """Admit (or with ``dry_run`` only judge) every pod of ``manifest`` in order."""
        registry = self.registry
        registry.refresh()
        with registry.lock:
            live = registry.live(name)
            pods = parse_manifests(manifest, live.config)
            check_hint_budget(live, pods, registry.hint_budget)
            action = "the dry run" if dry_run else "the admission"
            with registry.change(live, action) as tx:
                results = judge(live.node, pods, commit=not dry_run)
                batch = str(uuid.uuid4())
                tx.add_rows(log_records(live, batch, pods, results, dry_run))
                if dry_run:
                    tx.trim_dry_runs(batch)  # this submission is kept whole
                    tx.commit()
                else:
                    admitted = any(r.admitted for r in results)
                    registry.store.commit(live, tx, write_files=admitted)
                    live.rejected += sum(1 for r in results if not r.admitted)
            return AdmissionBatch(name, batch, dry_run, tuple(results))

    def remove_pod(self, name: str, namespace: str, pod_name: str) -> AdmissionLogEntry:
        """Remove a pod from the node (all its containers); its CPUs and memory go back."""
        registry = self.registry
        registry.refresh()
        with registry.lock:
            live = registry.live(name)
            with registry.change(live, "the removal") as tx:
                pod = live.node.find_pod(f"{namespace}/{pod_name}")
                if pod is None:
                    raise UnknownPodError(name, namespace, pod_name)
                live.node.remove(pod.uid)
                record = removal_record(live, str(uuid.uuid4()), pod)
                tx.add([record])
                registry.store.commit(live, tx)
            return self.reads.log_entry(live, record)

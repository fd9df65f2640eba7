"""Kubelet restarts, upgrades and downgrades rehearsed on the dashboard's nodes (the use case
behind ``POST /api/v1/nodes/{node}/restart`` and the node page's rehearsal panel).

A simulated node's committed state files and pods go through ``app.domain.restart`` under the
chosen release and gate, on a fresh engine: the node itself is untouched by a rehearsal (dry
run, or a kubelet that does not start). **Applying** one makes the node run that release from
then on, as one durable change (``NodeRegistry.change``): the definition's release (and its
configuration when the gate was changed) in the database, the restarted engine, its state
files in the release's formats, a ``restart`` log row (``restart_row``: the releases and
configurations before and after, which the history replays and undo reverses) and a ``remove``
log row for each pod the restarted kubelet rejected (it no longer runs; the log and the files
keep agreeing).

An **observed** node is only ever rehearsed on a copy, in memory: its kubelet's files are read
with the chosen release's reader and start-up validation, but its pods' specs are not known
here (PodResources reports assignments, not requests), so no pod is re-admitted and the answer
says so; nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from app.adapters.db import node_repo
from app.adapters.db.tables import ACTION_RESTART, AdmissionRecord, utc_now
from app.contracts.base import checked
from app.contracts.restart import RestartReport
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError
from app.domain.node.model import Node
from app.domain.node.state_files import GATE
from app.domain.restart import (
    REJECTED,
    RestartInputError,
    RestartResult,
    restart_for,
)
from app.services.node_views import NodeMapView, NodeViews, node_topology_view
from app.services.nodes.admission import removal_record
from app.services.nodes.errors import NodeInputError, NodeUnavailableError
from app.services.nodes.inputs import pod_memory_requests
from app.services.nodes.store import Live
from app.services.nodes.target_config import (
    check_release,
    config_with_gate,
    gate_known,
    restart_config,
)

if TYPE_CHECKING:
    from app.services.nodes.reads import NodeReads
    from app.services.nodes.registry import NodeRegistry
    from app.services.observe.observer import NodeObserver


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """A restart of one node: the kubelet's answer, the CPU map before and after."""

    node: str
    result: RestartResult
    dry_run: bool
    applied: bool
    before: NodeMapView
    after: NodeMapView | None
    observed: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": self.node}
        out.update(self.result.to_dict())
        out.update(
            {
                "dryRun": self.dry_run,
                "applied": self.applied,
                "observed": self.observed,
                "note": self.note,
            }
        )
        return checked(RestartReport, out)


OBSERVED_NOTE = (
    "an observed node is rehearsed on a copy of its kubelet's state files, in memory: the "
    "release's reader and start-up validation run, but the pods' specs are not known here "
    "(PodResources reports assignments, not requests), so no pod is re-admitted; nothing "
    "was written"
)


class NodeRestarts:
    """Restarts of a registry's nodes under another kubelet release (``NodeService.restarts``);
    ``reads`` draws the maps before and after."""

    def __init__(self, registry: NodeRegistry, reads: NodeReads) -> None:
        self.registry = registry
        self.reads = reads
        self.store = registry.store

    def restart(
        self,
        name: str,
        release: str,
        *,
        dry_run: bool = False,
        pod_level_resource_managers: bool | None = None,
    ) -> Rehearsal:
        """Restart node ``name`` under ``release`` (see the module docstring). Raises
        ``NodeInputError`` (422) for a release or configuration the kubelet would refuse."""
        gate = pod_level_resource_managers
        self.registry.refresh()
        with self.registry.lock:
            live = self.registry.live(name)
            if live.broken is not None:
                raise NodeUnavailableError(f"the restart of node {name!r}: {live.broken}")
            if dry_run:
                before = self.reads.views_of(live).map
                result, _, text = self._compute(live, release, gate)
                return Rehearsal(name, result, True, False, before, self._after(live, result, text))
            with self.registry.change(live, "the restart") as tx:
                # In the write transaction: the engine is the committed one, whatever another
                # worker did since the refresh (a redefinition is not merged: retry).
                record = tx.record
                if (record.release, record.kubelet_config) != (
                    live.definition.release,
                    live.definition.kubelet_config,
                ):
                    raise NodeUnavailableError(
                        f"the restart of node {name!r}: the node was redefined through another "
                        "worker meanwhile; try again"
                    )
                before = self.reads.views_of(live).map
                result, config, text = self._compute(live, release, gate)
                applied = result.started and result.node is not None
                if applied:
                    self._apply(live, tx, result, config, text)
            return Rehearsal(name, result, False, applied, before, self._after(live, result, text))

    def _compute(
        self, live: Live, release: str, gate: bool | None
    ) -> tuple[RestartResult, KubeletConfig, str]:
        """The restart of ``live``'s committed files and pods (its engine is not touched)."""
        name = live.definition.name
        target, text = restart_config(
            live.definition.kubelet_config, live.config.release, release, gate
        )
        config = target.config
        files = self.store.files_of(live)
        pods = [(p, live.node.admitted_at.get(uid, 0.0)) for uid, p in live.node.pods.items()]
        directory = self.store.node_dir(name)
        try:
            result = restart_for(
                target,
                live.topology,
                files,
                pods,
                state_dir=str(directory) if directory is not None else "",
                name=name,
                previous_release=live.config.release,
                clock=live.node.clock,
            )
        except RestartInputError as err:  # our own committed files: a bug
            raise NodeUnavailableError(f"the restart of node {name!r}: {err.message}") from err
        except KubeletConfigError as err:
            raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None
        return result, config, text

    def _after(self, live: Live, result: RestartResult, text: str) -> NodeMapView | None:
        return None if result.node is None else self._map_of(live, result.node, text)

    def _map_of(self, live: Live, node: Node, text: str) -> NodeMapView:
        views = NodeViews(
            node.snapshot(),
            node=live.definition.name,
            topology=node_topology_view(
                live.topology, live.definition.topology, live.definition.topology_kind
            ),
            created_at=live.definition.created_at,
            kubelet_config_text=text,
            demo=live.definition.demo,
            pod_memory_requests={uid: pod_memory_requests(p) for uid, p in node.pods.items()},
        )
        return views.map

    def _apply(
        self,
        live: Live,
        tx: node_repo.NodeWrite,
        result: RestartResult,
        config: KubeletConfig,
        text: str,
    ) -> None:
        """Inside the node's write transaction: the new definition, a removal row per pod the
        restarted kubelet rejected, the restarted engine and its files, as one commit."""
        assert result.node is not None
        batch = str(uuid.uuid4())
        rows = [restart_row(live, batch, config, text)]
        rows += [
            removal_record(live, batch, pod)
            for p in result.pods
            if p.outcome == REJECTED and (pod := live.node.pods.get(p.uid)) is not None
        ]
        tx.redefine(release=config.release, kubelet_config=text)
        tx.add(rows)
        with _swapped(live, result.node, config, text):
            self.store.commit(live, tx)


def rehearse_observed(observed: NodeObserver, release: str, gate: bool | None) -> Rehearsal:
    """The rehearsal of the observed node: its kubelet's files on a copy, in memory (see
    the module docstring)."""
    check_release(release)
    views: NodeViews = observed.views()
    snapshot = views.snapshot
    base = snapshot.config.to_dict()
    if gate is None:
        gate = snapshot.config.gate(GATE)
    target = config_with_gate(base, release, gate)
    files, state_dir = observed.state_file_copies()
    try:
        result = restart_for(
            target,
            snapshot.topology,
            files,
            None,
            state_dir=state_dir,
            name=observed.name,
            previous_release=snapshot.config.release,
        )
    except KubeletConfigError as err:
        raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None
    return Rehearsal(
        observed.name, result, True, False, views.map, None, observed=True, note=OBSERVED_NOTE
    )


def restart_row(live: Live, batch: str, config: KubeletConfig, text: str) -> AdmissionRecord:
    """The log row of an applied restart: which kubelet ran before and which runs after."""
    before, after = live.config.release, config.release
    manifest = {
        "fromRelease": before,
        "fromConfig": live.definition.kubelet_config,
        "toRelease": after,
        "toConfig": text,
        "podLevelResourceManagers": config.gate(GATE) if gate_known(after) else None,
    }
    return AdmissionRecord(
        node_id=live.record_id,
        batch=batch,
        action=ACTION_RESTART,
        namespace="",
        name="kubelet",
        uid="",
        admitted=True,
        message=f"kubelet {before} \u2192 {after}",
        manifest=json.dumps(manifest, sort_keys=True),
        created_at=utc_now(),
    )


@contextlib.contextmanager
def _swapped(live: Live, node: Node, config: KubeletConfig, text: str) -> Iterator[None]:
    """Put the restarted engine and definition in ``live``; back as they were on failure (so
    that the caller restores the engine the committed files belong to)."""
    saved = (live.node, live.config, live.definition)
    live.node, live.config = node, config
    live.definition = replace(live.definition, release=config.release, kubelet_config=text)
    live.rendered.clear()
    live.views = None
    try:
        yield
    except BaseException:
        live.node, live.config, live.definition = saved
        live.rendered.clear()
        raise

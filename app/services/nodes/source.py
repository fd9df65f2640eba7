"""``NodeSource``: what every node answers, whichever kind it is — a stored simulated node
(``app.services.nodes.stored``), the node this process observes (``observed``), one of the
hub's demo-fleet nodes (``demo_fleet``) or a remote agent's node (``remote``). Routes, the CLI
and the hub get a source from the catalog (``app.services.nodes.catalog``) and ask it; none of
them asks which kind of node it is. A source that can be changed (stored simulated nodes) is
also a ``WritableNodeSource``: it admits, removes and restarts.

Every answer has one shape whoever gives it: the page and JSON view models of
``app.services.node_views``, PodResources in the canonical proto3 JSON mapping, the dry run as
an ``AdmissionBatch`` (judged by ``app.services.nodes.judge``), the upgrade verdict as the
inspector's per-node document (``app.services.upgrade.node_verdict``) and the restart rehearsal
as a ``Rehearsal``. Nodes that have no admission log (observed, demo fleet, remote) answer an
empty one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from app.services import node_views

if TYPE_CHECKING:
    from app.services.encoded_json import EncodedJSON
    from app.services.nodes.inputs import AdmissionBatch
    from app.services.nodes.restart import Rehearsal


@runtime_checkable
class NodeSource(Protocol):
    """One node, read-only (see the module docstring)."""

    @property
    def name(self) -> str: ...

    # -- views: the page and its JSON twin come from the same view model
    def views(self) -> node_views.NodeViews: ...
    def summary(self) -> node_views.NodeSummary: ...
    def node_view(self, *, batch: str | None = None) -> node_views.NodeView: ...
    def node_view_json(self, *, batch: str | None = None) -> EncodedJSON: ...
    def node_detail(self) -> node_views.NodeDetail: ...
    def node_detail_json(self) -> EncodedJSON: ...
    def pod_view(self, namespace: str, name: str) -> node_views.PodView: ...
    def pod_view_json(self, namespace: str, name: str) -> EncodedJSON: ...
    def admissions(
        self, *, limit: int = 100, batch: str | None = None
    ) -> list[node_views.AdmissionLogEntry]: ...
    def state_files(self) -> dict[str, str]:
        """The node's state directory as its kubelet would write it now (file name -> text:
        ``cpu_manager_state``, ``memory_manager_state``, ``pods.json``); ``ReadOnlyNodeError``
        for a node whose files are a real kubelet's (observed, remote)."""
        ...

    def watch_token(self) -> tuple[str, str]:
        """The node's kind as the watch API names it and a token that changes exactly when
        its page would (``app.services.watch``)."""
        ...

    # -- PodResources (canonical proto3 JSON)
    def podresources_list_json(self) -> EncodedJSON: ...
    def podresources_get_json(self, namespace: str, name: str) -> EncodedJSON: ...
    def allocatable_json(self) -> EncodedJSON: ...
    def nrt(self, fingerprint_method: str) -> dict[str, Any]:
        """The node as a ``topology.node.k8s.io/v1alpha2`` NodeResourceTopology
        (``app.services.nrt``)."""
        ...

    # -- questions: a dry run of pods, the upgrade verdict, the restart rehearsal
    def dry_run(self, manifest: str) -> AdmissionBatch: ...
    def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]: ...
    def rehearse(self, release: str, gate: bool | None) -> Rehearsal: ...


@runtime_checkable
class WritableNodeSource(NodeSource, Protocol):
    """A node that can be changed: admissions, removals and kubelet restarts are kept."""

    def admit(self, manifest: str) -> AdmissionBatch: ...
    def remove_pod(self, namespace: str, name: str) -> node_views.AdmissionLogEntry: ...
    def restart(self, release: str, gate: bool | None) -> Rehearsal: ...
    def delete(self) -> None: ...

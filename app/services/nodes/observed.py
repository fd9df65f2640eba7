"""The node this process observes as a ``NodeSource`` (``ObservedSource``: read-only, it holds
the ``app.services.observe.observer.NodeObserver`` by reference), and its dry runs.

Views, summary and PodResources are the observer's (PodResources: what the kubelet answered,
not a rebuild); the upgrade verdict is the checkpoint inspector's on the kubelet's own root dir
(``app.services.upgrade.check_observed``); the restart rehearsal runs on an in-memory copy of
its state files (``app.services.nodes.restart.rehearse_observed``). It has no admission log.

**Dry runs.** The pod is judged by an engine built from a *copy* of what the
node's kubelet recorded — its topology (sysfs), its KubeletConfiguration and its state files,
read and validated the way a starting kubelet of its release reads them
(``app.domain.node.state.restore_managers``). The kubelet and its files are never touched; the
copy is thrown away after the answer. Checkpoint entries of pods the kubelet no longer runs
(the observation's stale entries) are released first, as that kubelet's ``removeStaleState``
does at the start of its next admission.

The answer has the shape of a simulated node's dry run (``AdmissionBatch.to_dict``), so a hub
fanning a pod out over a fleet gets one format from every node. Conflicts and the ordered
admits are the one judge's (``app.services.nodes.judge``): a pod whose name is on the node is
refused as ``metadata.name`` before its uid is compared, as on every other node.

The dry run, rehearsal and upgrade machinery (the engine, and the database tables it builds
on) is imported on first use: an agent that serves its summary never loads it (issue 20 pt 7).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from app.adapters.kubelet import KubeletDirError, KubeletRootDir
from app.domain.checkpoint import CPU_FILE_NAME, MEMORY_FILE_NAME
from app.services import node_views
from app.services.encoded_json import EncodedJSON, encode
from app.services.nodes.errors import NodeInputError, NodeServiceError, ReadOnlyNodeError
from app.services.observe.observer import ObservedNodeUnavailableError
from app.services.watch import SOURCE_OBSERVED, LastDigest

if TYPE_CHECKING:
    from app.domain.node.model import Node
    from app.services.nodes.inputs import AdmissionBatch
    from app.services.nodes.restart import Rehearsal
    from app.services.observe.observer import NodeObserver
    from app.settings import Settings


class ObservedCopyError(NodeServiceError):
    """The observed node's state cannot be copied into an engine (503)."""


def dry_run_observed(
    name: str, views: node_views.NodeViews, settings: Settings, manifest: str
) -> AdmissionBatch:
    """Judge every pod of ``manifest`` in order on a scratch copy of observed node ``name``
    (``views``: its latest observation; ``settings``: where its kubelet keeps its files)."""
    from app.domain.node.state import restore_managers
    from app.domain.node.state_files import NodeStateError
    from app.services.nodes.inputs import AdmissionBatch, build_engine_node, parse_manifests
    from app.services.nodes.judge import PodsOnNode, check_conflicts, judge

    snapshot = views.snapshot
    config = snapshot.config
    pods = parse_manifests(manifest, config)
    uids = {p.uid for p in snapshot.pods}
    existing = PodsOnNode.of((f"{p.namespace}/{p.name}", p.uid) for p in snapshot.pods)
    check_conflicts(name, existing, pods)
    root = KubeletRootDir(settings.kubelet_root, config_file=settings.kubelet_config_file)
    try:
        files = {
            CPU_FILE_NAME: root.read_state("cpu"),
            MEMORY_FILE_NAME: root.read_state("memory"),
        }
    except KubeletDirError as exc:
        raise ObservedCopyError(f"node {name}: {exc.message}") from None
    try:
        engine = build_engine_node(name, snapshot.topology, config, time.time)
        restore_managers(engine, files, state_dir=str(root.path))
    except (NodeStateError, NodeInputError) as exc:
        raise ObservedCopyError(
            f"node {name}: its recorded state cannot be copied for a dry run: {exc.message}"
        ) from None
    obs = views.observation
    stale = {str(s.get("uid")) for s in obs.stale} if obs is not None else set()
    release_stale(engine, stale - uids)
    # The engine is already a copy: several pods are admitted on it in order.
    results = judge(engine, pods, existing=existing, scratch=lambda: engine)
    return AdmissionBatch(name, str(uuid.uuid4()), True, tuple(results))


def release_stale(engine: Node, uids: set[str]) -> None:
    """What the kubelet's ``removeStaleState`` does first thing in its next ``Allocate``
    (cpu_manager.go, memory_manager.go): checkpoint entries of pods it no longer has give back
    what they hold, so the copy judges a new pod on what that kubelet will actually have."""
    if not uids:
        return
    if engine.cpu_policy is not None and engine.cpu_state is not None:
        for uid, name, _ in list(engine.cpu_state.iter_assignments()):
            if uid in uids:
                engine.cpu_policy.remove_container(engine.cpu_state, uid, name)
    if engine.memory is not None:
        for uid, containers in engine.memory.state.get_memory_assignments().items():
            if uid in uids:
                for name in containers:
                    engine.memory.remove_container(uid, name)


class ObservedSource:
    """The observed node (see the module docstring)."""

    def __init__(self, observer: NodeObserver) -> None:
        self.observer = observer
        self._digest = LastDigest()

    @property
    def name(self) -> str:
        return self.observer.name

    def views(self) -> node_views.NodeViews:
        return self.observer.views()

    def summary(self) -> node_views.NodeSummary:
        return self.observer.summary()

    def node_view(self, *, batch: str | None = None) -> node_views.NodeView:
        return self.observer.node_view()

    def node_view_json(self, *, batch: str | None = None) -> EncodedJSON:
        return self.views().encoded.get(("node",), self.observer.node_view)

    def node_detail(self) -> node_views.NodeDetail:
        return self.observer.node_detail()

    def node_detail_json(self) -> EncodedJSON:
        return self.views().encoded.get(("detail",), self.observer.node_detail)

    def pod_view(self, namespace: str, name: str) -> node_views.PodView:
        return self.observer.pod_view(namespace, name)

    def pod_view_json(self, namespace: str, name: str) -> EncodedJSON:
        return self.views().encoded.get(
            ("pod", namespace, name), lambda: self.observer.pod_view(namespace, name)
        )

    def admissions(
        self, *, limit: int = 100, batch: str | None = None
    ) -> list[node_views.AdmissionLogEntry]:
        return []  # nothing is ever admitted on an observed node

    def state_files(self) -> dict[str, str]:
        raise ReadOnlyNodeError(self.name, "render state files for it (download the kubelet's)")

    def watch_token(self) -> tuple[str, str]:
        token = self._digest.of(self.views(), self.observer.node_view)
        return SOURCE_OBSERVED, f"o-{token}"

    def podresources_list_json(self) -> EncodedJSON:
        return encode(self.observer.podresources_list())  # the observer caches the kubelet's

    def podresources_get_json(self, namespace: str, name: str) -> EncodedJSON:
        return encode(self.observer.podresources_get(namespace, name))

    def allocatable_json(self) -> EncodedJSON:
        return encode(self.observer.allocatable())

    def dry_run(self, manifest: str) -> AdmissionBatch:
        views = self.views()  # raises ObservedNodeUnavailableError when not observable
        return dry_run_observed(self.name, views, self.observer.settings, manifest)

    def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        from app.services.upgrade import UpgradeInputError, check_observed

        s = self.observer.settings
        try:  # the rehearsal's start-up on a copy of its files judges, as for any node
            start = self.rehearse(release, gate).result
        except ObservedNodeUnavailableError:
            start = None
        try:
            return check_observed(
                self.name, s.kubelet_root, s.kubelet_config_file, release, gate, start
            )
        except UpgradeInputError as exc:
            raise NodeInputError(exc.message, exc.field) from None

    def nrt(self, fingerprint_method: str) -> dict[str, Any]:
        from app.services.nrt import build_nrt  # here: its API client's httpx only when asked

        return build_nrt(self.views(), fingerprint_method)

    def rehearse(self, release: str, gate: bool | None) -> Rehearsal:
        from app.services.nodes.restart import rehearse_observed

        return rehearse_observed(self.observer, release, gate)

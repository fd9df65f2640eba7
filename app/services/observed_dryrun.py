"""Dry runs on an observed node: the pod is judged by an engine built from a *copy* of what the
node's kubelet recorded — its topology (sysfs), its KubeletConfiguration and its state files,
read and validated the way a starting kubelet of its release reads them
(``app.domain.node_state.restore_managers``). The kubelet and its files are never touched; the
copy is thrown away after the answer. Checkpoint entries of pods the kubelet no longer runs
(the observation's stale entries) are released first, as that kubelet's ``removeStaleState``
does at the start of its next admission.

The answer has the shape of a simulated node's dry run (``AdmissionBatch.to_dict``), so a hub
fanning a pod out over a fleet gets one format from every node.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from app.adapters.kubelet import KubeletDirError, KubeletRootDir
from app.domain.checkpoint import CPU_FILE_NAME, MEMORY_FILE_NAME
from app.domain.node_state import restore_managers
from app.domain.node_state_files import NodeStateError
from app.services.nodes.errors import NodeInputError, NodeServiceError, PodConflictError
from app.services.nodes.inputs import AdmissionBatch, build_engine_node, parse_manifests

if TYPE_CHECKING:
    from app.domain.node import Node
    from app.services.observed_protocol import ObservedNode


class ObservedCopyError(NodeServiceError):
    """The observed node's state cannot be copied into an engine (503)."""


def dry_run_observed(observer: ObservedNode, manifest: str) -> AdmissionBatch:
    """Judge every pod of ``manifest`` in order on a scratch copy of the observed node."""
    views = observer.views()  # raises ObservedNodeUnavailableError when not observable
    snapshot = views.snapshot
    config = snapshot.config
    pods = parse_manifests(manifest, config)
    keys = {f"{p.namespace}/{p.name}" for p in snapshot.pods}
    uids = {p.uid for p in snapshot.pods}
    for p in pods:
        if p.uid in uids:
            raise PodConflictError(
                f"pod with uid {p.uid} ({p.key}) is already on node {observer.name}",
                "metadata.uid",
            )
        if p.key in keys:
            raise PodConflictError(
                f"pod {p.key} is already on node {observer.name}", "metadata.name"
            )
    settings = observer.settings
    root = KubeletRootDir(settings.kubelet_root, config_file=settings.kubelet_config_file)
    try:
        files = {
            CPU_FILE_NAME: root.read_state("cpu"),
            MEMORY_FILE_NAME: root.read_state("memory"),
        }
    except KubeletDirError as exc:
        raise ObservedCopyError(f"node {observer.name}: {exc.message}") from None
    try:
        engine = build_engine_node(observer.name, snapshot.topology, config, time.time)
        restore_managers(engine, files, state_dir=str(root.path))
    except (NodeStateError, NodeInputError) as exc:
        raise ObservedCopyError(
            f"node {observer.name}: its recorded state cannot be copied for a dry run: "
            f"{exc.message}"
        ) from None
    obs = views.observation
    stale = {str(s.get("uid")) for s in obs.stale} if obs is not None else set()
    release_stale(engine, stale - uids)
    if len(pods) == 1:
        results = [engine.dry_run(pods[0])]
    else:
        results = [engine.admit(p) for p in pods]
    return AdmissionBatch(observer.name, str(uuid.uuid4()), True, tuple(results), ())


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

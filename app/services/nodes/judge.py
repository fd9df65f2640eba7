"""The one judge of a set of pods against a node: admission, dry run and the fleet's fit all ask
``judge``, so their verdicts and reasons cannot disagree.

In order, as the kubelet's admission handlers see pods arrive one after another
(pkg/kubelet/kubelet.go ``HandlePodAdditions``, each pod through ``canAdmitPod`` with the pods
admitted before it):

1. **Conflicts.** A pod whose ``namespace/name`` is on the node (or earlier in the same
   submission) is refused as ``metadata.name``; then one whose uid is, as ``metadata.uid``. The
   name comes first: a manifest without a uid gets one derived from its name, so a second
   submission of it is a name clash, not a uid the user never wrote. Refusals are input errors
   (``PodConflictError``, 409), not verdicts: nothing is judged.
2. **Where.** Admitting (``commit``) changes the node itself, pod after pod. A dry run of one
   pod asks the node's own managers without keeping anything (``Node.dry_run``); several pods
   are admitted in order on a **scratch copy** (``scratch_copy``: a fresh engine restored from
   the node's state files and pods, as a restarting kubelet of its release would), so each is
   judged with the ones before it placed, and the node is never touched.
3. **Verdicts.** Each pod's ``AdmissionResult`` (admitted, or the kubelet's reason and message).

A node whose pods are not all known (the observed node: its kubelet knows their specs, we see
assignments) passes what it does know as ``existing`` and a ready scratch engine as ``scratch``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from app.domain.node.model import AdmissionResult, Node
from app.domain.node.state import restore_node
from app.domain.node.state_files import NodeStateError, render_state_files
from app.domain.pod.model import Pod
from app.services.nodes.errors import PodConflictError
from app.services.nodes.inputs import build_engine_node


@dataclass(frozen=True, slots=True)
class PodsOnNode:
    """The pods a node holds, as far as conflicts go: ``namespace/name`` keys and uids."""

    keys: AbstractSet[str]
    uids: AbstractSet[str]

    @classmethod
    def of(cls, pods: Iterable[tuple[str, str]]) -> PodsOnNode:
        """From ``(key, uid)`` pairs."""
        pairs = list(pods)
        return cls(frozenset(k for k, _ in pairs), frozenset(u for _, u in pairs))

    @classmethod
    def on(cls, node: Node) -> PodsOnNode:
        """The pods of an engine, as live views of its own indexes (read before anything
        is admitted)."""
        return cls(node.pod_keys, node.pods.keys())


def check_conflicts(node_name: str, existing: PodsOnNode, pods: Sequence[Pod]) -> None:
    """Step 1 of ``judge``: raise ``PodConflictError`` for the first pod already on the node or
    earlier in the submission (its name first, then its uid)."""
    keys: set[str] = set()  # of the pods before in the submission
    uids: set[str] = set()
    for p in pods:
        if p.key in existing.keys or p.key in keys:
            raise PodConflictError(f"pod {p.key} is already on node {node_name}", "metadata.name")
        if p.uid in existing.uids or p.uid in uids:
            raise PodConflictError(
                f"pod with uid {p.uid} ({p.key}) is already on node {node_name}", "metadata.uid"
            )
        keys.add(p.key)
        uids.add(p.uid)


def scratch_copy(node: Node, clock: Callable[[], float] = time.time) -> Node:
    """A fresh engine with ``node``'s managers' state and pods, restored from the state files
    ``node`` writes (what its kubelet would read back): admitting on it never touches
    ``node``."""
    scratch = build_engine_node(node.name, node.topology, node.config, clock)
    try:
        restore_node(
            scratch,
            render_state_files(node),
            [(p, node.admitted_at.get(uid, 0.0)) for uid, p in node.pods.items()],
        )
    except NodeStateError as err:  # the engine cannot read its own files: a bug
        raise RuntimeError(f"dry run: cannot copy node {node.name}: {err}") from err
    return scratch


def judge(
    node: Node,
    pods: Sequence[Pod],
    *,
    commit: bool = False,
    existing: PodsOnNode | None = None,
    scratch: Callable[[], Node] | None = None,
) -> list[AdmissionResult]:
    """Judge ``pods`` in order against ``node`` (see the module docstring): admitted on
    ``node`` itself when ``commit``, else on a copy. ``existing`` defaults to ``node``'s own
    pods and ``scratch`` to ``scratch_copy(node)``."""
    if existing is None:
        existing = PodsOnNode.on(node)
    check_conflicts(node.name, existing, pods)
    if commit:
        return [node.admit(p) for p in pods]
    if len(pods) == 1:
        return [node.dry_run(pods[0])]
    target = scratch() if scratch is not None else scratch_copy(node, node.clock)
    return [target.admit(p) for p in pods]

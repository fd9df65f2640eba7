"""Undo and reset: take back the last removal of a pod, put the demo nodes back as shipped.

* **Undo** (``last_removal`` / ``undo_last_removal``): when a node's newest log entry is the
  removal of a pod, that pod (its logged manifest, same uid) is submitted again. The kubelet
  decides afresh, so it may land on other CPUs, or be rejected if the node changed meanwhile
  (it cannot have: the removal is the newest entry; but a restored state directory can differ).
  Anything logged after the removal makes it final, as in any editor's undo.
* **Undo a restart** (``last_restart`` / ``undo_last_restart``): when the newest log entry is a
  kubelet restart applied to the node (``app.services.nodes.restart``), the kubelet of the
  release before it is started again on the node's files, with the configuration it had, but
  only where the files allow it: it is rehearsed first, and when that kubelet would not start,
  or would reject or lose any pod, nothing is done (``UndoRefusedError``, 409, saying why).
  The way back is itself a restart, recorded as one. (The kubelet has no undo: this is the
  downgrade an SRE would do by hand, checked before it is done.)
* **Restore the demo nodes** (``restore_demo_nodes``): every demo node of
  ``app.services.demo`` is deleted if present (whatever was done to it) and created again
  with its pods; other nodes are left alone. Demo nodes are otherwise only made when the
  database holds no node at all, so a deleted one would never come back.
"""

from __future__ import annotations

import json

from sqlmodel import col, select

from app.adapters.db.engine import session_scope
from app.adapters.db.tables import ACTION_REMOVE, ACTION_RESTART, AdmissionRecord
from app.domain.node.state_files import GATE
from app.domain.restart import KEPT, RESTORED
from app.services.demo import DEMO_NODES, DemoNode, create_demo_nodes
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.inputs import AdmissionBatch, parse_config
from app.services.nodes.restart import Rehearsal
from app.services.nodes.service import NodeService


class NothingToUndoError(NodeServiceError):
    """The node's newest log entry is not a removal."""

    def __init__(self, node: str, what: str = "a pod removal") -> None:
        self.node = node
        super().__init__(f"nothing to undo on node {node!r}: its newest log entry is not {what}")


class UndoRefusedError(NodeServiceError):
    """The newest entry can be undone in principle, but not on these files (the reason why)."""


def _newest(service: NodeService, node: str, action: str) -> AdmissionRecord | None:
    if node not in service.registry.simulated_names():
        return None
    node_id = service.registry.log_node_id(node)
    with session_scope(service.registry.engine) as session:
        row = session.exec(
            select(AdmissionRecord)
            .where(col(AdmissionRecord.node_id) == node_id)
            .order_by(col(AdmissionRecord.id).desc())
            .limit(1)
        ).first()
        if row is None or row.action != action:
            return None
        session.expunge(row)
        return row


def last_removal(service: NodeService, node: str) -> AdmissionRecord | None:
    """The node's newest log row when it is a removal (what ``undo`` would take back)."""
    return _newest(service, node, ACTION_REMOVE)


def last_restart(service: NodeService, node: str) -> AdmissionRecord | None:
    """The node's newest log row when it is an applied kubelet restart."""
    return _newest(service, node, ACTION_RESTART)


def last_undoable(service: NodeService, node: str) -> AdmissionRecord | None:
    """What the node page's undo banner offers: the last removal or the last restart."""
    return last_removal(service, node) or last_restart(service, node)


def undo_last_removal(service: NodeService, node: str) -> AdmissionBatch:
    """Admit the pod of the node's last removal again (``NothingToUndoError`` if none)."""
    row = last_removal(service, node)
    if row is None:
        service.registry.definition(node)  # an unknown node is UnknownNodeError, not "nothing"
        raise NothingToUndoError(node)
    # The logged manifest is normalised JSON, which the manifest parser reads as YAML.
    return service.admit(node, json.dumps(json.loads(row.manifest)))


def undo_last_restart(service: NodeService, node: str) -> Rehearsal:
    """Start the kubelet that ran before the node's last restart again, when it starts on the
    files and keeps every pod (``NothingToUndoError``, ``UndoRefusedError`` otherwise)."""
    row = last_restart(service, node)
    if row is None:
        service.registry.definition(node)
        raise NothingToUndoError(node, "a kubelet restart")
    before = json.loads(row.manifest)
    release = before["fromRelease"]
    config = parse_config(before["fromConfig"], release)
    gate = config.gate(GATE)
    result = service.restarts.restart(
        node, release, dry_run=True, pod_level_resource_managers=gate
    ).result
    if not result.started:
        raise UndoRefusedError(
            f"cannot undo the restart of node {node!r}: a {release} kubelet does not start on "
            f"its files now ({result.error})"
        )
    lost = [p.key for p in result.pods if p.outcome not in (KEPT, RESTORED)]
    if lost or result.lost:
        what = ", ".join(lost) if lost else "; ".join(result.lost)
        raise UndoRefusedError(
            f"cannot undo the restart of node {node!r}: a {release} kubelet would not keep "
            f"everything ({what}); rehearse it in the restart panel"
        )
    return service.restarts.restart(node, release, pod_level_resource_managers=gate)


def restore_demo_nodes(service: NodeService, nodes: tuple[DemoNode, ...] = DEMO_NODES) -> list[str]:
    """Delete and re-create every demo node; the names restored, in order (a node the user
    made under a demo name is theirs: it is kept, and left out of the answer)."""
    existing = set(service.registry.simulated_names())
    kept = set()
    for demo in nodes:
        if demo.name not in existing:
            continue
        if service.registry.definition(demo.name).demo:
            service.delete(demo.name)
        else:
            kept.add(demo.name)
    create_demo_nodes(service, nodes)
    return [d.name for d in nodes if d.name not in kept]

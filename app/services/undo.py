"""Undo and reset: take back the last removal of a pod, put the demo nodes back as shipped.

* **Undo** (``last_removal`` / ``undo_last_removal``): when a node's newest log entry is the
  removal of a pod, that pod (its logged manifest, same uid) is submitted again. The kubelet
  decides afresh, so it may land on other CPUs, or be rejected if the node changed meanwhile
  (it cannot have: the removal is the newest entry; but a restored state directory can differ).
  Anything logged after the removal makes it final, as in any editor's undo.
* **Restore the demo nodes** (``restore_demo_nodes``): every demo node of
  ``app.services.demo`` is deleted if present (whatever was done to it) and created again
  with its pods; other nodes are left alone. Demo nodes are otherwise only made when the
  database holds no node at all, so a deleted one would never come back.
"""

from __future__ import annotations

import json

from sqlmodel import col, select

from app.adapters.db.engine import session_scope
from app.adapters.db.tables import ACTION_REMOVE, AdmissionRecord
from app.services.demo import DEMO_NODES, DemoNode, create_demo_nodes
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.inputs import AdmissionBatch
from app.services.nodes.service import NodeService


class NothingToUndoError(NodeServiceError):
    """The node's newest log entry is not a removal."""

    def __init__(self, node: str) -> None:
        self.node = node
        super().__init__(
            f"nothing to undo on node {node!r}: its newest log entry is not a pod removal"
        )


def last_removal(service: NodeService, node: str) -> AdmissionRecord | None:
    """The node's newest log row when it is a removal (what ``undo`` would take back)."""
    if node not in service.simulated_names():
        return None
    node_id = service.log_node_id(node)
    with session_scope(service.engine) as session:
        row = session.exec(
            select(AdmissionRecord)
            .where(col(AdmissionRecord.node_id) == node_id)
            .order_by(col(AdmissionRecord.id).desc())
            .limit(1)
        ).first()
        if row is None or row.action != ACTION_REMOVE:
            return None
        session.expunge(row)
        return row


def undo_last_removal(service: NodeService, node: str) -> AdmissionBatch:
    """Admit the pod of the node's last removal again (``NothingToUndoError`` if none)."""
    row = last_removal(service, node)
    if row is None:
        service.definition(node)  # an unknown node is UnknownNodeError, not "nothing"
        raise NothingToUndoError(node)
    # The logged manifest is normalised JSON, which the manifest parser reads as YAML.
    return service.admit(node, json.dumps(json.loads(row.manifest)))


def restore_demo_nodes(service: NodeService, nodes: tuple[DemoNode, ...] = DEMO_NODES) -> list[str]:
    """Delete and re-create every demo node; the names restored, in order (a node the user
    made under a demo name is theirs: it is kept, and left out of the answer)."""
    existing = set(service.simulated_names())
    kept = set()
    for demo in nodes:
        if demo.name not in existing:
            continue
        if service.definition(demo.name).demo:
            service.delete(demo.name)
        else:
            kept.add(demo.name)
    create_demo_nodes(service, nodes)
    return [d.name for d in nodes if d.name not in kept]

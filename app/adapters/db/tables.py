"""SQLModel tables of the simulated nodes: their definitions and their admission log.

* ``nodes``: one row per simulated node — its name, the topology (a preset name or a
  topology spec string), the kubelet configuration exactly as the user gave it (YAML or JSON
  text), the kubelet release and when it was created. The engine rebuilds a node from these.
* ``admissions``: every admission, dry run and removal on a node, oldest first — the pod's
  namespace, name and uid, whether it was admitted, the kubelet's reason and message for a
  rejection, and the pod manifest (normalised v1 JSON) so that a node without state files
  can be rebuilt by replaying its log. Rows of one submission share a ``batch`` id.

The schema is created by the Alembic revisions ``migrations/versions/*_nodes_and_admissions``
and ``*_node_versions`` (``nodes.version``, the change counter workers compare);
the types are portable (SQLite and PostgreSQL). Timestamps are stored as UTC; SQLite hands
them back without a zone (``as_utc`` puts it back).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypedDict

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

ACTION_ADMIT = "admit"
ACTION_DRY_RUN = "dry-run"
ACTION_REMOVE = "remove"
# A kubelet restart applied to the node (its manifest: the releases and configurations before
# and after, app.services.nodes.restart); the history replays it (app.services.history.replay).
ACTION_RESTART = "restart"
ACTIONS = (ACTION_ADMIT, ACTION_DRY_RUN, ACTION_REMOVE, ACTION_RESTART)


def utc_now() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """``value`` with its zone: naive values (SQLite) are UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class NodeRecord(SQLModel, table=True):
    """A simulated node's definition."""

    __tablename__ = "nodes"
    __table_args__ = (sa.UniqueConstraint("name", name="uq_nodes_name"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(sa_column=sa.Column(sa.String(253), nullable=False))
    topology: str = Field(sa_column=sa.Column(sa.String(1000), nullable=False))
    topology_kind: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    kubelet_config: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    release: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    demo: bool = Field(
        default=False, sa_column=sa.Column(sa.Boolean(), nullable=False, server_default=sa.false())
    )
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=sa.Column(sa.DateTime(timezone=True), nullable=False)
    )
    # Incremented by every committed change (revision b2d4f6a80002): workers compare it.
    version: int = Field(
        default=0, sa_column=sa.Column(sa.Integer(), nullable=False, server_default="0")
    )


class AdmissionRecord(SQLModel, table=True):
    """One admission decision, dry run or removal of a pod on a node."""

    __tablename__ = "admissions"
    __table_args__ = (
        sa.Index("ix_admissions_node_id_id", "node_id", "id"),
        sa.Index("ix_admissions_batch", "batch"),
        sa.Index("ix_admissions_node_id_action_id", "node_id", "action", "id"),
        sa.UniqueConstraint("node_id", "seq", name="uq_admissions_node_id_seq"),
    )

    id: int | None = Field(default=None, primary_key=True)
    node_id: int = Field(
        sa_column=sa.Column(
            sa.Integer(),
            sa.ForeignKey("nodes.id", ondelete="CASCADE", name="fk_admissions_node_id_nodes"),
            nullable=False,
        )
    )
    # The entry's number in its node's log, 1, 2, 3… in log order (revision c3e5a7b90003):
    # assigned in the node's write transaction (``node_repo.NodeWrite.add``), never reused.
    seq: int = Field(default=0, sa_column=sa.Column(sa.Integer(), nullable=False))
    batch: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    action: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    namespace: str = Field(sa_column=sa.Column(sa.String(253), nullable=False))
    name: str = Field(sa_column=sa.Column(sa.String(253), nullable=False))
    uid: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    admitted: bool = Field(sa_column=sa.Column(sa.Boolean(), nullable=False))
    reason: str = Field(
        default="", sa_column=sa.Column(sa.String(128), nullable=False, server_default="")
    )
    message: str = Field(
        default="", sa_column=sa.Column(sa.Text(), nullable=False, server_default="")
    )
    manifest: str = Field(
        default="", sa_column=sa.Column(sa.Text(), nullable=False, server_default="")
    )
    created_at: datetime = Field(
        default_factory=utc_now, sa_column=sa.Column(sa.DateTime(timezone=True), nullable=False)
    )

    def decision(self) -> dict[str, Any]:
        """What the row records, by field name: the submission, the action, the pod and the
        kubelet's verdict (the log views add ids, times and links of their own)."""
        return {
            "batch": self.batch,
            "action": self.action,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "admitted": self.admitted,
            "reason": self.reason,
            "message": self.message,
        }


class NewLogRow(TypedDict):
    """A log row as a change builds it, before ``NodeWrite.add_rows`` numbers it: the columns
    of ``AdmissionRecord`` but ``id`` and ``seq``, as a plain dict (building the ORM object
    costs more than inserting the row)."""

    node_id: int
    batch: str
    action: str
    namespace: str
    name: str
    uid: str
    admitted: bool
    reason: str
    message: str
    manifest: str
    created_at: datetime


__all__ = [
    "ACTIONS",
    "ACTION_ADMIT",
    "ACTION_DRY_RUN",
    "ACTION_REMOVE",
    "ACTION_RESTART",
    "AdmissionRecord",
    "NewLogRow",
    "NodeRecord",
    "as_utc",
    "utc_now",
]

"""node versions: a change counter per simulated node, and an index for dry-run retention

Every committed change of a node (admission, removal) increments ``nodes.version`` in the
transaction that logs it; workers compare it with the version they hold to see changes made
by others. ``ix_admissions_node_id_action_id`` keeps trimming a node's old dry runs cheap.

Revision ID: b2d4f6a80002
Revises: a1c3e5f70001
Create Date: 2026-12-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "b2d4f6a80002"
down_revision: str | Sequence[str] | None = "a1c3e5f70001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("version", sa.Integer(), server_default="0", nullable=False))
    op.create_index(
        "ix_admissions_node_id_action_id", "admissions", ["node_id", "action", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_admissions_node_id_action_id", table_name="admissions")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("version")

"""admission seq: each log row's number in its own node's log

``admissions.seq`` numbers a node's entries 1, 2, 3… in log (id) order, so a node's History,
diffs, point-in-time maps and exports do not jump by the ids other nodes took. Existing rows
are numbered per node in id order; ``(node_id, seq)`` is unique.

Revision ID: c3e5a7b90003
Revises: b2d4f6a80002
Create Date: 2026-12-01 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "c3e5a7b90003"
down_revision: str | Sequence[str] | None = "b2d4f6a80002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("admissions") as batch:
        batch.add_column(sa.Column("seq", sa.Integer(), nullable=True))
    # Backfill: a row's number is how many rows of its node have an id up to its own.
    op.execute(
        "UPDATE admissions SET seq = (SELECT COUNT(*) FROM admissions AS a "
        "WHERE a.node_id = admissions.node_id AND a.id <= admissions.id)"
    )
    with op.batch_alter_table("admissions") as batch:
        batch.alter_column("seq", existing_type=sa.Integer(), nullable=False)
        batch.create_unique_constraint("uq_admissions_node_id_seq", ["node_id", "seq"])


def downgrade() -> None:
    with op.batch_alter_table("admissions") as batch:
        batch.drop_constraint("uq_admissions_node_id_seq", type_="unique")
        batch.drop_column("seq")

"""SQLModel tables of Numascope; Alembic's ``target_metadata`` is ``metadata`` below.

Table modules are imported here so that ``migrations/env.py`` (which imports only this
module) sees them for autogenerate.
"""

from __future__ import annotations

from sqlmodel import SQLModel

import app.adapters.db.tables  # noqa: F401  (registers the tables on the metadata)

metadata = SQLModel.metadata

__all__ = ["SQLModel", "metadata"]

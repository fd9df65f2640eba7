"""SQLModel tables of Numascope; Alembic's ``target_metadata`` is ``metadata`` below.

There are no tables yet. Table modules added later must be imported here so that
``migrations/env.py`` (which imports only this module) sees them for autogenerate.
"""

from __future__ import annotations

from sqlmodel import SQLModel

metadata = SQLModel.metadata

__all__ = ["SQLModel", "metadata"]

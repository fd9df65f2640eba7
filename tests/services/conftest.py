"""Fixtures for the service tests: a migrated SQLite database and a started node service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from app.services.nodes.service import NodeService
from tests.helpers import migrated_engine


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with migrated_engine(f"sqlite:///{tmp_path / 'db' / 'n.db'}") as eng:
        yield eng


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "nodes"


@pytest.fixture
def service(engine: Engine, state_dir: Path) -> NodeService:
    """A started node service (no demo nodes) keeping state files under ``state_dir``."""
    s = NodeService(engine, state_dir=state_dir)
    s.start()
    return s

"""Builders shared by the test folders: settings on tmp paths, a migrated database engine, and
the small pod-scope kubelet configuration many node tests start from.

Plain functions and constants (fixtures live in each folder's ``conftest.py`` and call these).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from app.adapters.db.engine import make_engine
from app.adapters.db.migrate import upgrade_head
from app.services.demo import bubble_pod
from app.settings import Settings

#: The preset the small node tests use: 2 sockets, 2 NUMA nodes, 12 CPUs.
SMALL = "topoDualSocketHT"

# topoDualSocketHT: NUMA 0 = 0,2,4,6,8,10; NUMA 1 = 1,3,5,7,9,11; kubeReserved cpu 1 -> CPU 0.
POD_SCOPE = """\
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
kubeReserved: {cpu: "1", memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
- numaNode: 0
  limits: {memory: 2148Mi}
featureGates: {PodLevelResources: true, PodLevelResourceManagers: true}
"""
#: A pod-level pod for the small node: budget 4 CPUs, ``main`` exclusive (2), ``side`` shared.
DB_POD = bubble_pod("db", "prod", 4, {"main": 2}, ("side",))


def make_settings(tmp: Path, **overrides: Any) -> Settings:
    """Settings whose every path lies under ``tmp``: a SQLite file, no sysfs (the host is not
    needed), state files under ``nodes/``, no demo nodes; ``overrides`` win."""
    values: dict[str, Any] = {
        "database_url": f"sqlite:///{tmp / 'numascope.db'}",
        "sysfs_root": tmp / "no-sysfs",
        "cpuinfo": False,
        "state_dir": tmp / "nodes",
        "demo": False,
        # Starlette's TestClient sends "Host: testserver" (app.web.guard's allow-list).
        "allowed_hosts": ("testserver",),
    }
    values.update(overrides)
    return Settings(**values)


#: The CSRF token the test clients present, as a browser would after loading a page.
TEST_CSRF_TOKEN = "test-csrf-token-0123456789abcdef"


def act_as_browser(client: Any) -> Any:
    """Give a TestClient the CSRF cookie and header of a browser that loaded a page (the
    guard of ``app.web.guard`` refuses form POSTs without them)."""
    from app.web.csrf import HEADER, cookie_name

    client.cookies.set(cookie_name(""), TEST_CSRF_TOKEN)
    client.headers[HEADER] = TEST_CSRF_TOKEN
    return client


@contextmanager
def migrated_engine(url: str) -> Iterator[Engine]:
    """A database engine for ``url`` with the schema at head, disposed of on exit."""
    engine = make_engine(url)
    upgrade_head(engine)
    try:
        yield engine
    finally:
        engine.dispose()


#: The PostgreSQL server the database tests use (``make test`` starts one), if any.
POSTGRES_URL = os.environ.get("NUMASCOPE_TEST_POSTGRES_URL", "")


@contextmanager
def postgres_database(prefix: str) -> Iterator[str]:
    """The URL of a fresh database on the PostgreSQL test server, dropped on exit; the test
    is skipped without a server (failed where ``NUMASCOPE_REQUIRE_POSTGRES=1``, as in CI)."""
    if not POSTGRES_URL:
        if os.environ.get("NUMASCOPE_REQUIRE_POSTGRES") == "1":
            pytest.fail("NUMASCOPE_TEST_POSTGRES_URL is not set")
        pytest.skip("no PostgreSQL server (set NUMASCOPE_TEST_POSTGRES_URL)")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

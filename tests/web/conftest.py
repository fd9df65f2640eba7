"""Fixtures for the web tests: settings on tmp paths, a fake sysfs host, the app, its node
service and a TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.domain.presets import get_preset
from app.services.demo import classic_pod
from app.services.nodes.service import NodeService
from app.settings import Settings
from app.web.app import create_app
from tests.fixtures.sysfs import FakeCPU, FakeSysfs, fake_sysfs_from_topology
from tests.helpers import POD_SCOPE, SMALL, act_as_browser, make_settings

# The fake host: two sockets, one NUMA node each, 2 cores x 2 threads per socket, plus a
# memory-only NUMA node 2 (CXL-like) and 2Mi hugepages on node 0.
HOST_CPUS = [
    FakeCPU(cpu_id=c, core_id=(c % 4) % 2, socket_id=(c % 4) // 2, numa_id=(c % 4) // 2)
    for c in range(8)
]


def make_host_sysfs(base: Path) -> Path:
    fake = FakeSysfs(
        HOST_CPUS,
        node_memory_kb={0: 16 * 1024 * 1024, 1: 16 * 1024 * 1024, 2: 64 * 1024 * 1024},
        node_hugepages_kb={0: {2048: 512}},
        distances={0: [10, 21, 30], 1: [21, 10, 30], 2: [30, 30, 10]},
        memory_only_nodes=[2],
    )
    return fake.write(base)


@pytest.fixture
def host_sysfs(tmp_path: Path) -> Path:
    return make_host_sysfs(tmp_path / "host")


@pytest.fixture
def settings(tmp_path: Path, host_sysfs: Path) -> Settings:
    return make_settings(
        tmp_path,
        database_url=f"sqlite:///{tmp_path / 'var' / 'numascope.db'}",
        sysfs_root=host_sysfs,
        kubelet_root=tmp_path / "kubelet",
    )


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings)


@pytest.fixture
def nodes(app: FastAPI) -> NodeService:
    """The app's simulated-node service."""
    service: NodeService = app.state.nodes
    return service


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield act_as_browser(c)


@pytest.fixture
def preset_sysfs(tmp_path: Path) -> Path:
    """A sysfs tree reproducing the ``server-2s-4numa-128t`` preset."""
    return fake_sysfs_from_topology(get_preset("server-2s-4numa-128t")).write(tmp_path / "p")


@pytest.fixture
def small_node(client: TestClient) -> TestClient:
    """The client, with node ``small`` (pod scope) holding pods ``ns/a`` and ``ns/b`` of two
    exclusive CPUs each, created through the API."""
    r = client.post(
        "/api/v1/nodes", json={"name": "small", "topology": SMALL, "kubeletConfig": POD_SCOPE}
    )
    assert r.status_code == 201, r.text
    for name in ("a", "b"):
        r = client.post(
            "/api/v1/nodes/small/pods",
            content=classic_pod(name, "ns", "2", "1Gi"),
            headers={"Content-Type": "application/yaml"},
        )
        assert r.status_code == 201, r.text
    return client

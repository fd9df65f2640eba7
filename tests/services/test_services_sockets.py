"""services/sockets.py: each simulated node's PodResources on <dir>/<node>.sock, following the
registry (created nodes get a socket, deleted ones lose it) and the app's lifespan."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.adapters.grpc.client import PodResourcesClient, PodResourcesClientError
from app.adapters.podresources_cache import list_response_json
from app.adapters.podresources_json import message_to_dict
from app.services import demo
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.service import NodeService
from app.services.sockets import PodResourcesSockets, SocketDirError
from app.web.app import create_app
from tests.helpers import make_settings

YAML = {"Content-Type": "application/yaml"}

CONFIG = demo.CONTAINER_SCOPE_CONFIG
TOPOLOGY = "topoDualSocketHT"


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="h11s-", dir="/tmp"))  # short: sun_path holds 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


def pods_of(sock: Path) -> list[str]:
    with PodResourcesClient(str(sock), timeout=5) as client:
        return [f"{p.namespace}/{p.name}" for p in client.list().pod_resources]


def test_sockets_follow_the_registry(service: NodeService, sock_dir: Path) -> None:
    service.create("alpha", TOPOLOGY, CONFIG)
    sockets = PodResourcesSockets(sock_dir / "pr", service).start()  # the folder is created
    try:
        alpha = sock_dir / "pr" / "alpha.sock"
        assert alpha.is_socket() and pods_of(alpha) == []
        assert sockets.served() == {"alpha": f"unix://{alpha}"}
        # a pod admitted later is seen at once
        service.admit("alpha", demo.GUARANTEED_TWO_POD)
        assert pods_of(alpha) == ["batch/guaranteed-two"]
        with PodResourcesClient(str(alpha), timeout=5) as client:
            assert message_to_dict(client.list()) == list_response_json(
                service.reads.snapshot("alpha")
            )
            assert client.allocatable().cpu_ids
        # a node created later gets its socket; a deleted node loses it
        service.create("beta", TOPOLOGY, CONFIG)
        beta = sock_dir / "pr" / "beta.sock"
        assert beta.is_socket() and pods_of(beta) == []
        service.delete("alpha")
        assert not alpha.exists()
        with pytest.raises(PodResourcesClientError, match="not found"):
            pods_of(alpha)
        assert set(sockets.served()) == {"beta"}
    finally:
        sockets.stop()
    assert list((sock_dir / "pr").iterdir()) == []
    # after stop, nodes created later are not served
    service.create("gamma", TOPOLOGY, CONFIG)
    assert not (sock_dir / "pr" / "gamma.sock").exists()


def test_a_node_that_cannot_be_served_is_skipped(service: NodeService, sock_dir: Path) -> None:
    long_name = "n" * 120
    service.create(long_name, TOPOLOGY, CONFIG)
    service.create("ok", TOPOLOGY, CONFIG)
    (sock_dir / "busy.sock").write_text("not a socket")
    service.create("busy", TOPOLOGY, CONFIG)
    with PodResourcesSockets(sock_dir, service) as sockets:
        assert set(sockets.served()) == {"ok"}
        assert "longer than" in sockets.problems[long_name]
        assert "is not a socket" in sockets.problems["busy"]
        assert pods_of(sock_dir / "ok.sock") == []
    assert (sock_dir / "busy.sock").read_text() == "not a socket"  # never replaced


def test_socket_dir_that_is_a_file(service: NodeService, sock_dir: Path) -> None:
    target = sock_dir / "file"
    target.write_text("x")
    with pytest.raises(SocketDirError, match="file"):
        PodResourcesSockets(target, service).start()


def test_observed_node_is_not_served(service: NodeService, sock_dir: Path) -> None:
    service.create("sim", TOPOLOGY, CONFIG)

    class FakeObserver:
        name = "real-node"

    NodeCatalog(service, observer=FakeObserver())  # type: ignore[arg-type]
    with PodResourcesSockets(sock_dir, service) as sockets:
        assert set(sockets.served()) == {"sim"}
        assert not (sock_dir / "real-node.sock").exists()


def test_app_lifespan_opens_and_removes_the_sockets(tmp_path: Path, sock_dir: Path) -> None:
    settings = make_settings(
        tmp_path,
        database_url=f"sqlite:///{tmp_path / 'var' / 'n.db'}",
        kubelet_root=tmp_path / "no-kubelet",
        podresources_socket="/nonexistent/kubelet.sock",
        podresources_dir=sock_dir,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        r = client.post(
            "/api/v1/nodes", json={"name": "demo-a", "topology": TOPOLOGY, "kubeletConfig": CONFIG}
        )
        assert r.status_code == 201
        sock = sock_dir / "demo-a.sock"
        assert pods_of(sock) == []
        client.post("/api/v1/nodes/demo-a/pods", headers=YAML, content=demo.GUARANTEED_TWO_POD)
        assert pods_of(sock) == ["batch/guaranteed-two"]
        assert client.delete("/api/v1/nodes/demo-a").status_code == 204
        assert not sock.exists()
        client.post("/api/v1/nodes", json={"name": "demo-b", "topology": TOPOLOGY})
        assert (sock_dir / "demo-b.sock").is_socket()
    assert list(sock_dir.iterdir()) == []  # shutdown removed every socket


def test_no_sockets_by_default(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path,
        kubelet_root=tmp_path / "no-kubelet",
        podresources_socket="/nonexistent/kubelet.sock",
    )
    assert settings.podresources_dir is None
    app = create_app(settings)
    assert app.state.podresources_sockets is None


def test_serve_flags_for_observation_and_sockets(tmp_path: Path) -> None:
    from app.cli import build_parser
    from app.commands import serve

    args = build_parser().parse_args(
        [
            "serve",
            "--podresources-dir",
            str(tmp_path / "socks"),
            "--kubelet-config-file",
            str(tmp_path / "kubelet.yaml"),
            "--no-observe",
            "--node-name",
            "node-7",
        ]
    )
    s = serve.build_settings(args)
    assert s.podresources_dir == tmp_path / "socks"
    assert s.kubelet_config_file == tmp_path / "kubelet.yaml"
    assert s.observe is False and s.node_name == "node-7"
    assert serve.build_settings(build_parser().parse_args(["serve"])).podresources_dir is None

"""PodResources over a real unix socket: server, client, rate limit, socket handling, CLI."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.fixtures` under bare pytest

from app.adapters.grpc import client as client_mod
from app.adapters.grpc.address import split_address
from app.adapters.grpc.client import (
    PodResourcesClient,
    PodResourcesClientError,
    check_socket,
    socket_path,
)
from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.grpc.generated import api_pb2_grpc as pb_grpc
from app.adapters.grpc.ratelimit import TokenBucket
from app.adapters.grpc.server import (
    PodResourcesServer,
    PodResourcesServerError,
    SocketInUseError,
    socket_path_of,
)
from app.adapters.podresources_cache import PodResourcesCache
from app.commands import podresources as cmd
from app.domain.podresources import (
    build_allocatable_response,
    build_list_response,
)
from app.domain.snapshot import NodeSnapshot
from tests.fixtures.podresources import snapshots as S

ROOT = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def sock_dir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="npr-", dir="/tmp")  # short: sun_path holds 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Node:
    """A mutable snapshot holder standing in for a simulated node."""

    def __init__(self, snapshot: NodeSnapshot) -> None:
        self.snapshot = snapshot

    def __call__(self) -> NodeSnapshot:
        return self.snapshot


@pytest.fixture
def node() -> Node:
    return Node(S.snapshot((S.db_pod(), S.mixed_pod())))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def served(sock_dir: str, node: Node, clock: FakeClock) -> Iterator[PodResourcesServer]:
    server = PodResourcesServer(
        node,
        os.path.join(sock_dir, "kubelet.sock"),
        limiter=TokenBucket(clock=clock),
        cache=PodResourcesCache(),
    )
    with server:
        yield server


def _stub(path: str) -> tuple[grpc.Channel, pb_grpc.PodResourcesListerStub]:
    channel = grpc.insecure_channel(f"unix:{path}")
    return channel, pb_grpc.PodResourcesListerStub(channel)


# -- round trips ----------------------------------------------------------------------------------


def test_list_get_allocatable_round_trip(served: PodResourcesServer, node: Node) -> None:
    with PodResourcesClient(served.path) as client:
        assert client.list() == build_list_response(node.snapshot)
        got = client.get("default", "tightly-coupled-database").pod_resources
        assert got == build_list_response(node.snapshot).pod_resources[0]
        assert client.allocatable() == build_allocatable_response(node.snapshot)


def test_every_call_sees_the_current_snapshot(
    served: PodResourcesServer, node: Node, clock: FakeClock
) -> None:
    with PodResourcesClient(served.address) as client:
        assert len(client.list().pod_resources) == 2
        node.snapshot = S.snapshot(())
        assert client.list().pod_resources == ()


def test_pod_level_fields_survive_the_wire(served: PodResourcesServer) -> None:
    with PodResourcesClient(served.path) as client:
        pod = client.get("default", "tightly-coupled-database").pod_resources
    assert pod is not None
    assert pod.cpu_ids == tuple(S.DB_BUDGET)
    assert [c.cpu_ids for c in pod.containers] == [(), (), tuple(S.DB_EXCLUSIVE)]


def test_get_unknown_pod_is_unknown_with_the_kubelet_text(served: PodResourcesServer) -> None:
    channel, stub = _stub(served.path)
    with channel, pytest.raises(grpc.RpcError) as err:
        stub.Get(pb.GetPodResourcesRequest(pod_name="nope", pod_namespace="kube-system"))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details() == "pod nope in namespace kube-system not found"
    with PodResourcesClient(served.path) as client, pytest.raises(PodResourcesClientError) as cerr:
        client.get("kube-system", "nope")
    assert cerr.value.code == "UNKNOWN"
    assert "pod nope in namespace kube-system not found" in str(cerr.value)


def test_provider_failure_is_reported_not_fatal(sock_dir: str) -> None:
    def broken() -> NodeSnapshot:
        raise RuntimeError("state file unreadable")

    path = os.path.join(sock_dir, "k.sock")
    with (
        PodResourcesServer(broken, path),
        PodResourcesClient(path) as client,
        pytest.raises(PodResourcesClientError, match="state file unreadable"),
    ):
        client.list()


# -- rate limit -----------------------------------------------------------------------------------


def test_burst_of_ten_then_resource_exhausted(served: PodResourcesServer, clock: FakeClock) -> None:
    channel, stub = _stub(served.path)
    with channel:
        calls = [
            lambda: stub.List(pb.ListPodResourcesRequest()),
            lambda: stub.GetAllocatableResources(pb.AllocatableResourcesRequest()),
            lambda: stub.Get(
                pb.GetPodResourcesRequest(pod_name="container-scope-mixed", pod_namespace="default")
            ),
        ]
        for i in range(10):  # shared by all methods
            calls[i % 3]()
        with pytest.raises(grpc.RpcError) as err:
            stub.List(pb.ListPodResourcesRequest())
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert err.value.details() == "rejected by rate limit"
        with pytest.raises(grpc.RpcError) as err:
            stub.Get(pb.GetPodResourcesRequest(pod_name="x", pod_namespace="y"))
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        clock.now += 0.01  # one token at 100/s
        stub.List(pb.ListPodResourcesRequest())
        with pytest.raises(grpc.RpcError):
            stub.List(pb.ListPodResourcesRequest())


def test_client_reports_rate_limiting(served: PodResourcesServer) -> None:
    with PodResourcesClient(served.path) as client:
        for _ in range(10):
            client.allocatable()
        with pytest.raises(PodResourcesClientError) as err:
            client.list()
    assert err.value.code == "RESOURCE_EXHAUSTED"
    assert "rejected by rate limit" in str(err.value)


def test_unknown_methods_take_no_token(served: PodResourcesServer) -> None:
    channel = grpc.insecure_channel(f"unix:{served.path}")
    with channel:
        other = channel.unary_unary("/v1alpha1.PodResourcesLister/List")
        for _ in range(12):
            with pytest.raises(grpc.RpcError) as err:
                other(b"")
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        pb_grpc.PodResourcesListerStub(channel).List(pb.ListPodResourcesRequest())


# -- socket handling ------------------------------------------------------------------------------


def test_stop_removes_the_socket(sock_dir: str, node: Node) -> None:
    path = os.path.join(sock_dir, "k.sock")
    server = PodResourcesServer(node, path).start()
    assert os.path.exists(path)
    server.stop()
    assert not os.path.exists(path)
    server.stop()  # idempotent


def test_refuses_a_socket_a_live_server_answers_on(served: PodResourcesServer, node: Node) -> None:
    with pytest.raises(SocketInUseError, match="in use"):
        PodResourcesServer(node, served.path).start()
    with PodResourcesClient(served.path) as client:  # the first server is untouched
        assert len(client.list().pod_resources) == 2


def test_replaces_a_stale_socket(sock_dir: str, node: Node) -> None:
    path = os.path.join(sock_dir, "k.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens
    assert os.path.exists(path)
    with PodResourcesServer(node, path), PodResourcesClient(path) as client:
        assert len(client.list().pod_resources) == 2


def test_refuses_to_replace_a_regular_file(sock_dir: str, node: Node) -> None:
    path = os.path.join(sock_dir, "k.sock")
    Path(path).write_text("precious")
    with pytest.raises(PodResourcesServerError, match="not a socket"):
        PodResourcesServer(node, path).start()
    assert Path(path).read_text() == "precious"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/tmp/" + "x" * 120 + ".sock", "longer than"),
        ("/nonexistent-dir-npr/kubelet.sock", "does not exist"),
    ],
    ids=["too-long", "no-directory"],
)
def test_bad_socket_paths(path: str, message: str, node: Node) -> None:
    with pytest.raises(PodResourcesServerError, match=message):
        PodResourcesServer(node, path).start()


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (
            "unix:///var/lib/kubelet/pod-resources/kubelet.sock",
            "/var/lib/kubelet/pod-resources/kubelet.sock",
        ),
        ("unix:rel/k.sock", "rel/k.sock"),
        ("/run/k.sock", "/run/k.sock"),
    ],
    ids=["unix-url", "unix-relative", "bare"],
)
def test_socket_addresses(address: str, expected: str) -> None:
    assert socket_path(address) == expected
    assert socket_path_of(address) == expected


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("unix:///run/k.sock", (None, "/run/k.sock")),
        ("unix:rel/k.sock", (None, "rel/k.sock")),
        ("unix://", (None, "")),
        ("unix:", (None, "")),
        ("/run/k.sock", (None, "/run/k.sock")),
        ("", (None, "")),
        ("tcp://127.0.0.1:10250", ("tcp", "")),
        ("npipe://./pipe/x", ("npipe", "")),
        ("dns:///host", ("dns", "")),
    ],
    ids=[
        "unix-url", "unix-relative", "unix-url-no-path", "unix-no-path", "bare", "empty",
        "tcp", "npipe", "dns",
    ],
)  # fmt: skip
def test_split_address(address: str, expected: tuple[str | None, str]) -> None:
    assert split_address(address) == expected


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:10250", "npipe://./pipe/x", "unix://"])
def test_unsupported_addresses(address: str) -> None:
    with pytest.raises(PodResourcesClientError):
        socket_path(address)
    with pytest.raises(PodResourcesServerError):
        socket_path_of(address)


# -- client errors --------------------------------------------------------------------------------


def test_missing_socket(sock_dir: str) -> None:
    with pytest.raises(PodResourcesClientError, match="not found"):
        PodResourcesClient(f"unix://{sock_dir}/kubelet.sock")


def test_nothing_listening(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "k.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    with pytest.raises(PodResourcesClientError, match="nothing is listening"):
        PodResourcesClient(path)


def test_not_a_socket(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "file")
    Path(path).write_text("")
    with pytest.raises(PodResourcesClientError, match="not a unix socket"):
        check_socket(path)


def test_permission_refused(served: PodResourcesServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests run as root, so the kernel's refusal is simulated at connect()."""

    class DeniedSocket(socket.socket):
        def connect(self, address: object) -> None:
            raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(client_mod.socket, "socket", DeniedSocket)
    with pytest.raises(PodResourcesClientError, match="permission denied") as err:
        PodResourcesClient(served.path)
    assert "root" in str(err.value)


def test_permission_refused_on_the_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str) -> os.stat_result:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(client_mod.os, "stat", denied)
    with pytest.raises(PodResourcesClientError, match="permission denied"):
        check_socket("/var/lib/kubelet/pod-resources/kubelet.sock")


def test_peer_speaking_another_api(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "other.sock")
    other = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    other.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "v1alpha1.PodResourcesLister",
                {"List": grpc.unary_unary_rpc_method_handler(lambda req, ctx: b"")},
            ),
        )
    )
    other.add_insecure_port(f"unix:{path}")
    other.start()
    try:
        with PodResourcesClient(path) as client, pytest.raises(PodResourcesClientError) as err:
            client.list()
        assert err.value.code == "UNIMPLEMENTED"
        assert "not a PodResources v1 endpoint" in str(err.value)
    finally:
        other.stop(None).wait()


def test_receive_limit(served: PodResourcesServer) -> None:
    with (
        PodResourcesClient(served.path, max_receive=64) as client,
        pytest.raises(PodResourcesClientError, match="receive limit of 64 bytes"),
    ):
        client.list()


def test_client_defaults() -> None:
    assert client_mod.DEFAULT_TIMEOUT == 10.0
    assert client_mod.DEFAULT_MAX_RECEIVE == 16 * 1024 * 1024
    assert client_mod.DEFAULT_SOCKET == "unix:///var/lib/kubelet/pod-resources/kubelet.sock"


# -- CLI ------------------------------------------------------------------------------------------


def _list_args(path: str, as_json: bool) -> argparse.Namespace:
    return argparse.Namespace(socket=path, json=as_json, timeout=5.0)


def test_cli_list_table(served: PodResourcesServer) -> None:
    out = io.StringIO()
    assert cmd.cmd_list(_list_args(served.path, False), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["NAMESPACE", "POD", "CONTAINER", "CPUS", "MEMORY", "NOTES"]
    table = "\n".join(lines)
    assert "(pod)" in table and "16-19,48-51" in table and "pod shared pool 19,51" in table
    db_row = next(line for line in lines if " database " in line)
    assert "16-18,48-50" in db_row and "memory 12Gi@1" in db_row and "exclusive CPUs" in db_row
    worker = next(line for line in lines if "worker-1" in line)
    assert worker.rstrip().endswith("node shared pool")
    exporter = next(line for line in lines if "metrics-exporter" in line)
    assert exporter.rstrip().endswith("pod shared pool")


def test_cli_list_json_is_canonical(served: PodResourcesServer, node: Node) -> None:
    out = io.StringIO()
    assert cmd.cmd_list(_list_args(served.path, True), out) == 0
    doc = json.loads(out.getvalue())
    assert doc == PodResourcesCache().list_json(node.snapshot)


def test_cli_list_through_main(
    served: PodResourcesServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    assert main(["podresources", "list", "--socket", f"unix://{served.path}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["podResources"][0]["name"]


def test_cli_list_missing_socket(sock_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    # A socket that does not exist is an input error (README: exit 2).
    assert cmd.cmd_list(_list_args(os.path.join(sock_dir, "none.sock"), False)) == 2
    assert "not found" in capsys.readouterr().err


def test_serve_until_stopped(sock_dir: str, node: Node) -> None:
    path = os.path.join(sock_dir, "serve.sock")
    stop = threading.Event()
    out = io.StringIO()
    ready = threading.Event()

    class Out(io.StringIO):
        def write(self, s: str) -> int:
            n = out.write(s)
            if "serving" in s:
                ready.set()
            return n

    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(cmd.serve(node, path, stop, Out())))
    t.start()
    try:
        assert ready.wait(10)
        with PodResourcesClient(path) as client:
            assert len(client.list().pod_resources) == 2
    finally:
        stop.set()
        t.join(10)
    assert result == [0]
    assert not os.path.exists(path)
    assert "stopped" in out.getvalue()


def test_serve_refuses_a_live_socket(served: PodResourcesServer, node: Node) -> None:
    assert cmd.serve(node, served.path, threading.Event(), io.StringIO()) == 1


_SERVE_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from tests.fixtures.podresources import snapshots as S
import app.commands.podresources as cmd
cmd.build_snapshot = lambda *a, **k: S.docs_pod_scope()
from app.cli import main
sys.exit(main(["podresources", "serve", "--socket", {path!r}, "--topology", "unused",
               "--kubelet-config", "unused"]))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_command_shuts_down_cleanly_on_signals(sock_dir: str, signum: int) -> None:
    path = os.path.join(sock_dir, "cli.sock")
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE_SCRIPT.format(root=str(ROOT), path=path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the socket is listening
        assert line.startswith("serving PodResources v1 on unix://"), proc.stderr.read()  # type: ignore[union-attr]
        with PodResourcesClient(path) as client:
            assert client.get("default", "tightly-coupled-database").pod_resources is not None
        proc.send_signal(signum)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not os.path.exists(path)


def test_serve_command_reports_bad_input(
    sock_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    config = tmp_path / "kubelet.yaml"
    config.write_text("cpuManagerPolicy: static\n")
    code = main(
        [
            "podresources",
            "serve",
            "--socket",
            os.path.join(sock_dir, "x.sock"),
            "--topology",
            "no-such-preset-npr",
            "--kubelet-config",
            str(config),
        ]
    )
    assert code == 2
    assert "--topology" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(sock_dir, "x.sock"))

"""The PodResources client's own HTTP/2 transport (``app.adapters.grpc.unary``) against real
grpcio servers on unix sockets: what a kubelet can answer besides a message (an old kubelet
without ``Get``, a deadline passed, a status message to decode, an answer over the limit, a
peer that is not gRPC, a server restarted under a client)."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from app.adapters.grpc.client import PodResourcesClient, PodResourcesClientError
from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.grpc.server import PodResourcesServer
from app.adapters.grpc.unary import RpcError, UnaryChannel, grpc_timeout
from app.domain.podresources import build_list_response
from tests.fixtures.podresources import snapshots as S

Handler = Callable[[Any, grpc.ServicerContext], Any]


@pytest.fixture
def sock_dir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="nun-", dir="/tmp")  # short: sun_path holds 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _serve(path: str, methods: dict[str, Handler]) -> grpc.Server:
    """A grpcio server of ``v1.PodResourcesLister`` with only ``methods`` (raw bytes out)."""
    request_types = {
        "List": pb.ListPodResourcesRequest,
        "GetAllocatableResources": pb.AllocatableResourcesRequest,
        "Get": pb.GetPodResourcesRequest,
    }
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            fn,
            request_deserializer=request_types[name].FromString,
            response_serializer=lambda m: m if isinstance(m, bytes) else m.SerializeToString(),
        )
        for name, fn in methods.items()
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("v1.PodResourcesLister", handlers),)
    )
    server.add_insecure_port(f"unix:{path}")
    server.start()
    return server


def _list_of(pods: int) -> pb.ListPodResourcesResponse:
    response = pb.ListPodResourcesResponse()
    for i in range(pods):
        pod = response.pod_resources.add(name=f"pod-{i:06d}", namespace="team")
        pod.containers.add(name="main", cpu_ids=list(range(64)))
    return response


def test_an_old_kubelet_without_get_is_unimplemented(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "old.sock")
    server = _serve(path, {"List": lambda req, ctx: _list_of(2)})  # kubelets before Get
    try:
        with PodResourcesClient(path) as client:
            assert [p.name for p in client.list().pod_resources] == ["pod-000000", "pod-000001"]
            with pytest.raises(PodResourcesClientError) as err:
                client.get("team", "pod-000000")
            assert err.value.code == "UNIMPLEMENTED"
            assert "/v1.PodResourcesLister/Get" in str(err.value)
            # The connection is still good after the refusal.
            assert len(client.list().pod_resources) == 2
    finally:
        server.stop(None).wait()


def test_the_deadline_is_the_clients_and_the_servers(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "slow.sock")
    seen: list[float] = []

    def slow(req: Any, ctx: grpc.ServicerContext) -> pb.ListPodResourcesResponse:
        seen.append(ctx.time_remaining() or 0.0)  # the grpc-timeout we sent
        time.sleep(1.5)
        return _list_of(1)

    server = _serve(path, {"List": slow})
    try:
        started = time.monotonic()
        with PodResourcesClient(path, timeout=0.4) as client:
            with pytest.raises(PodResourcesClientError) as err:
                client.list()
            assert err.value.code == "DEADLINE_EXCEEDED"
            assert "timed out after 0.4s" in str(err.value)
        assert time.monotonic() - started < 1.4  # not the server's 1.5 s
        assert seen and 0 < seen[0] <= 0.4
    finally:
        server.stop(None).wait()


def test_status_messages_are_percent_decoded(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "msg.sock")

    def refuse(req: Any, ctx: grpc.ServicerContext) -> None:
        ctx.abort(grpc.StatusCode.NOT_FOUND, "pod «db» in namespace prod: 100% gone\nretry")

    server = _serve(path, {"Get": refuse})
    try:
        with PodResourcesClient(path) as client, pytest.raises(PodResourcesClientError) as err:
            client.get("prod", "db")
        assert err.value.code == "NOT_FOUND"
        assert err.value.details == "pod «db» in namespace prod: 100% gone\nretry"
    finally:
        server.stop(None).wait()


def test_large_answers_cross_flow_control_and_the_limit_holds(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "big.sock")
    big = _list_of(20_000)  # about 1.9 MB: many windows' worth at HTTP/2's default 64 KiB
    size = big.ByteSize()
    server = _serve(path, {"List": lambda req, ctx: big})
    try:
        with PodResourcesClient(path) as client:
            assert len(client.list().pod_resources) == 20_000
        with (
            PodResourcesClient(path, max_receive=size - 1) as client,
            pytest.raises(PodResourcesClientError, match=f"receive limit of {size - 1} bytes"),
        ):
            client.list()
        with PodResourcesClient(path, max_receive=size) as client:
            assert len(client.list().pod_resources) == 20_000
    finally:
        server.stop(None).wait()


def _one_connection(
    path: str, serve: Callable[[socket.socket], None]
) -> tuple[socket.socket, threading.Thread]:
    """A unix socket at ``path`` whose first connection ``serve`` answers in a thread."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def run() -> None:
        conn, _ = listener.accept()
        with conn:
            serve(conn)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener, thread


def _peer(path: str, answer: bytes) -> tuple[socket.socket, threading.Thread]:
    """A unix socket peer that reads once, writes ``answer`` and hangs up."""

    def serve(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(answer)

    return _one_connection(path, serve)


@pytest.mark.parametrize(
    "answer",
    [b"", b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"],
    ids=["hangs-up", "http1"],
)
def test_a_peer_that_is_not_grpc_is_unavailable(sock_dir: str, answer: bytes) -> None:
    path = os.path.join(sock_dir, "other.sock")
    channel = UnaryChannel(path, max_receive=1 << 20)
    listener, thread = _peer(path, answer)
    try:
        with pytest.raises(RpcError) as err:
            channel.call("/v1.PodResourcesLister/List", b"", 5)
        assert err.value.code == "UNAVAILABLE"
    finally:
        channel.close()
        thread.join(5)
        listener.close()


def test_a_client_outlives_a_server_restart(sock_dir: str) -> None:
    """The kubelet restarts: its socket is replaced, the next call after a failure reconnects."""
    path = os.path.join(sock_dir, "kubelet.sock")
    snapshot = S.snapshot((S.db_pod(),))
    with PodResourcesClient(path, check=False) as client:
        with PodResourcesServer(lambda: snapshot, path):
            assert client.list() == build_list_response(snapshot)
        with pytest.raises(PodResourcesClientError):
            client.list()  # the old connection is gone
        with PodResourcesServer(lambda: snapshot, path):
            assert client.list() == build_list_response(snapshot)


@pytest.mark.parametrize(
    ("seconds", "header"),
    [(10, "10000m"), (0.0004, "1m"), (0.0015, "2m"), (99_999.999, "99999999m"), (1e6, "1000000S")],
)
def test_grpc_timeout_header(seconds: float, header: str) -> None:
    assert grpc_timeout(seconds) == header


def _h2_server_writing_at_once(path: str, body: bytes) -> tuple[socket.socket, threading.Thread]:
    """An HTTP/2 peer that holds every frame until the request has arrived, then writes its
    SETTINGS ACK and a whole answer in frames as large as the client allows, in one write (as a
    busy grpc server may): the client reads the ACK and a large frame together."""
    from h2.config import H2Configuration
    from h2.connection import H2Connection
    from h2.events import StreamEnded

    def serve(sock: socket.socket) -> None:
        conn = H2Connection(H2Configuration(client_side=False))
        conn.initiate_connection()
        stream = None
        while stream is None:
            for event in conn.receive_data(sock.recv(65536)):
                if isinstance(event, StreamEnded):
                    stream = event.stream_id
        conn.send_headers(stream, [(":status", "200"), ("content-type", "application/grpc")])
        framed = b"\0" + len(body).to_bytes(4, "big") + body
        assert conn.max_outbound_frame_size > len(framed)  # one frame, past 16 KiB
        conn.send_data(stream, framed)
        conn.send_headers(stream, [("grpc-status", "0")], end_stream=True)
        sock.sendall(conn.data_to_send())
        sock.recv(65536)  # until the client hangs up

    return _one_connection(path, serve)


def test_a_large_frame_read_with_the_settings_ack_is_accepted(sock_dir: str) -> None:
    """CI once saw ``FrameTooLargeError``: h2 raises its frame limit only when it reads the
    server's ACK, and checks a whole read against the limit it had before that read."""
    path = os.path.join(sock_dir, "ack.sock")
    answer = _list_of(500)  # about 50 KB: three times HTTP/2's default frame size
    listener, thread = _h2_server_writing_at_once(path, answer.SerializeToString())
    try:
        with PodResourcesClient(path, check=False) as client:
            pods = client.list().pod_resources
        assert [p.name for p in pods] == [p.name for p in answer.pod_resources]
        assert pods[-1].containers[0].cpu_ids == tuple(range(64))
    finally:
        thread.join(5)
        listener.close()


def test_an_answer_that_is_not_a_valid_message_is_a_client_error(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "kubelet.sock")
    # A List whose pod's name runs past the end; Get's pod with its cpu_ids unpacked (valid).
    server = _serve(
        path,
        {
            "List": lambda req, ctx: b"\x0a\x05\x0a\x09ab",
            "Get": lambda req, ctx: b"\x0a\x04\x20\x01\x20\x03",
        },
    )
    try:
        with PodResourcesClient(path) as client:
            with pytest.raises(PodResourcesClientError) as caught:
                client.list()
            assert caught.value.code == "INTERNAL"
            assert "List on " in caught.value.message
            assert "answered an invalid message: truncated field" in caught.value.message
            found = client.get("ns", "p").pod_resources
            assert found is not None and found.cpu_ids == (1, 3)
    finally:
        server.stop(None)

"""Unary gRPC calls over HTTP/2 on a unix socket, in pure Python (the ``h2`` package): the
transport of the PodResources client (``app.adapters.grpc.client``).

Why not grpcio here: the node agent is a gRPC *client* of one local socket making three unary
calls every few seconds, and importing grpcio costs it about 9.5 MiB of resident memory (its
C core's shared library and threads) of a 64 MiB budget (issue 20 pt 7); ``h2`` costs about
1.3 MiB. What a unary call needs of gRPC is small and written down in grpc/grpc
``doc/PROTOCOL-HTTP2.md``: request headers (``:method POST``, ``:path /<service>/<method>``,
``content-type: application/grpc``, ``te: trailers``, ``grpc-timeout``), one length-prefixed
message each way (a compressed-flag byte and a 4-byte big-endian length), and the status in
trailers (``grpc-status``, percent-encoded ``grpc-message``) or in a trailers-only response.
An HTTP status other than 200 without ``grpc-status`` maps as ``doc/http-grpc-status-mapping.md``
says. What grpcio adds that this does not need: retries, load balancing, name resolution, TLS,
compression (we never ask for it, so a compressed answer is an error), streaming. The servers
of this project (simulated nodes' sockets, ``app.adapters.grpc.server``) keep grpcio, and the
tests run this client against them.

The deadline is one monotonic deadline per call, sent as ``grpc-timeout`` and enforced on every
socket operation; an answer whose length prefix exceeds ``max_receive`` is refused before its
body is read (``RESOURCE_EXHAUSTED``, as grpc does).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterable
from urllib.parse import unquote

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes

#: gRPC status codes by number (grpc/grpc ``doc/statuscodes.md``).
STATUS_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
#: An HTTP status without ``grpc-status`` (doc/http-grpc-status-mapping.md); others: UNKNOWN.
HTTP_STATUS_CODES = {
    400: "INTERNAL",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "UNIMPLEMENTED",
    429: "UNAVAILABLE",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "UNAVAILABLE",
}
_PREFIX = struct.Struct(">BI")  # compressed flag, message length
_READ_SIZE = 256 * 1024
#: Our SETTINGS_MAX_FRAME_SIZE: a 1 MiB answer arrives in a few frames, not 64 (16 KiB each).
_MAX_FRAME = 1 << 20
_MAX_WINDOW = (1 << 31) - 1


class RpcError(Exception):
    """A call that did not end with status OK: ``code`` is the status name (``UNAVAILABLE``
    for a transport failure, ``DEADLINE_EXCEEDED`` when the deadline passed)."""

    def __init__(self, code: str, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details


def grpc_timeout(seconds: float) -> str:
    """``seconds`` as a ``grpc-timeout`` value: at most 8 digits, rounded up."""
    millis = max(1, int(seconds * 1000 + 0.999))
    if millis < 100_000_000:
        return f"{millis}m"
    return f"{min(99_999_999, int(seconds + 0.999))}S"


class UnaryChannel:
    """Unary calls to one unix socket: one HTTP/2 connection, opened on the first call and
    again after a failure, one call at a time (a stream each)."""

    def __init__(self, path: str, *, max_receive: int, authority: str = "localhost") -> None:
        self.path = path
        self.max_receive = max_receive
        self.authority = authority
        self._sock: socket.socket | None = None
        self._conn: H2Connection | None = None
        self._lock = threading.Lock()

    def call(self, method: str, request: bytes, timeout: float) -> bytes:
        """The answer of ``method`` (``/package.Service/Method``) to the serialized
        ``request``; ``RpcError`` unless the status is OK."""
        deadline = time.monotonic() + timeout
        with self._lock:
            try:
                return self._call(method, request, deadline)
            except TimeoutError:
                self._drop()
                raise RpcError("DEADLINE_EXCEEDED", "deadline exceeded") from None
            except (OSError, H2Error) as exc:
                self._drop()
                raise RpcError("UNAVAILABLE", f"{exc.__class__.__name__}: {exc}") from None
            except RpcError:
                self._drop()
                raise

    def close(self) -> None:
        with self._lock:
            self._drop()

    # -- one call -----------------------------------------------------------------------

    def _connect(self, deadline: float) -> tuple[socket.socket, H2Connection]:
        if self._sock is not None and self._conn is not None:
            return self._sock, self._conn
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(_remaining(deadline))
            sock.connect(self.path)
            conn = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
            conn.initiate_connection()
            # Windows as large as the largest answer: the server never waits for an update.
            window = min(_MAX_WINDOW, self.max_receive + _PREFIX.size)
            if window > conn.inbound_flow_control_window:
                conn.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: window})
                conn.increment_flow_control_window(window - conn.inbound_flow_control_window)
            conn.update_settings({SettingCodes.MAX_FRAME_SIZE: _MAX_FRAME})
            # h2 raises its inbound limit only when it reads the server's ACK, and checks a
            # whole read against the old one: an ACK and a large frame in one read would be
            # refused. A server sends large frames only after our SETTINGS, so accept them now.
            conn.max_inbound_frame_size = _MAX_FRAME
            sock.sendall(conn.data_to_send())
        except BaseException:
            sock.close()
            raise
        self._sock, self._conn = sock, conn
        return sock, conn

    def _call(self, method: str, request: bytes, deadline: float) -> bytes:
        sock, conn = self._connect(deadline)
        stream = conn.get_next_available_stream_id()
        conn.send_headers(
            stream,
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", method),
                (":authority", self.authority),
                ("te", "trailers"),
                ("content-type", "application/grpc"),
                ("grpc-timeout", grpc_timeout(_remaining(deadline))),
                ("user-agent", "numascope-podresources"),
            ],
        )
        conn.send_data(stream, _PREFIX.pack(0, len(request)) + request, end_stream=True)
        sock.sendall(conn.data_to_send())
        answer = _Answer(self.max_receive)
        while not answer.ended:
            sock.settimeout(_remaining(deadline))
            data = sock.recv(_READ_SIZE)
            if not data:
                raise RpcError("UNAVAILABLE", "the server closed the connection")
            for event in conn.receive_data(data):
                answer.take(event, stream, conn)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
        return answer.result()

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = self._conn = None


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


class _Answer:
    """What the server sent on one stream: headers, the message bytes, the status."""

    def __init__(self, max_receive: int) -> None:
        self.max_receive = max_receive
        self.http_status: int | None = None
        self.status: str | None = None
        self.message = ""
        self.body = bytearray()
        self.ended = False

    def take(self, event: object, stream: int, conn: H2Connection) -> None:
        if isinstance(event, ConnectionTerminated):
            raise RpcError("UNAVAILABLE", f"the server ended the connection ({event.error_code})")
        if getattr(event, "stream_id", stream) != stream:
            return
        if isinstance(event, ResponseReceived | TrailersReceived):
            self._headers(event.headers)
        elif isinstance(event, DataReceived):
            self.body += event.data
            conn.acknowledge_received_data(event.flow_controlled_length, stream)
            self._check_length()
        elif isinstance(event, StreamReset):
            raise RpcError("UNAVAILABLE", f"the server reset the stream ({event.error_code})")
        elif isinstance(event, StreamEnded):
            self.ended = True

    def _headers(self, headers: Iterable[tuple[str | bytes, str | bytes]]) -> None:
        for raw_name, raw_value in headers:
            # str with header_encoding set (h2's types also allow bytes).
            name, value = _text(raw_name), _text(raw_value)
            if name == ":status":
                self.http_status = int(value)
            elif name == "grpc-status":
                code = int(value)
                self.status = STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else "UNKNOWN"
            elif name == "grpc-message":
                self.message = unquote(value)

    def _check_length(self) -> None:
        if len(self.body) < _PREFIX.size:
            return
        compressed, length = _PREFIX.unpack_from(self.body)
        if length > self.max_receive:
            raise RpcError(
                "RESOURCE_EXHAUSTED",
                f"received message larger than max ({length} vs. {self.max_receive})",
            )
        if compressed:
            raise RpcError("INTERNAL", "compressed message, but no compression was asked for")

    def result(self) -> bytes:
        if self.status is None:
            status = self.http_status if self.http_status is not None else 0
            code = "INTERNAL" if status == 200 else HTTP_STATUS_CODES.get(status, "UNKNOWN")
            raise RpcError(code, f"no grpc-status in the answer (HTTP status {status})")
        if self.status != "OK":
            raise RpcError(self.status, self.message)
        if len(self.body) < _PREFIX.size:
            raise RpcError("INTERNAL", "the answer holds no message")
        _, length = _PREFIX.unpack_from(self.body)
        if len(self.body) != _PREFIX.size + length:
            raise RpcError("INTERNAL", "the answer is not exactly one message")
        return bytes(self.body[_PREFIX.size :])

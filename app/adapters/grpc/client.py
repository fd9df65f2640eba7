"""A PodResources v1 client for a kubelet socket (follows pkg/kubelet/apis/podresources/client.go).

``GetV1Client(socket, connectionTimeout, maxMsgSize)`` upstream; here
``PodResourcesClient(socket, timeout=10, max_receive=16 MiB)`` — the figures node e2e tests,
node-feature-discovery and resource-topology-exporter use (grpc's default receive limit of
4 MiB is too small for dense nodes). The socket may be given as ``unix:///path``,
``unix:path`` or a bare path.

Before dialling, the client connects to the socket once to turn the common mistakes into
clear ``PodResourcesClientError``s: no socket at the path, permission refused (the kubelet's
socket is root-owned; connecting needs write permission), or nothing listening. A peer that
answers but does not serve ``v1.PodResourcesLister`` (UNIMPLEMENTED) is reported as such.
Results are the dataclasses of ``app.domain.podresources``, decoded from the wire by
``app.adapters.grpc.wire`` (not protobuf: issue 20 pt 7); unchanged pods are decoded once and
reused (keyed by their wire bytes).

The calls go over ``app.adapters.grpc.unary`` (HTTP/2 in pure Python), not grpcio: the node
agent that observes through this client stays out of grpcio's memory (issue 20 pt 7; the
reasons are in that module's docstring).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from app.adapters.grpc import wire
from app.adapters.grpc.address import split_address
from app.adapters.grpc.unary import RpcError, UnaryChannel
from app.domain.podresources import (
    AllocatableResourcesResponse,
    GetPodResourcesRequest,
    GetPodResourcesResponse,
    ListPodResourcesResponse,
    PodResources,
)

DEFAULT_SOCKET = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_RECEIVE = 16 * 1024 * 1024
SERVICE = "v1.PodResourcesLister"
T = TypeVar("T")


class PodResourcesClientError(Exception):
    """A PodResources call failed; ``code`` is the gRPC status name when there was a call.
    ``input_error`` marks a bad address (no such socket, not a socket, not a unix endpoint):
    the caller's input, not a kubelet problem (the CLI exits 2 for it)."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: str = "",
        input_error: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = details
        self.input_error = input_error


def socket_path(address: str) -> str:
    """The filesystem path of ``unix:///abs``, ``unix:rel`` or a bare path."""
    scheme, path = split_address(address)
    if scheme is not None:
        raise PodResourcesClientError(
            f"unsupported PodResources endpoint {address!r}: use a unix socket path "
            "(unix:///var/lib/kubelet/pod-resources/kubelet.sock)",
            input_error=True,
        )
    if not path:
        raise PodResourcesClientError(
            f"PodResources endpoint {address!r} names no path", input_error=True
        )
    return path


def check_socket(path: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Raise PodResourcesClientError unless something accepts connections on ``path``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise PodResourcesClientError(
            f"PodResources socket {path} not found: is the kubelet running, and is its "
            "pod-resources directory mounted (mount the directory, not the socket file)?",
            input_error=True,
        ) from None
    except PermissionError:
        raise PodResourcesClientError(
            f"permission denied on PodResources socket {path}: its directory is root-owned; "
            "run as root (UID 0) or get read access to the directory"
        ) from None
    if not stat.S_ISSOCK(st.st_mode):
        raise PodResourcesClientError(f"{path} is not a unix socket", input_error=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except PermissionError:
            raise PodResourcesClientError(
                f"permission denied on PodResources socket {path}: connecting needs write "
                "permission on the socket; run as root (UID 0)"
            ) from None
        except OSError as exc:
            if exc.errno == errno.ECONNREFUSED:
                raise PodResourcesClientError(
                    f"nothing is listening on PodResources socket {path} (stale socket: is "
                    "the kubelet running?)"
                ) from None
            if isinstance(exc, TimeoutError):
                raise PodResourcesClientError(
                    f"timed out after {timeout:g}s connecting to PodResources socket {path}"
                ) from None
            raise PodResourcesClientError(
                f"cannot connect to PodResources socket {path}: {exc.strerror or exc}"
            ) from None


class PodResourcesClient:
    """``list()``, ``get(namespace, name)`` and ``allocatable()`` against a kubelet socket."""

    def __init__(
        self,
        socket: str = DEFAULT_SOCKET,
        timeout: float = DEFAULT_TIMEOUT,
        max_receive: int = DEFAULT_MAX_RECEIVE,
        *,
        check: bool = True,
    ) -> None:
        self.socket = socket
        self.path = socket_path(socket)
        self.timeout = timeout
        self.max_receive = max_receive
        if check:
            check_socket(self.path, timeout)
        self._channel = UnaryChannel(os.path.abspath(self.path), max_receive=max_receive)
        self._pods: OrderedDict[bytes, PodResources] = OrderedDict()
        self._pods_lock = threading.Lock()

    # -- calls ----------------------------------------------------------------------------

    def _call(self, method: str, request: bytes, decode: Callable[[bytes], T]) -> T:
        """What ``/v1.PodResourcesLister/<method>`` answers to ``request``, decoded."""
        try:
            data = self._channel.call(f"/{SERVICE}/{method}", request, self.timeout)
        except RpcError as exc:
            raise self._error(method, exc) from None
        try:
            return decode(data)
        except wire.WireError as exc:
            raise PodResourcesClientError(
                f"/{SERVICE}/{method} on {self.path} answered an invalid message: {exc}",
                code="INTERNAL",
                details=str(exc),
            ) from None

    def _error(self, method: str, exc: RpcError) -> PodResourcesClientError:
        code, details = exc.code, exc.details
        full = f"/{SERVICE}/{method}"
        if code == "UNIMPLEMENTED":
            message = (
                f"the server on {self.path} does not implement {full}: it is not a "
                "PodResources v1 endpoint (or a kubelet too old for this call)"
            )
        elif code == "UNAVAILABLE":
            message = f"PodResources socket {self.path} is unavailable: {details}"
        elif code == "DEADLINE_EXCEEDED":
            message = f"{full} on {self.path} timed out after {self.timeout:g}s"
        elif code == "RESOURCE_EXHAUSTED" and "larger than max" in details:
            message = (
                f"{full} response exceeds the receive limit of {self.max_receive} bytes; "
                "raise max_receive"
            )
        elif code == "RESOURCE_EXHAUSTED":
            message = f"{full} {details} (the kubelet allows 100 requests/s, burst 10)"
        else:
            message = f"{full} failed: {details or code}"
        return PodResourcesClientError(message, code=code, details=details)

    def _pod(self, data: bytes) -> PodResources:
        """The pod of a ``PodResources`` message, decoded once while its bytes recur."""
        with self._pods_lock:
            found = self._pods.get(data)
            if found is not None:
                self._pods.move_to_end(data)
                return found
        value = wire.pod(data)
        with self._pods_lock:
            self._pods[data] = value
            while len(self._pods) > 8192:
                self._pods.popitem(last=False)
        return value

    def list(self) -> ListPodResourcesResponse:
        pods = self._call("List", b"", wire.listed_pods)
        return ListPodResourcesResponse(tuple(self._pod(p) for p in pods))

    def get(self, namespace: str, name: str) -> GetPodResourcesResponse:
        request = wire.get_request(GetPodResourcesRequest(pod_name=name, pod_namespace=namespace))
        found = self._call("Get", request, wire.got_pod)
        return GetPodResourcesResponse(None if found is None else self._pod(found))

    def allocatable(self) -> AllocatableResourcesResponse:
        return self._call("GetAllocatableResources", b"", wire.allocatable)

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

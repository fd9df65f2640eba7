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
Results are the dataclasses of ``app.domain.podresources``; unchanged pods are decoded once
and reused (keyed by their wire bytes).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
from collections import OrderedDict
from typing import Any

import grpc

from app.adapters.grpc.address import split_address
from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.grpc.generated import api_pb2_grpc as pb_grpc
from app.adapters.podresources_pb import from_message
from app.domain.podresources import (
    AllocatableResourcesResponse,
    GetPodResourcesResponse,
    ListPodResourcesResponse,
    PodResources,
)

DEFAULT_SOCKET = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_RECEIVE = 16 * 1024 * 1024


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
        self._channel = grpc.insecure_channel(
            f"unix:{os.path.abspath(self.path)}",
            options=[
                ("grpc.max_receive_message_length", max_receive),
                ("grpc.enable_retries", 0),
            ],
        )
        self._stub = pb_grpc.PodResourcesListerStub(self._channel)
        self._pods: OrderedDict[bytes, PodResources] = OrderedDict()
        self._pods_lock = threading.Lock()

    # -- calls ----------------------------------------------------------------------------

    def _call(self, method: str, request: Any) -> Any:
        rpc = getattr(self._stub, method)
        try:
            return rpc(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise self._error(method, exc) from None

    def _error(self, method: str, exc: grpc.RpcError) -> PodResourcesClientError:
        code = exc.code() if hasattr(exc, "code") else None
        details = (exc.details() if hasattr(exc, "details") else "") or ""
        name = code.name if code is not None else None
        full = f"/v1.PodResourcesLister/{method}"
        if code == grpc.StatusCode.UNIMPLEMENTED:
            message = (
                f"the server on {self.path} does not implement {full}: it is not a "
                "PodResources v1 endpoint (or a kubelet too old for this call)"
            )
        elif code == grpc.StatusCode.UNAVAILABLE:
            message = f"PodResources socket {self.path} is unavailable: {details}"
        elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
            message = f"{full} on {self.path} timed out after {self.timeout:g}s"
        elif code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
            message = (
                f"{full} response exceeds the receive limit of {self.max_receive} bytes; "
                "raise max_receive"
            )
        elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            message = f"{full} {details} (the kubelet allows 100 requests/s, burst 10)"
        else:
            message = f"{full} failed: {details or name}"
        return PodResourcesClientError(message, code=name, details=details)

    def _pod(self, msg: pb.PodResources) -> PodResources:
        key = msg.SerializeToString()
        with self._pods_lock:
            found = self._pods.get(key)
            if found is not None:
                self._pods.move_to_end(key)
                return found
        value: PodResources = from_message(msg)
        with self._pods_lock:
            self._pods[key] = value
            while len(self._pods) > 8192:
                self._pods.popitem(last=False)
        return value

    def list(self) -> ListPodResourcesResponse:
        response = self._call("List", pb.ListPodResourcesRequest())
        return ListPodResourcesResponse(tuple(self._pod(p) for p in response.pod_resources))

    def get(self, namespace: str, name: str) -> GetPodResourcesResponse:
        request = pb.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace)
        response = self._call("Get", request)
        if not response.HasField("pod_resources"):
            return GetPodResourcesResponse(None)
        return GetPodResourcesResponse(self._pod(response.pod_resources))

    def allocatable(self) -> AllocatableResourcesResponse:
        response = self._call("GetAllocatableResources", pb.AllocatableResourcesRequest())
        result: AllocatableResourcesResponse = from_message(response)
        return result

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

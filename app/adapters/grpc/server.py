"""A PodResources v1 server on a unix socket, answering from a NodeSnapshot provider.

Follows pkg/kubelet/apis/podresources/server_v1.go and the socket handling of
pkg/kubelet/server/server.go ``ListenAndServePodResources`` (v1.37): the service
``v1.PodResourcesLister`` with ``List``, ``GetAllocatableResources`` and ``Get``, plaintext
gRPC on a unix socket, the shared token-bucket rate limit of ``ratelimit.py``, and the
kubelet's error texts (``Get`` for an unknown pod fails ``UNKNOWN`` with
``pod <name> in namespace <ns> not found``, as a plain Go error reaches a grpc-go client).

Every call asks the provider for the current snapshot, so a simulated node that admits pods
is seen at once. Responses are assembled from the per-pod cache of
``app.adapters.podresources_cache`` and handed to gRPC already serialised.

Socket handling differs from the kubelet on purpose: the kubelet removes whatever file is at
the socket path, while this server refuses to start over a socket a live process still
answers on (``SocketInUseError``) and over anything that is not a socket. A stale socket (no
one listening) is replaced. ``stop()`` removes the socket it created.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from app.adapters.grpc.address import split_address
from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.grpc.ratelimit import RateLimitInterceptor, TokenBucket
from app.adapters.podresources_cache import DEFAULT_CACHE, PodResourcesCache
from app.adapters.podresources_pb import to_message
from app.domain.podresources import PodNotFoundError, build_allocatable_response
from app.domain.snapshot import NodeSnapshot

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["PodResourcesLister"].full_name
#: Longest path a unix socket address can hold (sun_path is 108 bytes with the NUL).
MAX_SOCKET_PATH = 107

SnapshotProvider = Callable[[], NodeSnapshot]


class PodResourcesServerError(Exception):
    """The server cannot start on the requested socket."""


class SocketInUseError(PodResourcesServerError):
    """Another live process answers on the socket path."""


def socket_path_of(address: str) -> str:
    """A filesystem path from ``unix:///abs/path``, ``unix:rel/path`` or a bare path."""
    scheme, path = split_address(address)
    if scheme is not None:
        raise PodResourcesServerError(
            f"unsupported socket address {address!r}: only unix sockets are served "
            f"(got scheme {scheme!r})"
        )
    if not path:
        raise PodResourcesServerError(f"socket address {address!r} names no path")
    return path


def probe_socket(path: str, timeout: float = 1.0) -> bool:
    """Whether a process accepts connections on the unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
                return False
            raise
        return True


def prepare_socket_path(path: str) -> None:
    """Check that the server may listen on ``path``; remove a stale socket left there."""
    if len(os.fsencode(os.path.abspath(path))) > MAX_SOCKET_PATH:
        raise PodResourcesServerError(
            f"socket path {path!r} is longer than the {MAX_SOCKET_PATH} bytes a unix socket "
            "address can hold"
        )
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise PodResourcesServerError(f"socket directory {directory} does not exist")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise PodResourcesServerError(f"{path} exists and is not a socket; refusing to replace it")
    try:
        live = probe_socket(path)
    except OSError as exc:
        raise PodResourcesServerError(f"cannot check socket {path}: {exc.strerror}") from None
    if live:
        raise SocketInUseError(
            f"socket {path} is in use: another process is serving on it; stop that process "
            "or choose another socket path"
        )
    os.unlink(path)


class _Handlers:
    """The three RPCs; responses are returned as serialised bytes."""

    def __init__(self, provider: SnapshotProvider, cache: PodResourcesCache) -> None:
        self.provider = provider
        self.cache = cache

    def _snapshot(self, context: grpc.ServicerContext) -> NodeSnapshot:
        try:
            return self.provider()
        except Exception as exc:  # a provider failure is reported, never a dead server
            context.abort(grpc.StatusCode.UNKNOWN, f"cannot read node state: {exc}")
            raise  # unreachable: abort raises

    def list(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext) -> bytes:
        return self.cache.list_wire(self._snapshot(context))

    def get_allocatable_resources(
        self, request: pb.AllocatableResourcesRequest, context: grpc.ServicerContext
    ) -> bytes:
        response = build_allocatable_response(self._snapshot(context))
        return to_message(response).SerializeToString()

    def get(self, request: pb.GetPodResourcesRequest, context: grpc.ServicerContext) -> bytes:
        snapshot = self._snapshot(context)
        try:
            return self.cache.get_wire(snapshot, request.pod_namespace, request.pod_name)
        except PodNotFoundError as exc:
            context.abort(grpc.StatusCode.UNKNOWN, exc.message)
            raise  # unreachable: abort raises


def _raw(data: bytes) -> bytes:
    return data


def _generic_handler(handlers: _Handlers) -> grpc.GenericRpcHandler:
    def method(fn: Callable[[Any, grpc.ServicerContext], bytes], request_cls: Any) -> Any:
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=request_cls.FromString, response_serializer=_raw
        )

    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "List": method(handlers.list, pb.ListPodResourcesRequest),
            "GetAllocatableResources": method(
                handlers.get_allocatable_resources, pb.AllocatableResourcesRequest
            ),
            "Get": method(handlers.get, pb.GetPodResourcesRequest),
        },
    )


class PodResourcesServer:
    """Serve ``provider()`` snapshots as PodResources v1 on a unix socket.

    Use as a context manager, or call ``start()`` and ``stop()``. ``limiter`` defaults to the
    kubelet's bucket (100 requests/s, burst 10); pass a ``TokenBucket`` with a fake clock in
    tests.
    """

    def __init__(
        self,
        provider: SnapshotProvider,
        socket_address: str,
        *,
        limiter: TokenBucket | None = None,
        max_workers: int = 4,
        cache: PodResourcesCache | None = None,
    ) -> None:
        self.provider = provider
        self.path = os.path.abspath(socket_path_of(socket_address))
        self.limiter = limiter if limiter is not None else TokenBucket()
        self.max_workers = max_workers
        self.cache = cache if cache is not None else DEFAULT_CACHE
        self._server: grpc.Server | None = None
        self._inode: int | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"unix://{self.path}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> PodResourcesServer:
        with self._lock:
            if self._server is not None:
                raise PodResourcesServerError(f"server on {self.path} is already running")
            prepare_socket_path(self.path)
            server = grpc.server(
                futures.ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix="podresources"
                ),
                interceptors=[RateLimitInterceptor(self.limiter)],
                options=[("grpc.so_reuseport", 0)],
            )
            server.add_generic_rpc_handlers(
                (_generic_handler(_Handlers(self.provider, self.cache)),)
            )
            try:
                port = server.add_insecure_port(f"unix:{self.path}")
            except RuntimeError as exc:
                raise PodResourcesServerError(f"cannot listen on {self.path}: {exc}") from None
            if port == 0:
                raise PodResourcesServerError(f"cannot listen on {self.path}")
            server.start()
            self._server = server
            try:
                self._inode = os.lstat(self.path).st_ino
            except FileNotFoundError:
                self._inode = None
            return self

    def stop(self, grace: float | None = None) -> None:
        """Stop serving and remove the socket this server created."""
        with self._lock:
            server, self._server = self._server, None
            if server is None:
                return
            server.stop(grace).wait()
            self._remove_socket()

    def _remove_socket(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if stat.S_ISSOCK(st.st_mode) and (self._inode is None or st.st_ino == self._inode):
            os.unlink(self.path)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stops (True) or ``timeout`` passes (False)."""
        server = self._server
        if server is None:
            return True
        return bool(server.wait_for_termination(timeout))

    def __enter__(self) -> PodResourcesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""Serve every simulated node's PodResources on its own unix socket (``numascope serve
--podresources-dir DIR``): ``DIR/<node>.sock``.

Node agents that read a kubelet's PodResources — node-feature-discovery's topology-updater,
resource-topology-exporter — can be pointed at these sockets for demos: each answers ``List``,
``Get`` and ``GetAllocatableResources`` from the node's current snapshot (through
``app.adapters.grpc.server.PodResourcesServer``, the kubelet's rules and rate limit), so a pod
admitted on the dashboard is seen at once.

``PodResourcesSockets.start()`` opens a socket per simulated node and follows the registry
(``NodeService.add_listener``): a node created later gets its socket, a deleted node's socket is
closed and removed. ``stop()`` (the FastAPI lifespan's shutdown) closes and removes them all.
The observed node is never served (its kubelet has its own socket). A node whose socket cannot
be opened (path too long for a unix socket, a live process on it, a file in the way) is skipped
and the reason kept in ``problems``; the other nodes are served.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from app.adapters.grpc.server import PodResourcesServer, PodResourcesServerError
from app.domain.snapshot import NodeSnapshot
from app.services.nodes.service import NodeService

log = logging.getLogger(__name__)

SOCKET_SUFFIX = ".sock"


class SocketDirError(Exception):
    """The directory for the sockets cannot be used."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)
        self.message = f"{path}: {message}"


class PodResourcesSockets:
    """The PodResources sockets of the simulated nodes of one ``NodeService``."""

    def __init__(self, directory: str | Path, nodes: NodeService) -> None:
        self.directory = Path(directory)
        self.nodes = nodes
        self._servers: dict[str, PodResourcesServer] = {}
        self.problems: dict[str, str] = {}
        self._lock = threading.Lock()
        self._listening = False
        self.running = False

    def socket_path(self, name: str) -> Path:
        return self.directory / f"{name}{SOCKET_SUFFIX}"

    def _provider(self, name: str) -> NodeSnapshot:
        return self.nodes.reads.snapshot(name)

    # -- lifetime ---------------------------------------------------------------------------
    def start(self) -> PodResourcesSockets:
        """Create the directory if needed and serve every simulated node."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SocketDirError(self.directory, err.strerror or str(err)) from None
        if not self.directory.is_dir():
            raise SocketDirError(self.directory, "is not a directory")
        with self._lock:
            self.running = True
        if not self._listening:
            self.nodes.registry.add_listener(self._on_event)
            self._listening = True
        self.sync()
        return self

    def stop(self) -> None:
        """Close every socket (they are removed)."""
        with self._lock:
            self.running = False
            servers, self._servers = self._servers, {}
        for name, server in servers.items():
            try:
                server.stop(grace=0)
            except Exception:
                log.exception("cannot stop the PodResources socket of node %s", name)

    def __enter__(self) -> PodResourcesSockets:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- following the registry ------------------------------------------------------------
    def _on_event(self, event: str, name: str) -> None:
        if event == "created":
            self.open(name)
        elif event == "deleted":
            self.close(name)

    def sync(self) -> None:
        """Serve every simulated node, close sockets of nodes that are gone."""
        wanted = set(self.nodes.registry.simulated_names())
        with self._lock:
            gone = [n for n in self._servers if n not in wanted]
        for name in gone:
            self.close(name)
        for name in sorted(wanted):
            self.open(name)

    def open(self, name: str) -> bool:
        """Serve ``name`` (no-op when already served); False when its socket cannot be opened."""
        with self._lock:
            if not self.running:
                return False
            if name in self._servers:
                return True
            server = PodResourcesServer(
                lambda name=name: self._provider(name),  # type: ignore[misc]
                str(self.socket_path(name)),
            )
            try:
                server.start()
            except PodResourcesServerError as err:
                self.problems[name] = str(err)
                log.warning("PodResources socket of node %s not served: %s", name, err)
                return False
            self.problems.pop(name, None)
            self._servers[name] = server
            return True

    def close(self, name: str) -> None:
        with self._lock:
            server = self._servers.pop(name, None)
            self.problems.pop(name, None)
        if server is not None:
            server.stop(grace=0)

    def served(self) -> dict[str, str]:
        """Node name -> socket address, for the nodes being served."""
        with self._lock:
            return {name: s.address for name, s in sorted(self._servers.items())}


__all__ = ["SOCKET_SUFFIX", "PodResourcesSockets", "SocketDirError"]

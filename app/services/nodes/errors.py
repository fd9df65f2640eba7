"""Errors of the nodes (``app.services.nodes``), in a module of their own so that every source,
the observer and the web layer can name them without importing the service.

Each carries ``message`` for people and ``field`` (if any) for forms and the API; statuses are
mapped in ``app.web.errors``. ``write_failure`` turns what the database or the state files
raised during a change into ``StorageFullError`` (507: a full disk, ``ENOSPC``),
``NodeUnavailableError`` (503: a read-only directory, a failing database) or, for a value the
database refuses (PostgreSQL's column lengths, a NUL byte), ``DatabaseRefusedError`` (422).
Whatever it is, the change was rolled back completely before the error is raised.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

from app.adapters.statefiles import StateFileError


class NodeServiceError(Exception):
    """Base of the errors below: ``message`` for people, ``field`` (if any) for forms/API."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class UnknownNodeError(NodeServiceError, LookupError):
    """No simulated node has this name."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        names = ", ".join(self.known) or "none"
        super().__init__(f"node {name!r} not found; simulated nodes: {names}")


class UnknownPodError(NodeServiceError, LookupError):
    """The pod is not on the node (the kubelet's PodResources ``Get`` text)."""

    def __init__(self, node: str, namespace: str, name: str) -> None:
        self.node = node
        self.namespace = namespace
        self.name = name
        super().__init__(f"pod {name} in namespace {namespace} not found")


class NodeExistsError(NodeServiceError):
    """A node with this name already exists."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"node {name!r} already exists", "name")


class NodeInputError(NodeServiceError, ValueError):
    """Bad input: node name, topology, kubelet configuration, release or pod manifest."""


class DatabaseRefusedError(NodeInputError):
    """The database refused a value of the request (too long for its column, a NUL byte)."""


class HintSearchTooLargeError(NodeInputError):
    """A pod's topology-hint search is beyond the server's budget (``app.domain.hint_budget``);
    nothing was started."""


class PodConflictError(NodeServiceError):
    """The pod (same uid, or same namespace/name) is already on the node."""


class RemoteNotFoundError(NodeServiceError, LookupError):
    """A remote node's agent answered 404 (its own message: no such node or pod there)."""


class NoSimulatedNodesError(NodeServiceError):
    """This process keeps no simulated nodes (``serve --no-simulated``: no database)."""

    def __init__(self, action: str) -> None:
        super().__init__(
            f"this server keeps no simulated nodes (started with --no-simulated) and cannot "
            f"{action}; use a Numascope dashboard to try pods on simulated nodes"
        )


class ReadOnlyNodeError(NodeServiceError):
    """The node cannot be changed: an observed node (Numascope never changes a real node) or
    a node of the fleet (``kind``)."""

    def __init__(self, name: str, action: str, *, kind: str = "an observed node") -> None:
        self.name = name
        what = "what its kubelet recorded" if kind == "an observed node" else "it"
        super().__init__(
            f"node {name!r} is {kind} (read-only): Numascope only shows {what} and cannot "
            f"{action}; create a simulated node to try pods"
        )


class AgentUnreachableError(NodeServiceError):
    """A remote node's agent gave no usable answer: none within its deadline, an error of its
    own, or a document that breaks its contract (``field``). The hub answers for the agent
    (424 Failed Dependency, reason ``AgentUnreachable`` as in the fleet's rows), never with a
    5xx of its own."""


class NodeUnavailableError(NodeServiceError):
    """A change could not be made durable (read-only state directory, failing database, state
    files that cannot be restored); nothing of it was kept."""


class StorageFullError(NodeUnavailableError):
    """A change could not be made durable because the disk is full; nothing was kept."""


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def write_failure(err: BaseException, node: str, action: str) -> NodeServiceError:
    """The error to answer when ``action`` on ``node`` failed with ``err`` (rolled back)."""
    undone = f"{action} on node {node!r} was not made"
    if isinstance(err, StateFileError):
        if err.errno in _FULL:
            return StorageFullError(f"{undone}: the disk is full: {err}")
        return NodeUnavailableError(f"{undone}: the state files cannot be written: {err}")
    # Here, not at the top: a process without a database (the node agent) never writes and
    # never pays for SQLAlchemy (issue 20 pt 7).
    from sqlalchemy.exc import DataError, SQLAlchemyError, StatementError

    if isinstance(err, DataError) or (
        isinstance(err, StatementError) and isinstance(err.orig, ValueError)
    ):
        detail = str(getattr(err, "orig", None) or err).splitlines()[0]
        return DatabaseRefusedError(f"{undone}: the database refused a value: {detail}")
    if isinstance(err, SQLAlchemyError):
        detail = str(getattr(err, "orig", None) or err).splitlines()[0]
        if "full" in detail.lower():
            return StorageFullError(f"{undone}: the database's disk is full: {detail}")
        return NodeUnavailableError(f"{undone}: the database refused the change: {detail}")
    return NodeUnavailableError(f"{undone}: {err}")


__all__ = [
    "AgentUnreachableError",
    "DatabaseRefusedError",
    "HintSearchTooLargeError",
    "NoSimulatedNodesError",
    "NodeExistsError",
    "NodeInputError",
    "NodeServiceError",
    "NodeUnavailableError",
    "PodConflictError",
    "ReadOnlyNodeError",
    "StorageFullError",
    "UnknownNodeError",
    "UnknownPodError",
    "write_failure",
]

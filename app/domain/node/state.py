"""Restoring a simulated node from its state files the way a starting kubelet does (follows
pkg/kubelet/cm/container_manager_linux.go ``Start``, cpumanager/cpu_manager.go ``Start`` and
memorymanager/memory_manager.go ``Start``, v1.37).

Restoring (``restore_node``) runs each file through the reader of the node's release (the
configured policy is compared with the stored one) and then the policy's ``Start`` validation
(``validateState``), CPU manager first, as ``ContainerManager.Start`` does. Failures raise
``NodeStateError`` with the kubelet's text: ``start cpu manager error: could not restore state
from checkpoint: <err>, please drain this node and delete the CPU manager checkpoint file
"<dir>/cpu_manager_state" before restarting Kubelet`` for a file the reader refuses, ``start cpu
manager error: <validateState text>`` for a state ``Start`` refuses (memory: ``start memory
manager error: ...``). A missing file is a fresh start (the kubelet writes one). The node is
changed only when everything passed.

Which files a release writes and the state conversions are ``app.domain.node.state_files``; the
pods kept beside the files are ``app.domain.node.pods``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from app.domain.checkpoint import (
    CPU_FILE_NAME,
    MEMORY_FILE_NAME,
    CPUCheckpointState,
    LoadResult,
    MemoryCheckpointState,
    Reader,
    load_cpu_checkpoint,
    load_memory_checkpoint,
)
from app.domain.checkpoint.startup import (
    cpu_manager_state_from_checkpoint,
    memory_manager_state_from_checkpoint,
)
from app.domain.cpumanager.errors import CPUManagerStateError
from app.domain.cpumanager.state import CPUManagerState
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.state import MemoryManagerState
from app.domain.node.model import Node
from app.domain.node.state_files import (
    GATE,
    PODS_FILE_NAME,
    NodeStateError,
)
from app.domain.pod.model import Pod

__all__ = [
    "check_managers",
    "check_pod_list",
    "restore_managers",
    "restore_node",
    "start_managers",
]


_State = TypeVar("_State", CPUCheckpointState, MemoryCheckpointState)


def _load(
    node: Node, manager: str, kind: type[_State], content: str | bytes, state_dir: str
) -> tuple[_State, LoadResult]:
    """A state file through the reader of the node's release and configured policy; a file
    it refuses is the manager's start error (``start <manager> manager error: ...``)."""
    config = node.config
    if manager == "cpu":
        reader = Reader(config.release, config.gate(GATE), config.cpu_manager_policy)
        result = load_cpu_checkpoint(content, reader, state_dir=state_dir)
    else:
        reader = Reader(config.release, config.gate(GATE), config.memory_manager_policy)
        result = load_memory_checkpoint(content, reader, state_dir=state_dir)
    if not result.accepted or not isinstance(result.state, kind):
        raise NodeStateError(
            f"start {manager} manager error: {result.message or result.error}", manager
        )
    return result.state, result


def _restore_cpu(
    node: Node, content: str | bytes, state_dir: str
) -> tuple[CPUManagerState | None, set[str], LoadResult]:
    stored, result = _load(node, "cpu", CPUCheckpointState, content, state_dir)
    pods = set(stored.entries) | set(stored.pod_entries or {})
    if node.cpu_policy is None:
        return None, set(), result  # policy none: Start does nothing with the state
    live = cpu_manager_state_from_checkpoint(stored)
    try:
        node.cpu_policy.validate_state(live)
    except CPUManagerStateError as err:
        raise NodeStateError(f"start cpu manager error: {err.message}", "cpu") from None
    return live, pods, result


def _restore_memory(
    node: Node, content: str | bytes, state_dir: str
) -> tuple[MemoryManagerState | None, set[str], LoadResult]:
    stored, result = _load(node, "memory", MemoryCheckpointState, content, state_dir)
    if node.memory is None or node.config.memory_manager_policy != "Static":
        return None, set(), result
    live = memory_manager_state_from_checkpoint(stored)
    try:
        node.memory.policy.start(live)
    except MemoryManagerError as err:
        raise NodeStateError(f"start memory manager error: {err.message}", "memory") from None
    return live, set(stored.entries) | set(stored.pod_entries or {}), result


@dataclass(slots=True)
class _Started:
    """What the managers' readers and ``Start`` validation made of the files, not yet taken
    by the node: the live states, the pod UIDs the files name, each file's load result."""

    cpu: CPUManagerState | None = None
    memory: MemoryManagerState | None = None
    referenced: set[str] = field(default_factory=set)
    loaded: dict[str, LoadResult] = field(default_factory=dict)


def _start(node: Node, files: Mapping[str, str | bytes | None], state_dir: str) -> _Started:
    """Each file present through its manager's reader and ``Start``, CPU manager first."""
    started = _Started()
    cpu_content = files.get(CPU_FILE_NAME)
    if cpu_content is not None:
        started.cpu, uids, started.loaded[CPU_FILE_NAME] = _restore_cpu(
            node, cpu_content, state_dir
        )
        started.referenced |= uids
    memory_content = files.get(MEMORY_FILE_NAME)
    if memory_content is not None:
        started.memory, uids, started.loaded[MEMORY_FILE_NAME] = _restore_memory(
            node, memory_content, state_dir
        )
        started.referenced |= uids
    return started


def _take(node: Node, started: _Started) -> None:
    """The node takes the started states."""
    if started.cpu is not None and node.cpu_policy is not None:
        node.cpu_policy.start(started.cpu)  # validated by _restore_cpu; sets the metrics gauges
        node.cpu_state = started.cpu
    if started.memory is not None and node.memory is not None:
        node.memory.state = started.memory


def check_managers(
    node: Node, files: Mapping[str, str | bytes | None], state_dir: str = ""
) -> dict[str, LoadResult]:
    """What the node's CPU and memory managers make of ``files`` at start-up (reader, then
    ``Start`` validation; CPU manager first), the node left as it was: a start-up judged
    without the node that results (the node's policies only judge; their states are new).
    Returns each present file's load result; raises ``NodeStateError`` as ``start_managers``."""
    return _start(node, files, state_dir).loaded


def start_managers(
    node: Node,
    files: Mapping[str, str | bytes | None],
    known_uids: set[str] | None,
    state_dir: str = "",
) -> dict[str, LoadResult]:
    """Start the node's CPU and memory managers on ``files`` as its kubelet release does
    (reader, then ``Start`` validation; CPU manager first) and keep their states, without
    registering any pod (a restarting kubelet re-admits its pods afterwards).

    ``files`` maps ``cpu_manager_state``/``memory_manager_state`` to their content (``None`` or
    absent: no file, a fresh start); every pod the files name must be in ``known_uids``
    (``None``: not checked, the pods are not known).
    Returns what the release's reader made of each file present. Raises ``NodeStateError``;
    the node is changed only on success.
    """
    if node.pods:
        raise NodeStateError("state can only be restored into a node without pods", "pods")
    started = _start(node, files, state_dir)
    unknown = [] if known_uids is None else sorted(started.referenced - known_uids)
    if unknown:
        raise NodeStateError(
            f"the state files hold assignments of pod uid {unknown[0]}, which is not among the "
            f"recorded pods ({PODS_FILE_NAME}); the state and the pod list disagree",
            "pods",
        )
    _take(node, started)
    return started.loaded


def check_pod_list(pods: Sequence[tuple[Pod, float]]) -> dict[str, tuple[Pod, float]]:
    """The recorded pods by uid; a uid or a name listed twice raises ``NodeStateError``."""
    by_uid: dict[str, tuple[Pod, float]] = {}
    keys: set[str] = set()
    for pod, admitted_at in pods:
        if pod.uid in by_uid:
            raise NodeStateError(f"pod uid {pod.uid} is listed twice", "pods")
        if pod.key in keys:
            raise NodeStateError(f"pod {pod.key} is listed twice", "pods")
        by_uid[pod.uid] = (pod, admitted_at)
        keys.add(pod.key)
    return by_uid


def restore_node(
    node: Node,
    files: Mapping[str, str | bytes | None],
    pods: Sequence[tuple[Pod, float]] = (),
    state_dir: str = "",
) -> None:
    """Restore ``node`` (freshly built, nothing admitted) from its state files and pods.

    ``files`` as for ``start_managers``; ``pods`` are the admitted pods with their admission
    times. Every pod the state files name must be among them. Raises ``NodeStateError``;
    the node is changed only on success.
    """
    if node.pods:
        raise NodeStateError("state can only be restored into a node without pods", "pods")
    by_uid = check_pod_list(pods)
    start_managers(node, files, set(by_uid), state_dir)
    for pod, admitted_at in by_uid.values():
        node.keep(pod, admitted_at)


def restore_managers(
    node: Node, files: Mapping[str, str | bytes | None], state_dir: str = ""
) -> None:
    """Restore only the managers' state of ``node`` (freshly built) from state files, as a
    starting kubelet reads and validates them, without the pods themselves: what a dry run on
    a copy of an observed node needs (its pods are known to the kubelet, not to us). Raises
    ``NodeStateError``; the node is changed only on success."""
    start_managers(node, files, None, state_dir)

"""A simulated node's state files: conversion between the live manager states of a ``Node`` and
the checkpoint package's normalised states, both directions, and restoring a ``Node`` the way a
starting kubelet does (follows pkg/kubelet/cm/container_manager_linux.go ``Start``,
cpumanager/cpu_manager.go ``Start``, cpumanager/state/state_checkpoint.go,
memorymanager/memory_manager.go ``Start`` and memorymanager/state/state_checkpoint.go, v1.37).

What a kubelet release writes (spec ``checkpoints.md`` §1, §12.2; the gate is
``PodLevelResourceManagers``, the one ``storeState`` looks at):

=====================  ==================  =====================
release                ``cpu_manager_state``  ``memory_manager_state``
=====================  ==================  =====================
1.35                   V2                  V1
1.36, gate off         V2                  V1
1.36, gate on          V3                  V2
1.37 (gate on or off)  V4                  V3
=====================  ==================  =====================

Policy ``none`` (CPU) and ``None`` (memory) nodes write files too, as every kubelet does: the
checkpoint state is created whatever the policy and the ``none`` policies' ``Start`` changes
nothing, so the CPU file holds policy ``none`` with an *empty* default set (the simulator's own
``none`` state keeps every CPU in the default set for its views; the file carries what the
kubelet writes) and the memory file policy ``None`` with an empty machine state.

Restoring (``restore_node``) runs each file through the reader of the node's release (the
configured policy is compared with the stored one) and then the policy's ``Start`` validation
(``validateState``), CPU manager first, as ``ContainerManager.Start`` does. Failures raise
``NodeStateError`` with the kubelet's text: ``start cpu manager error: could not restore state
from checkpoint: <err>, please drain this node and delete the CPU manager checkpoint file
"<dir>/cpu_manager_state" before restarting Kubelet`` for a file the reader refuses, ``start cpu
manager error: <validateState text>`` for a state ``Start`` refuses (memory: ``start memory
manager error: ...``). A missing file is a fresh start (the kubelet writes one). The node is
changed only when everything passed.

The kubelet's files hold pod UIDs and container names only; the pods themselves are kept
beside them (``pods_document``/``pods_from_document``: normalised v1 Pod manifests, with the
machine's topology and the kubelet configuration) so that a later run knows what it is
looking at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.checkpoint import (
    CPU_FILE_NAME,
    MEMORY_FILE_NAME,
    CPUCheckpointState,
    LoadResult,
    MemoryCheckpointState,
    Reader,
    load_cpu_checkpoint,
    load_memory_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint import Block as CheckpointBlock
from app.domain.checkpoint import MemoryTable as CheckpointMemoryTable
from app.domain.checkpoint import NUMANodeState as CheckpointNUMANodeState
from app.domain.cpumanager.errors import CPUManagerStateError
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.state import Block, MemoryManagerState, MemoryTable, NUMANodeState
from app.domain.node import Node
from app.domain.pod import Container, Pod, PodManifestError
from app.domain.pod_manifest import pod_from_manifest
from app.domain.topology_record import topology_to_record

__all__ = [
    "CPU_FILE_NAME",
    "MEMORY_FILE_NAME",
    "PODS_FILE_NAME",
    "PODS_FORMAT",
    "NodeStateError",
    "StateFileVersions",
    "check_pod_list",
    "cpu_checkpoint_state",
    "cpu_manager_state_from_checkpoint",
    "memory_checkpoint_state",
    "memory_manager_state_from_checkpoint",
    "pod_to_manifest",
    "pods_document",
    "pods_from_document",
    "render_state_files",
    "restore_node",
    "start_managers",
    "state_file_versions",
]

PODS_FILE_NAME = "pods.json"
PODS_FORMAT = "numascope-pods/1"

GATE = "PodLevelResourceManagers"


class NodeStateError(Exception):
    """State files cannot be restored into a node; ``message`` is the kubelet's text where the
    kubelet has one, ``manager`` is ``cpu``, ``memory`` or ``pods``."""

    def __init__(self, message: str, manager: str) -> None:
        super().__init__(message)
        self.message = message
        self.manager = manager


# -- versions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateFileVersions:
    """The file versions a kubelet release writes, with display labels."""

    cpu: str
    memory: str
    family: str

    @property
    def cpu_label(self) -> str:
        return f"cpu_manager_state {self.cpu} ({self.family} family)"

    @property
    def memory_label(self) -> str:
        # The memory manager came with 1.21: its V1 family starts there (as the inspector says).
        family = self.family.replace("1.18–1.35", "1.21–1.35")
        return f"memory_manager_state {self.memory} ({family} family)"

    def to_dict(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "family": self.family}


def state_file_versions(config: KubeletConfig) -> StateFileVersions:
    """Which versions the node's kubelet writes (``checkpoints.md`` §12.2)."""
    gate = config.gate(GATE)
    if config.release in ("1.37", "1.38"):  # 1.38 (master) writes as 1.37
        return StateFileVersions("V4", "V3", "1.37")
    if config.release == "1.36" and gate:
        return StateFileVersions("V3", "V2", "1.36 pod-level")
    if config.release == "1.36":
        return StateFileVersions("V2", "V1", "1.36 gate off")
    return StateFileVersions("V2", "V1", "1.18–1.35")


def _reader(config: KubeletConfig, policy: str) -> Reader:
    return Reader(config.release, config.gate(GATE), policy)


# -- live state -> checkpoint state ----------------------------------------------------------


def cpu_checkpoint_state(node: Node) -> CPUCheckpointState:
    """What the node's CPU manager checkpoints (``storeState``)."""
    if node.cpu_policy is None:
        return CPUCheckpointState(policy_name="none", default_cpu_set=CPUSet(), entries={})
    state = node.cpu_state
    return CPUCheckpointState(
        policy_name=node.cpu_policy.name(),
        default_cpu_set=state.default_cpuset,
        entries={pod: dict(containers) for pod, containers in state.assignments.items()},
        pod_entries=dict(state.pod_entries),
    )


def _checkpoint_block(b: Block) -> CheckpointBlock:
    return CheckpointBlock(tuple(b.numa_affinity), b.type, b.size)


def memory_checkpoint_state(node: Node) -> MemoryCheckpointState:
    """What the node's memory manager checkpoints."""
    if node.memory is None or node.config.memory_manager_policy != "Static":
        return MemoryCheckpointState(policy_name="None")
    state = node.memory.state
    machine = {
        numa: CheckpointNUMANodeState(
            number_of_assignments=s.number_of_assignments,
            memory_map={
                name: CheckpointMemoryTable(
                    t.total_mem_size, t.system_reserved, t.allocatable, t.reserved, t.free
                )
                for name, t in s.memory_map.items()
            },
            cells=tuple(s.cells),
        )
        for numa, s in state.machine_state.items()
    }
    entries = {
        pod: {name: tuple(_checkpoint_block(b) for b in blocks) for name, blocks in c.items()}
        for pod, c in state.assignments.items()
    }
    pod_entries = {
        pod: tuple(_checkpoint_block(b) for b in blocks)
        for pod, blocks in state.pod_entries.items()
    }
    return MemoryCheckpointState("Static", machine, entries, pod_entries)


def render_state_files(node: Node) -> dict[str, str]:
    """The exact text of each state file the node's kubelet would have written."""
    versions = state_file_versions(node.config)
    return {
        CPU_FILE_NAME: write_cpu_checkpoint(cpu_checkpoint_state(node), versions.cpu),
        MEMORY_FILE_NAME: write_memory_checkpoint(memory_checkpoint_state(node), versions.memory),
    }


# -- checkpoint state -> live state ----------------------------------------------------------


def cpu_manager_state_from_checkpoint(state: CPUCheckpointState) -> CPUManagerState:
    """The CPU manager's in-memory state restored from a checkpoint (``restoreState``)."""
    return CPUManagerState(
        state.default_cpu_set,
        {pod: dict(containers) for pod, containers in state.entries.items()},
        dict(state.pod_entries or {}),
    )


def _live_block(b: CheckpointBlock) -> Block:
    return Block(tuple(b.numa_affinity), b.type, b.size)


def memory_manager_state_from_checkpoint(state: MemoryCheckpointState) -> MemoryManagerState:
    """The memory manager's in-memory state restored from a checkpoint."""
    machine = {
        numa: NUMANodeState(
            s.number_of_assignments,
            {
                name: MemoryTable(t.total, t.system_reserved, t.allocatable, t.reserved, t.free)
                for name, t in s.memory_map.items()
            },
            list(s.cells),
        )
        for numa, s in state.machine_state.items()
    }
    entries = {
        pod: {name: tuple(_live_block(b) for b in blocks) for name, blocks in c.items()}
        for pod, c in state.entries.items()
    }
    pod_entries = {
        pod: tuple(_live_block(b) for b in blocks)
        for pod, blocks in (state.pod_entries or {}).items()
    }
    return MemoryManagerState(machine, entries, pod_entries)


# -- restoring a node ------------------------------------------------------------------------


def _restore_cpu(
    node: Node, content: str | bytes, state_dir: str
) -> tuple[CPUManagerState | None, set[str], LoadResult]:
    result = load_cpu_checkpoint(
        content, _reader(node.config, node.config.cpu_manager_policy), state_dir=state_dir
    )
    if not result.accepted or not isinstance(result.state, CPUCheckpointState):
        raise NodeStateError(f"start cpu manager error: {result.message or result.error}", "cpu")
    stored = result.state
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
    result = load_memory_checkpoint(
        content, _reader(node.config, node.config.memory_manager_policy), state_dir=state_dir
    )
    if not result.accepted or not isinstance(result.state, MemoryCheckpointState):
        raise NodeStateError(
            f"start memory manager error: {result.message or result.error}", "memory"
        )
    stored = result.state
    if node.memory is None or node.config.memory_manager_policy != "Static":
        return None, set(), result
    live = memory_manager_state_from_checkpoint(stored)
    try:
        node.memory.policy.start(live)
    except MemoryManagerError as err:
        raise NodeStateError(f"start memory manager error: {err.message}", "memory") from None
    return live, set(stored.entries) | set(stored.pod_entries or {}), result


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
    cpu_state: CPUManagerState | None = None
    memory_state: MemoryManagerState | None = None
    referenced: set[str] = set()
    loaded: dict[str, LoadResult] = {}
    cpu_content = files.get(CPU_FILE_NAME)
    if cpu_content is not None:
        cpu_state, uids, loaded[CPU_FILE_NAME] = _restore_cpu(node, cpu_content, state_dir)
        referenced |= uids
    memory_content = files.get(MEMORY_FILE_NAME)
    if memory_content is not None:
        memory_state, uids, loaded[MEMORY_FILE_NAME] = _restore_memory(
            node, memory_content, state_dir
        )
        referenced |= uids
    unknown = [] if known_uids is None else sorted(referenced - known_uids)
    if unknown:
        raise NodeStateError(
            f"the state files hold assignments of pod uid {unknown[0]}, which is not among the "
            f"recorded pods ({PODS_FILE_NAME}); the state and the pod list disagree",
            "pods",
        )
    if cpu_state is not None and node.cpu_policy is not None:
        node.cpu_policy.start(cpu_state)  # validated above; sets the metrics gauges
        node.cpu_state = cpu_state
    if memory_state is not None and node.memory is not None:
        node.memory.state = memory_state
    return loaded


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
    for uid, (pod, admitted_at) in by_uid.items():
        node.pods[uid] = pod
        node.admitted_at[uid] = admitted_at


def restore_managers(
    node: Node, files: Mapping[str, str | bytes | None], state_dir: str = ""
) -> None:
    """Restore only the managers' state of ``node`` (freshly built) from state files, as a
    starting kubelet reads and validates them, without the pods themselves: what a dry run on
    a copy of an observed node needs (its pods are known to the kubelet, not to us). Raises
    ``NodeStateError``; the node is changed only on success."""
    if node.pods:
        raise NodeStateError("state can only be restored into a node without pods", "pods")
    cpu_state: CPUManagerState | None = None
    memory_state: MemoryManagerState | None = None
    cpu_content = files.get(CPU_FILE_NAME)
    if cpu_content is not None:
        cpu_state, _, _ = _restore_cpu(node, cpu_content, state_dir)
    memory_content = files.get(MEMORY_FILE_NAME)
    if memory_content is not None:
        memory_state, _, _ = _restore_memory(node, memory_content, state_dir)
    if cpu_state is not None and node.cpu_policy is not None:
        node.cpu_policy.start(cpu_state)
        node.cpu_state = cpu_state
    if memory_state is not None and node.memory is not None:
        node.memory.state = memory_state


# -- pods ---------------------------------------------------------------------------------


def _resources(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = {k: str(v) for k, v in requests.items()}
    if limits:
        out["limits"] = {k: str(v) for k, v in limits.items()}
    return out


def _container_manifest(c: Container, init: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name}
    if init and c.restart_policy is not None:
        out["restartPolicy"] = c.restart_policy
    res = _resources(c.resources.requests, c.resources.limits)
    if res:
        out["resources"] = res
    return out


def pod_to_manifest(pod: Pod) -> dict[str, Any]:
    """A v1 Pod manifest that ``pod_from_manifest`` reads back into an equal ``Pod``
    (requests and limits after API defaulting, canonical quantity text)."""
    spec: dict[str, Any] = {}
    if pod.resources is not None:
        spec["resources"] = _resources(pod.resources.requests, pod.resources.limits)
    if pod.init_containers:
        spec["initContainers"] = [_container_manifest(c, True) for c in pod.init_containers]
    spec["containers"] = [_container_manifest(c, False) for c in pod.containers]
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "spec": spec,
    }
    if pod.qos_class is not None:
        manifest["status"] = {"qosClass": pod.qos_class}
    return manifest


def pods_document(node: Node) -> dict[str, Any]:
    """The node's admitted pods in admission order, as stored in ``pods.json``."""
    return {
        "format": PODS_FORMAT,
        "node": node.name,
        "release": node.config.release,
        # The machine and the configuration, so that a later kubelet (``numascope restart``)
        # can start on these files; readers of older records ignore them.
        "topology": topology_to_record(node.topology),
        "kubeletConfig": node.config.to_dict(),
        "pods": [
            {"admittedAt": node.admitted_at.get(uid, 0.0), "manifest": pod_to_manifest(pod)}
            for uid, pod in node.pods.items()
        ],
    }


def pods_from_document(
    doc: Any, *, pod_level_resources_enabled: bool = True
) -> list[tuple[Pod, float]]:
    """Read ``pods_document`` output back; raises ``NodeStateError`` naming the bad entry."""
    if not isinstance(doc, Mapping):
        raise NodeStateError(f"{PODS_FILE_NAME}: expected a JSON object", "pods")
    if doc.get("format") != PODS_FORMAT:
        raise NodeStateError(
            f"{PODS_FILE_NAME}: format must be {PODS_FORMAT!r}, got {doc.get('format')!r}", "pods"
        )
    items = doc.get("pods")
    if not isinstance(items, list):
        raise NodeStateError(f"{PODS_FILE_NAME}: pods must be a list", "pods")
    out: list[tuple[Pod, float]] = []
    for i, item in enumerate(items):
        where = f"{PODS_FILE_NAME}: pods[{i}]"
        if not isinstance(item, Mapping):
            raise NodeStateError(f"{where}: expected an object", "pods")
        admitted_at = item.get("admittedAt", 0.0)
        if isinstance(admitted_at, bool) or not isinstance(admitted_at, int | float):
            raise NodeStateError(f"{where}.admittedAt: expected a number", "pods")
        manifest = item.get("manifest")
        if not isinstance(manifest, Mapping):
            raise NodeStateError(f"{where}.manifest: expected a Pod object", "pods")
        try:
            pod = pod_from_manifest(
                manifest, pod_level_resources_enabled=pod_level_resources_enabled
            )
        except PodManifestError as err:
            raise NodeStateError(f"{where}.manifest: {err}", "pods") from None
        out.append((pod, float(admitted_at)))
    return out

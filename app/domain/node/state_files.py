"""A simulated node's state files: which versions its kubelet release writes, and the
conversion between the live manager states of a ``Node`` and the checkpoint package's normalised
states, both directions (follows pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and memorymanager/state/state_checkpoint.go,
v1.37).

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

The kubelet's files hold pod UIDs and container names only; the pods are kept beside them in
``PODS_FILE_NAME`` (``app.domain.node.pods``). ``NodeStateError`` is the error of restoring any
of these files (``app.domain.node.state``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.domain import releases
from app.domain.checkpoint import (
    CPU_FILE_NAME,
    MEMORY_FILE_NAME,
    CPUCheckpointState,
    MemoryCheckpointState,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint import MemoryTable as CheckpointMemoryTable
from app.domain.checkpoint import NUMANodeState as CheckpointNUMANodeState
from app.domain.checkpoint.incremental import CheckpointWriter
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.state import NUMANodeState

if TYPE_CHECKING:
    # Only named: the state-file versions a node agent reports need no engine (issue 20 pt 7).
    from app.domain.node.model import Node

__all__ = [
    "GATE",
    "PODS_FILE_NAME",
    "PODS_FORMAT",
    "NodeStateError",
    "StateFileVersions",
    "StateFilesWriter",
    "cpu_checkpoint_state",
    "memory_checkpoint_state",
    "render_state_files",
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
        family = releases.MEMORY_FAMILY_LABEL.get(self.family, self.family)
        return f"memory_manager_state {self.memory} ({family} family)"

    def to_dict(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "family": self.family}


def state_file_versions(config: KubeletConfig) -> StateFileVersions:
    """Which versions the node's kubelet writes (``checkpoints.md`` §12.2)."""
    gate = config.gate(GATE)
    row = releases.get(config.release)  # 1.38 (master) writes as 1.37
    cpu, memory = row.writes(gate)
    return StateFileVersions(cpu, memory, row.writer_family(gate))


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


def _checkpoint_node_state(s: NUMANodeState) -> CheckpointNUMANodeState:
    return CheckpointNUMANodeState(
        number_of_assignments=s.number_of_assignments,
        memory_map={
            name: CheckpointMemoryTable(
                t.total_mem_size, t.system_reserved, t.allocatable, t.reserved, t.free
            )
            for name, t in s.memory_map.items()
        },
        cells=tuple(s.cells),
    )


@dataclass(slots=True)
class _Kept:
    """The last conversion of each NUMA node's state, by id: the live state it was made from
    and what it gave. Kept by identity: the memory manager replaces the states it changes,
    never changes one in place (``memorymanager.state``)."""

    machine: dict[int, tuple[NUMANodeState, CheckpointNUMANodeState]] = field(default_factory=dict)


def memory_checkpoint_state(node: Node, kept: _Kept | None = None) -> MemoryCheckpointState:
    """What the node's memory manager checkpoints (``kept``: conversions of its NUMA node
    states to reuse, updated to hold this state's). The pods' container maps and blocks are
    the manager's own: the checkpoint's ``Block`` is the manager's, and a pod's map is
    replaced when it changes, never changed in place, so the writer compares them by
    identity."""
    if node.memory is None or node.config.memory_manager_policy != "Static":
        return MemoryCheckpointState(policy_name="None")
    state = node.memory.state
    last = kept.machine if kept is not None else {}
    now = {}
    machine = {}
    for numa, live in state.machine_state.items():
        was = last.get(numa)
        if was is None or was[0] is not live:
            was = (live, _checkpoint_node_state(live))
        now[numa] = was
        machine[numa] = was[1]
    if kept is not None:
        kept.machine = now
    return MemoryCheckpointState(
        "Static", machine, dict(state.assignments), dict(state.pod_entries)
    )


def render_state_files(node: Node) -> dict[str, str]:
    """The exact text of each state file the node's kubelet would have written."""
    versions = state_file_versions(node.config)
    return {
        CPU_FILE_NAME: write_cpu_checkpoint(cpu_checkpoint_state(node), versions.cpu),
        MEMORY_FILE_NAME: write_memory_checkpoint(memory_checkpoint_state(node), versions.memory),
    }


class StateFilesWriter:
    """``render_state_files`` for one node written again and again: keeps what its last
    render encoded (``app.domain.checkpoint.incremental``) so a render costs what changed.
    Not thread-safe."""

    def __init__(self) -> None:
        self._writer = CheckpointWriter()
        self._blocks = _Kept()

    def render(self, node: Node) -> dict[str, str]:
        versions = state_file_versions(node.config)
        memory = memory_checkpoint_state(node, self._blocks)
        return {
            CPU_FILE_NAME: self._writer.cpu(cpu_checkpoint_state(node), versions.cpu),
            MEMORY_FILE_NAME: self._writer.memory(memory, versions.memory),
        }

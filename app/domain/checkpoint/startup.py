"""The start-up model of one state file: what a kubelet's policy ``Start`` (``validateState``)
makes of what the release's reader read (follows pkg/kubelet/cm/cpumanager/policy_static.go
and pkg/kubelet/cm/memorymanager/policy_static.go ``Start``/``validateState``; read in
kubernetes/kubernetes content ids 3556663868 (CPU) and 4195507488 (memory), both the 1.36/1.37
code line; the issue's CPU reader ids 54529627806, 54677950288, 54675463210, 4181800816 are
what ``readers.py`` models).

A release's reader may *read* a file and still refuse to *start* on it: the reader keeps the
container entries and drops (or, gate off, ignores) the pod-level entries, and ``validateState``
then checks the state without them:

* CPU (``validateState`` step 3): the default set ∪ every container's CPUs — and the pod entries
  only when ``PodLevelResourceManagers`` is on — must equal the machine's CPUs. A pod-level pod's
  shared-pool containers hold the pod shared pool, so its budget is covered by its containers
  exactly when it has a shared-pool container or its exclusive containers use the whole
  budget; a pod **with no shared-pool container whose exclusive containers use less than the
  budget** leaves CPUs no entry holds: ``current set of available CPUs "…" doesn't match with
  CPUs in state "…"``.
* Memory: the stored machine state must equal the default one with every assignment booked
  again; with the gate on a pod with pod-level blocks is booked once from them, otherwise each
  container's blocks are. ``AllocatePod`` booked a pod-level pod once per NUMA node and gave
  each container blocks of its own (shared containers the pod shared pool), so booking the
  containers instead matches the stored machine state **only when the pod has a single
  container whose blocks are the pod's whole memory** (one booking per NUMA node, the same
  bytes): ``the expected machine state is different from the real one``.

Read line by line: CPU ``validateState`` step 3 and ``AllocatePod`` (content id 3556663868),
memory ``validateState``/``updateExpectedMachineState``/``AllocatePod`` (content id
4195507488); the readers that drop or ignore the pod entries are ``readers.py``'s models.

So the documentation's "a 1.36 kubelet safely restores standard container allocations" holds
for *reading* a 1.37 file, not for *starting* on it (``SAFELY_RESTORES``).

Without the machine (the inspector of a single file), the machine is what the file says: the
CPUs are every CPU the file names (a kubelet's file partitions the machine's CPUs, checked at
its previous start) and the default machine state is the file's own tables with nothing booked.
The reserved-CPU check needs the configuration and is left to the node's start-up model
(``app.domain.node.state``), which runs the same validations on the real topology.
"""

from __future__ import annotations

from app.domain.checkpoint.content import State
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.cpumanager.errors import CPUManagerStateError
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpumanager.state_validation import validate_state as validate_cpu_state
from app.domain.cpuset import CPUSet
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.state import (
    MemoryManagerState,
    MemoryTable,
    NUMANodeMap,
    NUMANodeState,
    clone_machine_state,
)
from app.domain.memorymanager.state_validation import validate_state as validate_memory_state

CPU_START_ERROR = "start cpu manager error: "
MEMORY_START_ERROR = "start memory manager error: "

#: What every verdict says when a release reads a newer file but does not start on it.
SAFELY_RESTORES = (
    'the documentation\'s "safely restores standard container allocations" holds for reading '
    "the files, not for starting the kubelet: without the pod entries, validateState "
    "(pkg/kubelet/cm/cpumanager/policy_static.go, pkg/kubelet/cm/memorymanager/"
    "policy_static.go) fails for a pod-level pod with no shared-pool container whose exclusive "
    "containers use less than its CPU budget (CPU), and for every pod-level pod but one with a "
    "single container holding the pod's whole memory (memory)"
)


def cpu_manager_state_from_checkpoint(state: CPUCheckpointState) -> CPUManagerState:
    """The CPU manager's in-memory state restored from a checkpoint (``restoreState``)."""
    return CPUManagerState(
        state.default_cpu_set,
        {pod: dict(containers) for pod, containers in state.entries.items()},
        dict(state.pod_entries or {}),
    )


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
        pod: {name: tuple(blocks) for name, blocks in c.items()} for pod, c in state.entries.items()
    }
    pod_entries = {pod: tuple(blocks) for pod, blocks in (state.pod_entries or {}).items()}
    return MemoryManagerState(machine, entries, pod_entries)


def _file_cpus(content: CPUCheckpointState) -> CPUSet:
    """Every CPU the file names: the machine's CPUs as the kubelet that wrote it knew them."""
    sets = [cset for containers in content.entries.values() for cset in containers.values()]
    sets.extend((content.pod_entries or {}).values())
    return content.default_cpu_set.union(*sets)


def _file_machine(content: MemoryCheckpointState) -> NUMANodeMap:
    """The default machine state the file's tables describe: nothing booked."""
    return {
        numa: NUMANodeState(
            0,
            {
                name: MemoryTable(t.total, t.system_reserved, t.allocatable, 0, t.allocatable)
                for name, t in s.memory_map.items()
            },
            [numa],
        )
        for numa, s in content.machine_state.items()
    }


def start_error(machine: State, read: State, gate: bool) -> str | None:
    """The kubelet's start-up error once its release's reader read ``read`` from a file
    (``gate``: ``PodLevelResourceManagers`` of that kubelet); ``machine`` is a state of the same
    manager whose CPUs / memory tables are the machine's (the file's own content). ``None``
    when ``Start`` accepts it. Only the static policies validate."""
    content = machine
    if isinstance(read, CPUCheckpointState) and isinstance(content, CPUCheckpointState):
        if read.policy_name != "static":
            return None
        try:
            validate_cpu_state(
                cpu_manager_state_from_checkpoint(read),
                _file_cpus(content),
                CPUSet(),
                strict_cpu_reservation=False,
                pod_level_resource_managers=gate,
            )
        except CPUManagerStateError as err:
            return CPU_START_ERROR + err.message
        return None
    if isinstance(read, MemoryCheckpointState) and isinstance(content, MemoryCheckpointState):
        if read.policy_name != "Static":
            return None
        tables = _file_machine(content)
        try:
            validate_memory_state(
                memory_manager_state_from_checkpoint(read),
                lambda: clone_machine_state(tables),
                gate,
            )
        except MemoryManagerError as err:
            return MEMORY_START_ERROR + err.message
    return None

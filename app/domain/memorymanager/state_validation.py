"""Start-up validation of a restored memory manager state (``validateState``, §3.5; follows
pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38).

The machine state read back from the checkpoint must equal the default machine state with every
recorded assignment booked again: the same assignment counts, the same NUMA groups, the same
tables, and free/reserved bytes summed per group (``areMachineStatesEqual``). With the gate
``PodLevelResourceManagers`` on, a pod that has pod-level blocks is booked from those (once),
not from its containers' blocks. An empty machine state is filled with the default one, unless
assignments exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.machine import are_groups_equal, reserve_free, table_of
from app.domain.memorymanager.state import Block, MemoryManagerState, NUMANodeMap, NUMANodeState

__all__ = ["are_machine_states_equal", "validate_state"]


def validate_state(
    state: MemoryManagerState,
    default_machine_state: Callable[[], NUMANodeMap],
    pod_level_resource_managers: bool,
) -> None:
    """``validateState`` (§3.5): raise ``MemoryManagerError`` when the state does not add up."""
    if not state.machine_state:
        if state.assignments:
            raise MemoryManagerError(
                "[memorymanager] machine state can not be empty when it has memory assignments"
            )
        state.set_machine_state(default_machine_state())
        return
    expected = default_machine_state()
    for pod_uid in sorted(state.assignments):
        if pod_level_resource_managers:
            pod_blocks = state.get_pod_memory_blocks(pod_uid)
            if pod_blocks:
                _update_expected_machine_state(expected, pod_blocks, pod_uid, "")
                continue
        containers = state.assignments[pod_uid]
        for name in sorted(containers):
            _update_expected_machine_state(expected, containers[name], pod_uid, name)
    if not are_machine_states_equal(state.machine_state, expected):
        raise MemoryManagerError(
            "[memorymanager] the expected machine state is different from the real one"
        )


def _update_expected_machine_state(
    expected: NUMANodeMap, blocks: Iterable[Block], pod_uid: str, container_name: str
) -> None:
    for b in blocks:
        requested = b.size
        for n in b.numa_affinity:
            node = expected.get(n)
            if node is None:
                raise MemoryManagerError(
                    f"[memorymanager] (pod: {pod_uid}, container: {container_name}) the "
                    "memory assignment uses the NUMA that does not exist"
                )
            node.number_of_assignments += 1
            node.cells = list(b.numa_affinity)
            table = node.memory_map.get(b.type)
            if table is None:
                raise MemoryManagerError(
                    f"[memorymanager] (pod: {pod_uid}, container: {container_name}) the "
                    "memory assignment uses memory resource that does not exist"
                )
            requested = reserve_free(table, requested)


def are_machine_states_equal(
    ms1: Mapping[int, NUMANodeState], ms2: Mapping[int, NUMANodeState]
) -> bool:
    """``areMachineStatesEqual``: counts, groups, tables, and free/reserved summed per group."""
    if len(ms1) != len(ms2):
        return False
    for node_id, s1 in ms1.items():
        s2 = ms2.get(node_id)
        if s2 is None:
            return False
        if s1.number_of_assignments != s2.number_of_assignments:
            return False
        if not are_groups_equal(s1.cells, s2.cells):
            return False
        if len(s1.memory_map) != len(s2.memory_map):
            return False
        for resource, t1 in s1.memory_map.items():
            t2 = s2.memory_map.get(resource)
            if t2 is None:
                return False
            if (t1.total_mem_size, t1.system_reserved, t1.allocatable) != (
                t2.total_mem_size,
                t2.system_reserved,
                t2.allocatable,
            ):
                return False
            free1 = reserved1 = free2 = reserved2 = 0
            for n in s1.cells:
                a = table_of(ms1.get(n), resource)
                b = table_of(ms2.get(n), resource)
                if a is None or b is None:
                    return False
                free1 += a.free
                reserved1 += a.reserved
                free2 += b.free
                reserved2 += b.reserved
            if free1 != free2 or reserved1 != reserved2:
                return False
    return True

"""Static memory manager policy (follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37,
the code line with KEP-5526 ``AllocatePod``; release 1.38 = master adds kubernetes#141077, a
restored pod allocation is kept on re-admission, and kubernetes#141070, pod hints regenerated
from the pod blocks - see ``app.domain.releases``).

The policy holds configuration (the machine's NUMA memory, the per-NUMA system reservation,
the topology manager's hint store, the pod-level feature gates) and the in-memory
init-container reuse bookkeeping; the state is passed in. Every method that changes state
works on a copy of the machine state and stores it back only on success.

What it does:

* ``get_default_machine_state``: per NUMA node, ``hugepages-<size>`` tables (total = pages ×
  size, allocatable = free = total − reserved) and a ``memory`` table whose allocatable also
  excludes every hugepage pool of the node (§3.1);
* ``start``: ``validateState`` (§3.5);
* ``get_topology_hints`` / ``get_pod_topology_hints`` (§3.3, §5.4) and ``calculate_hints``;
* ``allocate`` (§3.4) with the default hint, hint extension, the single/cross-NUMA violation
  check, init-container reuse and the shrinking of earlier init containers' blocks;
* ``allocate_pod`` (§5.5): one NUMA-aligned pod budget, partitioned arithmetically;
* ``remove_container`` (§3.4, §5.7) and ``validate_pod_scope_resources`` (§5.3, through the
  shared rule engine of ``app.domain.pod_budget``);
* ``metrics``: the kubelet's memory manager counters (``app.domain.memorymanager.metrics``).

Where Go's map order reaches an output we use resource-name order: blocks of a container are
listed by resource name, and with several failing budget types the first in name order is
reported. Upstream dereferences a missing ``MemoryMap`` entry (a request for a hugepage size the
node does not have) and panics; here a missing table counts as 0 bytes, so no hint covers it.

Upstream follows the code literally for pod-level pods in the *container* scope: a container
that is not equivalent Guaranteed requests nothing, yet ``allocate`` still runs the hint checks
and records an empty block list for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.domain import releases
from app.domain.admission import EmptyPodSharedPoolError
from app.domain.cpumanager.metrics import (
    ASSIGNMENT_NODE_EXCLUSIVE,
    ASSIGNMENT_POD_EXCLUSIVE,
    ASSIGNMENT_POD_SHARED,
    SOURCE_NODE,
    SOURCE_POD,
)
from app.domain.kubelet_config import DEFAULT_RELEASE
from app.domain.memorymanager.metrics import MemoryManagerMetrics
from app.domain.memorymanager.state import (
    Block,
    MemoryManagerState,
    MemoryTable,
    NUMANodeMap,
    NUMANodeState,
)
from app.domain.pod import (
    QOS_GUARANTEED,
    RESOURCE_MEMORY,
    Container,
    Pod,
    is_container_equivalent_qos_guaranteed,
    is_hugepage_resource_name,
    is_pod_level_resources_set,
    pod_qos_class,
)
from app.domain.pod_budget import (
    UINT64,
    BudgetContainer,
    PodBudgetError,
    check_pod_budget,
    memory_budget_message,
)
from app.domain.quantity import BINARY_SI, Quantity, canonicalize
from app.domain.topology import CPUTopology
from app.domain.topologymanager.bitmask import (
    BitMaskError,
    bits,
    is_narrower_than,
    iterate_bitmasks,
    mask_of,
)
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.scope import Store

POLICY_TYPE_STATIC = "Static"

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_ZERO_HINT = TopologyHint(None, False)

HintMap = dict[str, list[TopologyHint]]


class MemoryManagerError(ValueError):
    """A memory manager failure with the kubelet's ``[memorymanager] ...`` text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class NUMANodeInfo:
    """One NUMA node as cAdvisor reports it to the memory manager: total memory (bytes,
    hugepage pools included) and hugepage pools as ``(page size in bytes, pages)``."""

    numa_id: int
    memory: int
    hugepages: tuple[tuple[int, int], ...] = field(default_factory=tuple)


def machine_nodes_from_topology(topology: CPUTopology) -> tuple[NUMANodeInfo, ...]:
    """The memory manager's view of a ``CPUTopology``'s per-NUMA memory."""
    return tuple(
        NUMANodeInfo(m.numa_id, m.memory_bytes, tuple(sorted(m.hugepages.items())))
        for m in topology.memory
    )


def hugepage_resource_name(page_size_bytes: int) -> str:
    """``HugePageResourceName``: ``hugepages-`` + the page size as a binary-SI quantity."""
    return "hugepages-" + canonicalize(Quantity.from_int(page_size_bytes).amount, BINARY_SI)


def quantity_as_int64(q: Quantity) -> int | None:
    """``Quantity.AsInt64``: the exact integer value, or ``None`` when it has none."""
    amount = q.amount
    if amount.denominator != 1 or not _INT64_MIN <= amount.numerator <= _INT64_MAX:
        return None
    return amount.numerator


def _u64_sub(a: int, b: int) -> int:
    return (a - b) % UINT64


def _table(state: NUMANodeState | None, resource: str) -> MemoryTable | None:
    return None if state is None else state.memory_map.get(resource)


def _free(machine_state: Mapping[int, NUMANodeState], node: int, resource: str) -> int:
    table = _table(machine_state.get(node), resource)
    return 0 if table is None else table.free


def _allocatable(machine_state: Mapping[int, NUMANodeState], node: int, resource: str) -> int:
    table = _table(machine_state.get(node), resource)
    return 0 if table is None else table.allocatable


# (mask, position mask, node count, preferred hint, other hint): ``position mask`` has bit p
# set for the p-th smallest NUMA id of the mask, so it indexes a list of per-subset sums.
_MaskRow = tuple[int, int, int, TopologyHint, TopologyHint]
_MASK_TABLES: dict[tuple[int, ...], list[_MaskRow]] = {}


def _mask_table(nodes: Sequence[int]) -> list[_MaskRow]:
    """One row per mask in ``IterateBitMasks`` order, computed once per set of NUMA ids (hints
    are immutable values, shared by every answer)."""
    key = tuple(nodes)
    table = _MASK_TABLES.get(key)
    if table is None:
        position = {n: 1 << p for p, n in enumerate(key)}
        table = []
        for mask in iterate_bitmasks(key):
            pm = 0
            for n in bits(mask):
                pm |= position[n]
            table.append(
                (mask, pm, mask.bit_count(), TopologyHint(mask, True), TopologyHint(mask, False))
            )
        if len(_MASK_TABLES) > 64:
            _MASK_TABLES.clear()
        _MASK_TABLES[key] = table
    return table


def _subset_sums(values: Sequence[int]) -> list[int]:
    """``sums[pm]`` = the sum of ``values[p]`` over the bits p of ``pm``, for every subset
    (built by doubling: each value extends every sum seen so far)."""
    sums = [0]
    for v in values:
        sums += [t + v for t in sums]
    return sums


def _group_mask(cells: Sequence[int]) -> int | None:
    """The mask a multi-node hint must equal for a node grouped with ``cells``
    (``areGroupsEqual`` compares sorted lists: duplicates or odd ids never match a mask)."""
    if len(set(cells)) != len(cells) or any(not 0 <= c <= 63 for c in cells):
        return None
    return mask_of(cells)


def _groups_match(assigned: Mapping[int, int | None], used: int, mask: int) -> bool:
    """Every assigned node of a multi-node ``mask`` is grouped with exactly its nodes."""
    while used:
        low = used & -used
        if assigned[low] != mask:
            return False
        used ^= low
    return True


def are_groups_equal(group1: Iterable[int], group2: Iterable[int]) -> bool:
    """``areGroupsEqual``: the same nodes, compared sorted."""
    return sorted(group1) == sorted(group2)


def is_hint_in_group(hint: Iterable[int], group: Iterable[int]) -> bool:
    """``isHintInGroup``: every node of ``hint`` is in ``group``."""
    return set(hint) <= set(group)


def find_best_hint(hints: Sequence[TopologyHint]) -> TopologyHint:
    """``findBestHint``: preferred first, then the narrower mask, first one on ties."""
    best = _ZERO_HINT
    for hint in hints:
        current = best.numa_affinity
        if current is None:
            best = hint
            continue
        if hint.preferred and not best.preferred:
            best = hint
            continue
        if (
            hint.preferred == best.preferred
            and hint.numa_affinity is not None
            and is_narrower_than(hint.numa_affinity, current)
        ):
            best = hint
    return best


def is_affinity_satisfy_request(
    machine_state: Mapping[int, NUMANodeState], mask: int, requested: Mapping[str, int]
) -> bool:
    """``isAffinitySatisfyRequest``: the free bytes under ``mask`` cover every request."""
    nodes = bits(mask)
    return all(
        sum(_free(machine_state, n, r) for n in nodes) >= size for r, size in requested.items()
    )


def is_affinity_violating_numa_allocations(
    machine_state: Mapping[int, NUMANodeState], mask: int
) -> bool:
    """``isAffinityViolatingNUMAAllocations``: a cross-NUMA mask may not use a node that holds
    single-NUMA allocations or belongs to another group."""
    nodes = bits(mask)
    if len(nodes) == 1:
        return False
    for n in nodes:
        node = machine_state.get(n)
        if node is None or node.number_of_assignments == 0:
            continue
        if len(node.cells) == 1:
            return True
        if not are_groups_equal(node.cells, nodes):
            return True
    return False


def new_bitmask(ids: Iterable[int]) -> int | None:
    """``bitmask.NewBitMask(ids...)``: ``None`` where upstream gets an error (an id outside
    0..63)."""
    try:
        return mask_of(ids)
    except BitMaskError:
        return None


def is_numa_affinities_equal(a: Iterable[int], b: Iterable[int]) -> bool:
    """``isNUMAAffinitiesEqual``: equal bitmasks; false when either cannot be built."""
    ma, mb = new_bitmask(a), new_bitmask(b)
    return ma is not None and mb is not None and ma == mb


def regenerate_hints(blocks: Sequence[Block], requested: Mapping[str, int]) -> HintMap | None:
    """``regenerateHints``: one preferred hint per recorded block, ``None`` on any mismatch
    (including a block whose NUMA ids do not make a bitmask)."""
    hints: HintMap = {r: [] for r in requested}
    if len(blocks) != len(requested):
        return None
    for b in blocks:
        if b.type not in requested or b.size != requested[b.type]:
            return None
        mask = new_bitmask(b.numa_affinity)
        if mask is None:
            return None
        hints[b.type].append(TopologyHint(mask, True))
    return hints


def update_machine_state(
    machine_state: NUMANodeMap, numa_affinity: Sequence[int], resource: str, requested: int
) -> None:
    """``updateMachineState``: count the assignment on every node of the group, set the group,
    and move ``requested`` bytes from free to reserved node by node."""
    for n in numa_affinity:
        node = machine_state[n]
        node.number_of_assignments += 1
        node.cells = list(numa_affinity)
        if requested == 0:
            continue
        table = node.memory_map.get(resource)
        if table is None or table.free <= 0:
            continue
        if table.free >= requested:
            table.reserved += requested
            table.free -= requested
            requested = 0
            continue
        requested -= table.free
        table.reserved += table.free
        table.free = 0


def release_blocks(machine_state: NUMANodeMap, blocks: Iterable[Block]) -> None:
    """The release loop of ``RemoveContainer``/``releaseMemory``: uncount the assignment (a
    node with none left returns to its own group) and move bytes back from reserved."""
    for b in blocks:
        released = b.size
        for n in b.numa_affinity:
            node = machine_state.get(n)
            if node is None:
                raise MemoryManagerError(
                    f"[memorymanager] the memory block uses NUMA node {n} that does not exist"
                )
            node.number_of_assignments -= 1
            if node.number_of_assignments == 0:
                node.cells = [n]
            if released == 0:
                continue
            table = node.memory_map.get(b.type)
            if table is None or table.reserved == 0:
                continue
            if table.reserved < released:
                released -= table.reserved
                table.free += table.reserved
                table.reserved = 0
                continue
            table.free += released
            table.reserved -= released
            released = 0


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
                a = _table(ms1.get(n), resource)
                b = _table(ms2.get(n), resource)
                if a is None or b is None:
                    return False
                free1 += a.free
                reserved1 += a.reserved
                free2 += b.free
                reserved2 += b.reserved
            if free1 != free2 or reserved1 != reserved2:
                return False
    return True


class StaticPolicy:
    """``staticPolicy``."""

    name = POLICY_TYPE_STATIC

    def __init__(
        self,
        machine_nodes: Iterable[NUMANodeInfo] | CPUTopology = (),
        system_reserved: Mapping[int, Mapping[str, int]] | None = None,
        affinity: Store | None = None,
        *,
        pod_level_resources: bool = True,
        pod_level_resource_managers: bool = False,
        release: str = DEFAULT_RELEASE,
    ) -> None:
        """``NewPolicyStatic``: the reserved ``memory`` summed over nodes must be positive."""
        self.release = release
        self.restores_pods = releases.has(release, releases.MEMORY_POD_RESTORE)
        self.pod_hints_from_pod_blocks = releases.has(release, releases.MEMORY_POD_HINTS)
        reserved = {int(n): dict(r) for n, r in (system_reserved or {}).items()}
        total = sum(r.get(RESOURCE_MEMORY, 0) for r in reserved.values())
        if total <= 0:
            raise MemoryManagerError(
                "[memorymanager] you should specify the system reserved memory"
            )
        if isinstance(machine_nodes, CPUTopology):
            machine_nodes = machine_nodes_from_topology(machine_nodes)
        self.machine_nodes: tuple[NUMANodeInfo, ...] = tuple(machine_nodes)
        self.system_reserved = reserved
        self.affinity = affinity
        self.pod_level_resources = pod_level_resources
        self.pod_level_resource_managers = pod_level_resource_managers
        # pod uid -> NUMA mask -> resource -> bytes reusable from regular init containers
        self.init_containers_reusable_memory: dict[str, dict[int, dict[str, int]]] = {}
        self.metrics = MemoryManagerMetrics()

    # -- helpers ------------------------------------------------------------------------
    def _qos(self, pod: Pod) -> str:
        return pod_qos_class(pod, self.pod_level_resources)

    def _pod_level(self, pod: Pod) -> bool:
        """Gate ``PodLevelResourceManagers`` on and the pod sets pod-level resources."""
        return self.pod_level_resource_managers and is_pod_level_resources_set(pod)

    def _skipped_pod_level(self, pod: Pod) -> bool:
        """A pod-level pod while either gate is off: the policy leaves it alone."""
        gates_on = self.pod_level_resource_managers and self.pod_level_resources
        return not gates_on and is_pod_level_resources_set(pod)

    def _affinity(self, pod: Pod, container_name: str) -> TopologyHint:
        if self.affinity is None:
            return _ZERO_HINT
        return self.affinity.get_affinity(pod.uid, container_name)

    def get_resource_system_reserved(self, node_id: int, resource: str) -> int:
        return self.system_reserved.get(node_id, {}).get(resource, 0)

    # -- machine state --------------------------------------------------------------------
    def get_default_machine_state(self) -> NUMANodeMap:
        """``getDefaultMachineState``."""
        out: NUMANodeMap = {}
        for node in self.machine_nodes:
            memory_map: dict[str, MemoryTable] = {}
            hugepages_total = 0
            for page_size, pages in node.hugepages:
                name = hugepage_resource_name(page_size)
                reserved = self.get_resource_system_reserved(node.numa_id, name)
                total = pages * page_size
                allocatable = total - reserved
                memory_map[name] = MemoryTable(total, reserved, allocatable, 0, allocatable)
                hugepages_total += total
            reserved = self.get_resource_system_reserved(node.numa_id, RESOURCE_MEMORY)
            allocatable = node.memory - reserved - hugepages_total
            memory_map[RESOURCE_MEMORY] = MemoryTable(
                node.memory, reserved, allocatable, 0, allocatable
            )
            out[node.numa_id] = NUMANodeState(0, memory_map, [node.numa_id])
        return out

    def start(self, state: MemoryManagerState) -> None:
        """``Start``: validate the state (and fill an empty one with the default state)."""
        self.validate_state(state)

    def validate_state(self, state: MemoryManagerState) -> None:
        """``validateState`` (§3.5)."""
        if not state.machine_state:
            if state.assignments:
                raise MemoryManagerError(
                    "[memorymanager] machine state can not be empty when it has memory assignments"
                )
            state.set_machine_state(self.get_default_machine_state())
            return
        expected = self.get_default_machine_state()
        for pod_uid in sorted(state.assignments):
            if self.pod_level_resource_managers:
                pod_blocks = state.get_pod_memory_blocks(pod_uid)
                if pod_blocks:
                    self._update_expected_machine_state(expected, pod_blocks, pod_uid, "")
                    continue
            containers = state.assignments[pod_uid]
            for name in sorted(containers):
                self._update_expected_machine_state(expected, containers[name], pod_uid, name)
        if not are_machine_states_equal(state.machine_state, expected):
            raise MemoryManagerError(
                "[memorymanager] the expected machine state is different from the real one"
            )

    @staticmethod
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
                if requested == 0 or table.free <= 0:
                    continue
                if table.free >= requested:
                    table.reserved += requested
                    table.free -= requested
                    requested = 0
                    continue
                requested -= table.free
                table.reserved += table.free
                table.free = 0

    def get_allocatable_memory(self, state: MemoryManagerState) -> list[Block]:
        """``GetAllocatableMemory``: one single-node block per non-zero allocatable table."""
        out = []
        for node_id in sorted(state.machine_state):
            node = state.machine_state[node_id]
            for resource in sorted(node.memory_map):
                table = node.memory_map[resource]
                if table.allocatable == 0:
                    continue
                out.append(Block((node_id,), resource, table.allocatable))
        return out

    # -- requests -----------------------------------------------------------------------
    def get_container_requested_resources(self, pod: Pod, container: Container) -> dict[str, int]:
        """``getContainerRequestedResources``: ``memory`` and ``hugepages-*`` requests in bytes;
        empty for a pod-level pod's container that is not equivalent Guaranteed."""
        if self._pod_level(pod) and not is_container_equivalent_qos_guaranteed(container):
            return {}
        out: dict[str, int] = {}
        for name, q in container.resources.requests.items():
            if name != RESOURCE_MEMORY and not is_hugepage_resource_name(name):
                continue
            value = quantity_as_int64(q)
            if value is None:
                raise MemoryManagerError("[memorymanager] failed to represent quantity as int64")
            out[name] = value
        return out

    def get_pod_requested_resources(self, pod: Pod) -> dict[str, int]:
        """``getPodRequestedResources``: pod-level requests (values > 0), or the classic
        ``max(init peak, apps + sidecars)`` for resources app containers request."""
        if self._pod_level(pod):
            assert pod.resources is not None
            out: dict[str, int] = {}
            for name, q in pod.resources.requests.items():
                if name != RESOURCE_MEMORY and not is_hugepage_resource_name(name):
                    continue
                value = quantity_as_int64(q)
                if value is None:
                    raise MemoryManagerError(
                        "[memorymanager] failed to represent quantity as int64"
                    )
                if value <= 0:
                    continue
                out[name] = value
            return out
        by_init: dict[str, int] = {}
        by_sidecars: dict[str, int] = {}
        for c in pod.init_containers:
            for name, size in self.get_container_requested_resources(pod, c).items():
                by_init.setdefault(name, 0)
                if c.is_sidecar:
                    by_sidecars[name] = by_sidecars.get(name, 0) + size
                elif by_sidecars.get(name, 0) + size > by_init[name]:
                    by_init[name] = by_sidecars.get(name, 0) + size
        by_apps: dict[str, int] = {}
        for c in pod.containers:
            for name, size in self.get_container_requested_resources(pod, c).items():
                by_apps[name] = by_apps.get(name, 0) + size
        return {
            name: max(by_apps[name] + by_sidecars.get(name, 0), by_init.get(name, 0))
            for name in by_apps
        }

    # -- hints --------------------------------------------------------------------------
    def get_pod_reusable_memory(self, pod: Pod, mask: int, resource: str) -> int:
        return self.init_containers_reusable_memory.get(pod.uid, {}).get(mask, {}).get(resource, 0)

    def calculate_hints(
        self, machine_state: Mapping[int, NUMANodeState], pod: Pod, requested: Mapping[str, int]
    ) -> HintMap:
        """``calculateHints`` (§3.3): every NUMA mask with enough allocatable and free memory
        that respects the single/cross-NUMA grouping; preferred = minimal node count.

        Same checks as upstream, masks in ``IterateBitMasks`` order, without a loop over each
        mask's nodes: the allocatable and free sums of every subset of NUMA nodes come from
        one doubling pass per resource (``_subset_sums``), indexed by the mask's position
        bits; the per-mask filters are list comprehensions (255 masks on 8 NUMA nodes).
        """
        nodes = sorted(machine_state)
        table = _mask_table(nodes)
        resources = list(requested.items())
        # Per resource: (subset sums, resource, requested size).
        allocatable: list[tuple[list[int], str, int]] = []
        free: list[tuple[list[int], str, int]] = []
        for r, size in resources:
            tables = [_table(machine_state[n], r) for n in nodes]
            a_sums = _subset_sums([0 if t is None else t.allocatable for t in tables])
            allocatable.append((a_sums, r, size))
            free.append((_subset_sums([0 if t is None else t.free for t in tables]), r, size))
        # Masks with enough allocatable memory of every resource, in IterateBitMasks order.
        if len(resources) == 1:
            a_sums, _, size = allocatable[0]
            candidates = [row for row in table if a_sums[row[1]] >= size]
        else:
            candidates = [
                row for row in table if all(a[row[1]] >= size for a, _, size in allocatable)
            ]
        if not candidates:
            return {}
        # Rows come by node count, so the first candidate has the fewest nodes.
        min_affinity_size = candidates[0][2]
        # Per node: more than one cell (a single-node hint is excluded); assigned nodes and
        # the group they must match exactly in a multi-node hint (None: matches no mask).
        multi_cell = 0
        assigned: dict[int, int | None] = {}
        for n in nodes:
            s = machine_state[n]
            if len(s.cells) > 1:
                multi_cell |= 1 << n
            if s.number_of_assignments > 0:
                assigned[1 << n] = _group_mask(s.cells)
        assigned_mask = sum(assigned)
        reusable = self.init_containers_reusable_memory.get(pod.uid)
        if len(resources) == 1 and not reusable:
            # The common case: regular memory only, nothing to reuse. A single-node mask may not
            # hold a node grouped with others; a multi-node mask's assigned nodes must be
            # grouped with exactly its nodes.
            f_sums, _, size = free[0]
            if not multi_cell and not assigned_mask:
                found = [row for row in candidates if f_sums[row[1]] >= size]
            else:
                found = [
                    row
                    for row in candidates
                    if f_sums[row[1]] >= size
                    and (
                        not row[0] & (multi_cell if row[2] == 1 else assigned_mask)
                        or (row[2] > 1 and _groups_match(assigned, row[0] & assigned_mask, row[0]))
                    )
                ]
        else:
            found = []
            for row in candidates:
                mask, pm, count = row[0], row[1], row[2]
                if count == 1:
                    if multi_cell & mask:
                        continue
                else:
                    used = mask & assigned_mask
                    if used and not _groups_match(assigned, used, mask):
                        continue
                fits = True
                for f, r, size in free:
                    total = f[pm]
                    if reusable:
                        total += reusable.get(mask, {}).get(r, 0)
                    if total < size:
                        fits = False
                        break
                if fits:
                    found.append(row)
        if not found:
            return {}
        hints_list = [row[3] if row[2] == min_affinity_size else row[4] for row in found]
        return {r: list(hints_list) for r in requested}

    @staticmethod
    def _can_group(machine_state: Mapping[int, NUMANodeState], mask_nodes: list[int]) -> bool:
        for n in mask_nodes:
            node = machine_state[n]
            if node.number_of_assignments > 0:
                if len(node.cells) == 1:
                    return False
                if not are_groups_equal(node.cells, mask_nodes):
                    return False
        return True

    def get_topology_hints(
        self, state: MemoryManagerState, pod: Pod, container: Container
    ) -> HintMap | None:
        """``GetTopologyHints`` (container scope)."""
        if self._qos(pod) != QOS_GUARANTEED:
            return None
        try:
            requested = self.get_container_requested_resources(pod, container)
        except MemoryManagerError:
            return None
        if self._skipped_pod_level(pod):
            return None
        blocks = state.get_memory_blocks(pod.uid, container.name)
        if blocks is not None:
            return regenerate_hints(blocks, requested)
        return self.calculate_hints(state.machine_state, pod, requested)

    def get_pod_topology_hints(self, state: MemoryManagerState, pod: Pod) -> HintMap | None:
        """``GetPodTopologyHints`` (pod scope; §5.4 for pod-level pods)."""
        if self._qos(pod) != QOS_GUARANTEED:
            return None
        try:
            requested = self.get_pod_requested_resources(pod)
        except MemoryManagerError:
            return None
        if self._skipped_pod_level(pod):
            return None
        if self._pod_level(pod) and self.pod_scope_budget_error(pod) is not None:
            return {r: [] for r in requested}
        if not requested:
            return None
        if self.pod_hints_from_pod_blocks and self._pod_level(pod):
            # 1.38 (kubernetes#141070): a restored pod-level pod's hint comes from its pod
            # blocks; one container's blocks never match a multi-container pod's request.
            pod_blocks = state.get_pod_memory_blocks(pod.uid)
            if pod_blocks is not None:
                return regenerate_hints(pod_blocks, requested)
        for c in pod.all_containers():
            blocks = state.get_memory_blocks(pod.uid, c.name)
            if blocks is not None:
                return regenerate_hints(blocks, requested)
        return self.calculate_hints(state.machine_state, pod, requested)

    def _default_hint(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int]
    ) -> TopologyHint:
        """``getDefaultHint``: the best ``memory`` hint when the topology manager gave none."""
        hints = self.calculate_hints(machine_state, pod, requested)
        if not hints:
            raise MemoryManagerError(
                "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
                "enough memory is available"
            )
        return find_best_hint(hints.get(RESOURCE_MEMORY, []))

    def _extend_topology_manager_hint(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int], mask: int
    ) -> TopologyHint:
        """``extendTopologyManagerHint``: the best ``memory`` hint containing ``mask``."""
        hints = self.calculate_hints(machine_state, pod, requested)
        current = bits(mask)
        filtered = [
            h
            for h in hints.get(RESOURCE_MEMORY, [])
            if is_hint_in_group(current, bits(h.numa_affinity or 0))
        ]
        if not filtered:
            raise MemoryManagerError(
                "[memorymanager] failed to find NUMA nodes to extend the current topology hint"
            )
        return find_best_hint(filtered)

    def _resolve_hint(
        self,
        machine_state: NUMANodeMap,
        pod: Pod,
        requested: Mapping[str, int],
        hint: TopologyHint,
    ) -> int:
        """Allocate steps 4–6: default hint, extension, violation check; the final mask."""
        best = hint
        if hint.numa_affinity is None:
            default = self._default_hint(machine_state, pod, requested)
            if not default.preferred and best.preferred:
                raise MemoryManagerError(
                    "[memorymanager] failed to find the default preferred hint"
                )
            best = default
        if best.numa_affinity is None:
            # Upstream dereferences the nil mask here; only a request without ``memory``
            # (hugepages alone) can get this far.
            raise MemoryManagerError(
                "[memorymanager] no NUMA affinity for a request without regular memory"
            )
        if not is_affinity_satisfy_request(machine_state, best.numa_affinity, requested):
            extended = self._extend_topology_manager_hint(
                machine_state, pod, requested, best.numa_affinity
            )
            if not extended.preferred and best.preferred:
                raise MemoryManagerError(
                    "[memorymanager] failed to find the extended preferred hint"
                )
            best = extended
        assert best.numa_affinity is not None
        if is_affinity_violating_numa_allocations(machine_state, best.numa_affinity):
            raise MemoryManagerError("[memorymanager] preferred hint violates NUMA node allocation")
        return best.numa_affinity

    # -- allocation ---------------------------------------------------------------------
    def allocate(
        self,
        state: MemoryManagerState,
        pod: Pod,
        container: Container,
        hint: TopologyHint | None = None,
    ) -> None:
        """``Allocate`` (§3.4). ``hint`` defaults to the affinity store's hint (else none)."""
        if self._qos(pod) != QOS_GUARANTEED:
            return
        if self._skipped_pod_level(pod):
            return
        m = self.metrics
        m.pinning_requests_total += 1
        try:
            self._allocate(state, pod, container, hint)
        except Exception:
            m.pinning_errors_total += 1
            m.allocation_errors_total[(RESOURCE_MEMORY, SOURCE_NODE)] += 1
            raise

    def _allocate(
        self,
        state: MemoryManagerState,
        pod: Pod,
        container: Container,
        hint: TopologyHint | None,
    ) -> None:
        existing = state.get_memory_blocks(pod.uid, container.name)
        if existing is not None:
            self.update_pod_reusable_memory(pod, container, existing)
            return
        if hint is None:
            hint = self._affinity(pod, container.name)
        requested = self.get_container_requested_resources(pod, container)
        mask = self._resolve_hint(state.machine_state, pod, requested, hint)
        mask_nodes = tuple(bits(mask))
        # Copy-on-write: only the nodes of the mask change.
        machine_state = state.machine_state_for_update(mask_nodes)
        blocks: list[Block] = []
        for resource in sorted(requested):
            size = requested[resource]
            blocks.append(Block(mask_nodes, resource, size))
            reusable = self.get_pod_reusable_memory(pod, mask, resource)
            charge = 0 if reusable >= size else size - reusable
            update_machine_state(machine_state, mask_nodes, resource, charge)
            # Counted per resource type, as upstream does inside this loop.
            self.metrics.allocations_total[(RESOURCE_MEMORY, SOURCE_NODE)] += 1
        self.update_pod_reusable_memory(pod, container, blocks)
        state.replace_machine_state(machine_state)
        state.set_memory_blocks(pod.uid, container.name, blocks)
        self.update_init_containers_memory_blocks(state, pod, container, blocks)
        self.metrics.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_NODE_EXCLUSIVE)] += 1

    def update_pod_reusable_memory(
        self, pod: Pod, container: Container, blocks: Iterable[Block]
    ) -> None:
        """``updatePodReusableMemory``: regular init containers offer their blocks for reuse;
        later containers consume it."""
        for uid in list(self.init_containers_reusable_memory):
            if uid != pod.uid:
                del self.init_containers_reusable_memory[uid]
        if pod.is_regular_init_container(container.name):
            by_mask = self.init_containers_reusable_memory.setdefault(pod.uid, {})
            for b in blocks:
                per_type = by_mask.setdefault(mask_of(b.numa_affinity), {})
                if b.size > per_type.get(b.type, 0):
                    per_type[b.type] = b.size
            return
        for b in blocks:
            mask = mask_of(b.numa_affinity)
            reusable = self.get_pod_reusable_memory(pod, mask, b.type)
            if reusable != 0:
                per_type = self.init_containers_reusable_memory[pod.uid][mask]
                per_type[b.type] = 0 if b.size >= reusable else reusable - b.size

    def update_init_containers_memory_blocks(
        self, state: MemoryManagerState, pod: Pod, container: Container, blocks: Iterable[Block]
    ) -> None:
        """``updateInitContainersMemoryBlocks``: shrink earlier regular init containers' blocks
        of the same type and mask by what this container reused, so the blocks of a pod add
        up to what is really reserved."""
        for block in blocks:
            remaining = block.size
            for init in pod.init_containers:
                if init.name == container.name or remaining == 0:
                    break
                if init.is_sidecar:
                    continue
                init_blocks = state.get_memory_blocks(pod.uid, init.name)
                if not init_blocks:
                    continue
                updated = list(init_blocks)
                for i, ib in enumerate(updated):
                    if ib.size == 0 or ib.type != block.type:
                        continue
                    if not is_numa_affinities_equal(ib.numa_affinity, block.numa_affinity):
                        continue
                    if ib.size > remaining:
                        updated[i] = Block(ib.numa_affinity, ib.type, ib.size - remaining)
                        remaining = 0
                    else:
                        remaining -= ib.size
                        updated[i] = Block(ib.numa_affinity, ib.type, 0)
                state.set_memory_blocks(pod.uid, init.name, updated)

    def pod_scope_budget_error(self, pod: Pod) -> PodBudgetError | None:
        """``validatePodScopeResources`` (memory flavour, §5.3); ``None`` when the pod fits."""
        budget = self.get_pod_requested_resources(pod)

        def member(c: Container) -> BudgetContainer:
            return BudgetContainer(
                c.name, self.get_container_requested_resources(pod, c), c.is_sidecar
            )

        violation = check_pod_budget(
            budget,
            [member(c) for c in pod.init_containers],
            [member(c) for c in pod.containers],
            unsigned=True,
        )
        if violation is None:
            return None
        return PodBudgetError(violation, memory_budget_message(violation))

    def validate_pod_scope_resources(self, pod: Pod) -> None:
        """Raise the budget error (a ``PodBudgetError``) when the pod does not fit."""
        err = self.pod_scope_budget_error(pod)
        if err is not None:
            raise err

    def allocate_pod(
        self, state: MemoryManagerState, pod: Pod, hint: TopologyHint | None = None
    ) -> None:
        """``AllocatePod`` (§5.5): reserve the pod budget once on one mask and partition it.

        ``hint`` defaults to the affinity store's hint of the pod's first container.
        """
        if self._qos(pod) != QOS_GUARANTEED:
            return
        try:
            budget = self.get_pod_requested_resources(pod)
        except MemoryManagerError:
            return  # logged and ignored upstream
        m = self.metrics
        m.pinning_requests_total += 1
        try:
            self._allocate_pod(state, pod, budget, hint)
        except Exception:
            m.pinning_errors_total += 1
            m.allocation_errors_total[(RESOURCE_MEMORY, SOURCE_POD)] += 1
            raise

    def _allocate_pod(
        self,
        state: MemoryManagerState,
        pod: Pod,
        budget: Mapping[str, int],
        hint: TopologyHint | None,
    ) -> None:
        m = self.metrics
        if self.restores_pods and state.get_pod_memory_blocks(pod.uid) is not None:
            # 1.38 (kubernetes#141077, fixes #140906): re-admission after a restart keeps the
            # restored pod allocation; 1.37 reserves it a second time (or rejects the pod).
            # Counted as one pinning request, like the node path's "already in the state".
            return
        err = self.pod_scope_budget_error(pod)
        if err is not None:
            raise EmptyPodSharedPoolError(err.message)
        containers = pod.all_containers()
        if hint is None:
            hint = self._affinity(pod, containers[0].name) if containers else _ZERO_HINT
        mask = self._resolve_hint(state.machine_state, pod, budget, hint)
        mask_nodes = tuple(bits(mask))
        # Copy-on-write: only the nodes of the mask change.
        machine_state = state.machine_state_for_update(mask_nodes)

        exclusive: dict[str, list[Block]] = {}
        sidecar: dict[str, int] = {}
        for c in pod.init_containers:
            reqs = self.get_container_requested_resources(pod, c)
            m.pinning_requests_total += 1  # every init container, requests or not
            runnable = {r: _u64_sub(total, sidecar.get(r, 0)) for r, total in budget.items()}
            if not reqs:
                if c.is_sidecar:
                    continue
                exclusive[c.name] = [
                    Block(mask_nodes, r, v) for r, v in sorted(runnable.items()) if v > 0
                ]
                m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_SHARED)] += 1
                continue
            exclusive[c.name] = [Block(mask_nodes, r, v) for r, v in sorted(reqs.items()) if v > 0]
            m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_EXCLUSIVE)] += 1
            if c.is_sidecar:
                for r, v in reqs.items():
                    sidecar[r] = (sidecar.get(r, 0) + v) % UINT64
        pool = {r: _u64_sub(total, sidecar.get(r, 0)) for r, total in budget.items()}
        for c in pod.containers:
            reqs = self.get_container_requested_resources(pod, c)
            if not reqs:
                continue
            m.pinning_requests_total += 1
            blocks = []
            for r, v in sorted(reqs.items()):
                if v > 0:
                    blocks.append(Block(mask_nodes, r, v))
                    pool[r] = _u64_sub(pool.get(r, 0), v)
            exclusive[c.name] = blocks
            m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_EXCLUSIVE)] += 1
        shared = [Block(mask_nodes, r, v) for r, v in sorted(pool.items()) if v > 0]

        state.set_pod_memory_blocks(
            pod.uid, [Block(mask_nodes, r, budget[r]) for r in sorted(budget)]
        )
        for r in sorted(budget):
            update_machine_state(machine_state, mask_nodes, r, budget[r])
        for c in containers:
            own = exclusive.get(c.name)
            if own is None:
                m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_SHARED)] += 1
            state.set_memory_blocks(pod.uid, c.name, shared if own is None else own)
            m.allocations_total[(RESOURCE_MEMORY, SOURCE_POD)] += 1
        state.replace_machine_state(machine_state)

    # -- release ------------------------------------------------------------------------
    def remove_container(
        self, state: MemoryManagerState, pod_uid: str, container_name: str
    ) -> None:
        """``RemoveContainer``: node-pool blocks go back at once; a pod-level pod's budget goes
        back when its last container is removed (§5.7)."""
        if self.pod_level_resource_managers:
            pod_blocks = state.get_pod_memory_blocks(pod_uid)
            if pod_blocks is not None:
                state.delete(pod_uid, container_name)
                if not state.assignments.get(pod_uid):
                    self._release_memory(state, pod_blocks)
                    state.delete_pod(pod_uid)
                return
        blocks = state.get_memory_blocks(pod_uid, container_name)
        if blocks is None:
            return
        state.delete(pod_uid, container_name)
        self._release_memory(state, blocks)

    @staticmethod
    def _release_memory(state: MemoryManagerState, blocks: Iterable[Block]) -> None:
        blocks = tuple(blocks)
        # Copy-on-write: only the nodes of the blocks change.
        machine_state = state.machine_state_for_update(n for b in blocks for n in b.numa_affinity)
        release_blocks(machine_state, blocks)
        state.replace_machine_state(machine_state)

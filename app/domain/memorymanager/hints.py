"""Memory manager topology hints and the hint an allocation ends on (follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38).

It owns:

* ``calculate_hints`` (``calculateHints``, §3.3): every NUMA mask with enough allocatable and free
  memory that respects the single/cross-NUMA grouping; preferred = minimal node count;
* ``regenerate_hints`` (``regenerateHints``): the hints of an allocation already in the state;
* the group and affinity checks (``areGroupsEqual``, ``isHintInGroup``,
  ``isAffinitySatisfyRequest``, ``isAffinityViolatingNUMAAllocations``,
  ``isNUMAAffinitiesEqual``) and ``findBestHint``;
* ``resolve_hint``: Allocate steps 4–6 - the default hint when the topology manager gave none
  (``getDefaultHint``), its extension when it does not hold the request
  (``extendTopologyManagerHint``), and the cross-NUMA violation check.

Where Go's map order reaches an output we use resource-name order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.machine import are_groups_equal, free_bytes, table_of
from app.domain.memorymanager.state import Block, NUMANodeMap, NUMANodeState
from app.domain.pod.model import RESOURCE_MEMORY
from app.domain.topologymanager.bitmask import BitMaskError, bits, is_narrower_than, mask_of
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.mask_table import MaskRow, mask_table, subset_sums

__all__ = [
    "ZERO_HINT",
    "HintMap",
    "calculate_hints",
    "find_best_hint",
    "is_affinity_satisfy_request",
    "is_affinity_violating_numa_allocations",
    "is_hint_in_group",
    "is_numa_affinities_equal",
    "new_bitmask",
    "regenerate_hints",
    "resolve_hint",
]

ZERO_HINT = TopologyHint(None, False)

HintMap = dict[str, list[TopologyHint]]

# Per pod NUMA mask -> resource -> bytes reusable from init containers (``init_reuse``).
Reusable = Mapping[int, Mapping[str, int]]


def _group_mask(cells: Sequence[int]) -> int | None:
    """The mask a multi-node hint must equal for a node grouped with ``cells``
    (``areGroupsEqual`` compares sorted lists: duplicates or odd ids never match a mask)."""
    if len(set(cells)) != len(cells) or any(not 0 <= c <= 63 for c in cells):
        return None
    return mask_of(cells)


def _grouped_nodes(assigned: Mapping[int, int | None]) -> dict[int, int]:
    """Per multi-node group mask, the assigned nodes grouped with exactly it: a multi-node
    mask may hold an assigned node only when the node is one of the mask's own."""
    grouped: dict[int, int] = {}
    for node, group in assigned.items():
        if group is not None and group & (group - 1):
            grouped[group] = grouped.get(group, 0) | node
    return grouped


def is_hint_in_group(hint: Iterable[int], group: Iterable[int]) -> bool:
    """``isHintInGroup``: every node of ``hint`` is in ``group``."""
    return set(hint) <= set(group)


def find_best_hint(hints: Sequence[TopologyHint]) -> TopologyHint:
    """``findBestHint``: preferred first, then the narrower mask, first one on ties."""
    best = ZERO_HINT
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
        sum(free_bytes(machine_state, n, r) for n in nodes) >= size for r, size in requested.items()
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


def calculate_hints(
    machine_state: Mapping[int, NUMANodeState],
    requested: Mapping[str, int],
    reusable: Reusable | None = None,
) -> HintMap:
    """``calculateHints`` (§3.3): every NUMA mask with enough allocatable and free memory
    that respects the single/cross-NUMA grouping; preferred = minimal node count. ``reusable``
    is what the pod's init containers leave for reuse, per mask and resource.

    Same checks as upstream, masks in ``IterateBitMasks`` order, without a loop over each
    mask's nodes: the allocatable and free sums of every subset of NUMA nodes come from
    one doubling pass per resource (``subset_sums``), indexed by the mask's position
    bits; the per-mask filters are list comprehensions (255 masks on 8 NUMA nodes).
    """
    nodes = sorted(machine_state)
    table = mask_table(nodes)
    allocatable, free = _subset_sums_per_resource(machine_state, nodes, requested)
    # Masks with enough allocatable memory of every resource, in IterateBitMasks order.
    if len(allocatable) == 1:
        a_sums, _, size = allocatable[0]
        candidates = [row for row in table if a_sums[row[1]] >= size]
    else:
        candidates = [row for row in table if all(a[row[1]] >= size for a, _, size in allocatable)]
    if not candidates:
        return {}
    # Rows come by node count, so the first candidate has the fewest nodes.
    min_affinity_size = candidates[0][2]
    multi_cell, assigned = _node_groups(machine_state, nodes)
    if len(free) == 1 and not reusable:
        found = _with_free_memory(candidates, free[0], multi_cell, assigned)
    else:
        found = _with_free_resources(candidates, free, multi_cell, assigned, reusable)
    if not found:
        return {}
    hints_list = [row[3] if row[2] == min_affinity_size else row[4] for row in found]
    return {r: list(hints_list) for r in requested}


# Per resource: (subset sums, resource, requested size).
_Sums = tuple[list[int], str, int]


def _subset_sums_per_resource(
    machine_state: Mapping[int, NUMANodeState], nodes: Sequence[int], requested: Mapping[str, int]
) -> tuple[list[_Sums], list[_Sums]]:
    """The allocatable and the free sums of every subset of ``nodes``, per resource."""
    allocatable: list[_Sums] = []
    free: list[_Sums] = []
    for r, size in requested.items():
        tables = [table_of(machine_state[n], r) for n in nodes]
        a_sums = subset_sums([0 if t is None else t.allocatable for t in tables])
        allocatable.append((a_sums, r, size))
        free.append((subset_sums([0 if t is None else t.free for t in tables]), r, size))
    return allocatable, free


def _node_groups(
    machine_state: Mapping[int, NUMANodeState], nodes: Sequence[int]
) -> tuple[int, dict[int, int | None]]:
    """The nodes with more than one cell (a single-node hint is excluded), and per assigned
    node the group it must match exactly in a multi-node hint (None: matches no mask)."""
    multi_cell = 0
    assigned: dict[int, int | None] = {}
    for n in nodes:
        s = machine_state[n]
        if len(s.cells) > 1:
            multi_cell |= 1 << n
        if s.number_of_assignments > 0:
            assigned[1 << n] = _group_mask(s.cells)
    return multi_cell, assigned


def _with_free_memory(
    candidates: list[MaskRow], free: _Sums, multi_cell: int, assigned: dict[int, int | None]
) -> list[MaskRow]:
    """The common case: regular memory only, nothing to reuse. A single-node mask may not
    hold a node grouped with others; a multi-node mask's assigned nodes must be grouped
    with exactly its nodes."""
    f_sums, _, size = free
    assigned_mask = sum(assigned)
    if not multi_cell and not assigned_mask:
        return [row for row in candidates if f_sums[row[1]] >= size]
    grouped = _grouped_nodes(assigned)
    if not grouped:  # then a multi-node mask may hold no assigned node
        return [
            row
            for row in candidates
            if not row[0] & (multi_cell if row[2] == 1 else assigned_mask)
            and f_sums[row[1]] >= size
        ]
    return [
        row
        for row in candidates
        if not row[0] & (multi_cell if row[2] == 1 else assigned_mask & ~grouped.get(row[0], 0))
        and f_sums[row[1]] >= size
    ]


def _with_free_resources(
    candidates: list[MaskRow],
    free: list[_Sums],
    multi_cell: int,
    assigned: dict[int, int | None],
    reusable: Reusable | None,
) -> list[MaskRow]:
    """The same filter for several resources or with memory to reuse."""
    assigned_mask = sum(assigned)
    grouped = _grouped_nodes(assigned)
    found = []
    for row in candidates:
        mask, pm, count = row[0], row[1], row[2]
        if mask & (multi_cell if count == 1 else assigned_mask & ~grouped.get(mask, 0)):
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
    return found


def _default_hint(
    machine_state: NUMANodeMap, requested: Mapping[str, int], reusable: Reusable | None
) -> TopologyHint:
    """``getDefaultHint``: the best ``memory`` hint when the topology manager gave none."""
    hints = calculate_hints(machine_state, requested, reusable)
    if not hints:
        raise MemoryManagerError(
            "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
            "enough memory is available"
        )
    return find_best_hint(hints.get(RESOURCE_MEMORY, []))


def _extend_topology_manager_hint(
    machine_state: NUMANodeMap, requested: Mapping[str, int], mask: int, reusable: Reusable | None
) -> TopologyHint:
    """``extendTopologyManagerHint``: the best ``memory`` hint containing ``mask``."""
    hints = calculate_hints(machine_state, requested, reusable)
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


def resolve_hint(
    machine_state: NUMANodeMap,
    requested: Mapping[str, int],
    hint: TopologyHint,
    reusable: Reusable | None = None,
) -> int:
    """Allocate steps 4–6: default hint, extension, violation check; the final mask."""
    best = hint
    if hint.numa_affinity is None:
        default = _default_hint(machine_state, requested, reusable)
        if not default.preferred and best.preferred:
            raise MemoryManagerError("[memorymanager] failed to find the default preferred hint")
        best = default
    if best.numa_affinity is None:
        # Upstream dereferences the nil mask here; only a request without ``memory``
        # (hugepages alone) can get this far.
        raise MemoryManagerError(
            "[memorymanager] no NUMA affinity for a request without regular memory"
        )
    if not is_affinity_satisfy_request(machine_state, best.numa_affinity, requested):
        extended = _extend_topology_manager_hint(
            machine_state, requested, best.numa_affinity, reusable
        )
        if not extended.preferred and best.preferred:
            raise MemoryManagerError("[memorymanager] failed to find the extended preferred hint")
        best = extended
    assert best.numa_affinity is not None
    if is_affinity_violating_numa_allocations(machine_state, best.numa_affinity):
        raise MemoryManagerError("[memorymanager] preferred hint violates NUMA node allocation")
    return best.numa_affinity

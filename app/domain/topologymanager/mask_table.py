"""Every NUMA mask of a machine, as the hint providers walk them (``bitmask.IterateBitMasks``
in ``generateCPUTopologyHints`` of pkg/kubelet/cm/cpumanager/policy_static.go and
``calculateHints`` of pkg/kubelet/cm/memorymanager/policy_static.go, v1.37).

A row's *position mask* has bit p set for the p-th smallest NUMA id of the mask, so it
indexes ``subset_sums``: a provider sums a per-node quantity over every mask in one doubling
pass instead of a loop over each mask's nodes (255 masks on 8 NUMA nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.domain.topologymanager.bitmask import bits, iterate_bitmasks
from app.domain.topologymanager.hint import TopologyHint

# (mask, position mask, node count, preferred hint, other hint); hints are immutable values,
# shared by every answer.
MaskRow = tuple[int, int, int, TopologyHint, TopologyHint]

_MASK_TABLES: dict[tuple[int, ...], list[MaskRow]] = {}


def mask_table(nodes: Iterable[int]) -> list[MaskRow]:
    """One row per mask of ``nodes`` in ``IterateBitMasks`` order (computed once per set of
    NUMA ids)."""
    key = tuple(sorted(nodes))
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


def subset_sums(values: Sequence[int]) -> list[int]:
    """``sums[pm]`` = the sum of ``values[p]`` over the bits p of ``pm``, for every subset
    (built by doubling: each value extends every sum seen so far)."""
    sums = [0]
    for v in values:
        sums += [t + v for t in sums]
    return sums

"""Go slice sharing in iterateCombinations, and what it does to the distributed algorithm.

The kubelet keeps a reference to the best combination's slice; siblings generated later by
``append`` into the same backing array rewrite it (kubernetes/kubernetes#141237, not fixed in
the code Numascope follows), so the NUMA nodes used are the rewritten ones.
"""

from __future__ import annotations

import itertools

import pytest

from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.go_slices import (
    go_iterate_combinations,
    kept_combination,
)
from app.domain.presets import get_preset


@pytest.mark.parametrize("n", [1, 3, 5, 8])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 6])
def test_yields_every_combination_in_go_order(n: int, k: int) -> None:
    items = list(range(10, 10 + n))
    got = [s.values() for s in go_iterate_combinations(items, k)]
    expected = list(itertools.combinations(items, k)) if k >= 1 else []
    assert got == expected


@pytest.mark.parametrize(
    ("k", "kept_after"),
    [
        (2, (0, 1)),  # [a] has no spare capacity: each sibling gets a new array
        (3, (0, 1, 2)),  # [a b] is full (cap 2): each sibling gets a new array
        (4, (0, 1, 2, 7)),  # [a b c] has cap 4: siblings write index 3 of one array
        (5, (0, 1, 2, 3, 4)),  # [a b c d] is full (cap 4): new arrays
        (6, (0, 1, 2, 3, 4, 7)),  # cap 8 from depth 5 on: shared again
    ],
)
def test_a_kept_combination_is_rewritten_like_a_go_slice(
    k: int, kept_after: tuple[int, ...]
) -> None:
    it = go_iterate_combinations(list(range(8)), k)
    first = next(it)
    assert first.values() == tuple(range(k))
    for _ in it:
        pass
    assert first.values() == kept_after


def test_distributed_take_uses_the_rewritten_best_combination() -> None:
    # 8 NUMA nodes of 32 CPUs; 128 CPUs need 4 whole nodes and every 4-combination balances
    # equally, so the first one, {0,1,2,3}, is the best - and its slice then reads {0,1,2,7}.
    topo = get_preset("topoDualSocketMultiNumaPerSocketHTLarge")
    result = take_by_topology_numa_distributed(topo, topo.all_cpus, 128, 1)
    assert result.size() == 128
    assert topo.numa_nodes_of(result) == [0, 1, 2, 7]
    # 1.38 (kubernetes#141238) copies the best combination when it is found.
    copied = take_by_topology_numa_distributed(topo, topo.all_cpus, 128, 1, copy_best=True)
    assert topo.numa_nodes_of(copied) == [0, 1, 2, 3]


@pytest.mark.parametrize("n", [1, 4, 6, 9])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 7, 8])
def test_kept_combination_reads_what_the_go_slice_reads(n: int, k: int) -> None:
    """For every kept combination and the points the iteration may stop at (the kept one, the
    next few, a later prefix, or its end), the formula reads what the modelled Go slice reads."""
    items = [100 + i for i in range(n)]
    positions = list(itertools.combinations(range(n), k))
    for a, kept in enumerate(positions):
        later = {a, a + 1, a + 2, a + 3, (a + len(positions)) // 2, len(positions) - 1}
        for b in sorted(x for x in later if x < len(positions)):
            slices = go_iterate_combinations(items, k)
            kept_slice = None
            for i, s in enumerate(slices):
                if i == a:
                    kept_slice = s
                if i == b:
                    break  # the iteration stops having generated positions[b]
            assert kept_slice is not None
            assert kept_combination(items, kept, positions[b]) == kept_slice.values()

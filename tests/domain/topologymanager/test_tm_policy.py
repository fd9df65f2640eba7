"""Hint merging and the four topology manager policies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo, NUMAInfoError
from app.domain.topologymanager.policy import (
    POLICY_BEST_EFFORT,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    HintMerger,
    filter_providers_hints,
    iterate_all_provider_topology_hints,
    max_of_min_affinity_counts,
    merge_filtered_hints,
    merge_permutation,
    narrowest_hint,
)
from app.domain.topologymanager.policy_best_effort import BestEffortPolicy
from app.domain.topologymanager.policy_none import NonePolicy
from app.domain.topologymanager.policy_options import PolicyOptions
from app.domain.topologymanager.policy_restricted import RestrictedPolicy
from app.domain.topologymanager.policy_single_numa_node import (
    SingleNumaNodePolicy,
    filter_single_numa_hints,
)
from app.domain.topologymanager.topology_manager import new_policy


def h(ids: list[int] | None, preferred: bool = True) -> TopologyHint:
    return TopologyHint(None if ids is None else mask_of(ids), preferred)


TWO = NUMAInfo.new([0, 1])
FOUR = NUMAInfo.new([0, 1, 2, 3])


# -- filter_providers_hints --------------------------------------------------------------


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        pytest.param([None], [[h(None, True)]], id="nil-provider"),
        pytest.param([{}], [[h(None, True)]], id="empty-map"),
        pytest.param([{"cpu": None}], [[h(None, True)]], id="nil-list"),
        pytest.param([{"cpu": []}], [[h(None, False)]], id="empty-list"),
        pytest.param(
            [{"cpu": [h([0]), h([1], False)]}, {"memory": [h([0, 1])]}],
            [[h([0]), h([1], False)], [h([0, 1])]],
            id="two-providers",
        ),
        pytest.param([], [], id="no-providers"),
    ],
)
def test_filter_providers_hints(
    providers: list[ProviderHints | None], expected: list[list[TopologyHint]]
) -> None:
    assert filter_providers_hints(providers) == expected


# -- merge_permutation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("permutation", "expected"),
    [
        pytest.param([h([0]), h([0])], h([0], True), id="same-mask-preferred"),
        pytest.param([h([0]), h([0, 1])], h([0], False), id="different-masks-not-preferred"),
        pytest.param([h(None), h([1])], h([1], True), id="nil-contributes-nothing"),
        pytest.param([h(None), h(None)], h([0, 1], True), id="all-nil-default"),
        pytest.param([h([0], False), h([0])], h([0], False), id="one-not-preferred"),
        pytest.param([h([0]), h([1])], h([], False), id="disjoint-empty"),
    ],
)
def test_merge_permutation(permutation: list[TopologyHint], expected: TopologyHint) -> None:
    assert merge_permutation(TWO.default_affinity_mask(), permutation) == expected


# -- narrowest / max of min ---------------------------------------------------------------


def test_narrowest_hint_skips_nil_and_keeps_first_on_ties() -> None:
    hints = [h(None), h([0, 1]), h([2]), h([1]), h([3])]
    assert narrowest_hint(hints) == h([1])
    assert narrowest_hint([h(None)]) is None
    assert narrowest_hint([]) is None


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        pytest.param([], 0, id="nothing"),
        pytest.param([[h(None)]], 0, id="only-nil"),
        pytest.param([[h([0, 1]), h([0, 1, 2])]], 2, id="one-list"),
        pytest.param([[h([0])], [h([0, 1]), h([1, 2, 3])]], 2, id="max-of-mins"),
        pytest.param([[h([])]], 0, id="empty-mask-counts-zero"),
    ],
)
def test_max_of_min_affinity_counts(lists: list[list[TopologyHint]], expected: int) -> None:
    assert max_of_min_affinity_counts(lists) == expected


# -- policies ----------------------------------------------------------------------------

CPU_2N = {
    "cpu": [h([0]), h([1]), h([0, 1], False)],
}
MEM_ONLY_1 = {"memory": [h([1]), h([0, 1], False)]}
CPU_WIDE = {"cpu": [h([0, 1])]}  # preferred, but needs both nodes
GPU_NONE = {"gpu": []}

POLICY_CASES = [
    # (policy, providers, hint, admit)
    pytest.param(POLICY_BEST_EFFORT, [None], h([0, 1], True), True, id="be-no-provider-hints"),
    pytest.param(POLICY_BEST_EFFORT, [CPU_2N], h([0]), True, id="be-single-provider"),
    pytest.param(POLICY_BEST_EFFORT, [CPU_2N, MEM_ONLY_1], h([1]), True, id="be-intersect"),
    pytest.param(POLICY_BEST_EFFORT, [CPU_WIDE], h([0, 1]), True, id="be-wide-preferred"),
    pytest.param(
        POLICY_BEST_EFFORT, [CPU_2N, GPU_NONE], h([0], False), True, id="be-impossible-gpu"
    ),
    pytest.param(
        POLICY_BEST_EFFORT,
        [{"cpu": [h([0])]}, {"memory": [h([1])]}],
        h([0, 1], False),
        True,
        id="be-disjoint-falls-back-to-default",
    ),
    pytest.param(POLICY_RESTRICTED, [CPU_2N, MEM_ONLY_1], h([1]), True, id="re-intersect"),
    pytest.param(POLICY_RESTRICTED, [CPU_2N, GPU_NONE], h([0], False), False, id="re-reject"),
    pytest.param(
        POLICY_RESTRICTED,
        [{"cpu": [h([0]), h([0, 1], False)]}, {"memory": [h([1]), h([0, 1], False)]}],
        h([0], False),
        False,
        id="re-only-mixed-masks",
    ),
    pytest.param(POLICY_SINGLE_NUMA_NODE, [CPU_2N], h([0]), True, id="snn-single"),
    pytest.param(POLICY_SINGLE_NUMA_NODE, [CPU_WIDE], h(None, False), False, id="snn-wide"),
    pytest.param(POLICY_SINGLE_NUMA_NODE, [None], h(None, True), True, id="snn-dont-care"),
    pytest.param(
        POLICY_SINGLE_NUMA_NODE, [CPU_2N, GPU_NONE], h(None, False), False, id="snn-empty-list"
    ),
    pytest.param(
        POLICY_SINGLE_NUMA_NODE,
        [{"cpu": [h([0])]}, {"memory": [h([1])]}],
        h(None, False),
        False,
        id="snn-disjoint",
    ),
]


@pytest.mark.parametrize(("policy", "providers", "hint", "admit"), POLICY_CASES)
def test_policy_merge(
    policy: str, providers: list[ProviderHints | None], hint: TopologyHint, admit: bool
) -> None:
    merged, ok = new_policy(policy, TWO, PolicyOptions()).merge(providers)
    assert (merged, ok) == (hint, admit)


def test_none_policy_admits_with_the_zero_hint() -> None:
    assert NonePolicy().merge([{"cpu": []}]) == (TopologyHint(None, False), True)


def test_single_numa_node_filter_keeps_preferred_single_and_nil() -> None:
    lists = [[h(None), h(None, False), h([0]), h([0], False), h([0, 1])]]
    assert filter_single_numa_hints(lists) == [[h(None), h([0])]]


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        # Non-preferred: the count closest to (not above) the best non-preferred count wins.
        pytest.param(
            [[h([0, 1], False), h([0, 1, 2], False)], [h([0, 1], False), h([0, 1, 2, 3], False)]],
            h([0, 1], False),
            id="non-preferred-at-best-count",
        ),
        pytest.param(
            [[h([0, 1], False), h([0, 1, 2], False)], [h([0, 1, 2, 3], False)]],
            h([0, 1, 2], False),
            id="non-preferred-below-best-count-widest-wins",
        ),
        pytest.param(
            [[h([0], False), h([0, 1, 2], False)], [h([0, 1], False), h([0, 1, 2, 3], False)]],
            h([0, 1], False),
            id="non-preferred-creeps-up-to-best-count",
        ),
        pytest.param(
            [[h([2, 3], False), h([0, 1], False)]],
            h([0, 1], False),
            id="non-preferred-equal-count-narrower-wins",
        ),
        pytest.param([[h([1, 2]), h([3])]], h([3]), id="preferred-narrowest"),
        pytest.param([[h([0], False), h([1, 2])]], h([1, 2]), id="preferred-beats-narrower"),
    ],
)
def test_merge_filtered_hints(lists: list[list[TopologyHint]], expected: TopologyHint) -> None:
    assert merge_filtered_hints(FOUR, lists) == expected


# -- prefer-closest-numa-nodes on 8 NUMA nodes ----------------------------------------------

# Two sockets of four NUMA nodes; inside a socket node pairs (0,1) and (4,5) are far apart
# (20) while (0,2), (1,3), ... are close (11); across sockets 32.
_SOCKET = {n: n // 4 for n in range(8)}
_CLOSE = {frozenset(p) for p in [(0, 2), (1, 3), (4, 6), (5, 7), (2, 3), (6, 7)]}


def _distance(a: int, b: int) -> int:
    if a == b:
        return 10
    if _SOCKET[a] != _SOCKET[b]:
        return 32
    return 11 if frozenset((a, b)) in _CLOSE else 20


EIGHT = {n: tuple(_distance(n, m) for m in range(8)) for n in range(8)}


@pytest.mark.parametrize(
    ("policy", "prefer_closest", "providers", "expected"),
    [
        pytest.param(
            POLICY_BEST_EFFORT,
            False,
            [{"cpu": [h([0, 1]), h([0, 2])]}],
            h([0, 1]),
            id="narrowest-picks-smaller-mask",
        ),
        pytest.param(
            POLICY_BEST_EFFORT,
            True,
            [{"cpu": [h([0, 1]), h([0, 2])]}],
            h([0, 2]),
            id="closest-picks-lower-distance",
        ),
        pytest.param(
            POLICY_RESTRICTED,
            True,
            [{"cpu": [h([0, 4]), h([4, 6]), h([1, 3])]}],
            h([1, 3]),
            id="closest-ties-take-smaller-mask",
        ),
        pytest.param(
            POLICY_BEST_EFFORT,
            True,
            [
                {"cpu": [h([0, 1, 2], False), h([0, 2, 3], False)]},
                {"memory": [h([0, 1, 2, 3], False)]},
            ],
            h([0, 2, 3], False),
            id="closest-among-non-preferred",
        ),
        pytest.param(
            POLICY_BEST_EFFORT,
            True,
            [{"cpu": [h([0, 2]), h([5])]}],
            h([5]),
            id="closest-still-prefers-fewer-nodes",
        ),
        pytest.param(
            POLICY_SINGLE_NUMA_NODE,
            True,
            [{"cpu": [h([6]), h([2])]}],
            h([2]),
            id="single-numa-node-ignores-closest",
        ),
    ],
)
def test_prefer_closest_numa_nodes(
    policy: str,
    prefer_closest: bool,
    providers: list[ProviderHints | None],
    expected: TopologyHint,
) -> None:
    info = NUMAInfo.new(range(8), EIGHT, prefer_closest_numa=prefer_closest)
    merged, _ = new_policy(policy, info, PolicyOptions(prefer_closest_numa=prefer_closest)).merge(
        providers
    )
    assert merged == expected


def test_merge_with_a_short_distance_row_fails_as_the_walk_does() -> None:
    rows = {0: (10, 11, 12), 1: (11, 10), 2: (12, 11, 10)}
    info = NUMAInfo.new(range(3), rows, prefer_closest_numa=True)
    assert not info.knows_every_distance()
    assert NUMAInfo.new(range(8), EIGHT, prefer_closest_numa=True).knows_every_distance()
    # The walk compares the two non-preferred hints before it meets the preferred one.
    lists = [[h([0, 2], False), h([1, 2], False), h([0])]]
    opts = PolicyOptions(prefer_closest_numa=True)
    merger = HintMerger.new(info, lists, POLICY_BEST_EFFORT, opts)
    for merge in (merger.merge_by_permutations, merger.merge):
        with pytest.raises(NUMAInfoError, match="no NUMA distance known from node 1 to node 2"):
            merge()


def test_average_distance() -> None:
    info = NUMAInfo.new(range(8), EIGHT, prefer_closest_numa=True)
    assert info.calculate_average_for(mask_of([0, 2])) == (10 + 11 + 11 + 10) / 4
    assert info.calculate_average_for(0) == 0


# -- the distinct-merge shortcut equals upstream's literal product walk ----------------------

_masks = st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=0, max_size=4).map(mask_of))
_hint = st.builds(TopologyHint, _masks, st.booleans())
_lists = st.lists(st.lists(_hint, min_size=0, max_size=5), min_size=0, max_size=4)
_rows = st.lists(st.integers(10, 40), min_size=4, max_size=4)


@settings(max_examples=300, deadline=None)
@given(lists=_lists, rows=st.lists(_rows, min_size=4, max_size=4), closest=st.booleans())
def test_merge_equals_permutation_walk(
    lists: list[list[TopologyHint]], rows: list[list[int]], closest: bool
) -> None:
    info = NUMAInfo.new(range(4), dict(enumerate(rows)), prefer_closest_numa=closest)
    for policy in (POLICY_BEST_EFFORT, POLICY_SINGLE_NUMA_NODE):
        merger = HintMerger.new(info, lists, policy, PolicyOptions(prefer_closest_numa=closest))
        assert merger.merge() == merger.merge_by_permutations()


@settings(max_examples=300, deadline=None)
@given(lists=_lists, nodes=st.sets(st.integers(0, 3)))
def test_merge_equals_permutation_walk_with_masks_beyond_the_machine(
    lists: list[list[TopologyHint]], nodes: set[int]
) -> None:
    # Masks naming nodes the machine lacks: a preferred merge can then be empty.
    info = NUMAInfo.new(nodes)
    default = info.default_affinity_mask()
    walk = [merge_permutation(default, p) for p in iterate_all_provider_topology_hints(lists)]
    for policy in (POLICY_BEST_EFFORT, POLICY_SINGLE_NUMA_NODE):
        merger = HintMerger.new(info, lists, policy, PolicyOptions())
        assert merger.preferred_merges() == {m.numa_affinity for m in walk if m.preferred}
        assert merger.merge() == merger.merge_by_permutations()


def test_preferred_merges_are_the_preferred_permutation_merges() -> None:
    lists = [[h([0]), h([1]), h([0, 1], False)], [h(None), h([1]), h([2])], [h([1]), h([0])]]
    merger = HintMerger.new(FOUR, lists, POLICY_BEST_EFFORT, PolicyOptions())
    assert merger.preferred_merges() == {mask_of([0]), mask_of([1])}
    nil_everywhere = [[h(None), h([0])], [h([2]), h(None)]]
    merger = HintMerger.new(FOUR, nil_everywhere, POLICY_BEST_EFFORT, PolicyOptions())
    assert merger.preferred_merges() == {mask_of([0]), mask_of([2]), mask_of([0, 1, 2, 3])}


@settings(max_examples=100, deadline=None)
@given(lists=_lists)
def test_merge_does_not_depend_on_list_order(lists: list[list[TopologyHint]]) -> None:
    forward = merge_filtered_hints(FOUR, lists)
    assert merge_filtered_hints(FOUR, list(reversed([list(reversed(x)) for x in lists]))) == forward


@pytest.mark.parametrize(
    ("cls", "admit"), [(BestEffortPolicy, True), (RestrictedPolicy, False)], ids=["be", "re"]
)
def test_admission_follows_preference(cls: type[BestEffortPolicy], admit: bool) -> None:
    _, ok = cls(TWO).merge([{"cpu": [h([0, 1], False)]}])
    assert ok is admit


def test_single_numa_node_reports_whole_machine_as_nil() -> None:
    one = NUMAInfo.new([0])
    assert SingleNumaNodePolicy(one).merge([{"cpu": [h([0])]}]) == (h(None, True), True)

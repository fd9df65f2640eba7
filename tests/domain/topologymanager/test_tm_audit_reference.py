"""Topology manager audit: the policies' ``merge`` against a line-by-line reading of upstream
pkg/kubelet/cm/topologymanager/policy.go (``filterProvidersHints``, ``mergePermutation``,
``narrowestHint``, ``maxOfMinAffinityCounts``, ``HintMerger.compare``/``Merge``),
policy_single_numa_node.go (``filterSingleNumaHints``, the default-mask-to-nil rule) and the
``canAdmitPodResult`` of each policy.

The reference below walks every permutation in ``iterateAllProviderTopologyHints`` order and
keeps Go's nil/empty distinctions: a nil mask (``None``) is left out of the AND, an empty mask
(``0``) takes part and makes a count-0 merge that ``compare`` skips.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo
from app.domain.topologymanager.policy import max_of_min_affinity_counts
from app.domain.topologymanager.policy_options import PolicyOptions
from app.domain.topologymanager.topology_manager import new_policy

Hint = tuple[int | None, bool]


def _count(mask: int | None) -> int:
    return 0 if mask is None else bin(mask).count("1")


def _narrower(a: int, b: int) -> bool:
    if _count(a) == _count(b):
        return a < b
    return _count(a) < _count(b)


def ref_filter(providers: list[dict[str, list[Hint] | None] | None]) -> list[list[Hint]]:
    out: list[list[Hint]] = []
    for hints in providers:
        if not hints:
            out.append([(None, True)])
            continue
        for resource in hints:
            lst = hints[resource]
            if lst is None:
                out.append([(None, True)])
            elif len(lst) == 0:
                out.append([(None, False)])
            else:
                out.append(list(lst))
    return out


def ref_max_of_min(lists: list[list[Hint]]) -> int:
    best = 0
    for hints in lists:
        narrowest: Hint | None = None
        for h in hints:
            if h[0] is None:
                continue
            if narrowest is None:
                narrowest = h
            assert narrowest[0] is not None
            if _narrower(h[0], narrowest[0]):
                narrowest = h
        if narrowest is None:
            continue
        best = max(best, _count(narrowest[0]))
    return best


def ref_merge(policy: str, nodes: list[int], providers: Any) -> tuple[Hint, bool]:
    lists = ref_filter(providers)
    if policy == "single-numa-node":
        lists = [
            [h for h in hints if h[1] and (h[0] is None or _count(h[0]) == 1)] for hints in lists
        ]
    default = mask_of(nodes)
    best_count = ref_max_of_min(lists)

    def fitter(cur: Hint, cand: Hint) -> Hint:
        if cand[0] == cur[0]:
            return cur
        assert cur[0] is not None and cand[0] is not None
        return cur if _narrower(cur[0], cand[0]) else cand

    def compare(cur: Hint | None, cand: Hint) -> Hint | None:
        cc = _count(cand[0])
        if cc == 0:
            return cur
        if cur is None:
            return cand
        if not cur[1] and cand[1]:
            return cand
        if cur[1] and not cand[1]:
            return cur
        if cur[1] and cand[1]:
            return fitter(cur, cand)
        cu = _count(cur[0])
        if cu > best_count:
            return fitter(cur, cand)
        if cu == best_count:
            return cur if cc != best_count else fitter(cur, cand)
        if cc > best_count:
            return cur
        if cc == best_count:
            return cand
        if cc > cu:
            return cand
        if cc < cu:
            return cur
        return fitter(cur, cand)

    best: Hint | None = None
    for perm in product(*lists):
        preferred = True
        masks: list[int] = []
        for mask, pref in perm:
            if mask is not None:
                masks.append(mask)
                if mask != masks[0]:
                    preferred = False
            if not pref:
                preferred = False
        merged = default
        for m in masks:
            merged &= m
        best = compare(best, (merged, preferred))
    if best is None:
        best = (default, False)
    if policy == "single-numa-node" and best[0] == default:
        best = (None, best[1])
    admit = True if policy == "best-effort" else best[1]
    return best, admit


# -- strategies -----------------------------------------------------------------------------------

NODES = [0, 1, 2, 3]
masks = st.one_of(
    st.none(),
    st.just(0),
    st.sets(st.sampled_from([0, 1, 2, 3, 5]), min_size=1).map(mask_of),
)
hints = st.tuples(masks, st.booleans())
hint_lists = st.one_of(st.none(), st.lists(hints, max_size=3))
providers = st.lists(
    st.one_of(
        st.none(),
        st.just({}),
        st.dictionaries(st.sampled_from(["cpu", "memory", "gpu"]), hint_lists, max_size=2),
    ),
    max_size=3,
)


def _as_provider_hints(raw: Any) -> Any:
    out = []
    for p in raw:
        if p is None:
            out.append(None)
            continue
        out.append(
            {
                r: None if lst is None else [TopologyHint(m, pref) for m, pref in lst]
                for r, lst in p.items()
            }
        )
    return out


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["best-effort", "restricted", "single-numa-node"]), providers)
def test_policy_merge_equals_the_upstream_reading(policy: str, raw: Any) -> None:
    expected_hint, expected_admit = ref_merge(policy, NODES, raw)
    p = new_policy(policy, NUMAInfo.new(NODES), PolicyOptions())
    hint, admit = p.merge(_as_provider_hints(raw))
    assert (hint.numa_affinity, hint.preferred) == expected_hint
    assert admit == expected_admit


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(hints, max_size=4), max_size=4))
def test_max_of_min_affinity_counts_equals_the_upstream_reading(lists: list[list[Hint]]) -> None:
    ours = max_of_min_affinity_counts([[TopologyHint(m, p) for m, p in hs] for hs in lists])
    assert ours == ref_max_of_min(lists)


@pytest.mark.parametrize(
    ("policy", "raw", "expected"),
    [
        # An empty (non-nil) mask ANDs everything away: that permutation is skipped.
        ("best-effort", [{"cpu": [(0, True)]}], ((mask_of(NODES), False), True)),
        # A nil-mask non-preferred hint keeps the default mask but not the preference.
        ("restricted", [{"cpu": [(None, False)]}], ((mask_of(NODES), False), False)),
        # single-numa-node drops multi-node and non-preferred hints; nothing left -> nil, reject.
        ("single-numa-node", [{"cpu": [(mask_of([0, 1]), True)]}], ((None, False), False)),
        # single-numa-node reports a merge over every node as nil.
        ("single-numa-node", [{"cpu": None}], ((None, True), True)),
        # A NUMA id the machine does not have ANDs to the empty mask.
        ("restricted", [{"gpu": [(mask_of([5]), True)]}], ((mask_of(NODES), False), False)),
    ],
    ids=["empty-mask", "nil-not-preferred", "snn-nothing-left", "snn-default-to-nil", "foreign-id"],
)
def test_merge_edge_cases(policy: str, raw: Any, expected: tuple[Hint, bool]) -> None:
    assert ref_merge(policy, NODES, raw) == expected
    hint, admit = new_policy(policy, NUMAInfo.new(NODES), PolicyOptions()).merge(
        _as_provider_hints(raw)
    )
    assert ((hint.numa_affinity, hint.preferred), admit) == expected

"""Topology manager hint merging (follows pkg/kubelet/cm/topologymanager/policy.go, v1.37).

Providers answer ``{resource: [TopologyHint, ...]}``; ``filter_providers_hints`` turns that into
one hint list per (provider, resource), and ``HintMerger.merge`` picks the best merge of one
hint from every list.

Upstream walks the whole cartesian product of the lists and folds ``compare`` over every
merged permutation. ``compare`` selects the better of two hints under a total order (preferred
first; then, for non-preferred hints, a NUMA count equal to the best non-preferred count, then
counts below it from high to low, then counts above it; ties by the "fitter" mask), so the
result does not depend on the permutation order. We therefore fold over the *distinct* merged
hints, which we build list by list from the distinct partial merges. This gives upstream's
answer (the tests check it against the literal product) without its exponential cost on
8-NUMA machines. Since a preferred hint beats every non-preferred one, ``merge`` first looks
at the preferred merges alone, which need no product at all (``preferred_merges``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import product

from app.domain import deadline
from app.domain.topologymanager.bitmask import bits, is_narrower_than
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo
from app.domain.topologymanager.policy_options import PolicyOptions

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
POLICY_NAMES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)

NO_PREFERENCE = TopologyHint(None, True)
NO_POSSIBLE_AFFINITY = TopologyHint(None, False)


class Policy:
    """``Policy``: a name and ``merge(providers_hints) -> (hint, admit)``."""

    name: str = ""

    def merge(self, providers_hints: Sequence[ProviderHints | None]) -> tuple[TopologyHint, bool]:
        raise NotImplementedError


class MergingPolicy(Policy):
    """A policy that merges the providers' hints over the machine's NUMA nodes
    (``best-effort``, ``restricted``, ``single-numa-node``), with its options."""

    def __init__(self, numa_info: NUMAInfo, opts: PolicyOptions | None = None) -> None:
        self.numa_info = numa_info
        self.opts = opts or PolicyOptions()


def filter_providers_hints(
    providers_hints: Iterable[ProviderHints | None],
) -> list[list[TopologyHint]]:
    """``filterProvidersHints``: one list per (provider, resource).

    A provider with no hints at all (nil or empty map) and a resource mapped to ``None`` give
    ``[{nil, preferred}]`` (no preference); a resource mapped to ``[]`` gives
    ``[{nil, not preferred}]`` (no possible affinity).
    """
    out: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            out.append([NO_PREFERENCE])
            continue
        for resource in hints:
            resource_hints = hints[resource]
            if resource_hints is None:
                out.append([NO_PREFERENCE])
            elif len(resource_hints) == 0:
                out.append([NO_POSSIBLE_AFFINITY])
            else:
                out.append(list(resource_hints))
    return out


def merge_permutation(default_affinity: int, permutation: Iterable[TopologyHint]) -> TopologyHint:
    """``mergePermutation``: AND of the masks; preferred iff every hint is preferred and all
    non-nil masks are equal."""
    preferred = True
    first: int | None = None
    merged = default_affinity
    for hint in permutation:
        mask = hint.numa_affinity
        if mask is not None:
            merged &= mask
            if first is None:
                first = mask
            elif mask != first:
                preferred = False
        if not hint.preferred:
            preferred = False
    return TopologyHint(merged, preferred)


def iterate_all_provider_topology_hints(
    all_provider_hints: Sequence[Sequence[TopologyHint]],
) -> Iterator[tuple[TopologyHint, ...]]:
    """``iterateAllProviderTopologyHints``: the cartesian product, first list outermost."""
    return product(*all_provider_hints)


def narrowest_hint(hints: Sequence[TopologyHint]) -> TopologyHint | None:
    """``narrowestHint``: the narrowest non-nil mask of a list (first one on ties)."""
    best: TopologyHint | None = None
    for hint in hints:
        if hint.numa_affinity is None:
            continue
        if best is None or is_narrower_than(hint.numa_affinity, best.numa_affinity or 0):
            best = hint
    return best


def max_of_min_affinity_counts(filtered_hints: Iterable[Sequence[TopologyHint]]) -> int:
    """``maxOfMinAffinityCounts``: the largest, over the lists, of the narrowest mask's size."""
    best = 0
    for resource_hints in filtered_hints:
        nh = narrowest_hint(resource_hints)
        if nh is None or nh.numa_affinity is None:
            continue
        best = max(best, nh.numa_affinity.bit_count())
    return best


@dataclass(slots=True)
class HintMerger:
    """``HintMerger``: merges filtered hint lists under a policy's comparison rules."""

    numa_info: NUMAInfo
    hints: list[list[TopologyHint]]
    prefer_closest: bool
    _best_count: int | None = field(default=None, repr=False)

    @classmethod
    def new(
        cls,
        numa_info: NUMAInfo,
        hints: list[list[TopologyHint]],
        policy_name: str,
        opts: PolicyOptions,
    ) -> HintMerger:
        """``NewHintMerger``."""
        return cls(
            numa_info=numa_info,
            hints=hints,
            prefer_closest=policy_name != POLICY_SINGLE_NUMA_NODE and opts.prefer_closest_numa,
        )

    @property
    def best_non_preferred_affinity_count(self) -> int:
        """``maxOfMinAffinityCounts`` of the lists, computed when first needed (only
        comparisons of non-preferred hints need it)."""
        if self._best_count is None:
            self._best_count = max_of_min_affinity_counts(self.hints)
        return self._best_count

    def compare_numa_affinity_masks(
        self, current: TopologyHint, candidate: TopologyHint
    ) -> TopologyHint:
        """The "fitter" of two hints: equal masks keep ``current``."""
        cur = current.numa_affinity or 0
        cand = candidate.numa_affinity or 0
        if cand == cur:
            return current
        if self.prefer_closest:
            best = self.numa_info.closest(cur, cand)
        else:
            best = self.numa_info.narrowest(cur, cand)
        return current if best == cur else candidate

    def compare(self, current: TopologyHint | None, candidate: TopologyHint) -> TopologyHint | None:
        """``HintMerger.compare``: which of the current best and a candidate to keep."""
        cand_count = (candidate.numa_affinity or 0).bit_count()
        if cand_count == 0:
            return current
        if current is None:
            return candidate
        if not current.preferred and candidate.preferred:
            return candidate
        if current.preferred and not candidate.preferred:
            return current
        if current.preferred and candidate.preferred:
            return self.compare_numa_affinity_masks(current, candidate)
        best_count = self.best_non_preferred_affinity_count
        cur_count = (current.numa_affinity or 0).bit_count()
        if cur_count > best_count:
            return self.compare_numa_affinity_masks(current, candidate)
        if cur_count == best_count:
            if cand_count != best_count:
                return current
            return self.compare_numa_affinity_masks(current, candidate)
        if cand_count > best_count:
            return current
        if cand_count == best_count:
            return candidate
        if cand_count > cur_count:
            return candidate
        if cand_count < cur_count:
            return current
        return self.compare_numa_affinity_masks(current, candidate)

    def merged_candidates(self) -> list[TopologyHint]:
        """The distinct results of ``mergePermutation`` over every permutation, in first-seen
        order of the product walk."""
        default = self.numa_info.default_affinity_mask()
        # Partial merge state: (AND so far, still preferred, common non-nil mask or None).
        states: dict[tuple[int, bool, int | None], None] = {(default, True, None): None}
        for resource_hints in self.hints:
            nxt: dict[tuple[int, bool, int | None], None] = {}
            for merged, preferred, common in states:
                deadline.check()  # wide machines: |states| x |hints| can take minutes
                for hint in resource_hints:
                    mask = hint.numa_affinity
                    m, p, c = merged, preferred and hint.preferred, common
                    if mask is not None:
                        m &= mask
                        if c is None:
                            c = mask
                        elif c != mask:
                            p = False
                    nxt[(m, p, c if p else None)] = None
            states = nxt
            if not states:
                break
        out: dict[TopologyHint, None] = {}
        for merged, preferred, _ in states:
            out[TopologyHint(merged, preferred)] = None
        return list(out)

    def preferred_merges(self) -> set[int]:
        """The masks of the preferred results of ``mergePermutation``: a permutation merges
        to a preferred hint iff its hints are all preferred and its non-nil masks are one
        mask ``c`` (giving ``default & c``) or none at all (giving ``default``)."""
        default = self.numa_info.default_affinity_mask()
        common: set[int | None] | None = None  # in every list without a preferred nil hint
        offered: set[int | None] = set()
        for resource_hints in self.hints:
            masks = {h.numa_affinity for h in resource_hints if h.preferred}
            if None in masks:
                offered |= masks
            else:
                common = masks if common is None else common & masks
        if common is None:  # every list can pick a preferred nil hint
            return {default} | {default & c for c in offered if c is not None}
        return {default & c for c in common if c is not None}

    def merge(self) -> TopologyHint:
        """``HintMerger.Merge``: the best merged hint, ``{default, false}`` if none."""
        deadline.check()
        best: TopologyHint | None = None
        # A preferred hint with a non-empty mask beats every non-preferred one, so when
        # one exists the best is among the preferred merges alone (linear, not a product).
        # Short distance rows make ``closest`` fail on some pairs: then walk as upstream.
        if not self.prefer_closest or self.numa_info.knows_every_distance():
            for mask in self.preferred_merges():
                best = self.compare(best, TopologyHint(mask, True))
            if best is not None:
                return best
        for candidate in self.merged_candidates():
            best = self.compare(best, candidate)
        if best is None:
            return TopologyHint(self.numa_info.default_affinity_mask(), False)
        return best

    def merge_by_permutations(self) -> TopologyHint:
        """The literal upstream walk over the cartesian product (reference for tests)."""
        default = self.numa_info.default_affinity_mask()
        best: TopologyHint | None = None
        for permutation in iterate_all_provider_topology_hints(self.hints):
            best = self.compare(best, merge_permutation(default, permutation))
        if best is None:
            return TopologyHint(default, False)
        return best


def merge_filtered_hints(
    numa_info: NUMAInfo,
    filtered_hints: list[list[TopologyHint]],
    policy_name: str = POLICY_BEST_EFFORT,
    opts: PolicyOptions | None = None,
) -> TopologyHint:
    """Merge already-filtered hint lists (``NewHintMerger(...).Merge()``)."""
    return HintMerger.new(numa_info, filtered_hints, policy_name, opts or PolicyOptions()).merge()


def describe_hint(hint: TopologyHint) -> str:
    """Readable ``{numa: [..], preferred}`` text for logs and errors."""
    ids = "nil" if hint.numa_affinity is None else str(bits(hint.numa_affinity))
    return f"{{{ids} {str(hint.preferred).lower()}}}"

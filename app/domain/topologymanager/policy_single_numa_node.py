"""The ``single-numa-node`` topology manager policy
(follows pkg/kubelet/cm/topologymanager/policy_single_numa_node.go, v1.37).

Keep only preferred hints that are "don't care" (nil mask) or name exactly one NUMA node,
merge them (``prefer-closest-numa-nodes`` never applies here), report a merged hint that
covers every node as the nil mask, and admit only a preferred result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.policy import (
    POLICY_SINGLE_NUMA_NODE,
    HintMerger,
    MergingPolicy,
    filter_providers_hints,
)


def filter_single_numa_hints(
    all_resources_hints: Iterable[Sequence[TopologyHint]],
) -> list[list[TopologyHint]]:
    """``filterSingleNumaHints``: preferred hints with a nil or single-node mask."""
    out: list[list[TopologyHint]] = []
    for resource_hints in all_resources_hints:
        out.append(
            [
                h
                for h in resource_hints
                if h.preferred and (h.numa_affinity is None or h.numa_affinity.bit_count() == 1)
            ]
        )
    return out


class SingleNumaNodePolicy(MergingPolicy):
    name = POLICY_SINGLE_NUMA_NODE

    def can_admit_pod_result(self, hint: TopologyHint) -> bool:
        return hint.preferred

    def merge(self, providers_hints: Sequence[ProviderHints | None]) -> tuple[TopologyHint, bool]:
        filtered = filter_single_numa_hints(filter_providers_hints(providers_hints))
        best = HintMerger.new(self.numa_info, filtered, self.name, self.opts).merge()
        if best.numa_affinity == self.numa_info.default_affinity_mask():
            best = TopologyHint(None, best.preferred)
        return best, self.can_admit_pod_result(best)

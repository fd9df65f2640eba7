"""The ``best-effort`` topology manager policy
(follows pkg/kubelet/cm/topologymanager/policy_best_effort.go, v1.37).

Merge every provider's hints and admit whatever the merge gives.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.policy import (
    POLICY_BEST_EFFORT,
    HintMerger,
    MergingPolicy,
    filter_providers_hints,
)


class BestEffortPolicy(MergingPolicy):
    name = POLICY_BEST_EFFORT

    def can_admit_pod_result(self, hint: TopologyHint) -> bool:
        return True

    def merge(self, providers_hints: Sequence[ProviderHints | None]) -> tuple[TopologyHint, bool]:
        filtered = filter_providers_hints(providers_hints)
        best = HintMerger.new(self.numa_info, filtered, self.name, self.opts).merge()
        return best, self.can_admit_pod_result(best)

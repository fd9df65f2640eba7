"""The ``none`` topology manager policy (follows pkg/kubelet/cm/topologymanager/policy_none.go, v1.37).

No merging: every pod is admitted and the stored affinity is the zero hint (nil mask, not
preferred).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.policy import POLICY_NONE, Policy


class NonePolicy(Policy):
    name = POLICY_NONE

    def merge(self, providers_hints: Sequence[ProviderHints | None]) -> tuple[TopologyHint, bool]:
        return TopologyHint(None, False), True

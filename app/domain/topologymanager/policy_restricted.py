"""The ``restricted`` topology manager policy
(follows pkg/kubelet/cm/topologymanager/policy_restricted.go, v1.37).

Merge like ``best-effort``; admit only a preferred merged hint.
"""

from __future__ import annotations

from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.policy import POLICY_RESTRICTED
from app.domain.topologymanager.policy_best_effort import BestEffortPolicy


class RestrictedPolicy(BestEffortPolicy):
    name = POLICY_RESTRICTED

    def can_admit_pod_result(self, hint: TopologyHint) -> bool:
        return hint.preferred

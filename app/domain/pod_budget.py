"""Pod budget validation for pod-level resource managers (KEP-5526).

Follows ``validatePodScopeResources`` of pkg/kubelet/cm/cpumanager/policy_static.go and
pkg/kubelet/cm/memorymanager/policy_static.go (v1.37). Both managers run the same rules over
different units: the CPU manager over whole CPUs (one resource, ``cpu``), the memory manager
over bytes of each resource type in the pod budget (``memory``, ``hugepages-*``). This module
holds the rule engine once (``check_pod_budget``) and the two message formats
(``cpu_budget_message``, ``memory_budget_message``).

A container's *exclusive amounts* map resource -> amount; an empty map means the container is
*shared* (it runs in the pod shared pool). Rules (spec §5.3), with ``S[r]`` = exclusive amounts
of the sidecars seen so far:

1. init containers in order: a regular exclusive container needs ``x[r] <= budget[r] - S[r]``
   for every budget resource; a regular shared one needs ``S[r] < budget[r]`` for every budget
   resource; a shared sidecar marks "has a shared long-running container"; an exclusive sidecar
   adds its amounts to ``S``;
2. app containers: shared -> mark, exclusive -> add to ``S``;
3. a shared long-running container exists and ``S[r] >= budget[r]`` for a budget resource ->
   reject.

The first half of rule 1 (the "largest exclusive init container" check) is gone on upstream
master (1.38): the master-line ``validatePodScopeResources`` of both managers (content ids
54651890818 CPU, 68686888954 memory) only checks shared init containers, so an exclusive init
container larger than what the sidecars leave fails later, when its slice is taken from the
pod's CPUs (or, for memory, is recorded at its own size). ``init_check=False`` is that rule set
(``app.domain.releases.POD_BUDGET_WITHOUT_INIT_CHECK``).

Go ranges over resource maps in random order; we check resources in name order and report the
first failure (the spec's canonical rule). The memory manager computes in ``uint64``: pass
``unsigned=True`` to wrap subtractions modulo 2**64 as Go does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

UINT64 = 1 << 64

ViolationRule = Literal["init_exclusive", "init_shared", "shared_pool"]


@dataclass(frozen=True, slots=True)
class BudgetContainer:
    """One container as the budget rules see it."""

    name: str
    exclusive: Mapping[str, int]  # empty = shared
    is_sidecar: bool = False

    @property
    def is_shared(self) -> bool:
        return not self.exclusive


@dataclass(frozen=True, slots=True)
class BudgetViolation:
    """Why a pod was rejected: the rule, the resource, and for rule 1 the numbers."""

    rule: ViolationRule
    resource: str
    container: str | None = None
    requested: int | None = None
    available: int | None = None


class PodBudgetError(Exception):
    """A pod's containers do not fit its pod-level budget; ``message`` is the kubelet's text."""

    def __init__(self, violation: BudgetViolation, message: str) -> None:
        super().__init__(message)
        self.violation = violation
        self.message = message


def check_pod_budget(
    budget: Mapping[str, int],
    init_containers: Sequence[BudgetContainer],
    app_containers: Sequence[BudgetContainer],
    *,
    unsigned: bool = False,
    init_check: bool = True,
) -> BudgetViolation | None:
    """Run the rules; ``None`` when the pod fits (``init_check``: rule 1's exclusive half)."""
    resources = sorted(budget)
    sidecar_sum: dict[str, int] = {}
    has_shared_long_running = False

    def sub(a: int, b: int) -> int:
        return (a - b) % UINT64 if unsigned else a - b

    for c in init_containers:
        if not c.is_sidecar:
            if c.exclusive:
                if not init_check:
                    continue
                for r in resources:
                    pool = sub(budget[r], sidecar_sum.get(r, 0))
                    wanted = c.exclusive.get(r, 0)
                    if wanted > pool:
                        return BudgetViolation("init_exclusive", r, c.name, wanted, pool)
            else:
                for r in resources:
                    if sidecar_sum.get(r, 0) >= budget[r]:
                        return BudgetViolation("init_shared", r, c.name)
            continue
        if not c.exclusive:
            has_shared_long_running = True
            continue
        for r, x in c.exclusive.items():
            sidecar_sum[r] = _add(sidecar_sum.get(r, 0), x, unsigned)

    for c in app_containers:
        if not c.exclusive:
            has_shared_long_running = True
            continue
        for r, x in c.exclusive.items():
            sidecar_sum[r] = _add(sidecar_sum.get(r, 0), x, unsigned)

    if has_shared_long_running:
        for r in resources:
            if sidecar_sum.get(r, 0) >= budget[r]:
                return BudgetViolation("shared_pool", r)
    return None


def _add(a: int, b: int, unsigned: bool) -> int:
    return (a + b) % UINT64 if unsigned else a + b


def cpu_budget_message(v: BudgetViolation) -> str:
    """The CPU manager's texts."""
    if v.rule == "init_exclusive":
        return (
            f"pod rejected, largest exclusive init container requests {v.requested} cpus, "
            f"but only {v.available} available"
        )
    if v.rule == "init_shared":
        return "pod rejected, pod has shared init containers but no cpus available for them"
    return (
        "pod rejected, sum of exclusive container cpu requests equals pod budget, "
        "leaving no cpus for shared containers"
    )


def memory_budget_message(v: BudgetViolation) -> str:
    """The memory manager's texts (``<resource>`` is the resource name)."""
    if v.rule == "init_exclusive":
        return (
            f"pod rejected, largest exclusive init container requests {v.requested} of "
            f"{v.resource}, but only {v.available} available"
        )
    if v.rule == "init_shared":
        return (
            f"pod rejected, pod has shared init containers but no {v.resource} available for them"
        )
    return (
        f"pod rejected, sum of exclusive container {v.resource} requests equals pod budget, "
        "leaving no memory for shared containers"
    )

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


def _pool(budget: int, spent: int, unsigned: bool) -> int:
    """What the sidecars leave of a budget resource (``uint64`` arithmetic when unsigned)."""
    return (budget - spent) % UINT64 if unsigned else budget - spent


def _regular_init(
    c: BudgetContainer,
    budget: Mapping[str, int],
    resources: list[str],
    spent: Mapping[str, int],
    unsigned: bool,
) -> BudgetViolation | None:
    """Rule 1 for a regular init container: an exclusive one fits what the sidecars leave of
    each budget resource, a shared one needs some of each left."""
    for r in resources:
        if c.exclusive:
            pool = _pool(budget[r], spent.get(r, 0), unsigned)
            wanted = c.exclusive.get(r, 0)
            if wanted > pool:
                return BudgetViolation("init_exclusive", r, c.name, wanted, pool)
        elif spent.get(r, 0) >= budget[r]:
            return BudgetViolation("init_shared", r, c.name)
    return None


def _add_exclusive(spent: dict[str, int], c: BudgetContainer, unsigned: bool) -> None:
    """An exclusive long-running container (a sidecar, an app container) adds to ``S``."""
    for r, x in c.exclusive.items():
        total = spent.get(r, 0) + x
        spent[r] = total % UINT64 if unsigned else total


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
    spent: dict[str, int] = {}  # S: the exclusive amounts of the long-running containers
    has_shared_long_running = False
    for c in init_containers:
        if not c.is_sidecar:
            if c.exclusive and not init_check:
                continue
            violation = _regular_init(c, budget, resources, spent, unsigned)
            if violation is not None:
                return violation
        elif c.exclusive:
            _add_exclusive(spent, c, unsigned)
        else:
            has_shared_long_running = True
    for c in app_containers:
        if c.exclusive:
            _add_exclusive(spent, c, unsigned)
        else:
            has_shared_long_running = True
    if has_shared_long_running:
        # Rule 3: shared long-running containers need some of each resource left.
        for r in resources:
            if spent.get(r, 0) >= budget[r]:
                return BudgetViolation("shared_pool", r)
    return None


#: The CPU manager's texts by rule.
_CPU_MESSAGES: Mapping[ViolationRule, str] = {
    "init_exclusive": (
        "pod rejected, largest exclusive init container requests {requested} cpus, "
        "but only {available} available"
    ),
    "init_shared": "pod rejected, pod has shared init containers but no cpus available for them",
    "shared_pool": (
        "pod rejected, sum of exclusive container cpu requests equals pod budget, "
        "leaving no cpus for shared containers"
    ),
}

#: The memory manager's texts by rule (``{resource}`` is the resource name).
_MEMORY_MESSAGES: Mapping[ViolationRule, str] = {
    "init_exclusive": (
        "pod rejected, largest exclusive init container requests {requested} of "
        "{resource}, but only {available} available"
    ),
    "init_shared": (
        "pod rejected, pod has shared init containers but no {resource} available for them"
    ),
    "shared_pool": (
        "pod rejected, sum of exclusive container {resource} requests equals pod budget, "
        "leaving no memory for shared containers"
    ),
}


def _message(texts: Mapping[ViolationRule, str], v: BudgetViolation) -> str:
    return texts[v.rule].format(resource=v.resource, requested=v.requested, available=v.available)


def cpu_budget_message(v: BudgetViolation) -> str:
    """The CPU manager's texts."""
    return _message(_CPU_MESSAGES, v)


def memory_budget_message(v: BudgetViolation) -> str:
    """The memory manager's texts (``<resource>`` is the resource name)."""
    return _message(_MEMORY_MESSAGES, v)

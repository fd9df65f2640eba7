"""The pod-level path of the static memory policy (KEP-5526 ``AllocatePod``, §5.3 and §5.5;
follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38, the code line with KEP-5526).

It owns:

* ``pod_scope_budget_error`` (``validatePodScopeResources``, memory flavour, §5.3) through the
  shared rule engine of ``app.domain.pod.budget``;
* ``partition_pod_budget`` (§5.5): once the pod's NUMA mask is chosen, the pod budget is booked
  once on it and partitioned arithmetically - init containers with requests get their own
  blocks, regular init containers without requests get what the runnable pool holds, app
  containers with requests get their own blocks, and every other container shares what is left.
  Sizes are uint64 arithmetic, as upstream's.

The metrics it counts are upstream's (``app.domain.memorymanager.metrics``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from app.domain.cpumanager.metrics import (
    ASSIGNMENT_POD_EXCLUSIVE,
    ASSIGNMENT_POD_SHARED,
    SOURCE_POD,
)
from app.domain.memorymanager.machine import update_machine_state
from app.domain.memorymanager.metrics import MemoryManagerMetrics
from app.domain.memorymanager.state import Block, MemoryManagerState
from app.domain.pod.budget import (
    UINT64,
    BudgetContainer,
    PodBudgetError,
    check_pod_budget,
    memory_budget_message,
)
from app.domain.pod.model import RESOURCE_MEMORY, Container, Pod
from app.domain.topologymanager.bitmask import bits

__all__ = ["ContainerRequests", "partition_pod_budget", "pod_scope_budget_error"]

# A container's memory requests in bytes, as the policy reads them (``requests``).
ContainerRequests = Callable[[Container], Mapping[str, int]]


def _u64_sub(a: int, b: int) -> int:
    return (a - b) % UINT64


def pod_scope_budget_error(
    pod: Pod,
    budget: Mapping[str, int],
    container_requests: ContainerRequests,
    *,
    init_check: bool = True,
) -> PodBudgetError | None:
    """``validatePodScopeResources`` (memory flavour, §5.3); ``None`` when the pod fits.
    ``init_check=False``: the master (1.38) rules without the exclusive init container check."""

    def member(c: Container) -> BudgetContainer:
        return BudgetContainer(c.name, container_requests(c), c.is_sidecar)

    violation = check_pod_budget(
        budget,
        [member(c) for c in pod.init_containers],
        [member(c) for c in pod.containers],
        unsigned=True,
        init_check=init_check,
    )
    if violation is None:
        return None
    return PodBudgetError(violation, memory_budget_message(violation))


def partition_pod_budget(
    state: MemoryManagerState,
    pod: Pod,
    budget: Mapping[str, int],
    mask: int,
    metrics: MemoryManagerMetrics,
    container_requests: ContainerRequests,
) -> None:
    """Book ``budget`` on ``mask`` and record the pod's and every container's blocks."""
    m = metrics
    containers = pod.all_containers()
    mask_nodes = tuple(bits(mask))
    # Copy-on-write: only the nodes of the mask change.
    machine_state = state.machine_state_for_update(mask_nodes)

    partition = _Partition(mask_nodes, m, container_requests)
    sidecar = partition.init_containers(pod, budget)
    pool = {r: _u64_sub(total, sidecar.get(r, 0)) for r, total in budget.items()}
    partition.app_containers(pod, pool)
    exclusive = partition.exclusive
    shared = [Block(mask_nodes, r, v) for r, v in sorted(pool.items()) if v > 0]

    state.set_pod_memory_blocks(pod.uid, [Block(mask_nodes, r, budget[r]) for r in sorted(budget)])
    for r in sorted(budget):
        update_machine_state(machine_state, mask_nodes, r, budget[r])
    for c in containers:
        own = exclusive.get(c.name)
        if own is None:
            m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_SHARED)] += 1
        state.set_memory_blocks(pod.uid, c.name, shared if own is None else own)
        m.allocations_total[(RESOURCE_MEMORY, SOURCE_POD)] += 1
    state.replace_machine_state(machine_state)


@dataclass(slots=True)
class _Partition:
    """The containers' own blocks on the pod's NUMA nodes, counted as upstream counts them."""

    mask_nodes: tuple[int, ...]
    m: MemoryManagerMetrics
    container_requests: ContainerRequests
    exclusive: dict[str, list[Block]] = field(default_factory=dict)

    def init_containers(self, pod: Pod, budget: Mapping[str, int]) -> dict[str, int]:
        """Init containers' blocks: their requests, or for a regular one without requests
        what the runnable pool holds then; returns the sidecars' total."""
        m, nodes = self.m, self.mask_nodes
        sidecar: dict[str, int] = {}
        for c in pod.init_containers:
            reqs = self.container_requests(c)
            m.pinning_requests_total += 1  # every init container, requests or not
            runnable = {r: _u64_sub(total, sidecar.get(r, 0)) for r, total in budget.items()}
            if not reqs:
                if c.is_sidecar:
                    continue
                self.exclusive[c.name] = [
                    Block(nodes, r, v) for r, v in sorted(runnable.items()) if v > 0
                ]
                m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_SHARED)] += 1
                continue
            self.exclusive[c.name] = [Block(nodes, r, v) for r, v in sorted(reqs.items()) if v > 0]
            m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_EXCLUSIVE)] += 1
            if c.is_sidecar:
                for r, v in reqs.items():
                    sidecar[r] = (sidecar.get(r, 0) + v) % UINT64
        return sidecar

    def app_containers(self, pod: Pod, pool: dict[str, int]) -> None:
        """App containers with requests get their own blocks, taken out of ``pool``."""
        for c in pod.containers:
            reqs = self.container_requests(c)
            if not reqs:
                continue
            self.m.pinning_requests_total += 1
            blocks = []
            for r, v in sorted(reqs.items()):
                if v > 0:
                    blocks.append(Block(self.mask_nodes, r, v))
                    pool[r] = _u64_sub(pool.get(r, 0), v)
            self.exclusive[c.name] = blocks
            self.m.container_assignments[(RESOURCE_MEMORY, ASSIGNMENT_POD_EXCLUSIVE)] += 1

"""How much work a pod's topology-hint search is, before it starts (issue 13: the exponential
search must not be reachable by any client).

The kubelet refuses machines with more NUMA nodes than ``max-allowable-numa-nodes`` (default
8, ``pkg/kubelet/cm/topologymanager/topology_manager.go``) because every hint provider walks
all ``2^N - 1`` NUMA masks (``bitmask.IterateBitMasks`` in ``generateCPUTopologyHints`` and the
memory manager's ``calculateHints``) and ``policy.go``'s merge walks the product of the lists.
Numascope keeps that option exactly (a node with the option raised is a valid node), but a
server also has a budget: ``check`` refuses a pod whose search would examine more
combinations than it, with the estimate in the message, before anything runs.

The estimate is an upper bound of what this engine does, per search (each container in the
container scope, the whole pod in the pod scope):

* generation: ``2^N`` masks per hint list (one for the CPU manager, one per memory resource
  the memory manager hints for: ``memory`` and each ``hugepages-<size>``);
* merge (``HintMerger.merged_candidates``): for each list, the distinct partial merges so far
  times the list's length. A partial merge is either preferred (then its mask is the one
  common mask: at most ``2^N`` of them) or not (then it is its AND mask: at most ``2^N``), so
  there are never more than ``2^(N+1) + 1`` (one more for the start).

Only Guaranteed pods get hints (the static CPU and memory policies answer nothing for others)
and policy ``none`` merges nothing: both cost nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.domain.pod.model import Pod, is_hugepage_resource_name
from app.domain.pod.qos import pod_qos_class
from app.domain.topologymanager.scope import NONE_TOPOLOGY_SCOPE, POD_TOPOLOGY_SCOPE

if TYPE_CHECKING:
    from app.domain.node.model import Node

GUARANTEED = "Guaranteed"


def search_cost(numa_nodes: int, lists: int) -> int:
    """Hint combinations one search with ``lists`` hint lists examines at most on a machine of
    ``numa_nodes`` NUMA nodes."""
    if lists <= 0 or numa_nodes <= 0:
        return 0
    masks = (1 << numa_nodes) - 1
    distinct_max = (1 << (numa_nodes + 1)) + 1
    work = lists * (1 << numa_nodes)  # generation
    states = 1
    for _ in range(lists):
        work += states * masks
        states = min(states * masks, distinct_max)
    return work


@dataclass(frozen=True, slots=True)
class HintSearch:
    """The hint searches admitting one pod takes."""

    pod: str  # namespace/name
    numa_nodes: int
    searches: int  # containers with hints (container scope) or 1 (pod scope)
    lists: int  # hint lists of the largest search
    cost: int  # combinations in all, at most


class HintSearchBudgetError(Exception):
    """A pod's hint search would examine more combinations than the budget allows; nothing
    was started."""

    def __init__(
        self, search: HintSearch, budget: int, max_allowable: int, budget_name: str
    ) -> None:
        self.search = search
        self.budget = budget
        searches = (
            f"1 search of {search.lists}"
            if search.searches == 1
            else f"{search.searches} searches of up to {search.lists}"
        )
        self.message = (
            f"pod {search.pod}: the topology-hint search would examine about "
            f"{search.cost:.3g} NUMA-mask combinations ({searches} hint lists over {search.numa_nodes} NUMA nodes; topologyManagerPolicyOptions."
            f"max-allowable-numa-nodes is {max_allowable}), more than {budget_name} of "
            f"{budget:,}; the kubelet's own default of 8 "
            "NUMA nodes exists for this reason: use a machine with fewer NUMA nodes, the "
            "topology manager policy none, or a larger budget where the time is acceptable"
        )
        super().__init__(self.message)


def _memory_lists(pod: Pod) -> int:
    names = {"memory"}
    blocks = [c.resources for c in pod.all_containers()]
    if pod.resources is not None:
        blocks.append(pod.resources)
    for block in blocks:
        for resource in (*block.requests, *block.limits):
            if is_hugepage_resource_name(resource):
                names.add(resource)
    return len(names)


def _whole_cpus(milli: int) -> bool:
    return milli > 0 and milli % 1000 == 0


def estimate(
    pod: Pod,
    *,
    numa_nodes: int,
    scope: str,
    cpu_static: bool,
    memory_static: bool,
    pod_level_resources: bool = True,
) -> HintSearch:
    """The searches admitting ``pod`` takes on a node of this shape. The CPU manager hints
    only for whole CPUs (a container's, or in the pod scope any container's or the pod's)."""
    if scope == NONE_TOPOLOGY_SCOPE or pod_qos_class(pod, pod_level_resources) != GUARANTEED:
        return HintSearch(pod.key, numa_nodes, 0, 0, 0)
    memory = _memory_lists(pod) if memory_static else 0
    if scope == POD_TOPOLOGY_SCOPE:
        whole = any(_whole_cpus(c.cpu_request_milli()) for c in pod.all_containers()) or (
            pod.resources is not None and _whole_cpus(pod.resources.request("cpu").milli_value())
        )
        per_search = [int(cpu_static and whole) + memory]
    else:
        per_search = [
            int(cpu_static and _whole_cpus(c.cpu_request_milli())) + memory
            for c in pod.all_containers()
        ]
    per_search = [n for n in per_search if n]
    cost = sum(search_cost(numa_nodes, n) for n in per_search)
    return HintSearch(pod.key, numa_nodes, len(per_search), max(per_search, default=0), cost)


def of_node(node: Node, pod: Pod) -> HintSearch:
    """``estimate`` for ``pod`` on ``node``."""
    tm = node.topology_manager
    return estimate(
        pod,
        numa_nodes=len(tm.numa_info.nodes),
        scope=tm.scope.name,
        cpu_static=node.cpu_policy is not None,
        memory_static=node.memory is not None,
        pod_level_resources=node.config.gate("PodLevelResources"),
    )


def check_node(
    node: Node, pod: Pod, budget: int | None, budget_name: str = "the budget"
) -> HintSearch:
    """Estimate ``pod`` on ``node`` and refuse it beyond ``budget`` (``HintSearchBudgetError``)."""
    search = of_node(node, pod)
    check(search, budget, node.topology_manager.options.max_allowable_numa_nodes, budget_name)
    return search


def check(
    search: HintSearch, budget: int | None, max_allowable: int, budget_name: str = "the budget"
) -> None:
    """Raise ``HintSearchBudgetError`` when ``search`` costs more than ``budget`` (``None``:
    no budget); ``budget_name`` says where the budget is set."""
    if budget is not None and search.cost > budget:
        raise HintSearchBudgetError(search, budget, max_allowable, budget_name)


def measure_rate(numa_nodes: int = 9) -> float:
    """Combinations a second this machine examines: one real merge of two full hint lists on
    ``numa_nodes`` NUMA nodes, timed (about 0.1 s on 9 nodes)."""
    from app.domain.topologymanager.hint import TopologyHint
    from app.domain.topologymanager.numa_info import NUMAInfo
    from app.domain.topologymanager.policy import POLICY_BEST_EFFORT, HintMerger
    from app.domain.topologymanager.policy_options import PolicyOptions

    masks = range(1, 1 << numa_nodes)
    hints = [TopologyHint(m, m.bit_count() == 1) for m in masks]
    info = NUMAInfo.new(range(numa_nodes))
    merger = HintMerger.new(info, [hints, list(hints)], POLICY_BEST_EFFORT, PolicyOptions())
    start = time.perf_counter()
    merger.merged_candidates()
    elapsed = max(time.perf_counter() - start, 1e-6)
    return search_cost(numa_nodes, 2) / elapsed


def duration_text(seconds: float) -> str:
    """``seconds`` as people say it: "40 s", "3.2 min", "5.1 h", "2.3e+03 years"."""
    if seconds < 90:
        return f"{seconds:.2g} s"
    if seconds < 5400:
        return f"{seconds / 60:.2g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.2g} h"
    if seconds < 365 * 86400:
        return f"{seconds / 86400:.2g} days"
    return f"{seconds / (365.25 * 86400):.2g} years"

"""Ranking where a pod fits as the topology-aware scheduler ranks nodes: the ``Score`` of the
``NodeResourceTopologyMatch`` plugin with its scoring strategies ``LeastAllocated``,
``MostAllocated`` and ``BalancedAllocation`` (follows kubernetes-sigs/scheduler-plugins
pkg/noderesourcetopology/score.go, least_allocated.go, most_allocated.go,
balanced_allocation.go and pkg/util's ``GetPodEffectiveRequest``), read against each node's
summary, which carries what that node's NodeResourceTopology zones publish: per NUMA node the
available CPUs and the free memory of each memory resource.

As the plugin does:

* a pod that is not ``Guaranteed`` scores ``MAX_NODE_SCORE`` on every node;
* only a node whose topology manager policy is ``single-numa-node`` is scored (any other policy
  scores 0: the plugin has no handler for it);
* pod scope: the pod's effective request (the sum of its app containers' requests, or the
  largest init container's where that is larger; no sidecar rule, no pod-level resources, as
  ``GetPodEffectiveRequest``) is scored against every NUMA node and the node's score is the
  lowest non-zero NUMA score (0 when none fits);
* container scope: each init and app container is scored that way and the node's score is
  the mean of the containers' scores, truncated;
* a NUMA node's score is, per requested resource (every weight 1, the default), ``LeastAllocated``:
  ``(capacity - requested) * 100 / capacity``, ``MostAllocated``: ``requested * 100 /
  capacity`` (0 where the resource is missing or does not fit), averaged with integer division;
  ``BalancedAllocation``: ``(1 - variance) * 100`` of the requested/capacity fractions (gonum's
  sample variance), 0 when one does not fit.

Where upstream is undefined this module says what it does instead: a container without requests
(a pod-level-resources pod in container scope) would divide by zero there and scores 0 here;
``BalancedAllocation`` of a single requested resource (a variance of one value, NaN there)
scores 0 here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.contracts.summary import NodeSummaryV1, NumaRow
from app.domain.pod.model import Pod
from app.domain.pod.qos import QOS_GUARANTEED, pod_qos_class
from app.domain.quantity import Quantity

LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION = (
    "LeastAllocated",
    "MostAllocated",
    "BalancedAllocation",
)
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION)
MAX_NODE_SCORE = 100
SINGLE_NUMA_NODE = "single-numa-node"


def effective_request(
    app: Sequence[Mapping[str, int]], init: Sequence[Mapping[str, int]]
) -> dict[str, int]:
    """``GetPodEffectiveRequest``: app containers add up, the largest init container wins where
    it is larger (values as ``Quantity.Value()``)."""
    out: dict[str, int] = {}
    for r in app:
        for name, value in r.items():
            out[name] = out.get(name, 0) + value
    largest: dict[str, int] = {}
    for r in init:
        for name, value in r.items():
            if name not in largest or value > largest[name]:
                largest[name] = value
    for name, value in largest.items():
        if name not in out or value > out[name]:
            out[name] = value
    return out


def _requests(requests: Mapping[str, Quantity]) -> dict[str, int]:
    return {name: q.value() for name, q in requests.items()}


def _capacity(row: NumaRow) -> dict[str, int]:
    """What the NUMA node's NodeResourceTopology zone offers: its available CPUs and the free
    bytes of each memory resource."""
    out = {"cpu": row.available}
    for m in row.memory:
        out[m.resource] = m.free
    return out


def _least(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return requested * MAX_NODE_SCORE // capacity


def _weighted(
    requested: Mapping[str, int], capacity: Mapping[str, int], one: Callable[[int, int], int]
) -> int:
    if not requested:
        return 0  # upstream divides by a zero weight sum here
    total = sum(one(value, capacity.get(name, 0)) for name, value in requested.items())
    return total // len(requested)


def _balanced(requested: Mapping[str, int], capacity: Mapping[str, int]) -> int:
    fractions = []
    for name, value in requested.items():
        cap = capacity.get(name, 0)
        fraction = 1.0 if cap == 0 else value / cap
        if fraction > 1:
            return 0
        fractions.append(fraction)
    if len(fractions) < 2:
        return 0  # a sample variance of fewer than two values is NaN upstream
    mean = sum(fractions) / len(fractions)
    variance = sum((f - mean) ** 2 for f in fractions) / (len(fractions) - 1)
    return int((1 - variance) * MAX_NODE_SCORE)


def numa_score(strategy: str, requested: Mapping[str, int], capacity: Mapping[str, int]) -> int:
    """One NUMA node's score for ``requested`` under ``strategy``."""
    if strategy == LEAST_ALLOCATED:
        return _weighted(requested, capacity, _least)
    if strategy == MOST_ALLOCATED:
        return _weighted(requested, capacity, _most)
    if strategy == BALANCED_ALLOCATION:
        return _balanced(requested, capacity)
    raise ValueError(f"unknown scoring strategy {strategy!r}")


@dataclass(frozen=True, slots=True)
class ScoreBasis:
    """What the score of a node reads of its summary: its topology manager's policy and scope
    and each NUMA node's capacity (``_capacity``). A fleet worker keeps this of each node of
    its shard, not the summary: some 1 KiB instead of 9 (20 MiB per worker at 5,000 nodes)."""

    policy: str
    scope: str
    capacities: tuple[Mapping[str, int], ...]

    @classmethod
    def of(cls, summary: NodeSummaryV1) -> ScoreBasis:
        p = summary.policies
        capacities = tuple(_capacity(row) for row in summary.numa)
        return cls(p.topology_manager_policy, p.topology_manager_scope, capacities)


def _for_each_numa(
    strategy: str, requested: Mapping[str, int], capacities: Sequence[Mapping[str, int]]
) -> int:
    """``scoreForEachNUMANode``: the lowest non-zero NUMA score (0 when none is)."""
    low = 0
    for capacity in capacities:
        score = numa_score(strategy, requested, capacity)
        if low == 0 or (score != 0 and score < low):
            low = score
    return low


def node_score(strategy: str, pod: Pod, node: ScoreBasis) -> int:
    """The plugin's ``Score`` of ``pod`` on ``node`` (0–100)."""
    if pod_qos_class(pod) != QOS_GUARANTEED:
        return MAX_NODE_SCORE
    if node.policy != SINGLE_NUMA_NODE:
        return 0
    if node.scope == "pod":
        app = [_requests(c.resources.requests) for c in pod.containers]
        init = [_requests(c.resources.requests) for c in pod.init_containers]
        return _for_each_numa(strategy, effective_request(app, init), node.capacities)
    containers = pod.init_containers + pod.containers
    scores = [
        _for_each_numa(strategy, _requests(c.resources.requests), node.capacities)
        for c in containers
    ]
    return int(sum(scores) / len(scores)) if scores else 0


#: Flags of a placement worth a second look (``flags`` of a fit row).
SHARED_CPUS = "shared-cpus"  # a container runs on a shared pool, not on exclusive CPUs
MULTI_NUMA = "multi-numa"  # the placement spans NUMA nodes


def placement_flags(row: Mapping[str, Any]) -> list[str]:
    """What is not ideal about an admitted fit row's placement."""
    flags = []
    allocation = row.get("allocation") or {}
    if any(c.get("isolation") != "container" for c in allocation.get("containers") or []):
        flags.append(SHARED_CPUS)
    if len(row.get("numaNodes") or []) > 1:
        flags.append(MULTI_NUMA)
    return flags


#: A fit row's rank (``fit_order``): lower first.
RankKey = tuple[int, int, int, str, str]


def fit_order(row: Mapping[str, Any]) -> RankKey:
    """The rank of a fit row: fits by score (then fewer flags, then name), refusals, errors,
    nodes not asked."""
    if row["admitted"]:
        group = 0
    elif not row.get("checked", True):
        group = 3
    elif row.get("error"):
        group = 2
    else:
        group = 1
    return (
        group,
        -(row.get("score") or 0),
        len(row.get("flags") or ()),
        row["node"],
        row.get("agent") or "",
    )


def rank_fits(
    rows: Sequence[dict[str, Any]],
    pod: Pod,
    strategy: str,
    basis_of: Callable[[str, str | None], ScoreBasis | None],
) -> list[dict[str, Any]]:
    """``rows`` best first: the fits by the plugin's score under ``strategy`` (then fewer
    flags, then name), then the refusals, the errors, and the nodes not asked. Each admitted
    row gets its ``score`` and ``flags``."""
    out = [scored(row, pod, strategy, basis_of) for row in rows]
    out.sort(key=fit_order)
    return out


def scored(
    row: dict[str, Any],
    pod: Pod,
    strategy: str,
    basis_of: Callable[[str, str | None], ScoreBasis | None],
) -> dict[str, Any]:
    """``row`` with its ``score`` and ``flags`` if admitted (as it is if not)."""
    if not row["admitted"]:
        return row
    basis = basis_of(row["node"], row.get("agent"))
    score = node_score(strategy, pod, basis) if basis is not None else 0
    return {**row, "score": score, "flags": placement_flags(row)}

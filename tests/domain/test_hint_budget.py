"""The hint-search budget (``app.domain.hint_budget``) and the cooperative deadline
(``app.domain.deadline``) the engine's hint merge checks."""

from __future__ import annotations

import dataclasses
import random

import pytest
import yaml

from app.domain import deadline, hint_budget
from app.domain.kubelet_config import kubelet_config_from_dict
from app.domain.node.model import Node
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Pod
from app.domain.topology.spec import parse_topology_spec
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo
from app.domain.topologymanager.policy import POLICY_BEST_EFFORT, HintMerger
from app.domain.topologymanager.policy_options import PolicyOptions

WIDE = """\
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: best-effort
topologyManagerScope: {scope}
topologyManagerPolicyOptions: {{max-allowable-numa-nodes: "64"}}
reservedSystemCPUs: "0"
reservedMemory:
- numaNode: 0
  limits: {{memory: 100Mi}}
"""


def wide_node(numa: int, scope: str = "container") -> Node:
    topo = parse_topology_spec(
        f"sockets=1,numa_per_socket={numa},cores_per_numa=2,threads_per_core=1,"
        "memory_per_numa=4Gi,hugepages_2Mi_per_numa=64"
    )
    return Node("wide", topo, kubelet_config_from_dict(yaml.safe_load(WIDE.format(scope=scope))))


def parse_pod(text: str) -> Pod:
    return pod_from_manifest(yaml.safe_load(text))


def pod(containers: int = 1, cpu: str = "1", hugepages: bool = False) -> Pod:
    extra = ", hugepages-2Mi: 4Mi" if hugepages else ""
    body = "".join(
        f"""
  - name: c{i}
    resources:
      requests: {{cpu: "{cpu}", memory: 64Mi{extra}}}
      limits: {{cpu: "{cpu}", memory: 64Mi{extra}}}"""
        for i in range(containers)
    )
    return parse_pod(f"""\
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: ns, uid: u-1}}
spec:
  containers:{body}
""")


@pytest.mark.parametrize(
    ("numa", "lists", "cost"),
    [
        pytest.param(1, 1, 2 + 1, id="one-node-one-list"),
        pytest.param(2, 2, 2 * 4 + 3 + 3 * 3, id="two-nodes-two-lists"),
        # 255 masks a list; after the first list 255 partial merges, then 255*255 pairs.
        pytest.param(8, 2, 2 * 256 + 255 + 255 * 255, id="kubelet-default-8-numa"),
        # Three lists: the partial merges after two are capped at 2^(N+1) + 1 = 513.
        pytest.param(8, 3, 3 * 256 + 255 + 255 * 255 + 513 * 255, id="three-lists-capped"),
        pytest.param(4, 0, 0, id="no-lists"),
    ],
)
def test_search_cost(numa: int, lists: int, cost: int) -> None:
    assert hint_budget.search_cost(numa, lists) == cost


@pytest.mark.parametrize("numa", [2, 3, 4, 5])
def test_the_distinct_partial_merges_never_exceed_the_bound(numa: int) -> None:
    """The cap of the estimate holds on random hint lists: after every list the merger keeps
    at most 2^(N+1) + 1 distinct partial merges (checked through the candidates' count)."""
    rng = random.Random(numa)
    masks = list(range(1, 1 << numa))
    info = NUMAInfo.new(range(numa))
    for _ in range(30):
        lists = [
            [
                TopologyHint(m, rng.random() < 0.5)
                for m in rng.sample(masks, rng.randint(1, len(masks)))
            ]
            for _ in range(rng.randint(1, 4))
        ]
        merger = HintMerger.new(info, lists, POLICY_BEST_EFFORT, PolicyOptions())
        assert len(merger.merged_candidates()) <= (1 << (numa + 1)) + 1
        # and it gives upstream's answer (the literal product walk)
        assert merger.merge() == merger.merge_by_permutations()


def test_estimate_counts_searches_and_lists() -> None:
    node = wide_node(4)
    one = hint_budget.of_node(node, pod())
    assert (one.searches, one.lists, one.numa_nodes) == (1, 2, 4)  # cpu + memory
    assert one.cost == hint_budget.search_cost(4, 2)
    three = hint_budget.of_node(node, pod(containers=3, hugepages=True))
    assert (three.searches, three.lists) == (3, 3)  # per container; cpu, memory, hugepages-2Mi
    assert three.cost == 3 * hint_budget.search_cost(4, 3)
    in_pod_scope = hint_budget.of_node(wide_node(4, "pod"), pod(containers=3))
    assert in_pod_scope.searches == 1


def test_only_whole_cpus_get_cpu_hints() -> None:
    """A Guaranteed container with 500m gets memory hints only: one list, 2^N work."""
    node = wide_node(16)
    half = hint_budget.of_node(node, pod(cpu="500m"))
    assert (half.searches, half.lists) == (1, 1)
    assert half.cost == hint_budget.search_cost(16, 1) < 5_000_000
    hint_budget.check_node(node, pod(cpu="500m"), 5_000_000)
    assert node.admit(pod(cpu="500m")).admitted


def test_pods_without_hints_cost_nothing() -> None:
    node = wide_node(16)
    burstable = parse_pod("""\
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: ns}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: "1"}}
""")
    assert hint_budget.of_node(node, burstable).cost == 0
    none_policy = hint_budget.estimate(
        pod(),
        numa_nodes=16,
        scope="none",
        cpu_static=True,
        memory_static=True,
    )
    assert none_policy.cost == 0


def test_a_search_beyond_the_budget_is_refused_before_it_starts() -> None:
    node = wide_node(16)
    with pytest.raises(hint_budget.HintSearchBudgetError) as info:
        hint_budget.check_node(node, pod(), 5_000_000, "the test's budget")
    message = info.value.message
    assert "about 4.3e+09 NUMA-mask combinations" in message
    assert "(1 search of 2 hint lists over 16 NUMA nodes;" in message
    assert "max-allowable-numa-nodes is 64" in message
    assert "more than the test's budget of 5,000,000" in message
    assert node.pods == {}
    # within the budget (or without one) nothing is raised
    assert hint_budget.check_node(wide_node(8), pod(), 5_000_000).cost < 5_000_000
    hint_budget.check_node(node, pod(), None)


def test_measure_rate_and_duration_text() -> None:
    assert hint_budget.measure_rate(6) > 1000
    assert hint_budget.duration_text(40) == "40 s"
    assert hint_budget.duration_text(600) == "10 min"
    assert hint_budget.duration_text(3 * 3600) == "3 h"
    assert hint_budget.duration_text(10 * 86400) == "10 days"
    assert hint_budget.duration_text(3.2e10) == "1e+03 years"


def test_deadline_check_raises_only_past_the_budget() -> None:
    deadline.check()  # no budget: never raises
    assert deadline.remaining() is None
    with deadline.within(60, "the slow thing"):
        deadline.check()
        remaining = deadline.remaining()
        assert remaining is not None and 59 < remaining <= 60
        with deadline.within(3600):  # a looser inner budget keeps the tighter outer one
            remaining = deadline.remaining()
            assert remaining is not None and remaining <= 60
    with (
        deadline.within(0, "the slow thing"),
        pytest.raises(deadline.DeadlineExceededError) as info,
    ):
        deadline.check()
    assert info.value.message == (
        "the slow thing was stopped after 0 s, this server's time budget for one request; "
        "nothing of it was kept"
    )
    deadline.check()  # the budget ended with its block


def test_an_admission_past_its_deadline_keeps_nothing() -> None:
    node = wide_node(8)
    first = pod()
    assert node.admit(first).admitted
    before = node.snapshot()
    second = parse_pod("""\
apiVersion: v1
kind: Pod
metadata: {name: q, namespace: ns, uid: u-2}
spec:
  containers:
  - name: c
    resources:
      requests: {cpu: "1", memory: 64Mi}
      limits: {cpu: "1", memory: 64Mi}
""")
    with deadline.within(0, "the admission"), pytest.raises(deadline.DeadlineExceededError):
        node.admit(second)
    assert dataclasses.replace(node.snapshot(), observed_at=0) == dataclasses.replace(
        before, observed_at=0
    )
    assert list(node.pods) == ["u-1"]
    assert node.admit(second).admitted  # the same pod is admitted without the deadline

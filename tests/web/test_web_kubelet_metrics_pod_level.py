"""Conformance of a simulated node's kubelet /metrics for pod-level resource managers
(KEP-5526), per release, scraped as text from the app.

Where each figure comes from upstream (kubernetes/kubernetes):

* CPU counters, pkg/kubelet/cm/cpumanager/policy_static.go (``AllocatePod``, kubernetes#134768):
  no pinning request for the pod itself, one per container with exclusive CPUs (counted before
  its CPUs are taken, so a failed take counts too); ``pod_exclusive`` per such container,
  ``pod_shared`` per container on the pod shared pool; one ``allocations_total{source="pod"}``
  per container once the whole pod is partitioned; on an error one pinning error and one
  ``allocation_errors_total{source="pod"}``. ``Allocate`` (node path) counts
  ``source="node"`` and ``node_exclusive``.
* Memory counters, pkg/kubelet/cm/memorymanager/policy_static.go (``AllocatePod``): one
  pinning request for the pod, one per init container, one per app container with memory.
* The CPU gauges: deltas in 1.36/1.37 (the bubble is counted before the pod's container
  assignments exist, so ``allocation_per_numa`` does not see it; an emptied NUMA node keeps
  its value; a failed partition keeps the bubble's delta); from the state in 1.38
  (kubernetes#141261, after policy_static_metrics_test.go).
* Names: no subsystem and ALPHA in 1.36, ``kubelet_`` and BETA from 1.37 (kubernetes#138770);
  ``resource_manager_container_assignments`` is a counter without ``_total``
  (kubernetes#134768 turned it from a gauge into a counter, so removals never decrement it).
* Text: label pairs sorted by name, as the kubelet's Prometheus registry writes them.

The node: topoDualSocketHT (NUMA 0 = even CPUs, NUMA 1 = odd), CPU 0 reserved, pod scope,
single-numa-node. ``db``: budget 4 CPUs, ``main`` 2 exclusive, the sidecar ``side`` on the
pod shared pool; ``web``: a classic Guaranteed pod of 2 CPUs (NUMA 0 has one left, so NUMA 1).
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.services.demo import bubble_pod, classic_pod
from tests.helpers import DB_POD, POD_SCOPE, SMALL

YAML = {"Content-Type": "application/yaml"}
SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (\S+)$")
WEB_POD = classic_pod("web", "prod", "2", "1Gi")
#: Budget 3, two containers of 2 exclusive CPUs: no shared container, so the budget rule
#: passes, and the second container finds 1 CPU left in the bubble.
BAD_POD = bubble_pod("bad", "prod", 3, {"a": 2, "b": 2}, (), gib_per_cpu=1)


def scrape(client: TestClient, node: str) -> dict[str, float]:
    r = client.get(f"/nodes/{node}/metrics")
    assert r.status_code == 200
    out: dict[str, float] = {}
    for line in r.text.splitlines():
        if line.startswith("#") or "aligned_compute_resources" in line:
            continue
        m = SAMPLE.match(line)
        assert m, line
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def expected(
    release: str, gauges: tuple[int, int, dict[int, int]], counters: dict[str, int]
) -> dict[str, float]:
    rm = "resource_manager_" if release == "1.36" else "kubelet_resource_manager_"
    exclusive, shared, per_numa = gauges
    out: dict[str, float] = {
        "kubelet_cpu_manager_exclusive_cpu_allocation_count": exclusive,
        "kubelet_cpu_manager_shared_pool_size_millicores": shared,
    }
    for numa, n in per_numa.items():
        out[f'kubelet_cpu_manager_allocation_per_numa{{numa_node="{numa}"}}'] = n
    for key, value in counters.items():
        out[key.replace("rm:", rm)] = value
    return out


CPU_POD, MEM_POD = 'resource_name="cpu",source="pod"', 'resource_name="memory",source="pod"'
CPU_NODE, MEM_NODE = 'resource_name="cpu",source="node"', 'resource_name="memory",source="node"'


def assigned(kind: str, resource: str) -> str:
    return f'rm:container_assignments{{assignment_type="{kind}",resource_name="{resource}"}}'


AFTER_DB = {
    "kubelet_cpu_manager_pinning_requests_total": 1,  # main only: no request for the pod
    "kubelet_cpu_manager_pinning_errors_total": 0,
    "kubelet_memory_manager_pinning_requests_total": 3,  # the pod, side (init), main
    "kubelet_memory_manager_pinning_errors_total": 0,
    f"rm:allocations_total{{{CPU_POD}}}": 2,
    f"rm:allocations_total{{{MEM_POD}}}": 2,
    assigned("pod_exclusive", "cpu"): 1,
    assigned("pod_shared", "cpu"): 1,
    assigned("pod_exclusive", "memory"): 1,
    assigned("pod_shared", "memory"): 1,
}
AFTER_WEB = AFTER_DB | {
    "kubelet_cpu_manager_pinning_requests_total": 2,
    "kubelet_memory_manager_pinning_requests_total": 4,
    f"rm:allocations_total{{{CPU_NODE}}}": 1,
    f"rm:allocations_total{{{MEM_NODE}}}": 1,  # one per memory resource type requested
    assigned("node_exclusive", "cpu"): 1,
    assigned("node_exclusive", "memory"): 1,
}
AFTER_BAD = AFTER_WEB | {
    "kubelet_cpu_manager_pinning_requests_total": 4,  # a and b, b's take failed
    "kubelet_cpu_manager_pinning_errors_total": 1,
    f"rm:allocation_errors_total{{{CPU_POD}}}": 1,
    assigned("pod_exclusive", "cpu"): 2,  # a's slice was carved before b failed
}

DELTAS = {  # 1.36 and 1.37
    "db": (4, 7000, {}),
    "web": (6, 5000, {0: 4, 1: 2}),
    "db removed": (2, 9000, {0: 4, 1: 2}),
    "bad": (5, 6000, {0: 4, 1: 2}),
}
FROM_STATE = {  # 1.38
    "db": (4, 7000, {0: 4, 1: 0}),
    "web": (6, 5000, {0: 4, 1: 2}),
    "db removed": (2, 9000, {0: 0, 1: 2}),
    "bad": (2, 9000, {0: 0, 1: 2}),
}


@pytest.mark.parametrize(
    ("release", "gauges"), [("1.36", DELTAS), ("1.37", DELTAS), ("1.38", FROM_STATE)]
)
def test_pod_budget_classic_pod_removal_and_failed_partition(
    client: TestClient, release: str, gauges: dict[str, tuple[int, int, dict[int, int]]]
) -> None:
    r = client.post(
        "/api/v1/nodes",
        json={"name": "n", "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": release},
    )
    assert r.status_code == 201, r.text
    pods = "/api/v1/nodes/n/pods"

    assert client.post(pods, content=DB_POD, headers=YAML).json()["admitted"] is True
    assert scrape(client, "n") == expected(release, gauges["db"], AFTER_DB)

    assert client.post(pods, content=WEB_POD, headers=YAML).json()["admitted"] is True
    assert scrape(client, "n") == expected(release, gauges["web"], AFTER_WEB)

    # Removal changes the gauges only; every counter (assignments too) stays.
    assert client.delete(f"{pods}/prod/db").status_code == 200
    assert scrape(client, "n") == expected(release, gauges["db removed"], AFTER_WEB)

    r = client.post(pods, content=BAD_POD, headers=YAML).json()
    assert (r["admitted"], r["reason"]) == (False, "UnexpectedAdmissionError")
    assert scrape(client, "n") == expected(release, gauges["bad"], AFTER_BAD)


def test_a_fresh_node_per_release(client: TestClient) -> None:
    """Before any admission: the gauges as Start sets them; in 1.38 every NUMA node already
    has a per-NUMA sample, in 1.36/1.37 the per-NUMA family is not written at all."""
    idle = {
        "kubelet_cpu_manager_pinning_requests_total": 0,
        "kubelet_cpu_manager_pinning_errors_total": 0,
        "kubelet_memory_manager_pinning_requests_total": 0,
        "kubelet_memory_manager_pinning_errors_total": 0,
    }
    for release, per_numa in (("1.36", {}), ("1.37", {}), ("1.38", {0: 0, 1: 0})):
        name = "r" + release.replace(".", "")
        r = client.post(
            "/api/v1/nodes",
            json={"name": name, "topology": SMALL, "kubeletConfig": POD_SCOPE, "release": release},
        )
        assert r.status_code == 201, r.text
        assert scrape(client, name) == expected(release, (0, 11000, per_numa), idle)
        text = client.get(f"/nodes/{name}/metrics").text
        assert ("# TYPE kubelet_cpu_manager_allocation_per_numa gauge" in text) == bool(per_numa)

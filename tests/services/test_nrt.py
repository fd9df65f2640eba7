"""services/nrt.py: a node as a ``topology.node.k8s.io/v1alpha2`` ``NodeResourceTopology``.

The object's shape is held against the Go types of k8stopologyawareschedwg/noderesourcetopology-api
``pkg/apis/topology/v1alpha2/types.go`` (required fields, int64 costs, quantities the API
server's pattern accepts, checked with ``app.domain.quantity``, which follows apimachinery's
``resource.ParseQuantity``), the
zone names against its ``helper/numanode`` (``node-N``) and the policy attributes against
node-feature-discovery's topology-updater names. The point of the exercise: cpu ``available``
is the node JSON's ``numaPools[].available``, so CPUs inside a pod-level pod's budget are not
free even where no container holds them exclusively.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from app.adapters.nrt_publisher import (
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    NRTPublisher,
    PublishError,
    cluster_client,
)
from app.domain import podfingerprint
from app.domain.quantity import parse_quantity
from app.services.demo import bubble_pod, classic_pod
from app.services.nodes.service import NodeService
from app.services.nodes.stored import StoredNode
from app.services.nrt import build_nrt, topology_policy
from app.services.nrt_loop import NRTLoop
from tests.fake_kube_api import kubeconfig, running
from tests.helpers import DB_POD, POD_SCOPE, SMALL

GIB = 1024**3
MIB = 1024**2

#: 2 sockets x 2 NUMA nodes x 3 cores x 2 threads, 512 x 2Mi hugepages per NUMA node, SLIT
#: 11 within a socket and 21 across: costs that tell the zones apart.
SPEC = (
    "sockets=2,numa_per_socket=2,cores_per_numa=3,threads_per_core=2,"
    "hugepages_2Mi_per_numa=512,distance_same_socket=11,distance_remote=21"
)

HUGE_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: prod}
spec:
  containers:
  - name: app
    image: app:1
    resources:
      requests: {cpu: "2", memory: 1Gi, hugepages-2Mi: 256Mi}
      limits: {cpu: "2", memory: 1Gi, hugepages-2Mi: 256Mi}
"""


def zones(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {z["name"]: z for z in obj["zones"]}


def resource(zone: dict[str, Any], name: str) -> dict[str, str]:
    (found,) = [r for r in zone["resources"] if r["name"] == name]
    return found


def check_shape(obj: dict[str, Any]) -> None:
    """What the v1alpha2 types require: every required field there with its Go type."""
    assert obj["apiVersion"] == f"{GROUP}/{VERSION}" == "topology.node.k8s.io/v1alpha2"
    assert obj["kind"] == KIND == "NodeResourceTopology"
    assert PLURAL == "noderesourcetopologies"
    assert isinstance(obj["metadata"]["name"], str) and "namespace" not in obj["metadata"]
    assert isinstance(obj["zones"], list) and obj["zones"]
    assert all(isinstance(p, str) for p in obj["topologyPolicies"])
    for a in obj["attributes"]:
        assert set(a) == {"name", "value"} and all(isinstance(v, str) for v in a.values())
    for z in obj["zones"]:
        assert isinstance(z["name"], str) and z["type"] == "Node"
        for c in z["costs"]:
            assert set(c) == {"name", "value"} and type(c["value"]) is int
        for r in z["resources"]:
            assert set(r) == {"name", "capacity", "allocatable", "available"}
            # Quantities as strings the API server's int-or-string pattern takes.
            values = [
                parse_quantity(r[k]).milli_value() for k in ("capacity", "allocatable", "available")
            ]
            assert all(isinstance(r[k], str) for k in ("capacity", "allocatable", "available"))
            capacity, allocatable, available = values
            assert 0 <= available <= allocatable <= capacity, r


@pytest.fixture
def small(service: NodeService) -> NodeService:
    service.create("small", SMALL, POD_SCOPE)
    return service


def test_an_empty_node_is_all_available_but_the_reserved_cpu(small: NodeService) -> None:
    obj = build_nrt(small.reads.views("small"))
    check_shape(obj)
    assert obj["metadata"] == {
        "name": "small",
        "labels": {"app.kubernetes.io/managed-by": "numascope"},
        "annotations": {podfingerprint.ANNOTATION: podfingerprint.sign([])},
    }
    z = zones(obj)
    assert list(z) == ["node-0", "node-1"]
    # kubeReserved cpu 1 -> CPU 0 on NUMA node 0.
    assert resource(z["node-0"], "cpu") == {
        "name": "cpu",
        "capacity": "6",
        "allocatable": "5",
        "available": "5",
    }
    assert resource(z["node-1"], "cpu") == {
        "name": "cpu",
        "capacity": "6",
        "allocatable": "6",
        "available": "6",
    }
    # reservedMemory puts 2148Mi on NUMA node 0: allocatable there is 32Gi - 2148Mi.
    mem0, mem1 = resource(z["node-0"], "memory"), resource(z["node-1"], "memory")
    assert mem0["capacity"] == mem1["capacity"] == str(32 * GIB)
    assert mem0["allocatable"] == mem0["available"] == str(32 * GIB - 2148 * MIB)
    assert mem1["allocatable"] == mem1["available"] == str(32 * GIB)


def test_cpu_available_leaves_out_a_pod_budget_not_only_its_exclusive_slice(
    small: NodeService,
) -> None:
    """``db`` is a pod-level pod: budget 4 CPUs on NUMA node 0, ``main`` exclusive (2), the
    sidecar on the pod's shared pool (2). An exporter summing container assignments would call
    3 CPUs free; the kubelet can give a new pod 1."""
    assert small.admit("small", DB_POD).admitted == 1
    views = small.reads.views("small")
    obj = build_nrt(views)
    check_shape(obj)
    row = {r.numa_node: r for r in views.numa_pools}[0]
    assert (row.counts.exclusive, row.counts.pod_shared) == (2, 2)
    cpu0 = resource(zones(obj)["node-0"], "cpu")
    assert cpu0 == {"name": "cpu", "capacity": "6", "allocatable": "5", "available": "1"}
    assert int(cpu0["available"]) == row.available
    assert int(cpu0["allocatable"]) - row.counts.exclusive != row.available  # the miscount
    # The pod's 8Gi (pod-level memory) came out of NUMA node 0's regular memory.
    mem0 = resource(zones(obj)["node-0"], "memory")
    assert int(mem0["allocatable"]) - int(mem0["available"]) == 8 * GIB
    assert resource(zones(obj)["node-1"], "cpu")["available"] == "6"


def test_zones_costs_and_hugepages(service: NodeService) -> None:
    service.create("big", SPEC, POD_SCOPE)
    assert service.admit("big", HUGE_POD).admitted == 1
    obj = build_nrt(service.reads.views("big"))
    check_shape(obj)
    z = zones(obj)
    assert list(z) == ["node-0", "node-1", "node-2", "node-3"]
    # NUMA 0 and 1 share socket 0: SLIT 10 to itself, 11 within the socket, 21 across.
    assert z["node-0"]["costs"] == [
        {"name": "node-0", "value": 10},
        {"name": "node-1", "value": 11},
        {"name": "node-2", "value": 21},
        {"name": "node-3", "value": 21},
    ]
    assert [c["value"] for c in z["node-3"]["costs"]] == [21, 21, 11, 10]
    assert [r["name"] for r in z["node-0"]["resources"]] == ["cpu", "memory", "hugepages-2Mi"]
    huge = {n: resource(z[n], "hugepages-2Mi") for n in z}
    assert {h["capacity"] for h in huge.values()} == {str(512 * 2 * MIB)}
    # The memory manager pinned the pod's 256Mi of 2Mi pages on one NUMA node, with its CPUs.
    used = [n for n, h in huge.items() if h["available"] != h["allocatable"]]
    assert len(used) == 1
    (numa,) = used
    assert int(huge[numa]["allocatable"]) - int(huge[numa]["available"]) == 256 * MIB
    assert (
        int(resource(z[numa], "cpu")["available"])
        == int(resource(z[numa], "cpu")["allocatable"]) - 2
    )
    # Regular memory on that NUMA node is the pod's 1Gi less (hugepages are not regular memory).
    mem = resource(z[numa], "memory")
    assert int(mem["allocatable"]) - int(mem["available"]) == GIB
    # As the kubelet's memory manager counts it: capacity is the NUMA node's MemTotal, the
    # hugepages come out of the allocatable regular memory (and reservedMemory on NUMA 0).
    for n, zone in z.items():
        regular = resource(zone, "memory")
        reserved = 2148 * MIB if n == "node-0" else 0
        assert int(regular["capacity"]) == 32 * GIB
        assert int(regular["allocatable"]) == 32 * GIB - reserved - 512 * 2 * MIB


def test_without_the_memory_manager_memory_is_not_accounted_per_numa(
    service: NodeService,
) -> None:
    config = "cpuManagerPolicy: static\nkubeReserved: {cpu: '1', memory: 1Gi}\n"
    service.create("cpuonly", SMALL, config)
    service.admit("cpuonly", classic_pod("web", "prod", "2", "2Gi"))
    obj = build_nrt(service.reads.views("cpuonly"))
    check_shape(obj)
    for z in obj["zones"]:
        mem = resource(z, "memory")
        assert mem["available"] == mem["allocatable"]
    assert obj["topologyPolicies"] == ["None"]
    assert obj["attributes"][:2] == [
        {"name": "topologyManagerPolicy", "value": "none"},
        {"name": "topologyManagerScope", "value": "container"},
    ]


@pytest.mark.parametrize(
    ("policy", "scope", "expected"),
    [
        pytest.param("single-numa-node", "container", "SingleNUMANodeContainerLevel", id="snn-c"),
        pytest.param("single-numa-node", "pod", "SingleNUMANodePodLevel", id="snn-p"),
        pytest.param("restricted", "container", "RestrictedContainerLevel", id="restricted-c"),
        pytest.param("restricted", "pod", "RestrictedPodLevel", id="restricted-p"),
        pytest.param("best-effort", "container", "BestEffortContainerLevel", id="be-c"),
        pytest.param("best-effort", "pod", "BestEffortPodLevel", id="be-p"),
        pytest.param("none", "container", "None", id="none-c"),
        pytest.param("none", "pod", "None", id="none-p"),
    ],
)
def test_topology_policies_name_policy_and_scope(
    service: NodeService, policy: str, scope: str, expected: str
) -> None:
    assert topology_policy(policy, scope) == expected
    config = (
        "cpuManagerPolicy: static\nkubeReserved: {cpu: '1'}\n"
        f"topologyManagerPolicy: {policy}\ntopologyManagerScope: {scope}\n"
    )
    service.create("tm", SMALL, config)
    obj = build_nrt(service.reads.views("tm"))
    assert obj["topologyPolicies"] == [expected]
    assert obj["attributes"][:2] == [
        {"name": "topologyManagerPolicy", "value": policy},
        {"name": "topologyManagerScope", "value": scope},
    ]


_WORKLOADS = st.lists(
    st.one_of(
        st.tuples(st.just("classic"), st.integers(1, 4)),
        st.tuples(st.just("bubble"), st.integers(2, 5), st.integers(1, 2)),
    ),
    max_size=5,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(workload=_WORKLOADS)
def test_property_cpu_available_is_numa_pools_available(
    service: NodeService, workload: list[tuple[Any, ...]]
) -> None:
    """Whatever was admitted (or refused), every zone's cpu ``available`` is that NUMA node's
    ``numaPools[].available`` and the zones add up to the node's allocatable CPUs."""
    if "prop" in service.registry.simulated_names():
        service.delete("prop")
    service.create("prop", SMALL, POD_SCOPE)
    for i, item in enumerate(workload):
        if item[0] == "classic":
            service.admit("prop", classic_pod(f"c{i}", "prop", str(item[1]), "1Gi"))
        else:
            budget, exclusive = item[1], min(item[2], item[1] - 1)
            service.admit(
                "prop", bubble_pod(f"b{i}", "prop", budget, {"main": exclusive}, (), gib_per_cpu=1)
            )
    views = service.reads.views("prop")
    obj = build_nrt(views)
    check_shape(obj)
    pools = {r.numa_node: r for r in views.numa_pools}
    allocatable = 0
    for z in obj["zones"]:
        n = int(z["name"].removeprefix("node-"))
        cpu = resource(z, "cpu")
        assert int(cpu["available"]) == pools[n].available
        allocatable += int(cpu["allocatable"])
    assert allocatable == 11  # 12 CPUs, CPU 0 reserved


def test_the_loop_publishes_changes_only_and_retries_a_failure(small: NodeService) -> None:
    outcomes: list[str | Exception] = [PublishError("get …: 503 unavailable"), "created"]
    published: list[dict[str, Any]] = []

    def publish(obj: dict[str, Any]) -> str:
        outcome = outcomes.pop(0) if outcomes else "updated"
        if isinstance(outcome, Exception):
            raise outcome
        published.append(obj)
        return outcome

    registry = CollectorRegistry()
    loop = NRTLoop(StoredNode(small, "small"), 10.0, publisher=publish, registry=registry)
    with pytest.raises(PublishError):
        loop.tick()
    assert loop.last is None  # not published: the next tick tries again
    assert loop.tick() == "created"
    assert loop.tick() is None  # nothing changed, nothing written
    small.admit("small", DB_POD)
    assert loop.tick() == "updated"
    assert [resource(zones(o)["node-0"], "cpu")["available"] for o in published] == ["5", "1"]
    counts = {
        outcome: registry.get_sample_value("numascope_nrt_publish_total", {"outcome": outcome})
        for outcome in ("error", "created", "updated")
    }
    assert counts == {"error": 1.0, "created": 1.0, "updated": 1.0}
    assert (registry.get_sample_value("numascope_nrt_last_success_timestamp_seconds") or 0) > 0


def test_the_loop_puts_back_an_object_someone_deleted(small: NodeService, tmp_path: Path) -> None:
    now = [0.0]
    with running(GROUP, VERSION, PLURAL) as api:
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig(api.url))
        publisher = NRTPublisher(cluster_client({"KUBECONFIG": str(config)}))
        loop = NRTLoop(
            StoredNode(small, "small"),
            10.0,
            publisher.publish,
            resync=60.0,
            clock=lambda: now[0],
        )
        assert loop.tick() == "created"
        del api.objects["small"]  # an administrator deletes it
        now[0] = 30.0
        assert loop.tick() is None  # unchanged node, resync not due: no request at all
        assert len(api.calls) == 2
        now[0] = 60.0
        assert loop.tick() == "created"  # the resync finds it gone and puts it back
        assert api.objects["small"]["zones"] == build_nrt(small.reads.views("small"))["zones"]
        now[0] = 120.0
        assert loop.tick() == "unchanged"  # resync again: read, nothing to write
        assert [c.method for c in api.calls] == ["GET", "POST", "GET", "POST", "GET"]


BURSTABLE = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: burst, namespace: prod}\n"
    "spec:\n  containers:\n  - name: main\n    image: burst:1\n"
    "    resources: {requests: {cpu: 500m}}\n"
)


def _attribute(obj: dict[str, Any], name: str) -> str:
    (value,) = [a["value"] for a in obj["attributes"] if a["name"] == name]
    return str(value)


def test_the_pod_fingerprint_follows_the_pod_set(small: NodeService) -> None:
    empty = build_nrt(small.reads.views("small"))
    assert _attribute(empty, podfingerprint.ATTRIBUTE) == podfingerprint.sign([])
    assert _attribute(empty, podfingerprint.ATTRIBUTE_METHOD) == "all"
    small.admit("small", classic_pod("web", "prod", "2", "2Gi"))
    small.admit("small", BURSTABLE)
    both = build_nrt(small.reads.views("small"))
    expected = podfingerprint.sign([("prod", "web"), ("prod", "burst")])
    assert _attribute(both, podfingerprint.ATTRIBUTE) == expected
    assert both["metadata"]["annotations"][podfingerprint.ANNOTATION] == expected
    exclusive = build_nrt(
        small.reads.views("small"), podfingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES
    )
    # only web holds exclusive CPUs; the Burstable pod shares the pool
    assert _attribute(exclusive, podfingerprint.ATTRIBUTE) == podfingerprint.sign([("prod", "web")])
    assert _attribute(exclusive, podfingerprint.ATTRIBUTE_METHOD) == "with-exclusive-resources"
    small.remove_pod("small", "prod", "web")
    after = build_nrt(small.reads.views("small"))
    assert _attribute(after, podfingerprint.ATTRIBUTE) == podfingerprint.sign([("prod", "burst")])

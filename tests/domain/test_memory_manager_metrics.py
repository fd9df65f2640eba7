"""The memory manager's kubelet counters (app/domain/memorymanager/metrics.py), counted as
pkg/kubelet/cm/memorymanager/policy_static.go counts them, through the node facade."""

from __future__ import annotations

from pathlib import Path

from app.adapters.kubelet_files import load_kubelet_config, parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.memorymanager.metrics import MemoryManagerMetrics
from app.domain.node.model import Node
from app.domain.pod.model import Pod
from app.domain.presets import get_preset
from app.domain.topology.spec import parse_topology_spec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MEM = "memory"


def pod(name: str) -> Pod:
    (p,) = parse_pod_manifests((FIXTURES / "pods" / "scenarios" / f"{name}.yaml").read_text())
    return p


def manifest_pod(text: str) -> Pod:
    (p,) = parse_pod_manifests(text)
    return p


def node(config: str, topology: str = "topoDualSocketHT", release: str = "1.37") -> Node:
    cfg = load_kubelet_config(FIXTURES / "kubelet" / f"{config}.yaml", release)
    return Node("n", get_preset(topology), cfg)


def metrics(n: Node) -> MemoryManagerMetrics:
    assert n.memory is not None
    m = n.memory.policy.metrics  # type: ignore[union-attr]
    assert isinstance(m, MemoryManagerMetrics)
    return m


def counts(m: MemoryManagerMetrics) -> dict[str, object]:
    return {
        "requests": m.pinning_requests_total,
        "errors": m.pinning_errors_total,
        "allocations": dict(m.allocations_total),
        "allocation_errors": dict(m.allocation_errors_total),
        "assignments": dict(m.container_assignments),
    }


TWO_CONTAINERS = """
apiVersion: v1
kind: Pod
metadata: {name: two, namespace: default}
spec:
  containers:
  - name: a
    resources: {limits: {cpu: "2", memory: 1Gi}}
  - name: b
    resources: {limits: {cpu: "1", memory: 512Mi}}
"""


def test_node_path_counts_per_container_and_per_resource_type() -> None:
    n = node("classic-static")
    assert n.admit(manifest_pod(TWO_CONTAINERS)).admitted
    assert counts(metrics(n)) == {
        "requests": 2,
        "errors": 0,
        "allocations": {(MEM, "node"): 2},
        "allocation_errors": {},
        "assignments": {(MEM, "node_exclusive"): 2},
    }


HUGEPAGES = """
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  containers:
  - name: a
    resources:
      limits: {cpu: "1", memory: 1Gi, hugepages-2Mi: 64Mi}
"""


def test_node_path_counts_one_allocation_per_resource_type() -> None:
    topo = parse_topology_spec(
        "sockets=2,cores_per_numa=4,threads_per_core=2,memory_per_numa=8Gi,"
        "hugepages_2Mi_per_numa=512"
    )
    text = (FIXTURES / "kubelet" / "classic-static.yaml").read_text()
    text = text.replace('reservedSystemCPUs: "0,6"', 'reservedSystemCPUs: "0"')
    n = Node("n", topo, parse_kubelet_config_text(text, "1.37"))
    assert n.admit(manifest_pod(HUGEPAGES)).admitted
    m = metrics(n)
    # memory and hugepages-2Mi: two allocations, still one request and one container.
    assert (m.pinning_requests_total, m.allocations(MEM, "node")) == (1, 2)
    assert m.assignments(MEM, "node_exclusive") == 1


def test_not_guaranteed_pods_are_not_counted() -> None:
    n = node("classic-static")
    burstable = manifest_pod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n"
        "  - name: c\n    resources: {requests: {cpu: 500m, memory: 1Gi}}\n"
    )
    assert n.admit(burstable).admitted
    assert counts(metrics(n))["requests"] == 0


def test_pod_path_counts_the_pod_every_init_container_and_requesting_app_containers() -> None:
    n = node("pod-scope-single-numa")
    assert n.admit(pod("pod-scope-mixed")).admitted
    # pod 1 + two sidecars (no requests, still counted) + main-app; the sidecars share the
    # pod's blocks (pod_shared), main-app has its own (pod_exclusive); one allocation each.
    assert counts(metrics(n)) == {
        "requests": 4,
        "errors": 0,
        "allocations": {(MEM, "pod"): 3},
        "allocation_errors": {},
        "assignments": {(MEM, "pod_shared"): 2, (MEM, "pod_exclusive"): 1},
    }


def test_failed_node_allocation_counts_one_error_and_keeps_it_after_rollback() -> None:
    # The tutorial pod under container scope on 1.36: the sidecar is allocated, worker-1 (no
    # memory requests) fails in Allocate; the node rolls the pod back, the counters stay.
    # (Run on 1.37 before kubernetes#138770 was modelled; 1.37 now admits it, see below.)
    n = node("container-scope-single-numa", release="1.36")
    result = n.admit(pod("container-scope-mixed"))
    assert not result.admitted
    m = metrics(n)
    assert (m.pinning_requests_total, m.pinning_errors_total) == (2, 1)
    assert m.errors(MEM, "node") == 1
    assert m.assignments(MEM, "node_exclusive") == 1
    assert n.pods == {}


def test_containers_without_memory_requests_are_not_counted_from_1_37() -> None:
    # kubernetes#138770: Allocate returns before the pinning counter for a container that
    # requests no memory, so only the sidecar's request is counted and the pod is admitted.
    for release in ("1.37", "1.38"):
        n = node("container-scope-single-numa", release=release)
        assert n.admit(pod("container-scope-mixed")).admitted, release
        m = metrics(n)
        assert (m.pinning_requests_total, m.pinning_errors_total) == (1, 0), release
        assert m.assignments(MEM, "node_exclusive") == 1


def test_dry_run_leaves_every_counter_as_it_was() -> None:
    n = node("classic-static")
    assert n.admit(manifest_pod(TWO_CONTAINERS)).admitted
    before = counts(metrics(n))
    cpu_before = n.cpu_policy.metrics.snapshot() if n.cpu_policy else None
    other = manifest_pod(TWO_CONTAINERS.replace("name: two", "name: three"))
    assert n.dry_run(other).admitted
    too_big = manifest_pod(
        TWO_CONTAINERS.replace("name: two", "name: big").replace("memory: 1Gi", "memory: 200Gi")
    )
    assert not n.dry_run(too_big).admitted
    assert counts(metrics(n)) == before
    assert (n.cpu_policy.metrics.snapshot() if n.cpu_policy else None) == cpu_before

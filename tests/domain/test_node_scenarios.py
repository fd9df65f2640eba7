"""Scenarios of the pod-level resource managers documentation, run through the node facade.

Pods come from ``tests/fixtures/pods/scenarios`` (the Kubernetes blog "Pod-Level Resource
Managers (Alpha)" and the tutorial's example manifests), kubelet configurations from
``tests/fixtures/kubelet``. Expected cpusets are derived by hand from allocation.md (§2.9
packing, §5.5 ``AllocatePod``) on small machines where they are deterministic; the derivation
is written next to each assertion.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from app.adapters.kubelet_files import load_kubelet_config, parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.state import Block
from app.domain.node.model import AdmissionResult, Node
from app.domain.pod.model import Pod
from app.domain.presets import get_preset
from app.domain.snapshot import NodeSnapshot, PodAllocation
from app.domain.topology.spec import parse_topology_spec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PODS = FIXTURES / "pods" / "scenarios"
KUBELET = FIXTURES / "kubelet"

GI = 1024**3
POD_SCOPE_TEXT = (
    "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
)
EMPTY_POOL_CPU_TEXT = (
    "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no cpus "
    "for shared containers"
)
#: Two sockets, one NUMA node each, 6 cores x 2 threads: core c = CPUs c and c+12.
SMALL_SPEC = "sockets=2,cores_per_numa=6,threads_per_core=2,memory_per_numa=32Gi"


def pod(name: str) -> Pod:
    (p,) = parse_pod_manifests((PODS / f"{name}.yaml").read_text())
    return p


def config(name: str, release: str = "1.37") -> KubeletConfig:
    return load_kubelet_config(KUBELET / f"{name}.yaml", release)


def with_tm_policy(name: str, policy: str, release: str = "1.37") -> KubeletConfig:
    text = (KUBELET / f"{name}.yaml").read_text()
    text = text.replace(
        "topologyManagerPolicy: single-numa-node", f"topologyManagerPolicy: {policy}"
    )
    return parse_kubelet_config_text(text, release)


def admitted(node: Node, p: Pod) -> PodAllocation:
    result = node.admit(p)
    assert result.admitted, f"{result.reason}: {result.message}"
    assert result.allocation is not None
    return result.allocation


def containers(alloc: PodAllocation) -> dict[str, Any]:
    return {c.name: c for c in alloc.containers}


def memory_state(snap: NodeSnapshot) -> dict[int, tuple[int, int]]:
    """NUMA id -> (reserved, free) of regular memory."""
    return {
        m.numa_id: (m.memory_map["memory"].reserved, m.memory_map["memory"].free)
        for m in snap.memory
    }


def blocks(numa: int, size_gi: int) -> tuple[Block, ...]:
    return (Block((numa,), "memory", size_gi * GI),)


# -- pod scope ---------------------------------------------------------------------------------


def test_tightly_coupled_database_pod_scope() -> None:
    node = Node("n", parse_topology_spec(SMALL_SPEC), config("pod-scope-single-numa"))
    alloc = admitted(node, pod("tightly-coupled-database"))
    # Reserved: 1 CPU taken by topology -> CPU 0. Budget 8 CPUs + 16Gi: NUMA 0 and 1 both
    # preferred, the merge keeps the lowest -> NUMA 0. Bubble: 4 whole free cores of NUMA 0
    # (cores 1-4; core 0 is half reserved).
    assert alloc.pod_cpuset == CPUSet.parse("1-4,13-16")
    c = containers(alloc)
    # database: 3 whole cores of the bubble, lowest first; the rest is the pod shared pool.
    assert (c["database"].cpuset, c["database"].isolation) == (
        CPUSet.parse("1-3,13-15"),
        "container",
    )
    for sidecar in ("metrics-exporter", "backup-agent"):
        assert (c[sidecar].cpuset, c[sidecar].isolation, c[sidecar].kind) == (
            CPUSet.parse("4,16"),
            "pod",
            "sidecar",
        )
        assert c[sidecar].memory == blocks(0, 4)  # the pod's 16Gi minus the database's 12Gi
    assert c["database"].memory == blocks(0, 12)
    assert alloc.pod_memory == blocks(0, 16)
    assert alloc.shared_pool() == CPUSet.parse("4,16")
    snap = node.snapshot()
    assert snap.default_cpuset == CPUSet.parse("0,5-12,17-23")
    # The pod's 16Gi is charged once, on NUMA 0.
    reserved0, _ = memory_state(snap)[0]
    assert reserved0 == 16 * GI and memory_state(snap)[1][0] == 0


def test_tutorial_pod_scope_mixed() -> None:
    node = Node("n", get_preset("topoDualSocketHT"), config("pod-scope-single-numa"))
    alloc = admitted(node, pod("pod-scope-mixed"))
    # topoDualSocketHT: NUMA 0 = CPUs 0,2,4,6,8,10 (cores (0,6) (2,8) (4,10)); CPU 0 reserved.
    # Budget 4 on NUMA 0: the two whole free cores.
    assert alloc.pod_cpuset == CPUSet.parse("2,4,8,10")
    c = containers(alloc)
    assert (c["main-app"].cpuset, c["main-app"].isolation) == (CPUSet.parse("2,8"), "container")
    assert c["metrics-sidecar"].cpuset == c["logging-sidecar"].cpuset == CPUSet.parse("4,10")
    assert c["metrics-sidecar"].isolation == c["logging-sidecar"].isolation == "pod"
    assert c["main-app"].memory == blocks(0, 2)
    assert c["metrics-sidecar"].memory == c["logging-sidecar"].memory == blocks(0, 2)
    assert node.snapshot().default_cpuset == CPUSet.parse("0-1,3,5-7,9,11")


def test_allocate_pod_worked_example_budget_three() -> None:
    """allocation.md §5.5, first row: bubble 2,6,8; gu-1 = 6, gu-2 = 2, ngu = 8."""
    node = Node("n", get_preset("topoDualSocketHT"), config("pod-scope-single-numa"))
    alloc = admitted(node, pod("budget-three"))
    assert alloc.pod_cpuset == CPUSet.parse("2,6,8")
    c = containers(alloc)
    assert {n: (x.cpuset, x.isolation) for n, x in c.items()} == {
        "gu-1": (CPUSet.parse("6"), "container"),
        "gu-2": (CPUSet.parse("2"), "container"),
        "ngu": (CPUSet.parse("8"), "pod"),
    }
    assert node.snapshot().default_cpuset == CPUSet.parse("0-1,3-5,7,9-11")
    assert alloc.pod_memory == blocks(0, 3)
    assert [c[n].memory for n in ("gu-1", "gu-2", "ngu")] == [blocks(0, 1)] * 3


def test_second_pod_goes_to_the_other_numa_node() -> None:
    node = Node("n", get_preset("topoDualSocketHT"), config("pod-scope-single-numa"))
    admitted(node, pod("budget-three"))
    alloc = admitted(node, pod("pod-scope-mixed"))
    # NUMA 0 has only CPUs 4,10 left: the 4-CPU budget fits NUMA 1 alone (cores (1,7) (3,9)).
    assert alloc.pod_cpuset == CPUSet.parse("1,3,7,9")
    assert containers(alloc)["main-app"].cpuset == CPUSet.parse("1,7")
    assert alloc.pod_memory == blocks(1, 4)


# -- empty pod shared pool ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "reason", "message"),
    [
        pytest.param("restricted", "TopologyAffinityError", POD_SCOPE_TEXT, id="restricted"),
        pytest.param(
            "single-numa-node", "TopologyAffinityError", POD_SCOPE_TEXT, id="single-numa-node"
        ),
        pytest.param(
            "best-effort", "EmptyPodSharedPoolError", EMPTY_POOL_CPU_TEXT, id="best-effort"
        ),
    ],
)
def test_empty_shared_pool_is_rejected(policy: str, reason: str, message: str) -> None:
    node = Node(
        "n", get_preset("topoDualSocketHT"), with_tm_policy("pod-scope-single-numa", policy)
    )
    admitted(node, pod("guaranteed-two"))
    before = node.snapshot()
    result: AdmissionResult = node.admit(pod("empty-shared-pool"))
    assert (result.admitted, result.reason, result.message) == (False, reason, message)
    after = node.snapshot()
    assert (after.default_cpuset, after.pods, after.memory) == (
        before.default_cpuset,
        before.pods,
        before.memory,
    )


def test_empty_shared_pool_under_tm_none_takes_the_per_container_path() -> None:
    """allocation.md §6 row 7: no pod-scope check under policy ``none``; every eligible
    container gets exclusive CPUs from the node pool, the shared sidecar stays on the node
    shared pool, nothing is recorded for the pod."""
    text = (KUBELET / "pod-scope-single-numa.yaml").read_text()
    text = text.replace("topologyManagerPolicy: single-numa-node", "topologyManagerPolicy: none")
    text = text.replace("memoryManagerPolicy: Static", "memoryManagerPolicy: None")
    text = text.split("reservedMemory:")[0] + "featureGates:\n  PodLevelResourceManagers: true\n"
    node = Node("n", get_preset("topoDualSocketHT"), parse_kubelet_config_text(text, "1.37"))
    alloc = admitted(node, pod("empty-shared-pool"))
    assert alloc.pod_cpuset is None
    c = containers(alloc)
    # metrics-sidecar (1 CPU) first: the free sibling of reserved CPU 0 -> 6. main-app (3):
    # the whole core (2,8), then one CPU of core (4,10).
    assert (c["metrics-sidecar"].cpuset, c["metrics-sidecar"].isolation) == (
        CPUSet.parse("6"),
        "container",
    )
    assert (c["main-app"].cpuset, c["main-app"].isolation) == (CPUSet.parse("2,4,8"), "container")
    assert (c["logging-sidecar"].cpuset, c["logging-sidecar"].isolation) == (CPUSet(), "host")
    assert node.snapshot().default_cpuset == CPUSet.parse("0-1,3,5,7,9-11")


# -- container scope ------------------------------------------------------------------------------


def test_ml_workload_container_scope_best_effort() -> None:
    node = Node(
        "n",
        get_preset("topoDualSocketHT"),
        with_tm_policy("container-scope-single-numa", "best-effort"),
    )
    alloc = admitted(node, pod("ml-workload"))
    c = containers(alloc)
    # ml-training (3 CPUs, 6Gi) on NUMA 0: whole core (2,8) and the sibling of reserved CPU 0.
    assert (c["ml-training"].cpuset, c["ml-training"].isolation) == (
        CPUSet.parse("2,6,8"),
        "container",
    )
    assert c["ml-training"].memory == blocks(0, 6)
    # The service mesh sidecar has nothing exclusive: node shared pool.
    assert (c["service-mesh-sidecar"].cpuset, c["service-mesh-sidecar"].isolation) == (
        CPUSet(),
        "host",
    )
    assert alloc.pod_cpuset is None and alloc.pod_memory == ()


def without_memory_manager(config: KubeletConfig) -> KubeletConfig:
    return dataclasses.replace(config, memory_manager_policy="None", reserved_memory=())


@pytest.mark.parametrize("policy", ["single-numa-node", "restricted", "best-effort"])
def test_tutorial_container_scope_mixed(policy: str) -> None:
    """The docs' mixed model, as documented: with the CPU manager only, the eligible sidecar
    gets exclusive CPUs and the workers run in the node shared pool."""
    cfg = without_memory_manager(with_tm_policy("container-scope-single-numa", policy))
    node = Node("n", get_preset("topoDualSocketHT"), cfg)
    alloc = admitted(node, pod("container-scope-mixed"))
    c = containers(alloc)
    # infrastructure-sidecar: 2 exclusive CPUs, a whole core of NUMA 0 -> (2,8).
    assert (c["infrastructure-sidecar"].cpuset, c["infrastructure-sidecar"].isolation) == (
        CPUSet.parse("2,8"),
        "container",
    )
    for worker in ("worker-1", "worker-2"):
        assert (c[worker].cpuset, c[worker].isolation) == (CPUSet(), "host")
    assert alloc.pod_cpuset is None


# With the Static memory manager the kubelet's code rejects the same pod: a worker that is not
# equivalent Guaranteed requests no memory, yet goes through Allocate. Under single-numa-node
# its merged hint has no mask and getDefaultHint finds nothing for an empty request; under
# restricted/best-effort the any-NUMA hint meets the sidecar's single-NUMA block
# (memorymanager/policy_static.go). The docs describe an admitted pod; Numascope follows the code.
DEFAULT_AFFINITY = (
    "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, "
    "no NUMA nodes with enough memory is available, which is unexpected"
)
VIOLATION = (
    "Allocate failed due to [memorymanager] preferred hint violates NUMA node allocation, "
    "which is unexpected"
)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("single-numa-node", DEFAULT_AFFINITY),
        ("restricted", VIOLATION),
        ("best-effort", VIOLATION),
    ],
)
def test_container_scope_mixed_with_static_memory_follows_the_code(
    policy: str, message: str
) -> None:
    # 1.36: the memory manager still runs Allocate for the containers without memory requests
    # (this ran on 1.37 before kubernetes#138770 was modelled; from 1.37 the pod is admitted).
    node = Node(
        "n",
        get_preset("topoDualSocketHT"),
        with_tm_policy("container-scope-single-numa", policy, "1.36"),
    )
    before = node.snapshot()
    result = node.admit(pod("container-scope-mixed"))
    assert (result.admitted, result.reason, result.message) == (
        False,
        "UnexpectedAdmissionError",
        message,
    )
    after = node.snapshot()
    assert (after.default_cpuset, after.pods, after.memory) == (
        before.default_cpuset,
        before.pods,
        before.memory,
    )


@pytest.mark.parametrize("release", ["1.37", "1.38"])
@pytest.mark.parametrize("policy", ["single-numa-node", "restricted", "best-effort"])
def test_container_scope_mixed_is_admitted_from_1_37(policy: str, release: str) -> None:
    """kubernetes#138770: the workers request no memory and are skipped; the exclusive
    container gets its CPUs and memory, the workers run in the node's shared pool."""
    node = Node(
        "n",
        get_preset("topoDualSocketHT"),
        with_tm_policy("container-scope-single-numa", policy, release),
    )
    alloc = admitted(node, pod("container-scope-mixed"))
    by_name = {c.name: c for c in alloc.containers}
    sidecar = by_name["infrastructure-sidecar"]
    assert (sidecar.isolation, sidecar.cpuset.size()) == ("container", 2)
    assert [b.size for b in sidecar.memory] == [2 * 1024**3]
    for worker in ("worker-1", "worker-2"):
        assert by_name[worker].memory == ()  # skipped by the memory manager
        assert by_name[worker].isolation != "container"


def test_ml_workload_container_scope_single_numa_node() -> None:
    node = Node(
        "n",
        get_preset("topoDualSocketHT"),
        without_memory_manager(config("container-scope-single-numa")),
    )
    alloc = admitted(node, pod("ml-workload"))
    assert containers(alloc)["ml-training"].cpuset == CPUSet.parse("2,6,8")
    # With the Static memory manager: a 1.36 kubelet fails the containers without memory
    # requests on the default hint; from 1.37 (kubernetes#138770) they are skipped and the pod
    # gets the same CPUs. (This asserted the rejection on 1.37 before #138770 was modelled.)
    for release, expected in (("1.36", (False, DEFAULT_AFFINITY)), ("1.37", (True, ""))):
        cfg = config("container-scope-single-numa", release)
        result = Node("n", get_preset("topoDualSocketHT"), cfg).admit(pod("ml-workload"))
        assert (result.admitted, result.message) == expected, release


# -- gates off --------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["1.35", "1.36", "1.37"])
def test_pod_level_pod_with_the_gate_off_gets_nothing_exclusive(release: str) -> None:
    node = Node("n", get_preset("topoDualSocketHT"), config("classic-static", release))
    alloc = admitted(node, pod("pod-scope-mixed"))
    assert alloc.pod_cpuset is None
    assert {c.isolation for c in alloc.containers} == {"host"}
    assert all(c.memory == () for c in alloc.containers)
    classic = admitted(node, pod("guaranteed-two"))
    # reservedSystemCPUs 0,6 (core 0): the next whole core is (2,8).
    assert containers(classic)["app"].cpuset == CPUSet.parse("2,8")

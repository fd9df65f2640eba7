"""The node facade: admission is all-or-nothing, dry runs keep nothing, removal restores."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfigError, kubelet_config_from_dict
from app.domain.node.model import Node, NodeError
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Pod
from app.domain.presets import get_preset

POD_LEVEL = {
    "cpuManagerPolicy": "static",
    "kubeReserved": {"cpu": "1", "memory": "1Gi"},
    "systemReserved": {"memory": "1Gi"},
    "memoryManagerPolicy": "Static",
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "2148Mi"}}],
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "pod",
    "featureGates": {"PodLevelResourceManagers": True},
}


def container(name: str, cpu: str | None = None, memory: str = "1Gi") -> dict[str, Any]:
    if cpu is None:
        return {"name": name}
    res = {"cpu": cpu, "memory": memory}
    return {"name": name, "resources": {"requests": res, "limits": res}}


def make_pod(
    name: str,
    containers: list[dict[str, Any]],
    budget: tuple[str, str] | None = None,
    init: list[dict[str, Any]] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if budget is not None:
        res = {"cpu": budget[0], "memory": budget[1]}
        spec["resources"] = {"requests": res, "limits": res}
    if init:
        spec["initContainers"] = init
    return pod_from_manifest(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": name}, "spec": spec}
    )


def make_node(config: dict[str, Any] = POD_LEVEL, preset: str = "topoDualSocketHT") -> Node:
    return Node("n1", get_preset(preset), kubelet_config_from_dict(config, "1.37"))


def state_of(node: Node) -> tuple[object, ...]:
    snap = node.snapshot()
    return (
        snap.default_cpuset,
        tuple(
            (p.uid, p.pod_cpuset, tuple((c.name, c.cpuset, c.memory) for c in p.containers))
            for p in snap.pods
        ),
        snap.memory,
    )


def test_pod_scope_budget_is_partitioned() -> None:
    node = make_node()
    pod = make_pod(
        "db",
        [container("db", "2", "2Gi"), container("log", "1", "1Gi"), container("agent")],
        budget=("4", "4Gi"),
    )
    result = node.admit(pod)
    assert result.admitted, result.message
    alloc = result.allocation
    assert alloc is not None and alloc.pod_cpuset is not None
    assert alloc.pod_cpuset.size() == 4
    by_name = {c.name: c for c in alloc.containers}
    assert by_name["db"].isolation == "container" and by_name["db"].cpuset.size() == 2
    assert by_name["log"].isolation == "container" and by_name["log"].cpuset.size() == 1
    assert by_name["agent"].isolation == "pod"
    assert by_name["db"].memory_isolation == "container"
    assert by_name["agent"].memory_isolation == "pod"
    assert by_name["agent"].cpuset == alloc.shared_pool()
    assert alloc.shared_pool().size() == 1
    assert sum(b.size for b in alloc.pod_memory) == 4 * 1024**3
    assert not (alloc.pod_cpuset & node.snapshot().default_cpuset)


def test_rejection_changes_nothing() -> None:
    node = make_node()
    node.admit(make_pod("a", [container("a", "2", "1Gi")], budget=("2", "1Gi")))
    before = state_of(node)
    bad = make_pod("bad", [container("x", "2", "1Gi"), container("shared")], budget=("2", "2Gi"))
    result = node.admit(bad)
    assert not result.admitted
    assert result.reason == "TopologyAffinityError"
    assert result.message == (
        "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
    )
    assert state_of(node) == before
    assert node.find_pod("default/bad") is None


def test_dry_run_answers_like_admit_and_keeps_nothing() -> None:
    node = make_node()
    pod = make_pod("a", [container("a", "2", "1Gi"), container("s")], budget=("3", "2Gi"))
    before = state_of(node)
    dry = node.dry_run(pod)
    assert state_of(node) == before
    real = node.admit(pod)
    assert dry.admitted and real.admitted
    assert dry.allocation is not None and real.allocation is not None
    assert dry.allocation.containers == real.allocation.containers
    assert dry.allocation.pod_cpuset == real.allocation.pod_cpuset


def test_remove_restores_the_empty_node() -> None:
    node = make_node()
    empty = state_of(node)
    pods = [
        make_pod("a", [container("a", "2", "1Gi"), container("s")], budget=("3", "2Gi")),
        make_pod("b", [container("b", "1", "1Gi")]),
    ]
    for p in pods:
        assert node.admit(p).admitted
    assert state_of(node) != empty
    for p in pods:
        node.remove(p.key)
    assert state_of(node) == empty


def test_duplicate_and_unknown_pods_are_errors() -> None:
    node = make_node()
    pod = make_pod("a", [container("a", "1", "1Gi")])
    node.admit(pod)
    with pytest.raises(NodeError, match="already admitted"):
        node.admit(pod)
    with pytest.raises(NodeError, match="is not on node"):
        node.remove("default/missing")


def test_pods_are_found_by_name_in_step_with_admissions_and_removals() -> None:
    node = make_node()
    a, b = make_pod("a", [container("a", "1", "1Gi")]), make_pod("b", [container("b", "1")])
    assert node.admit(a).admitted and node.dry_run(b).admitted
    assert node.find_pod("default/a") is a and node.find_pod("default/b") is None
    assert set(node.pod_keys) == {"default/a"}
    node.remove("a")  # by uid: the name goes too
    assert node.find_pod("default/a") is None and not node.pod_keys
    assert node.admit(a).admitted and node.find_pod("default/a") is a
    with pytest.raises(NodeError, match="default/a is already admitted"):
        node.admit(replace(a, uid="other"))


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"reservedSystemCPUs": "0,99"}, "reservedSystemCPUs", "not on this machine"),
        ({"cpuManagerPolicyOptions": {"bogus": "true"}}, "cpuManagerPolicyOptions", "bogus"),
        (
            {"reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]},
            "reservedMemory",
            "is not equal to the value",
        ),
        ({"topologyManagerPolicyOptions": {"nope": "1"}}, "topologyManagerPolicyOptions", "nope"),
    ],
    ids=["reserved-outside", "unknown-option", "memory-mismatch", "tm-option"],
)
def test_invalid_configurations_are_rejected(change: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(KubeletConfigError) as info:
        make_node({**POD_LEVEL, **change})
    assert info.value.field.startswith(field)
    assert text in str(info.value)


def test_reserved_cpus_come_from_reserved_system_cpus() -> None:
    node = make_node({**POD_LEVEL, "reservedSystemCPUs": "0,6"})
    assert node.reserved_cpus == CPUSet.parse("0,6")
    assert node.snapshot().allocatable_cpus == CPUSet.parse("1-5,7-11")

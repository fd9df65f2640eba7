"""Builders shared by the memory manager tests (no tests here; imported by the others)."""

from __future__ import annotations

from app.domain.memorymanager.machine import NUMANodeInfo
from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.memorymanager.state import MemoryManagerState
from app.domain.pod.model import Container, Pod, ResourceRequirements

GI = 1 << 30
MI = 1 << 20


def node(numa_id: int, memory_gi: int = 8, hugepages_1g: int = 2) -> NUMANodeInfo:
    pages = ((GI, hugepages_1g),) if hugepages_1g else ()
    return NUMANodeInfo(numa_id, memory_gi * GI, pages)


def policy(
    nodes: int = 2,
    *,
    memory_gi: int = 8,
    hugepages_1g: int = 2,
    reserved_gi: int = 1,
    pod_level: bool = True,
) -> StaticPolicy:
    return StaticPolicy(
        [node(n, memory_gi, hugepages_1g) for n in range(nodes)],
        {n: {"memory": reserved_gi * GI} for n in range(nodes)},
        pod_level_resource_managers=pod_level,
    )


def started(p: StaticPolicy) -> MemoryManagerState:
    state = MemoryManagerState()
    p.start(state)
    return state


def container(
    name: str,
    memory: str | None = "1Gi",
    *,
    cpu: str = "1",
    hugepages_1g: str | None = None,
    limit_memory: str | None = None,
    restart: str | None = None,
) -> Container:
    if memory is None:
        return Container(name, ResourceRequirements(), restart)
    req = {"cpu": cpu, "memory": memory}
    if hugepages_1g is not None:
        req["hugepages-1Gi"] = hugepages_1g
    lim = dict(req)
    if limit_memory is not None:
        lim["memory"] = limit_memory
    return Container(name, ResourceRequirements(req, lim), restart)


def pod(
    uid: str,
    *containers: Container,
    inits: tuple[Container, ...] = (),
    budget: dict[str, str] | None = None,
) -> Pod:
    resources = None if budget is None else ResourceRequirements(budget, budget)
    return Pod(uid, uid, "default", tuple(containers), inits, resources)


def tables(state: MemoryManagerState, resource: str = "memory") -> dict[int, tuple[int, int]]:
    """Per node: (free, reserved) of one resource, in GiB."""
    return {
        n: (s.memory_map[resource].free // GI, s.memory_map[resource].reserved // GI)
        for n, s in sorted(state.machine_state.items())
    }

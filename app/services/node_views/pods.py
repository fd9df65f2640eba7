"""The pods of a node as table rows: containers, isolation, the CPUs they run on, budgets."""

from __future__ import annotations

from app.domain.cpuset import CPUSet
from app.domain.snapshot import ContainerAllocation, NodeSnapshot, PodAllocation
from app.services.node_views.models import (
    BudgetView,
    ContainerRow,
    CpuSetView,
    MemoryBlockView,
    PodRow,
)
from app.services.node_views.owners import (
    Owners,
    container_pool,
    mask_of,
    pod_memory_blocks,
    pod_url,
)


def container_row(
    snapshot: NodeSnapshot, owners: Owners, key: str, c: ContainerAllocation
) -> ContainerRow:
    pool, runs_on = container_pool(snapshot, c)
    reserved_too = runs_on & snapshot.reserved_cpus if pool == "node-shared" else CPUSet()
    return ContainerRow(
        name=c.name,
        kind=c.kind,
        isolation=c.isolation,
        pool=pool,
        tag=owners.container_tags.get(
            (key, c.name), owners.pod_tags[key] if pool == "pod-shared" else ""
        ),
        runs_on=CpuSetView.of(runs_on),
        also_reserved=CpuSetView.of(reserved_too) if reserved_too else None,
        cpu_request_milli=c.cpu_request_milli,
        cpu_limit_milli=c.cpu_limit_milli,
        memory=[MemoryBlockView.of(b) for b in c.memory],
    )


def budget_view(p: PodAllocation, requests: dict[str, int]) -> BudgetView | None:
    if p.pod_level_cpu_milli is None and not requests and not p.has_pod_entry:
        return None
    shared_memory: dict[str, int] = {}
    for b in p.pod_memory:
        shared_memory[b.type] = shared_memory.get(b.type, 0) + b.size
    if shared_memory:
        for c in p.containers:
            if c.kind == "init" or not exclusive_memory(c):
                continue
            for b in c.memory:
                if b.type in shared_memory:
                    shared_memory[b.type] -= b.size
    milli = p.pod_level_cpu_milli
    cpu = "" if milli is None else (str(milli // 1000) if milli % 1000 == 0 else f"{milli}m")
    return BudgetView(
        cpu_milli=milli,
        cpu=cpu,
        memory=requests,
        cpus=None if p.pod_cpuset is None else CpuSetView.of(p.pod_cpuset),
        exclusive=CpuSetView.of(p.exclusive_cpus()),
        pod_shared=CpuSetView.of(p.shared_pool()),
        memory_blocks=[MemoryBlockView.of(b) for b in p.pod_memory],
        pod_shared_memory=shared_memory,
    )


def exclusive_memory(c: ContainerAllocation) -> bool:
    """A container of a pod-level pod with its own memory slice (not the pod shared pool)."""
    return c.isolation == "container" or (bool(c.memory) and c.isolation != "pod")


def build_pod_row(
    snapshot: NodeSnapshot,
    owners: Owners,
    node: str,
    p: PodAllocation,
    pod_memory_requests: dict[str, int],
) -> PodRow:
    key = f"{p.namespace}/{p.name}"
    topo = snapshot.topology
    cpus = mask_of([p.pod_cpuset or CPUSet(), *(c.cpuset for c in p.containers)])
    if any(c.isolation == "host" for c in p.containers):
        held = mask_of([p.pod_cpuset or CPUSet(), *(c.exclusive_cpus for c in p.containers)])
    else:
        held = cpus
    numa = set(topo.numa_nodes_of(held)) if held else set()
    for b in pod_memory_blocks(p):
        numa.update(b.numa_affinity)
    url = pod_url(node, p.namespace, p.name)
    return PodRow(
        uid=p.uid,
        namespace=p.namespace,
        name=p.name,
        key=key,
        tag=owners.pod_tags[key],
        colour=owners.pod_colours[key],
        qos_class=p.qos_class,
        admitted_at=p.admitted_at,
        budget=budget_view(p, pod_memory_requests),
        exclusive_cpus=CpuSetView.of(p.exclusive_cpus()),
        numa_nodes=sorted(numa),
        containers=[container_row(snapshot, owners, key, c) for c in p.containers],
        url=url,
        json_url=f"{url}.json",
    )

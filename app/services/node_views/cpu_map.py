"""The CPU map of a node (or of the NUMA nodes one pod uses), memory per NUMA node and the CPU
pools per NUMA node.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.snapshot import NodeSnapshot, PodAllocation
from app.domain.topology.model import NUMANodeMemory, hugepage_resource_name
from app.services.node_views.models import (
    POOLS,
    CpuSetView,
    MemoryResourceView,
    MemoryUse,
    NodeMapView,
    NodeNumaMemoryView,
    NumaPoolRow,
    Pool,
)
from app.services.node_views.owners import (
    Owners,
    pod_memory_blocks,
    pod_url,
)
from app.services.topologies import CpuMap, build_cpu_map


def memory_views(
    snapshot: NodeSnapshot, owners: Owners, node: str
) -> dict[int, NodeNumaMemoryView]:
    """Memory and hugepages per NUMA node; with the memory manager's state, what each pod
    holds of them."""
    if not snapshot.memory:
        return {mem.numa_id: _unaccounted(mem) for mem in snapshot.topology.memory}
    use = _memory_use(snapshot, owners, node)
    out: dict[int, NodeNumaMemoryView] = {}
    for m in snapshot.memory:
        resources = []
        for name in sorted(m.memory_map, key=resource_order):
            t = m.memory_map[name]
            resources.append(
                MemoryResourceView(
                    resource=name,
                    total=t.total,
                    system_reserved=t.system_reserved,
                    allocatable=t.allocatable,
                    reserved=t.reserved,
                    free=t.free,
                    by_pod=use.get((m.numa_id, name), []),
                )
            )
        out[m.numa_id] = NodeNumaMemoryView(
            numa_node=m.numa_id, accounted=True, resources=resources
        )
    return out


def _unaccounted(mem: NUMANodeMemory) -> NodeNumaMemoryView:
    """A NUMA node's memory and hugepages when no memory manager accounts them: all free."""
    sizes = [("memory", mem.regular_memory_bytes())]
    sizes += [(hugepage_resource_name(size), size * n) for size, n in sorted(mem.hugepages.items())]
    resources = [
        MemoryResourceView(
            resource=name, total=b, system_reserved=0, allocatable=b, reserved=0, free=b
        )
        for name, b in sizes
    ]
    return NodeNumaMemoryView(numa_node=mem.numa_id, accounted=False, resources=resources)


def _memory_use(
    snapshot: NodeSnapshot, owners: Owners, node: str
) -> dict[tuple[int, str], list[MemoryUse]]:
    """Per (NUMA node, resource), what each pod holds there."""
    reserved_left: dict[tuple[int, str], int] = {}
    for m in snapshot.memory:
        for name, t in m.memory_map.items():
            reserved_left[(m.numa_id, name)] = t.reserved
    use: dict[tuple[int, str], list[MemoryUse]] = {}
    for p in snapshot.pods:
        key = f"{p.namespace}/{p.name}"
        for slot, size in _charge(p, reserved_left).items():
            use.setdefault(slot, []).append(
                MemoryUse(
                    pod=key,
                    tag=owners.pod_tags[key],
                    colour=owners.pod_colours[key],
                    bytes=size,
                    url=pod_url(node, p.namespace, p.name),
                )
            )
    return use


def _charge(
    pod: PodAllocation, reserved_left: dict[tuple[int, str], int]
) -> dict[tuple[int, str], int]:
    """Charge the pod's memory blocks to (NUMA node, resource) slots in ascending node order,
    each node up to what is left of its reservation, the last node the rest;
    ``reserved_left`` goes down by what is charged."""
    charged: dict[tuple[int, str], int] = {}
    for block in pod_memory_blocks(pod):
        nodes = sorted(set(block.numa_affinity))
        left = block.size
        for i, n in enumerate(nodes):
            slot = (n, block.type)
            room = max(reserved_left.get(slot, 0), 0)
            take = left if i == len(nodes) - 1 else min(left, room)
            if take:
                charged[slot] = charged.get(slot, 0) + take
                reserved_left[slot] = reserved_left.get(slot, 0) - take
            left -= take
            if not left:
                break
    return charged


def resource_order(name: str) -> tuple[int, str]:
    return (0 if name == "memory" else 1, name)


def build_map(
    snapshot: NodeSnapshot,
    owners: Owners,
    node: str,
    *,
    cpu_map: CpuMap | None = None,
    memory: dict[int, NodeNumaMemoryView] | None = None,
    focus: str | None = None,
    numa_nodes: Sequence[int] | None = None,
    focus_pools: Sequence[Pool] = (),
) -> NodeMapView:
    """The map of the whole node, or (``numa_nodes``) of some of its NUMA nodes."""
    topo = snapshot.topology
    full = cpu_map if cpu_map is not None else build_cpu_map(topo)
    mem = memory if memory is not None else memory_views(snapshot, owners, node)
    if numa_nodes is not None:
        keep = set(numa_nodes)
        sockets = []
        for s in full.sockets:
            kept = [n for n in s.numa_nodes if n.id in keep]
            if kept:
                sockets.append(s.model_copy(update={"numa_nodes": kept}))
        full = full.model_copy(update={"sockets": sockets, "memory_only_numa_nodes": []})
        mem = {n: v for n, v in mem.items() if n in keep}
        cpus = topo.cpus_in_numa_nodes(sorted(keep & set(topo.numa_node_ids())))
    else:
        cpus = topo.all_cpus
    cells = {cpu: owners.cell(cpu) for cpu in cpus}
    return NodeMapView(
        cpus=cpus.size(),
        cpu_map=full,
        cells=cells,
        legend=owners.legend(focus, focus_pools),
        memory=mem,
        focus=focus,
        focus_pools=list(focus_pools),
    )


def numa_pools_of(snapshot: NodeSnapshot, owners: Owners) -> list[NumaPoolRow]:
    topo = snapshot.topology
    allocatable = snapshot.allocatable_cpus
    by_pool = {pool: owners.cpus_of(pool) for pool in POOLS}
    rows = []
    for n in topo.numa_node_ids():
        cpus = topo.cpus_of_numa_node(n)
        held = (by_pool["pod-shared"] | by_pool["exclusive"]) & cpus
        rows.append(
            NumaPoolRow(
                numa_node=n,
                cpus=CpuSetView.of(cpus),
                reserved=CpuSetView.of(by_pool["reserved"] & cpus),
                node_shared=CpuSetView.of(by_pool["node-shared"] & cpus),
                pod_shared=CpuSetView.of(by_pool["pod-shared"] & cpus),
                exclusive=CpuSetView.of(by_pool["exclusive"] & cpus),
                counts=owners.counts(cpus),
                available=(allocatable & cpus).size() - held.size(),
            )
        )
    return rows

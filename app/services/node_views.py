"""View models of simulated nodes: what the node pages, their JSON twins and the API show.

Everything here is computed from a ``NodeSnapshot`` (immutable), so a view can be cached until
the node changes. The CPU map reuses the lstopo nesting of ``services.topologies.build_cpu_map``
and adds one ``CpuCell`` per CPU saying who owns it:

=============  ==============================================  =====================
``pool``       owner (``data-owner``)                          cell label
=============  ==============================================  =====================
reserved       ``reserved``                                    ``R``
node-shared    ``node-shared``                                 (none)
pod-shared     ``<namespace>/<pod>``                           the pod's tag (``B``)
exclusive      ``<namespace>/<pod>/<container>``               ``B1``, ``B2``, …
=============  ==============================================  =====================

Pods get tags ``A``, ``B``, … in admission order and a colour from a fixed palette of 12: a
CRC-32 of ``namespace/name`` picks the slot, the next free slot when an earlier pod of the
node holds it (stable across restarts; it changes only when that earlier pod goes). Their
exclusive containers are numbered in container order (regular init containers first). The label, a
pattern (solid for exclusive, stripes for a pod shared pool, cross-hatch for reserved) and a
legend entry accompany every colour.

Ownership follows the CPU manager's state: a container with isolation level ``container`` owns
its cpuset; a pod entry's budget minus its containers' exclusive CPUs is the pod shared pool;
the reserved set is the static policy's; every other CPU is the node shared pool. A regular
init container's exclusive CPUs are reused by later containers (``cpus_to_reuse``), so later
containers paint over it.

Memory per NUMA node is the memory manager's machine state (exact); the per-pod split uses the
pod-level blocks when the pod has them, else its sidecars' and app containers' blocks (what
PodResources reports), and charges a block that spans several NUMA nodes to them in ascending
order up to what each has reserved (the manager's own order).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.domain.cpuset import CPUSet
from app.domain.observed import UID_ONLY_NAMESPACE
from app.domain.pools import Pools, pools_from_snapshot
from app.domain.snapshot import ContainerAllocation, MemoryBlock, NodeSnapshot, PodAllocation
from app.domain.topology import CPUTopology, hugepage_resource_name
from app.services.topologies import CpuMap, build_cpu_map

Pool = Literal["reserved", "node-shared", "pod-shared", "exclusive"]
POOLS: tuple[Pool, ...] = ("reserved", "node-shared", "pod-shared", "exclusive")
PALETTE_SIZE = 12

OWNER_RESERVED = "reserved"
OWNER_NODE_SHARED = "node-shared"


class _View(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, serialize_by_alias=True
    )


# -- small values --------------------------------------------------------------------------


class CpuSetView(_View):
    """A CPU set as the Linux list string and the ids (users.md §5.1)."""

    cpus: str
    cpu_ids: list[int]

    @classmethod
    def of(cls, cpus: CPUSet) -> CpuSetView:
        return cls(cpus=str(cpus), cpu_ids=list(cpus))


class MemoryBlockView(_View):
    """A memory manager block: NUMA affinity, resource and bytes."""

    numa_affinity: list[int]
    type: str
    size: int

    @classmethod
    def of(cls, block: MemoryBlock) -> MemoryBlockView:
        return cls(numa_affinity=list(block.numa_affinity), type=block.type, size=block.size)


class PoolCounts(_View):
    total: int = 0
    reserved: int = 0
    node_shared: int = 0
    pod_shared: int = 0
    exclusive: int = 0


# -- the CPU map -------------------------------------------------------------------------


class CpuCell(_View):
    id: int
    pool: Pool
    owner: str
    tag: str = ""
    colour: int | None = None
    pod: str | None = None
    container: str | None = None
    isolation: str | None = None
    url: str | None = None
    title: str = ""


class LegendEntry(_View):
    owner: str
    pool: Pool
    tag: str
    label: str
    colour: int | None = None
    cpus: str = ""
    count: int = 0
    isolation: str | None = None
    url: str | None = None


class MemoryUse(_View):
    pod: str
    tag: str
    colour: int
    bytes: int
    url: str


class MemoryResourceView(_View):
    resource: str
    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int
    by_pod: list[MemoryUse] = []


class NodeNumaMemoryView(_View):
    numa_node: int
    # False when the memory manager policy is None: only the machine's sizes are known.
    accounted: bool
    resources: list[MemoryResourceView]


class NodeMapView(_View):
    """The CPU map of a node (or of the NUMA nodes one pod uses): nesting, owners, legend."""

    cpus: int
    cpu_map: CpuMap
    cells: dict[int, CpuCell]
    legend: list[LegendEntry]
    memory: dict[int, NodeNumaMemoryView]
    # The pod the map is about (``namespace/name``); other owners are drawn dimmed.
    focus: str | None = None


class NumaPoolRow(_View):
    numa_node: int
    cpus: CpuSetView
    reserved: CpuSetView
    node_shared: CpuSetView
    pod_shared: CpuSetView
    exclusive: CpuSetView
    counts: PoolCounts
    # allocatable minus exclusively held (podresources.md §7: pod budgets and slices)
    available: int


# -- pods --------------------------------------------------------------------------------


class ContainerRow(_View):
    name: str
    kind: str
    isolation: str
    pool: Pool
    tag: str = ""
    # The CPUs the container runs on: its slice, its pod's shared pool or the node shared pool.
    runs_on: CpuSetView
    cpu_request_milli: int
    cpu_limit_milli: int
    memory: list[MemoryBlockView]


class BudgetView(_View):
    """The pod-level resources (``spec.resources``) and how the budget is split."""

    cpu_milli: int | None
    cpu: str  # the pod-level cpu request as people write it ("4", "2500m"), "" if none
    memory: dict[str, int]
    cpus: CpuSetView | None
    exclusive: CpuSetView
    pod_shared: CpuSetView
    memory_blocks: list[MemoryBlockView]
    pod_shared_memory: dict[str, int]


class PodRow(_View):
    uid: str
    namespace: str
    name: str
    key: str
    tag: str
    colour: int
    qos_class: str
    admitted_at: float
    budget: BudgetView | None
    exclusive_cpus: CpuSetView
    numa_nodes: list[int]
    containers: list[ContainerRow]
    url: str
    json_url: str
    # Observed nodes: a checkpoint entry of a pod the node no longer has (kubernetes#129819),
    # and a pod known by its UID only (namespace ``~``, name = UID).
    stale: bool = Field(default=False, exclude_if=lambda v: not v)
    uid_only: bool = Field(default=False, exclude_if=lambda v: not v)


# -- node --------------------------------------------------------------------------------


class NodePolicies(_View):
    cpu_manager_policy: str
    cpu_manager_policy_options: dict[str, str]
    memory_manager_policy: str
    topology_manager_policy: str
    topology_manager_scope: str
    pod_level_resources: bool
    pod_level_resource_managers: bool


class NodeTopologyView(_View):
    name: str
    argument: str
    kind: str  # "preset" | "spec"
    sockets: int
    numa_nodes: int
    cores: int
    cpus: int
    cpus_per_core: int
    memory_bytes: int
    url: str | None


class NodeSummary(_View):
    name: str
    simulated: bool = True
    source: str = "simulation"
    demo: bool = False
    release: str
    topology: NodeTopologyView
    policies: NodePolicies
    cpus: PoolCounts
    pods: int
    rejected: int
    created_at: str
    load_error: str | None = None
    url: str
    json_url: str
    api_url: str


class AdmissionLogEntry(_View):
    id: int
    batch: str
    action: str  # admit | dry-run | remove
    namespace: str
    name: str
    uid: str
    admitted: bool
    reason: str = ""
    message: str = ""
    at: str
    pod_url: str | None = None


class ObservationView(_View):
    """Where an observed node's data came from (users.md §5.1, §5.3): every source with its
    ``observedAt`` and errors, the state files (version, family, checksums, which reader
    accepted them), the pods' identities, stale entries and notes."""

    observed_at: str
    ready: bool
    sources: list[dict[str, Any]]
    files: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    stale: list[dict[str, Any]]
    errors: list[dict[str, str]]
    notes: list[str]
    config_path: str | None = None
    config_inferred: bool = False
    pod_dirs: int | None = None


class NodeView(_View):
    summary: NodeSummary
    observed_at: str
    kubelet_config: dict[str, Any]
    kubelet_config_text: str
    map: NodeMapView
    pools: dict[str, Any]
    numa_pools: list[NumaPoolRow]
    pods: list[PodRow]
    admissions: list[AdmissionLogEntry] = []
    # Entries of the submission named by ``?batch=`` (the form's result after a redirect).
    last_batch: list[AdmissionLogEntry] = []
    # Observed nodes only: the sources, state files, identities and stale entries.
    observation: ObservationView | None = Field(default=None, exclude_if=lambda v: v is None)


class NodeDetail(_View):
    """``GET /api/v1/nodes/{node}``: the node without its drawing."""

    summary: NodeSummary
    observed_at: str
    kubelet_config: dict[str, Any]
    pools: dict[str, Any]
    numa_pools: list[NumaPoolRow]
    memory: list[NodeNumaMemoryView]
    pods: list[PodRow]
    observation: ObservationView | None = Field(default=None, exclude_if=lambda v: v is None)

    @classmethod
    def of(cls, view: NodeView) -> NodeDetail:
        return cls(
            summary=view.summary,
            observed_at=view.observed_at,
            kubelet_config=view.kubelet_config,
            pools=view.pools,
            numa_pools=view.numa_pools,
            memory=list(view.map.memory.values()),
            pods=view.pods,
            observation=view.observation,
        )


class NodeIndexView(_View):
    nodes: list[NodeSummary]
    presets: list[str] = []
    releases: list[str] = []


class BudgetPart(_View):
    """One row of a pod's breakdown: an exclusive slice, the pod shared pool, or the node
    shared pool some containers run in."""

    part: Literal["exclusive", "pod-shared", "node-shared"]
    label: str
    tag: str
    containers: list[str]
    cpus: CpuSetView
    memory: dict[str, int]


class PodView(_View):
    node: NodeSummary
    observed_at: str
    pod: PodRow
    parts: list[BudgetPart]
    map: NodeMapView
    podresources: dict[str, Any]
    admissions: list[AdmissionLogEntry] = []


# -- helpers -------------------------------------------------------------------------------


def palette_index(key: str, taken: Iterable[int] = ()) -> int:
    """The colour of a pod (``namespace/name``): a CRC-32 of its key picks a palette slot;
    when an earlier pod of the node holds that slot, the next free one is used."""
    start = zlib.crc32(key.encode("utf-8")) % PALETTE_SIZE
    busy = set(taken)
    for step in range(PALETTE_SIZE):
        slot = (start + step) % PALETTE_SIZE
        if slot not in busy:
            return slot
    return start


def pod_tag(index: int) -> str:
    """``A``…``Z``, ``AA``…: the label of the pod at ``index`` (0-based)."""
    out = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(ord("A") + rem) + out
    return out


def node_url(node: str) -> str:
    return f"/nodes/{quote(node, safe='')}"


def pod_url(node: str, namespace: str, name: str) -> str:
    return f"{node_url(node)}/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"


def iso(value: datetime | float) -> str:
    if isinstance(value, float | int):
        from datetime import UTC

        value = datetime.fromtimestamp(float(value), UTC)
    return value.isoformat(timespec="seconds").replace("+00:00", "Z")


def _mask_of(sets: Iterable[CPUSet]) -> CPUSet:
    m = 0
    for s in sets:
        m |= s.mask
    return CPUSet.from_mask(m)


def container_pool(snapshot: NodeSnapshot, c: ContainerAllocation) -> tuple[Pool, CPUSet]:
    """Where a container runs: its slice, its pod's shared pool or the node shared pool."""
    if c.isolation == "container":
        return "exclusive", c.cpuset
    if c.isolation == "pod":
        return "pod-shared", c.cpuset
    return "node-shared", snapshot.default_cpuset


def _pod_memory_blocks(p: PodAllocation) -> tuple[MemoryBlock, ...]:
    if p.pod_memory:
        return p.pod_memory
    return tuple(b for c in p.containers if c.kind != "init" for b in c.memory)


# -- building ------------------------------------------------------------------------------


class _Owners:
    """CPU ownership of a snapshot: one pass over the pods, shared by every view."""

    def __init__(self, snapshot: NodeSnapshot, node: str) -> None:
        self.snapshot = snapshot
        self.node = node
        topo = snapshot.topology
        self.pod_tags: dict[str, str] = {}
        self.pod_colours: dict[str, int] = {}
        self.container_tags: dict[tuple[str, str], str] = {}
        # cpu -> (pool, owner, pod key, container, isolation)
        owner_of: dict[int, tuple[Pool, str, str | None, str | None, str | None]] = {}
        for cpu in snapshot.reserved_cpus:
            owner_of[cpu] = ("reserved", OWNER_RESERVED, None, None, None)
        used: set[int] = set()
        for i, p in enumerate(snapshot.pods):
            key = f"{p.namespace}/{p.name}"
            self.pod_tags[key] = pod_tag(i)
            colour = palette_index(key, used)
            used.add(colour)
            if len(used) == PALETTE_SIZE:
                used.clear()
            self.pod_colours[key] = colour
            for cpu in p.shared_pool():
                owner_of[cpu] = ("pod-shared", key, key, None, "pod")
            number = 0
            # Regular init containers first: later containers reuse their CPUs.
            ordered = sorted(p.containers, key=lambda c: 0 if c.kind == "init" else 1)
            for c in ordered:
                if c.isolation != "container" or not c.cpuset:
                    continue
                number += 1
                tag = f"{self.pod_tags[key]}{number}"
                self.container_tags[(key, c.name)] = tag
                owner = f"{key}/{c.name}"
                for cpu in c.cpuset:
                    owner_of[cpu] = ("exclusive", owner, key, c.name, c.isolation)
        self.owner_of = owner_of
        self.all_cpus = topo.all_cpus

    def cell(self, cpu: int) -> CpuCell:
        topo = self.snapshot.topology
        info = topo.cpu_details[cpu]
        where = f"core {info.core_id} · NUMA node {info.numa_node_id} · socket {info.socket_id}"
        found = self.owner_of.get(cpu)
        if found is None:
            return CpuCell(
                id=cpu,
                pool="node-shared",
                owner=OWNER_NODE_SHARED,
                title=f"CPU id {cpu} · node shared pool · {where}",
            )
        pool, owner, pod, container, isolation = found
        if pool == "reserved":
            return CpuCell(
                id=cpu,
                pool=pool,
                owner=owner,
                tag="R",
                title=f"CPU id {cpu} · reserved (kubelet reservedSystemCPUs / system) · {where}",
            )
        assert pod is not None
        ns, _, name = pod.partition("/")
        url = pod_url(self.node, ns, name)
        if pool == "pod-shared":
            tag = self.pod_tags[pod]
            title = (
                f"CPU id {cpu} · pod shared pool of pod {pod} · isolation pod "
                f"(shared containers of the pod) · {where}"
            )
        else:
            assert container is not None
            tag = self.container_tags[(pod, container)]
            title = (
                f"CPU id {cpu} · exclusive · pod {pod} · container {container} · "
                f"isolation {isolation} · {where}"
            )
            url = f"{url}#container-{quote(container, safe='')}"
        return CpuCell(
            id=cpu,
            pool=pool,
            owner=owner,
            tag=tag,
            colour=self.pod_colours[pod],
            pod=pod,
            container=container,
            isolation=isolation,
            url=url,
            title=title,
        )

    def cpus_of(self, pool: Pool) -> CPUSet:
        if pool == "node-shared":
            return self.all_cpus - _mask_of(self._pool_sets(p) for p in POOLS if p != pool)
        return self._pool_sets(pool)

    def _pool_sets(self, pool: Pool) -> CPUSet:
        m = 0
        for cpu, (p, *_rest) in self.owner_of.items():
            if p == pool:
                m |= 1 << cpu
        return CPUSet.from_mask(m)

    def counts(self, cpus: CPUSet | None = None) -> PoolCounts:
        totals = dict.fromkeys(POOLS, 0)
        scope = self.all_cpus if cpus is None else cpus
        for cpu in scope:
            found = self.owner_of.get(cpu)
            totals[found[0] if found else "node-shared"] += 1
        return PoolCounts(
            total=scope.size(),
            reserved=totals["reserved"],
            node_shared=totals["node-shared"],
            pod_shared=totals["pod-shared"],
            exclusive=totals["exclusive"],
        )

    def legend(self, focus: str | None = None) -> list[LegendEntry]:
        by_owner: dict[str, int] = {}
        for cpu, (_pool, owner, *_rest) in self.owner_of.items():
            by_owner[owner] = by_owner.get(owner, 0) | (1 << cpu)
        entries: list[LegendEntry] = []
        reserved = CPUSet.from_mask(by_owner.get(OWNER_RESERVED, 0))
        if focus is None:
            entries.append(
                LegendEntry(
                    owner=OWNER_RESERVED,
                    pool="reserved",
                    tag="R",
                    label="reserved for the system (not allocatable)",
                    cpus=str(reserved),
                    count=reserved.size(),
                )
            )
            node_shared = self.cpus_of("node-shared")
            entries.append(
                LegendEntry(
                    owner=OWNER_NODE_SHARED,
                    pool="node-shared",
                    tag="",
                    label="node shared pool (BestEffort, Burstable and non-integral containers)",
                    cpus=str(node_shared),
                    count=node_shared.size(),
                )
            )
        for p in self.snapshot.pods:
            key = f"{p.namespace}/{p.name}"
            if focus is not None and key != focus:
                continue
            url = pod_url(self.node, p.namespace, p.name)
            shared = CPUSet.from_mask(by_owner.get(key, 0))
            if shared:
                entries.append(
                    LegendEntry(
                        owner=key,
                        pool="pod-shared",
                        tag=self.pod_tags[key],
                        label=f"{key} · pod shared pool",
                        colour=self.pod_colours[key],
                        cpus=str(shared),
                        count=shared.size(),
                        isolation="pod",
                        url=url,
                    )
                )
            for c in p.containers:
                tag = self.container_tags.get((key, c.name))
                if tag is None:
                    continue
                owner = f"{key}/{c.name}"
                cpus = CPUSet.from_mask(by_owner.get(owner, 0))
                if not cpus:
                    continue
                label = f"{key} · {c.name}"
                if c.kind == "init":
                    label += " (init; CPUs reused by later containers)"
                entries.append(
                    LegendEntry(
                        owner=owner,
                        pool="exclusive",
                        tag=tag,
                        label=label,
                        colour=self.pod_colours[key],
                        cpus=str(cpus),
                        count=cpus.size(),
                        isolation=c.isolation,
                        url=f"{url}#container-{quote(c.name, safe='')}",
                    )
                )
        return entries


def _memory_views(
    snapshot: NodeSnapshot, owners: _Owners, node: str
) -> dict[int, NodeNumaMemoryView]:
    topo = snapshot.topology
    out: dict[int, NodeNumaMemoryView] = {}
    if not snapshot.memory:
        for mem in topo.memory:
            resources = [
                MemoryResourceView(
                    resource="memory",
                    total=mem.regular_memory_bytes(),
                    system_reserved=0,
                    allocatable=mem.regular_memory_bytes(),
                    reserved=0,
                    free=mem.regular_memory_bytes(),
                )
            ]
            for size, pages in sorted(mem.hugepages.items()):
                resources.append(
                    MemoryResourceView(
                        resource=hugepage_resource_name(size),
                        total=size * pages,
                        system_reserved=0,
                        allocatable=size * pages,
                        reserved=0,
                        free=size * pages,
                    )
                )
            out[mem.numa_id] = NodeNumaMemoryView(
                numa_node=mem.numa_id, accounted=False, resources=resources
            )
        return out

    # Per pod, per (NUMA node, resource): charge blocks in ascending node order.
    reserved_left: dict[tuple[int, str], int] = {}
    for m in snapshot.memory:
        for name, t in m.memory_map.items():
            reserved_left[(m.numa_id, name)] = t.reserved
    use: dict[tuple[int, str], list[MemoryUse]] = {}
    for p in snapshot.pods:
        key = f"{p.namespace}/{p.name}"
        charged: dict[tuple[int, str], int] = {}
        for block in _pod_memory_blocks(p):
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
        for slot, size in charged.items():
            use.setdefault(slot, []).append(
                MemoryUse(
                    pod=key,
                    tag=owners.pod_tags[key],
                    colour=owners.pod_colours[key],
                    bytes=size,
                    url=pod_url(node, p.namespace, p.name),
                )
            )
    for m in snapshot.memory:
        resources = []
        names = sorted(m.memory_map, key=_resource_order)
        for name in names:
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


def _resource_order(name: str) -> tuple[int, str]:
    return (0 if name == "memory" else 1, name)


def build_map(
    snapshot: NodeSnapshot,
    owners: _Owners,
    node: str,
    *,
    cpu_map: CpuMap | None = None,
    memory: dict[int, NodeNumaMemoryView] | None = None,
    focus: str | None = None,
    numa_nodes: Sequence[int] | None = None,
) -> NodeMapView:
    """The map of the whole node, or (``numa_nodes``) of some of its NUMA nodes."""
    topo = snapshot.topology
    full = cpu_map if cpu_map is not None else build_cpu_map(topo)
    mem = memory if memory is not None else _memory_views(snapshot, owners, node)
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
        legend=owners.legend(focus),
        memory=mem,
        focus=focus,
    )


def _numa_pools(snapshot: NodeSnapshot, owners: _Owners) -> list[NumaPoolRow]:
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


def _container_row(
    snapshot: NodeSnapshot, owners: _Owners, key: str, c: ContainerAllocation
) -> ContainerRow:
    pool, runs_on = container_pool(snapshot, c)
    return ContainerRow(
        name=c.name,
        kind=c.kind,
        isolation=c.isolation,
        pool=pool,
        tag=owners.container_tags.get(
            (key, c.name), owners.pod_tags[key] if pool == "pod-shared" else ""
        ),
        runs_on=CpuSetView.of(runs_on),
        cpu_request_milli=c.cpu_request_milli,
        cpu_limit_milli=c.cpu_limit_milli,
        memory=[MemoryBlockView.of(b) for b in c.memory],
    )


def _budget(p: PodAllocation, requests: dict[str, int]) -> BudgetView | None:
    if p.pod_level_cpu_milli is None and not requests and not p.has_pod_entry:
        return None
    shared_memory: dict[str, int] = {}
    for b in p.pod_memory:
        shared_memory[b.type] = shared_memory.get(b.type, 0) + b.size
    if shared_memory:
        for c in p.containers:
            if c.kind == "init" or not _exclusive_memory(c):
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


def _exclusive_memory(c: ContainerAllocation) -> bool:
    """A container of a pod-level pod with its own memory slice (not the pod shared pool)."""
    return c.isolation == "container" or (bool(c.memory) and c.isolation != "pod")


def build_pod_row(
    snapshot: NodeSnapshot,
    owners: _Owners,
    node: str,
    p: PodAllocation,
    pod_memory_requests: dict[str, int],
) -> PodRow:
    key = f"{p.namespace}/{p.name}"
    topo = snapshot.topology
    cpus = _mask_of([p.pod_cpuset or CPUSet(), *(c.cpuset for c in p.containers)])
    if any(c.isolation == "host" for c in p.containers):
        held = _mask_of([p.pod_cpuset or CPUSet(), *(c.exclusive_cpus for c in p.containers)])
    else:
        held = cpus
    numa = set(topo.numa_nodes_of(held)) if held else set()
    for b in _pod_memory_blocks(p):
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
        budget=_budget(p, pod_memory_requests),
        exclusive_cpus=CpuSetView.of(p.exclusive_cpus()),
        numa_nodes=sorted(numa),
        containers=[_container_row(snapshot, owners, key, c) for c in p.containers],
        url=url,
        json_url=f"{url}.json",
    )


def node_topology_view(topo: CPUTopology, argument: str, kind: str) -> NodeTopologyView:
    return NodeTopologyView(
        name=topo.name,
        argument=argument,
        kind=kind,
        sockets=topo.num_sockets,
        numa_nodes=topo.num_numa_nodes,
        cores=topo.num_cores,
        cpus=topo.num_cpus,
        cpus_per_core=topo.cpus_per_core(),
        memory_bytes=topo.total_memory_bytes(),
        url=f"/topologies/{argument}" if kind == "preset" else None,
    )


def policies_of(snapshot: NodeSnapshot) -> NodePolicies:
    c = snapshot.config
    return NodePolicies(
        cpu_manager_policy=c.cpu_manager_policy,
        cpu_manager_policy_options=dict(c.cpu_manager_policy_options),
        memory_manager_policy=c.memory_manager_policy,
        topology_manager_policy=c.topology_manager_policy,
        topology_manager_scope=c.topology_manager_scope,
        pod_level_resources=c.gate("PodLevelResources"),
        pod_level_resource_managers=c.pod_level_resource_managers,
    )


class NodeViews:
    """Everything derived from one snapshot of one node, computed once."""

    def __init__(
        self,
        snapshot: NodeSnapshot,
        *,
        node: str,
        topology: NodeTopologyView,
        created_at: datetime,
        kubelet_config_text: str,
        demo: bool,
        pod_memory_requests: dict[str, dict[str, int]],
        simulated: bool = True,
        source: str = "simulation",
        pools: Pools | None = None,
        stale_uids: frozenset[str] = frozenset(),
        observation: ObservationView | None = None,
    ) -> None:
        """``simulated=False`` for an observed node: ``pools`` are then those its kubelet's
        PodResources answers imply, ``stale_uids`` flags pod rows, ``observation`` says where
        everything came from."""
        self.snapshot = snapshot
        self.simulated = simulated
        self.source = source
        self.observation = observation
        self.node = node
        self.owners = _Owners(snapshot, node)
        self.cpu_map = build_cpu_map(snapshot.topology)
        self.memory = _memory_views(snapshot, self.owners, node)
        self.map = build_map(snapshot, self.owners, node, cpu_map=self.cpu_map, memory=self.memory)
        self.pods = [
            build_pod_row(snapshot, self.owners, node, p, pod_memory_requests.get(p.uid, {}))
            for p in snapshot.pods
        ]
        if stale_uids or any(p.namespace == UID_ONLY_NAMESPACE for p in snapshot.pods):
            self.pods = [
                row.model_copy(
                    update={
                        "stale": row.uid in stale_uids,
                        "uid_only": row.namespace == UID_ONLY_NAMESPACE,
                    }
                )
                for row in self.pods
            ]
        self.topology = topology
        self.created_at = created_at
        self.kubelet_config_text = kubelet_config_text
        self.demo = demo
        self.counts = self.owners.counts()
        self._pools: dict[str, Any] | None = None if pools is None else pools.to_dict()
        self._numa_pools: list[NumaPoolRow] | None = None

    @property
    def pools(self) -> dict[str, Any]:
        if self._pools is None:
            self._pools = pools_from_snapshot(self.snapshot).to_dict()
        return self._pools

    @property
    def numa_pools(self) -> list[NumaPoolRow]:
        if self._numa_pools is None:
            self._numa_pools = _numa_pools(self.snapshot, self.owners)
        return self._numa_pools

    def summary(self, *, rejected: int, load_error: str | None) -> NodeSummary:
        url = node_url(self.node)
        return NodeSummary(
            name=self.node,
            simulated=self.simulated,
            source=self.source,
            demo=self.demo,
            release=self.snapshot.config.release,
            topology=self.topology,
            policies=policies_of(self.snapshot),
            cpus=self.counts,
            pods=len(self.snapshot.pods),
            rejected=rejected,
            created_at=iso(self.created_at),
            load_error=load_error,
            url=url,
            json_url=f"{url}.json",
            api_url=f"/api/v1{url}",
        )

    def node_view(self, summary: NodeSummary) -> NodeView:
        return NodeView(
            summary=summary,
            observed_at=iso(self.snapshot.observed_at),
            kubelet_config=self.snapshot.config.to_dict(),
            kubelet_config_text=self.kubelet_config_text,
            map=self.map,
            pools=self.pools,
            numa_pools=self.numa_pools,
            pods=self.pods,
            observation=self.observation,
        )

    def pod_row(self, namespace: str, name: str) -> PodRow | None:
        for row in self.pods:
            if row.namespace == namespace and row.name == name:
                return row
        return None

    def pod_view(self, summary: NodeSummary, row: PodRow, podresources: dict[str, Any]) -> PodView:
        p = self.snapshot.pod(row.namespace, row.name)
        assert p is not None
        parts: list[BudgetPart] = []
        for c in p.containers:
            tag = self.owners.container_tags.get((row.key, c.name))
            if tag is None:
                continue
            mem: dict[str, int] = {}
            for b in c.memory:
                mem[b.type] = mem.get(b.type, 0) + b.size
            parts.append(
                BudgetPart(
                    part="exclusive",
                    label=f"exclusive slice of {c.name}",
                    tag=tag,
                    containers=[c.name],
                    cpus=CpuSetView.of(c.cpuset),
                    memory=mem,
                )
            )
        pod_shared = [c.name for c in p.containers if c.isolation == "pod"]
        shared_cpus = p.shared_pool()
        shared_mem = row.budget.pod_shared_memory if row.budget else {}
        if p.has_pod_entry:
            parts.append(
                BudgetPart(
                    part="pod-shared",
                    label="pod shared pool",
                    tag=row.tag,
                    containers=pod_shared,
                    cpus=CpuSetView.of(shared_cpus),
                    memory=shared_mem,
                )
            )
        node_shared = [c.name for c in p.containers if c.isolation == "host"]
        if node_shared:
            parts.append(
                BudgetPart(
                    part="node-shared",
                    label="node shared pool",
                    tag="",
                    containers=node_shared,
                    cpus=CpuSetView.of(self.snapshot.default_cpuset),
                    memory={},
                )
            )
        numa = row.numa_nodes or self.snapshot.topology.numa_node_ids()
        pod_map = build_map(
            self.snapshot,
            self.owners,
            self.node,
            cpu_map=self.cpu_map,
            memory=self.memory,
            focus=row.key,
            numa_nodes=numa,
        )
        return PodView(
            node=summary,
            observed_at=iso(self.snapshot.observed_at),
            pod=row,
            parts=parts,
            map=pod_map,
            podresources=podresources,
        )

    def metric_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """``(series, labels, value)`` of users.md §5.4 for this node (``node`` label first)."""
        node = self.node
        topo = self.snapshot.topology
        by_pool = {pool: self.owners.cpus_of(pool) for pool in POOLS}
        for n in topo.numa_node_ids():
            cpus = topo.cpus_of_numa_node(n)
            for pool in POOLS:
                yield (
                    "cpus",
                    {"node": node, "numa_node": str(n), "pool": pool.replace("-", "_")},
                    float((by_pool[pool] & cpus).size()),
                )
        for p in self.snapshot.pods:
            key = f"{p.namespace}/{p.name}"
            for c in p.containers:
                if (key, c.name) not in self.owners.container_tags:
                    continue
                for n in topo.numa_nodes_of(c.cpuset):
                    yield (
                        "container_exclusive_cpus",
                        {
                            "node": node,
                            "namespace": p.namespace,
                            "pod": p.name,
                            "container": c.name,
                            "numa_node": str(n),
                        },
                        float((c.cpuset & topo.cpus_of_numa_node(n)).size()),
                    )
            if p.pod_cpuset is not None:
                exclusive = p.exclusive_cpus() & p.pod_cpuset
                for part, cpus in (("exclusive", exclusive), ("pod_shared", p.shared_pool())):
                    yield (
                        "pod_budget_cpus",
                        {"node": node, "namespace": p.namespace, "pod": p.name, "part": part},
                        float(cpus.size()),
                    )
        for mem in self.memory.values():
            if not mem.accounted:
                continue
            for r in mem.resources:
                for state, value in (
                    ("total", r.total),
                    ("system_reserved", r.system_reserved),
                    ("allocatable", r.allocatable),
                    ("reserved", r.reserved),
                    ("free", r.free),
                ):
                    yield (
                        "numa_memory_bytes",
                        {
                            "node": node,
                            "numa_node": str(mem.numa_node),
                            "resource": r.resource,
                            "state": state,
                        },
                        float(value),
                    )

"""Who owns each CPU of a snapshot (one pass over its pods), the pods' tags and colours, the
map's cells and legend, and the small helpers every node view uses (URLs, times).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from urllib.parse import quote

from app.domain.cpuset import CPUSet
from app.domain.snapshot import ContainerAllocation, MemoryBlock, NodeSnapshot, PodAllocation
from app.services.node_views.models import (
    OWNER_NODE_SHARED,
    OWNER_RESERVED,
    PALETTE_SIZE,
    POOLS,
    CpuCell,
    LegendEntry,
    Pool,
    PoolCounts,
)

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


@lru_cache(maxsize=4096)
def node_url(node: str) -> str:
    return f"/nodes/{quote(node, safe='')}"


# Every view rebuild asks again for each pod (rows, map cells, legend, log): quoting is a
# good part of a rebuild, and the answer never changes.
@lru_cache(maxsize=65536)
def pod_url(node: str, namespace: str, name: str) -> str:
    return f"{node_url(node)}/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"


def iso(value: datetime | float) -> str:
    if isinstance(value, float | int):
        from datetime import UTC

        value = datetime.fromtimestamp(float(value), UTC)
    return value.isoformat(timespec="seconds").replace("+00:00", "Z")


def mask_of(sets: Iterable[CPUSet]) -> CPUSet:
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


def pod_memory_blocks(p: PodAllocation) -> tuple[MemoryBlock, ...]:
    if p.pod_memory:
        return p.pod_memory
    return tuple(b for c in p.containers if c.kind != "init" for b in c.memory)


# -- building ------------------------------------------------------------------------------


class Owners:
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
        return self._pod_cell(cpu, where, pool, owner, pod, container, isolation)

    def _pod_cell(
        self,
        cpu: int,
        where: str,
        pool: Pool,
        owner: str,
        pod: str,
        container: str | None,
        isolation: str | None,
    ) -> CpuCell:
        """A CPU of a pod: in its shared pool, or exclusive to one of its containers."""
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
            return self.all_cpus - mask_of(self._pool_sets(p) for p in POOLS if p != pool)
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

    def legend(
        self, focus: str | None = None, focus_pools: Sequence[Pool] = ()
    ) -> list[LegendEntry]:
        """An entry per owner of CPUs: the node-wide pools, then each pod's shared pool and
        exclusive containers; ``focus`` (a pod key) keeps that pod and the node-wide pools
        of ``focus_pools``, which its containers run on."""
        by_owner: dict[str, int] = {}
        for cpu, (_pool, owner, *_rest) in self.owner_of.items():
            by_owner[owner] = by_owner.get(owner, 0) | (1 << cpu)
        entries = self._node_pool_entries(by_owner, focus, focus_pools)
        for p in self.snapshot.pods:
            if focus is None or f"{p.namespace}/{p.name}" == focus:
                entries.extend(self._pod_entries(p, by_owner))
        return entries

    def _node_pool_entries(
        self, by_owner: dict[str, int], focus: str | None, focus_pools: Sequence[Pool]
    ) -> list[LegendEntry]:
        entries: list[LegendEntry] = []
        reserved = CPUSet.from_mask(by_owner.get(OWNER_RESERVED, 0))
        node_shared = self.cpus_of("node-shared")
        if focus is None:
            reserved_label = "reserved for the system (not allocatable)"
            shared_label = "node shared pool (BestEffort, Burstable and non-integral containers)"
        else:
            # A pod's page lists only the node-wide pools its containers run on.
            reserved = reserved & self.snapshot.default_cpuset
            reserved_label = (
                "reserved CPUs: not allocatable, but in the kubelet's default cpuset "
                "(no strict-cpu-reservation), so this pod's node-shared containers run on them too"
            )
            shared_label = "node shared pool (this pod's containers with isolation host)"
        if focus is None or "reserved" in focus_pools:
            entries.append(_pool_entry(OWNER_RESERVED, "reserved", "R", reserved_label, reserved))
        if focus is None or "node-shared" in focus_pools:
            entries.append(
                _pool_entry(OWNER_NODE_SHARED, "node-shared", "", shared_label, node_shared)
            )
        return entries

    def _pod_entries(self, p: PodAllocation, by_owner: dict[str, int]) -> list[LegendEntry]:
        """The pod's shared pool (when it has CPUs), then its containers with exclusive CPUs."""
        key = f"{p.namespace}/{p.name}"
        url = pod_url(self.node, p.namespace, p.name)
        shared = CPUSet.from_mask(by_owner.get(key, 0))
        entries = [self._pod_shared_entry(key, url, shared)] if shared else []
        for c in p.containers:
            tag = self.container_tags.get((key, c.name))
            cpus = CPUSet.from_mask(by_owner.get(f"{key}/{c.name}", 0))
            if tag is None or not cpus:
                continue
            label = f"{key} · {c.name}"
            if c.kind == "init":
                label += " (init; CPUs reused by later containers)"
            entries.append(
                LegendEntry(
                    owner=f"{key}/{c.name}",
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

    def _pod_shared_entry(self, key: str, url: str, shared: CPUSet) -> LegendEntry:
        return LegendEntry(
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


def _pool_entry(owner: str, pool: Pool, tag: str, label: str, cpus: CPUSet) -> LegendEntry:
    """A legend entry of one of the node-wide pools (reserved, node shared)."""
    return LegendEntry(
        owner=owner, pool=pool, tag=tag, label=label, cpus=str(cpus), count=cpus.size()
    )

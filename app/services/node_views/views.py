"""``NodeViews``: everything derived from one snapshot of one node, computed once per version."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import cached_property
from typing import Any

from app.domain.observed import UID_ONLY_NAMESPACE
from app.domain.pools import Pools, pools_from_snapshot
from app.domain.snapshot import NodeSnapshot, PodAllocation
from app.domain.topology.model import CPUTopology
from app.services.encoded_json import EncodedMemo
from app.services.node_views.cpu_map import (
    build_map,
    memory_views,
    numa_pools_of,
)
from app.services.node_views.models import (
    POOLS,
    BudgetPart,
    CpuSetView,
    NodeMapView,
    NodeNumaMemoryView,
    NodePolicies,
    NodeSummary,
    NodeTopologyView,
    NodeView,
    NumaPoolRow,
    ObservationView,
    PodRow,
    PodView,
    Pool,
)
from app.services.node_views.owners import (
    Owners,
    iso,
    node_url,
)
from app.services.node_views.pods import (
    build_pod_row,
)
from app.services.topologies import CpuMap, build_cpu_map


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
        self.owners = Owners(snapshot, node)
        self._pod_memory_requests = pod_memory_requests
        self._stale_uids = stale_uids
        self.topology = topology
        self.created_at = created_at
        self.kubelet_config_text = kubelet_config_text
        self.demo = demo
        self.counts = self.owners.counts()
        # JSON answers of this version, encoded once (app.services.encoded_json).
        self.encoded = EncodedMemo()
        self._pools: dict[str, Any] | None = None if pools is None else pools.to_dict()
        self._numa_pools: list[NumaPoolRow] | None = None

    # The map, the memory per NUMA node and the pod rows are built on first use: the summary
    # and metrics a hub and Prometheus ask for need none of the map's cells or the pod rows,
    # so an idle node agent never builds them (about 2 MiB on a 512-CPU node with 200 pods,
    # issue 20 pt 7). Built at most once each (the views of a version never change).
    @cached_property
    def cpu_map(self) -> CpuMap:
        return build_cpu_map(self.snapshot.topology)

    @cached_property
    def memory(self) -> dict[int, NodeNumaMemoryView]:
        return memory_views(self.snapshot, self.owners, self.node)

    @cached_property
    def map(self) -> NodeMapView:
        return build_map(
            self.snapshot, self.owners, self.node, cpu_map=self.cpu_map, memory=self.memory
        )

    @cached_property
    def pods(self) -> list[PodRow]:
        """A row per pod; an observed node flags the pods its kubelet no longer runs and
        those known by uid only."""
        pod_memory_requests, stale_uids = self._pod_memory_requests, self._stale_uids
        snapshot = self.snapshot
        rows = [
            build_pod_row(snapshot, self.owners, self.node, p, pod_memory_requests.get(p.uid, {}))
            for p in snapshot.pods
        ]
        if not stale_uids and all(p.namespace != UID_ONLY_NAMESPACE for p in snapshot.pods):
            return rows
        return [
            row.model_copy(
                update={
                    "stale": row.uid in stale_uids,
                    "uid_only": row.namespace == UID_ONLY_NAMESPACE,
                }
            )
            for row in rows
        ]

    @property
    def pools(self) -> dict[str, Any]:
        if self._pools is None:
            self._pools = pools_from_snapshot(self.snapshot).to_dict()
        return self._pools

    @property
    def numa_pools(self) -> list[NumaPoolRow]:
        if self._numa_pools is None:
            self._numa_pools = numa_pools_of(self.snapshot, self.owners)
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
        """One pod's page: the parts of its budget (exclusive slices, pod shared pool, node
        shared pool) and the map of the NUMA nodes it uses."""
        p = self.snapshot.pod(row.namespace, row.name)
        assert p is not None
        parts = self._exclusive_parts(p, row.key)
        if p.has_pod_entry:
            parts.append(
                BudgetPart(
                    part="pod-shared",
                    label="pod shared pool",
                    tag=row.tag,
                    containers=[c.name for c in p.containers if c.isolation == "pod"],
                    cpus=CpuSetView.of(p.shared_pool()),
                    memory=row.budget.pod_shared_memory if row.budget else {},
                )
            )
        focus_pools = self._node_shared_part(p, parts)
        pod_map = build_map(
            self.snapshot,
            self.owners,
            self.node,
            cpu_map=self.cpu_map,
            memory=self.memory,
            focus=row.key,
            numa_nodes=row.numa_nodes or self.snapshot.topology.numa_node_ids(),
            focus_pools=focus_pools,
        )
        return PodView(
            node=summary,
            observed_at=iso(self.snapshot.observed_at),
            pod=row,
            parts=parts,
            map=pod_map,
            podresources=podresources,
        )

    def _exclusive_parts(self, p: PodAllocation, key: str) -> list[BudgetPart]:
        """The exclusive slice of each container that has one, with its memory by type."""
        parts: list[BudgetPart] = []
        for c in p.containers:
            tag = self.owners.container_tags.get((key, c.name))
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
        return parts

    def _node_shared_part(self, p: PodAllocation, parts: list[BudgetPart]) -> list[Pool]:
        """Add the node shared pool to ``parts`` when some container runs there; the node-wide
        pools the pod's map shows."""
        node_shared = [c.name for c in p.containers if c.isolation == "host"]
        if not node_shared:
            return []
        # One meaning of "node shared pool" everywhere (the node page's set); the reserved
        # CPUs a host container also runs on are named as such.
        reserved_too = self.snapshot.default_cpuset & self.snapshot.reserved_cpus
        parts.append(
            BudgetPart(
                part="node-shared",
                label="node shared pool",
                tag="",
                containers=node_shared,
                cpus=CpuSetView.of(self.owners.cpus_of("node-shared")),
                memory={},
                also_reserved=CpuSetView.of(reserved_too) if reserved_too else None,
            )
        )
        return ["node-shared", "reserved"] if reserved_too else ["node-shared"]

    def metric_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """``(series, labels, value)`` of users.md §5.4 for this node (``node`` label first)."""
        yield from self._cpu_samples()
        for p in self.snapshot.pods:
            yield from self._pod_samples(p)
        yield from self._memory_samples()

    def _cpu_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """CPUs per NUMA node and pool."""
        topo = self.snapshot.topology
        by_pool = {pool: self.owners.cpus_of(pool) for pool in POOLS}
        for n in topo.numa_node_ids():
            cpus = topo.cpus_of_numa_node(n)
            for pool in POOLS:
                yield (
                    "cpus",
                    {"node": self.node, "numa_node": str(n), "pool": pool.replace("-", "_")},
                    float((by_pool[pool] & cpus).size()),
                )

    def _pod_samples(self, p: PodAllocation) -> Iterable[tuple[str, dict[str, str], float]]:
        """A pod's exclusive CPUs per container and NUMA node, and its budget's parts."""
        topo = self.snapshot.topology
        key = f"{p.namespace}/{p.name}"
        for c in p.containers:
            if (key, c.name) not in self.owners.container_tags:
                continue
            for n in topo.numa_nodes_of(c.cpuset):
                yield (
                    "container_exclusive_cpus",
                    {
                        "node": self.node,
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
                    {"node": self.node, "namespace": p.namespace, "pod": p.name, "part": part},
                    float(cpus.size()),
                )

    def _memory_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """Memory and hugepages per NUMA node and state, where the memory manager accounts."""
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
                            "node": self.node,
                            "numa_node": str(mem.numa_node),
                            "resource": r.resource,
                            "state": state,
                        },
                        float(value),
                    )

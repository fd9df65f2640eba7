"""The view models of simulated and observed nodes: the values the node pages, their JSON
twins and the API show (pydantic, camelCase JSON).
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.domain.cpuset import CPUSet
from app.domain.snapshot import MemoryBlock
from app.services.topologies import CpuMap

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
        return _cpuset_view(cpus)


@functools.lru_cache(maxsize=8192)
def _cpuset_view(cpus: CPUSet) -> CpuSetView:
    # Views are frozen, so one per set can be shared: every Burstable container of a node
    # shows the same node shared pool, a list of hundreds of ids validated once, not per row.
    return CpuSetView(cpus=str(cpus), cpu_ids=list(cpus))


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
    # The pod the map is about (``namespace/name``); other owners are drawn dimmed, except the
    # pools the pod's own containers run in (``node-shared``, and ``reserved`` when the
    # kubelet's default cpuset includes the reserved CPUs).
    focus: str | None = None
    focus_pools: list[Pool] = Field(default=[], exclude_if=lambda v: not v)


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
    # The CPUs the container runs on: its slice, its pod's shared pool or the node shared pool
    # (for ``host`` isolation the kubelet's default cpuset, which also holds the reserved CPUs
    # unless strict-cpu-reservation is on: those are ``also_reserved``).
    runs_on: CpuSetView
    also_reserved: CpuSetView | None = Field(default=None, exclude_if=lambda v: v is None)
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
    seq: int  # its number in the node's own log: the address of its rejection page
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
    # node-shared: the reserved CPUs its containers also run on (see ContainerRow).
    also_reserved: CpuSetView | None = Field(default=None, exclude_if=lambda v: v is None)


class PodView(_View):
    node: NodeSummary
    observed_at: str
    pod: PodRow
    parts: list[BudgetPart]
    map: NodeMapView
    podresources: dict[str, Any]
    admissions: list[AdmissionLogEntry] = []

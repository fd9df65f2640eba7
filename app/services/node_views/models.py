"""The view models of simulated and observed nodes: the values the node pages, their JSON
twins and the API show (pydantic, camelCase JSON).

They are also the **node view contract** (issue 18 §4): a hub serving a remote agent's node
(``app.services.nodes.remote``) validates the agent's answer with the model the agent built it
with, so every field is bounded (``app.contracts.base``: integers a JSON reader holds exactly,
strings, lists and maps of bounded size, free-form parts bounded in depth, no ``NaN``).
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.contracts.base import MAX_ITEMS, MAX_NAME, MAX_STRING, WIRE_CONFIG, FreeForm, Int
from app.domain.cpuset import CPUSet
from app.domain.snapshot import MemoryBlock
from app.services.topologies import CpuMap

Pool = Literal["reserved", "node-shared", "pod-shared", "exclusive"]
POOLS: tuple[Pool, ...] = ("reserved", "node-shared", "pod-shared", "exclusive")
PALETTE_SIZE = 12

OWNER_RESERVED = "reserved"
OWNER_NODE_SHARED = "node-shared"


class _View(BaseModel):
    # defer_build: validators are built on first use, not at import: an idle node agent
    # builds only its summary's (issue 20 pt 7).
    model_config = WIRE_CONFIG | ConfigDict(str_max_length=MAX_STRING, defer_build=True)


#: A name or key of a view (``namespace/name/container``: three Kubernetes names).
Key = Annotated[str, StringConstraints(max_length=3 * MAX_NAME + 2)]
#: The items of one list or map of a view.
Items = Field(max_length=MAX_ITEMS)


# -- small values --------------------------------------------------------------------------


class CpuSetView(_View):
    """A CPU set as the Linux list string and the ids (users.md §5.1)."""

    cpus: str
    cpu_ids: Annotated[list[Int], Items]

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

    numa_affinity: Annotated[list[Int], Items]
    type: str
    size: Int

    @classmethod
    def of(cls, block: MemoryBlock) -> MemoryBlockView:
        return cls(numa_affinity=list(block.numa_affinity), type=block.type, size=block.size)


class PoolCounts(_View):
    total: Int = 0
    reserved: Int = 0
    node_shared: Int = 0
    pod_shared: Int = 0
    exclusive: Int = 0


# -- the CPU map -------------------------------------------------------------------------


class CpuCell(_View):
    id: Int
    pool: Pool
    owner: Key
    tag: str = ""
    colour: Int | None = None
    pod: Key | None = None
    container: Key | None = None
    isolation: str | None = None
    url: str | None = None
    title: str = ""


class LegendEntry(_View):
    owner: Key
    pool: Pool
    tag: str
    label: str
    colour: Int | None = None
    cpus: str = ""
    count: Int = 0
    isolation: str | None = None
    url: str | None = None


class MemoryUse(_View):
    pod: Key
    tag: str
    colour: Int
    bytes: Int
    url: str


class MemoryResourceView(_View):
    resource: str
    total: Int
    system_reserved: Int
    allocatable: Int
    reserved: Int
    free: Int
    by_pod: Annotated[list[MemoryUse], Items] = []


class NodeNumaMemoryView(_View):
    numa_node: Int
    # False when the memory manager policy is None: only the machine's sizes are known.
    accounted: bool
    resources: Annotated[list[MemoryResourceView], Items]


class NodeMapView(_View):
    """The CPU map of a node (or of the NUMA nodes one pod uses): nesting, owners, legend."""

    cpus: Int
    cpu_map: CpuMap
    cells: Annotated[dict[Int, CpuCell], Items]
    legend: Annotated[list[LegendEntry], Items]
    memory: Annotated[dict[Int, NodeNumaMemoryView], Items]
    # The pod the map is about (``namespace/name``); other owners are drawn dimmed, except the
    # pools the pod's own containers run in (``node-shared``, and ``reserved`` when the
    # kubelet's default cpuset includes the reserved CPUs).
    focus: str | None = None
    focus_pools: Annotated[list[Pool], Items] = Field(default=[], exclude_if=lambda v: not v)


class NumaPoolRow(_View):
    numa_node: Int
    cpus: CpuSetView
    reserved: CpuSetView
    node_shared: CpuSetView
    pod_shared: CpuSetView
    exclusive: CpuSetView
    counts: PoolCounts
    # allocatable minus exclusively held (podresources.md §7: pod budgets and slices)
    available: Int


# -- pods --------------------------------------------------------------------------------


class ContainerRow(_View):
    name: Key
    kind: str
    isolation: str
    pool: Pool
    tag: str = ""
    # The CPUs the container runs on: its slice, its pod's shared pool or the node shared pool
    # (for ``host`` isolation the kubelet's default cpuset, which also holds the reserved CPUs
    # unless strict-cpu-reservation is on: those are ``also_reserved``).
    runs_on: CpuSetView
    also_reserved: CpuSetView | None = Field(default=None, exclude_if=lambda v: v is None)
    cpu_request_milli: Int
    cpu_limit_milli: Int
    memory: Annotated[list[MemoryBlockView], Items]


class BudgetView(_View):
    """The pod-level resources (``spec.resources``) and how the budget is split."""

    cpu_milli: Int | None
    cpu: str  # the pod-level cpu request as people write it ("4", "2500m"), "" if none
    memory: Annotated[dict[str, Int], Items]
    cpus: CpuSetView | None
    exclusive: CpuSetView
    pod_shared: CpuSetView
    memory_blocks: Annotated[list[MemoryBlockView], Items]
    pod_shared_memory: Annotated[dict[str, Int], Items]


class PodRow(_View):
    uid: Key
    namespace: Key
    name: Key
    key: Key
    tag: str
    colour: Int
    qos_class: str
    admitted_at: float
    budget: BudgetView | None
    exclusive_cpus: CpuSetView
    numa_nodes: Annotated[list[Int], Items]
    containers: Annotated[list[ContainerRow], Items]
    url: str
    json_url: str
    # Observed nodes: a checkpoint entry of a pod the node no longer has (kubernetes#129819),
    # and a pod known by its UID only (namespace ``~``, name = UID).
    stale: bool = Field(default=False, exclude_if=lambda v: not v)
    uid_only: bool = Field(default=False, exclude_if=lambda v: not v)


# -- node --------------------------------------------------------------------------------


class NodePolicies(_View):
    cpu_manager_policy: str
    cpu_manager_policy_options: Annotated[dict[str, str], Items]
    memory_manager_policy: str
    topology_manager_policy: str
    topology_manager_scope: str
    pod_level_resources: bool
    pod_level_resource_managers: bool


class NodeTopologyView(_View):
    name: Key
    argument: str
    kind: str  # "preset" | "spec"
    sockets: Int
    numa_nodes: Int
    cores: Int
    cpus: Int
    cpus_per_core: Int
    memory_bytes: Int
    url: str | None


class NodeSummary(_View):
    name: Key
    simulated: bool = True
    source: str = "simulation"
    demo: bool = False
    release: str
    topology: NodeTopologyView
    policies: NodePolicies
    cpus: PoolCounts
    pods: Int
    rejected: Int
    created_at: str
    load_error: str | None = None
    url: str
    json_url: str
    api_url: str


class AdmissionLogEntry(_View):
    id: Int
    seq: Int  # its number in the node's own log: the address of its rejection page
    batch: Key
    action: str  # admit | dry-run | remove
    namespace: Key
    name: Key
    uid: Key
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
    sources: Annotated[list[FreeForm], Items]
    files: Annotated[list[FreeForm], Items]
    pods: Annotated[list[FreeForm], Items]
    stale: Annotated[list[FreeForm], Items]
    errors: Annotated[list[dict[str, str]], Items]
    notes: Annotated[list[str], Items]
    config_path: str | None = None
    config_inferred: bool = False
    pod_dirs: Int | None = None


class _NodeHead(_View):
    # Both node documents start with these fields, in this order.
    summary: NodeSummary
    observed_at: str
    kubelet_config: FreeForm


class NodeView(_NodeHead):
    kubelet_config_text: str
    map: NodeMapView
    pools: FreeForm
    numa_pools: Annotated[list[NumaPoolRow], Items]
    pods: Annotated[list[PodRow], Items]
    admissions: Annotated[list[AdmissionLogEntry], Items] = []
    # Entries of the submission named by ``?batch=`` (the form's result after a redirect).
    last_batch: Annotated[list[AdmissionLogEntry], Items] = []
    # Observed nodes only: the sources, state files, identities and stale entries.
    observation: ObservationView | None = Field(default=None, exclude_if=lambda v: v is None)


class NodeDetail(_NodeHead):
    """``GET /api/v1/nodes/{node}``: the node without its drawing."""

    pools: FreeForm
    numa_pools: Annotated[list[NumaPoolRow], Items]
    memory: Annotated[list[NodeNumaMemoryView], Items]
    pods: Annotated[list[PodRow], Items]
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
    nodes: Annotated[list[NodeSummary], Items]
    presets: Annotated[list[str], Items] = []
    releases: Annotated[list[str], Items] = []


class BudgetPart(_View):
    """One row of a pod's breakdown: an exclusive slice, the pod shared pool, or the node
    shared pool some containers run in."""

    part: Literal["exclusive", "pod-shared", "node-shared"]
    label: str
    tag: str
    containers: Annotated[list[str], Items]
    cpus: CpuSetView
    memory: Annotated[dict[str, Int], Items]
    # node-shared: the reserved CPUs its containers also run on (see ContainerRow).
    also_reserved: CpuSetView | None = Field(default=None, exclude_if=lambda v: v is None)


class PodView(_View):
    node: NodeSummary
    observed_at: str
    pod: PodRow
    parts: Annotated[list[BudgetPart], Items]
    map: NodeMapView
    podresources: FreeForm
    admissions: Annotated[list[AdmissionLogEntry], Items] = []

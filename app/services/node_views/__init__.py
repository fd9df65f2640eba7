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

from app.services.node_views.cpu_map import (
    build_map,
    memory_views,
    numa_pools_of,
    resource_order,
)
from app.services.node_views.models import (
    OWNER_NODE_SHARED,
    OWNER_RESERVED,
    PALETTE_SIZE,
    POOLS,
    AdmissionLogEntry,
    BudgetPart,
    BudgetView,
    ContainerRow,
    CpuCell,
    CpuSetView,
    LegendEntry,
    MemoryBlockView,
    MemoryResourceView,
    MemoryUse,
    NodeDetail,
    NodeIndexView,
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
    PoolCounts,
)
from app.services.node_views.owners import (
    Owners,
    container_pool,
    iso,
    mask_of,
    node_url,
    palette_index,
    pod_memory_blocks,
    pod_tag,
    pod_url,
)
from app.services.node_views.pods import (
    budget_view,
    build_pod_row,
    container_row,
    exclusive_memory,
)
from app.services.node_views.views import (
    NodeViews,
    node_topology_view,
    policies_of,
)

__all__ = [
    "OWNER_NODE_SHARED",
    "OWNER_RESERVED",
    "PALETTE_SIZE",
    "POOLS",
    "AdmissionLogEntry",
    "BudgetPart",
    "BudgetView",
    "ContainerRow",
    "CpuCell",
    "CpuSetView",
    "LegendEntry",
    "MemoryBlockView",
    "MemoryResourceView",
    "MemoryUse",
    "NodeDetail",
    "NodeIndexView",
    "NodeMapView",
    "NodeNumaMemoryView",
    "NodePolicies",
    "NodeSummary",
    "NodeTopologyView",
    "NodeView",
    "NodeViews",
    "NumaPoolRow",
    "ObservationView",
    "Owners",
    "PodRow",
    "PodView",
    "Pool",
    "PoolCounts",
    "budget_view",
    "build_map",
    "build_pod_row",
    "container_pool",
    "container_row",
    "exclusive_memory",
    "iso",
    "mask_of",
    "memory_views",
    "node_topology_view",
    "node_url",
    "numa_pools_of",
    "palette_index",
    "pod_memory_blocks",
    "pod_tag",
    "pod_url",
    "policies_of",
    "resource_order",
]

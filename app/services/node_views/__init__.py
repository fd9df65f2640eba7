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

# What other packages take from here; the rest is imported from its own module.
from app.services.node_views.models import (
    PALETTE_SIZE,
    AdmissionLogEntry,
    NodeDetail,
    NodeIndexView,
    NodeMapView,
    NodeSummary,
    NodeView,
    NumaPoolRow,
    ObservationView,
    PodRow,
    PodView,
)
from app.services.node_views.owners import iso, node_url, palette_index, pod_tag, pod_url
from app.services.node_views.views import NodeViews, node_topology_view

__all__ = [
    "PALETTE_SIZE",
    "AdmissionLogEntry",
    "NodeDetail",
    "NodeIndexView",
    "NodeMapView",
    "NodeSummary",
    "NodeView",
    "NodeViews",
    "NumaPoolRow",
    "ObservationView",
    "PodRow",
    "PodView",
    "iso",
    "node_topology_view",
    "node_url",
    "palette_index",
    "pod_tag",
    "pod_url",
]

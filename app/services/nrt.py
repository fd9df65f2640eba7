"""A node as a ``topology.node.k8s.io/v1alpha2`` ``NodeResourceTopology``: the object
node-feature-discovery's topology-updater publishes and the topology-aware scheduler plugin
reads (types: k8stopologyawareschedwg/noderesourcetopology-api
``pkg/apis/topology/v1alpha2/types.go``; cluster-scoped, plural ``noderesourcetopologies``).

One zone ``node-N`` of type ``Node`` per NUMA node (memory-only nodes included, without a
``cpu`` resource), with:

* ``costs``: the NUMA distance (SLIT) from this node to every NUMA node, named after their
  zones, as the topology-updater fills them;
* ``resources``: ``cpu``, ``memory`` and ``hugepages-<size>`` with ``capacity`` (the machine's),
  ``allocatable`` (capacity minus the reserved CPUs / the memory reserved by the kubelet) and
  ``available``. For ``cpu`` that is the node JSON's ``numaPools[].available``: allocatable CPUs
  minus pod-level budgets and exclusive slices, so CPUs inside a pod's budget but outside its
  exclusive containers are not counted free (the case exporters that only sum container
  assignments miscount). For memory it is the memory manager's ``free`` (allocatable when the
  manager's policy is ``None``, which does not account per NUMA node).

``attributes`` name the topology manager policy and scope (``topologyManagerPolicy``,
``topologyManagerScope``, the names NFD uses) and carry the pod-set fingerprint
(``nodeTopologyPodsFingerprint`` and ``nodeTopologyPodsFingerprintMethod``, also the
``topology.node.k8s.io/fingerprint`` annotation, as resource-topology-exporter publishes them):
the scheduler's cache trusts the object only once it reflects the pods the scheduler placed.
``topologyPolicies`` keeps the deprecated single-string form older schedulers read.
"""

from __future__ import annotations

from typing import Any

from app.adapters.nrt_publisher import GROUP, KIND, VERSION
from app.domain import podfingerprint
from app.domain.podresources import build_list_response
from app.services.node_views import NodeViews

# The NRT API's TopologyManagerPolicy values: the policy's word, then the scope's level
# (noderesourcetopology-api, pkg/apis/topology/v1alpha1/types.go).
_POLICY_WORDS = {
    "single-numa-node": "SingleNUMANode",
    "restricted": "Restricted",
    "best-effort": "BestEffort",
}
_SCOPE_WORDS = {"container": "ContainerLevel", "pod": "PodLevel"}


def zone_name(numa: int) -> str:
    return f"node-{numa}"


def topology_policy(policy: str, scope: str) -> str:
    """The deprecated ``topologyPolicies`` value (``None`` for policy ``none``)."""
    if policy not in _POLICY_WORDS or scope not in _SCOPE_WORDS:
        return "None"
    return _POLICY_WORDS[policy] + _SCOPE_WORDS[scope]


def build_nrt(
    views: NodeViews, fingerprint_method: str = podfingerprint.METHOD_ALL
) -> dict[str, Any]:
    """The object for ``views``; ``fingerprint_method`` chooses which pods the fingerprint counts."""
    snapshot = views.snapshot
    topo = snapshot.topology
    config = snapshot.config
    # Memory-only NUMA nodes (CXL expanders, HBM) are zones too: memory, no cpu resource.
    ids = topo.all_numa_node_ids()
    zones = [
        {
            "name": zone_name(n),
            "type": "Node",
            "costs": [{"name": zone_name(m), "value": topo.distance(n, m)} for m in ids],
            "resources": _zone_resources(views, n),
        }
        for n in ids
    ]
    pods = build_list_response(snapshot).pod_resources
    fingerprint = podfingerprint.fingerprint(pods, fingerprint_method)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {
            "name": views.node,
            "labels": {"app.kubernetes.io/managed-by": "numascope"},
            "annotations": {podfingerprint.ANNOTATION: fingerprint},
        },
        "topologyPolicies": [
            topology_policy(config.topology_manager_policy, config.topology_manager_scope)
        ],
        "zones": zones,
        "attributes": [
            {"name": "topologyManagerPolicy", "value": config.topology_manager_policy},
            {"name": "topologyManagerScope", "value": config.topology_manager_scope},
            {"name": podfingerprint.ATTRIBUTE, "value": fingerprint},
            {"name": podfingerprint.ATTRIBUTE_METHOD, "value": fingerprint_method},
        ],
    }


def _zone_resources(views: NodeViews, numa: int) -> list[dict[str, str]]:
    """A zone's resources: its CPUs (when it has any), then its memory and hugepages;
    available memory is what the memory manager left free where it accounts it."""
    resources = []
    row = next((row for row in views.numa_pools if row.numa_node == numa), None)
    if row is not None:
        capacity = row.counts.total
        resources.append(
            {
                "name": "cpu",
                "capacity": str(capacity),
                "allocatable": str(capacity - row.counts.reserved),
                "available": str(row.available),
            }
        )
    mem = views.memory.get(numa)
    for r in mem.resources if mem is not None else []:
        available = r.free if mem is not None and mem.accounted else r.allocatable
        resources.append(
            {
                "name": r.resource,
                "capacity": str(r.total),
                "allocatable": str(r.allocatable),
                "available": str(available),
            }
        )
    return resources

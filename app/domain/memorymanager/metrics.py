"""Memory manager metrics as plain counters (follows pkg/kubelet/metrics/metrics.go and the
metric updates in pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master).

The static policy owns one ``MemoryManagerMetrics``; it counts what the kubelet counts:

* ``memory_manager_pinning_requests_total`` / ``memory_manager_pinning_errors_total``;
* the memory side (``resource_name="memory"``) of the KEP-5526 series
  ``resource_manager_allocations_total{resource_name, source}``,
  ``resource_manager_allocation_errors_total{resource_name, source}`` and
  ``resource_manager_container_assignments{resource_name, assignment_type}``.

How upstream counts (``Allocate`` is the node path, ``AllocatePod`` the pod-level path):

* node path: one pinning request per Guaranteed container that is not skipped (pod-level
  resources with a gate off), also when its blocks are already in the state; one
  ``allocations_total{source="node"}`` per *resource type* the container requests; one
  ``node_exclusive`` assignment per container allocated; on an error one pinning error and one
  ``allocation_errors_total{source="node"}``;
* pod path: one pinning request for the pod, then one per init container (each, whether it
  requests memory or not) and one per app container that requests memory; one
  ``pod_exclusive`` per container with its own blocks, one ``pod_shared`` per container on
  the pod's shared blocks (a regular init container without requests counts as
  ``pod_shared`` once); one ``allocations_total{source="pod"}`` per container; on an error
  one pinning error and one ``allocation_errors_total{source="pod"}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.cpumanager.metrics import PinningCounters


@dataclass(slots=True)
class MemoryManagerMetrics(PinningCounters):
    """Everything the static memory policy counts."""

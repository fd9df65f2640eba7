"""An observed node: what a real kubelet recorded, merged into a ``NodeSnapshot`` (pure).

The sources (spec ``users.md`` §5.1) are read by ``app.services.observe.observation``; this
package only combines what they returned, without touching disk or sockets:

* ``cpu_manager_state`` / ``memory_manager_state`` (keyed by pod UID and container name),
  read the way the newest kubelet reads them (``read_state_file``: the 1.37 readers with the
  ``PodLevelResourceManagers`` gate on, then off, then the older releases; the first reader that
  accepts the file wins and every newer reader's refusal is kept with the kubelet's text),
  follows pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
  pkg/kubelet/cm/memorymanager/state/state_checkpoint.go (v1.37) through
  ``app.domain.checkpoint``;
* PodResources ``List`` and ``GetAllocatableResources`` (keyed by namespace/name and
  container name), filled as pkg/kubelet/apis/podresources/server_v1.go does;
* the topology (sysfs), the kubelet configuration and the UIDs of ``<root>/pods/``.

Joining (``match_pods``): a checkpoint pod (UID) and a PodResources pod (namespace/name) are the
same pod when everything PodResources reports for the pod agrees with the checkpoint — pod-level
``cpu_ids`` with the pod entry, each container's ``cpu_ids`` with its entry, memory blocks with
the memory manager's blocks — and at least one of them is non-empty. Exclusive CPU sets are
disjoint between pods, so one equal set is decisive; memory blocks alone can be ambiguous (two
identical pods), and an ambiguous pair is never joined: the pod is then shown by UID only.
Pods that hold nothing exclusive (BestEffort, Burstable, non-integral CPU) have no checkpoint
entry and appear with their name only (no UID: the kubelet recorded none we can read).

Stale entries (kubernetes#129819): a checkpoint UID with no ``<root>/pods/<uid>`` directory
that no PodResources pod matches. When neither the pods dir nor PodResources could be read,
staleness is unknown and nothing is flagged.

Nothing is guessed about placement: it comes from the state files (or, when they cannot be
read, from PodResources with the consumer arithmetic of ``podresources.md`` §7). What the
sources cannot tell is said in a note: a container's isolation level inside a pod budget is
reported by PodResources (1.37: ``cpu_ids`` only for an exclusive slice); for a container it does
not list (regular init containers) or without PodResources it is inferred from the CPU sets (the
set of a listed container; else a set several containers hold is the pod shared pool, a set one
container holds an exclusive slice — a container alone in the pool, or an init container whose
slice was reused, looks the same). PodResources does not mark sidecars, so listed containers
are ``app`` and containers only the checkpoint knows are ``init``. QoS classes, requests and
admission times are not recorded.

A pod known by its UID only gets the pseudo namespace ``~`` (not a valid namespace name) and its
UID as name, so every pod has a ``namespace/name`` key and a URL.

The package's modules: ``model`` (the values), ``state_files`` (reading a state file, inferring
the configuration), ``matching`` (joining UIDs with PodResources pods) and ``build`` (the
observed node's views). This module is their public import path.
"""

from __future__ import annotations

from app.domain.observed.build import build_observed_node
from app.domain.observed.matching import Matching, match_pods
from app.domain.observed.model import (
    SOURCE_CHECKPOINT,
    SOURCE_CONFIG,
    SOURCE_PODRESOURCES,
    SOURCE_SYSFS,
    SOURCES,
    UID_ONLY_NAMESPACE,
    CheckpointFile,
    Observation,
    ObservedNode,
    PodIdentity,
    SourceStatus,
    StaleEntry,
    StateFileReading,
)
from app.domain.observed.state_files import NEWEST_FIRST, infer_config, read_state_file

__all__ = [
    "NEWEST_FIRST",
    "SOURCES",
    "SOURCE_CHECKPOINT",
    "SOURCE_CONFIG",
    "SOURCE_PODRESOURCES",
    "SOURCE_SYSFS",
    "UID_ONLY_NAMESPACE",
    "CheckpointFile",
    "Matching",
    "Observation",
    "ObservedNode",
    "PodIdentity",
    "SourceStatus",
    "StaleEntry",
    "StateFileReading",
    "build_observed_node",
    "infer_config",
    "match_pods",
    "read_state_file",
]

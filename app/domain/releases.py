"""Which kubelet release carries which change to the resource managers.

Release "1.38" is upstream master as far as changes are merged (kubernetes/kubernetes, read
in the upstream files and pull requests named below). Every engine module that behaves
differently per release asks ``has(release, CHANGE)`` instead of comparing release strings, so
the list of what 1.38 changes lives here, once:

==============================  =============  ============================================
change                          pull request   upstream file
==============================  =============  ============================================
``CPU_POD_RESTORE``             #141041        pkg/kubelet/cm/cpumanager/policy_static.go
                                               (``allocatePodForAdd`` restores a pod-level CPU
                                               set found in the state, computes only missing
                                               container assignments; pod hints regenerated
                                               from it; policy_static_restore_test.go)
``MEMORY_POD_RESTORE``          #141077        pkg/kubelet/cm/memorymanager/policy_static.go
                                (fixes #140906) (``AllocatePod`` keeps a restored pod allocation)
``MEMORY_POD_HINTS``            #141070        policy_static.go (``GetPodTopologyHints``
                                               regenerates from the pod-level blocks)
``SPREAD_BY_TOPOLOGY``          #140766        pkg/kubelet/cm/cpumanager/cpu_assignment.go
                                               (``distribute-cpus-across-cores``: CPUs ordered
                                               round-robin over the cores of each socket)
``DISTRIBUTED_GROUP_CHECK``     #140730        cpu_assignment.go (``takeByTopologyNUMADistributed``
                                               counts remainder capacity in whole CPU groups;
                                               before, the remainder loop could spin forever)
``CPU_METRICS_FROM_STATE``      #141261        policy_static.go (the exclusive-CPU, shared-pool
                                (fixes #141262) and per-NUMA gauges are recomputed from the state,
                                               pod-level CPU sets included, every NUMA node
                                               sampled; policy_static_metrics_test.go)
==============================  =============  ============================================

Left out: kubernetes#141238 (deep copy of ``bestCombo``) and kubernetes#141994 (reject an
incomplete pod-level memory checkpoint) were still open; kubernetes#140629/#140678
(in-place resize of exclusive CPUs) are open and behind a gate this engine does not model.
The checkpoint readers and writers did not change on master: 1.38 reads and writes files as
1.37 does (``CHECKPOINT_LINE``).
"""

from __future__ import annotations

from app.domain.kubelet_config import RELEASES

CPU_POD_RESTORE = "cpu-pod-restore"
MEMORY_POD_RESTORE = "memory-pod-restore"
MEMORY_POD_HINTS = "memory-pod-hints"
SPREAD_BY_TOPOLOGY = "spread-by-topology"
DISTRIBUTED_GROUP_CHECK = "distributed-group-check"
CPU_METRICS_FROM_STATE = "cpu-metrics-from-state"

#: The first release carrying each change.
INTRODUCED: dict[str, str] = {
    CPU_POD_RESTORE: "1.38",
    MEMORY_POD_RESTORE: "1.38",
    MEMORY_POD_HINTS: "1.38",
    SPREAD_BY_TOPOLOGY: "1.38",
    DISTRIBUTED_GROUP_CHECK: "1.38",
    CPU_METRICS_FROM_STATE: "1.38",
}

#: Upstream pull request of each change (for messages and pages).
PULL_REQUEST: dict[str, str] = {
    CPU_POD_RESTORE: "kubernetes#141041",
    MEMORY_POD_RESTORE: "kubernetes#141077",
    MEMORY_POD_HINTS: "kubernetes#141070",
    SPREAD_BY_TOPOLOGY: "kubernetes#140766",
    DISTRIBUTED_GROUP_CHECK: "kubernetes#140730",
    CPU_METRICS_FROM_STATE: "kubernetes#141261",
}

#: The checkpoint code line a release's state files follow (1.38 reads/writes as 1.37).
CHECKPOINT_LINE: dict[str, str] = {"1.38": "1.37"}


def _index(release: str) -> int:
    try:
        return RELEASES.index(release)
    except ValueError:
        raise ValueError(
            f"unsupported kubelet release {release!r}; use one of {', '.join(RELEASES)}"
        ) from None


def has(release: str, change: str) -> bool:
    """Whether a kubelet of ``release`` carries ``change``."""
    return _index(release) >= _index(INTRODUCED[change])


def changes_in(release: str) -> list[str]:
    """The changes a release carries, in table order."""
    return [c for c in INTRODUCED if has(release, c)]

"""The release table: what a kubelet of each modelled release does differently.

Every engine module that behaves differently per release asks this table (``get(release)``,
``has(release, CHANGE)``) instead of comparing release strings, so what each release changes
lives here, once. Release "1.38" is upstream master as far as changes are merged
(kubernetes/kubernetes, read in the upstream files and pull requests named below; a
"content id" is one stored version of an upstream file, as the search tools name it).

Changes to the resource managers, by the first release carrying them:

==================================  ===============  ==============================================
change                              pull request     upstream file / what was read
==================================  ===============  ==============================================
``MEMORY_SKIP_NO_REQUEST`` (1.37)   #138770          pkg/kubelet/cm/memorymanager/policy_static.go:
                                                     ``Allocate`` returns right after
                                                     ``getContainerRequestedResources`` when the
                                                     container requests no memory (no pinning
                                                     count, no default hint, no state change);
                                                     ``GetTopologyHints`` returns nil for it
                                                     (content id 68686888954 against the
                                                     pre-change 4195507488). The same PR gave the
                                                     KEP-5526 series their ``kubelet_`` subsystem
                                                     (``Release.resource_manager_metric_prefix``).
``CPU_POD_RESTORE`` (1.38)          #141041          pkg/kubelet/cm/cpumanager/policy_static.go
                                                     (``allocatePodForAdd`` restores a pod-level
                                                     CPU set found in the state; pod hints
                                                     regenerated from it)
``MEMORY_POD_RESTORE`` (1.38)       #141077          memorymanager/policy_static.go
                                    (fixes #140906)  (``AllocatePod`` keeps a restored allocation)
``MEMORY_POD_HINTS`` (1.38)         #141070          memorymanager/policy_static.go
                                                     ``GetPodTopologyHints``: a pod-level pod's hint
                                                     is regenerated from its pod blocks, and a
                                                     container-level pod's from the first
                                                     container with blocks against *that
                                                     container's* requests (before: the pod's
                                                     summed requests, which never match a
                                                     multi-container pod). Content id 68686888954;
                                                     test ``TestMemoryManagerRestoreState``
                                                     (content id 68452152110).
``SPREAD_BY_TOPOLOGY`` (1.38)       #140766          pkg/kubelet/cm/cpumanager/cpu_assignment.go
``DISTRIBUTED_GROUP_CHECK`` (1.38)  #140730          cpu_assignment.go (whole CPU groups)
``CPU_METRICS_FROM_STATE`` (1.38)   #141261          policy_static.go (gauges from the state)
``CPU_RESTORE_BEFORE_SMT`` (1.38)   #129079          policy_static.go ``allocateForAdd`` looks up
                                                     the container's checkpointed CPUs before the
                                                     ``full-pcpus-only`` SMT check (content id
                                                     54651890818, a master-line branch). The
                                                     1.36-line file (content id 3556663868) checks
                                                     SMT first. release-1.37's ``allocateForAdd``
                                                     could not be read and CHANGELOG-1.38 alpha.1
                                                     (content id 70363611792) does not list the
                                                     PR, so its first release is not proven: it is
                                                     modelled from 1.38, the one release it is
                                                     certainly in.
``DISTRIBUTED_COPY_BEST`` (1.38)    #141238          cpu_assignment.go
                                    (fixes #141237)  ``takeByTopologyNUMADistributed`` copies
                                                     ``bestCombo``/``bestRemainder`` instead of
                                                     keeping a slice that later combinations
                                                     overwrite (CHANGELOG-1.38 alpha.1).
``DISTRIBUTED_ALIGN_BY_SOCKET``     #139778          policy_static.go ``takeByTopology`` hands the
(1.38)                                               ``align-by-socket`` flag to the NUMA-
                                                     distributed algorithm (PR review thread).
``DISTRIBUTED_MIN_NUMAS_FROM_HINT`` #139456          cpu_assignment.go: the topology hint's NUMA
(1.38)                              (fixes #139430)  count is the floor of the NUMA nodes the
                                                     distributed algorithm spreads over (only
                                                     the function's signature and doc comment in
                                                     the PR review thread and the PR description
                                                     were readable, not its code - see
                                                     ``app.domain.cpumanager.take``).
``POD_BUDGET_WITHOUT_INIT_CHECK``   -                cpumanager and memorymanager policy_static.go
(1.38)                                               ``validatePodScopeResources`` no longer has
                                                     the "largest exclusive init container" rule
                                                     on master (content ids 54651890818 CPU,
                                                     68686888954 memory); the 1.36-line files
                                                     (3556663868, 4195507488) have it and the
                                                     public conformance corpus (absent release =
                                                     1.37) asserts it for 1.37. The PR that
                                                     dropped it was not found.
==================================  ===============  ==============================================

Left out: kubernetes#141994 (reject an incomplete pod-level memory checkpoint) was still
open; kubernetes#140629/#140678 (in-place resize of exclusive CPUs) are open and behind a gate
this engine does not model.

Besides the changes, each ``Release`` row says which upstream branch its code is
(``code_ref``), which checkpoint code line it runs and which state file versions it writes and
reads, whether it knows ``PodLevelResourceManagers``, whether PodResources answers by the 1.37
pod-level rules, and the prefix of the KEP-5526 metric names. Feature gate names per release
are data in ``app.domain.feature_gate_tables`` (``KNOWN``, keyed by this table's releases).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

MEMORY_SKIP_NO_REQUEST = "memory-skip-no-request"
CPU_POD_RESTORE = "cpu-pod-restore"
MEMORY_POD_RESTORE = "memory-pod-restore"
MEMORY_POD_HINTS = "memory-pod-hints"
SPREAD_BY_TOPOLOGY = "spread-by-topology"
DISTRIBUTED_GROUP_CHECK = "distributed-group-check"
CPU_METRICS_FROM_STATE = "cpu-metrics-from-state"
CPU_RESTORE_BEFORE_SMT = "cpu-restore-before-smt"
DISTRIBUTED_COPY_BEST = "distributed-copy-best"
DISTRIBUTED_ALIGN_BY_SOCKET = "distributed-align-by-socket"
DISTRIBUTED_MIN_NUMAS_FROM_HINT = "distributed-min-numas-from-hint"
POD_BUDGET_WITHOUT_INIT_CHECK = "pod-budget-without-init-check"

#: Upstream pull request of each change (for messages and pages).
PULL_REQUEST: dict[str, str] = {
    MEMORY_SKIP_NO_REQUEST: "kubernetes#138770",
    CPU_POD_RESTORE: "kubernetes#141041",
    MEMORY_POD_RESTORE: "kubernetes#141077",
    MEMORY_POD_HINTS: "kubernetes#141070",
    SPREAD_BY_TOPOLOGY: "kubernetes#140766",
    DISTRIBUTED_GROUP_CHECK: "kubernetes#140730",
    CPU_METRICS_FROM_STATE: "kubernetes#141261",
    CPU_RESTORE_BEFORE_SMT: "kubernetes#129079",
    DISTRIBUTED_COPY_BEST: "kubernetes#141238",
    DISTRIBUTED_ALIGN_BY_SOCKET: "kubernetes#139778",
    DISTRIBUTED_MIN_NUMAS_FROM_HINT: "kubernetes#139456",
    POD_BUDGET_WITHOUT_INIT_CHECK: "upstream master (PR not identified)",
}

_CHANGES_1_37 = frozenset({MEMORY_SKIP_NO_REQUEST})
_CHANGES_1_38 = _CHANGES_1_37 | {
    CPU_POD_RESTORE,
    MEMORY_POD_RESTORE,
    MEMORY_POD_HINTS,
    SPREAD_BY_TOPOLOGY,
    DISTRIBUTED_GROUP_CHECK,
    CPU_METRICS_FROM_STATE,
    CPU_RESTORE_BEFORE_SMT,
    DISTRIBUTED_COPY_BEST,
    DISTRIBUTED_ALIGN_BY_SOCKET,
    DISTRIBUTED_MIN_NUMAS_FROM_HINT,
    POD_BUDGET_WITHOUT_INIT_CHECK,
}

# Defaults of the gates that matter to the resource managers (feature gate tables of
# pkg/features/kube_features.go). PodLevelResourceManagers is beta and off in 1.37 and on
# master; no default changed on master since 1.37.
_GATES_1_35 = MappingProxyType(
    {
        "PodLevelResources": True,
        "PodLevelResourceManagers": False,
        "CPUManagerPolicyBetaOptions": True,
        "CPUManagerPolicyAlphaOptions": False,
        "TopologyManagerPolicyBetaOptions": True,
        "TopologyManagerPolicyAlphaOptions": False,
    }
)


@dataclass(frozen=True, slots=True)
class Release:
    """One kubelet release as the engine models it."""

    name: str
    code_ref: str  # the upstream branch its code is read from ("master" for 1.38)
    checkpoint_line: str  # the state_checkpoint.go code line its readers and writers follow
    #: state file versions written: (cpu, memory) with PodLevelResourceManagers off / on
    writes_gate_off: tuple[str, str]
    writes_gate_on: tuple[str, str]
    cpu_reads: tuple[str, ...]  # CPU checkpoint versions the loader accepts
    memory_reads: tuple[str, ...]  # memory checkpoint versions the loader accepts
    knows_pod_level_gate: bool  # whether the PodLevelResourceManagers gate exists
    podresources_pod_level: bool  # PodResources by the 1.37 rules (kubernetes#138738)
    #: prefix of the KEP-5526 series (None: not registered in this release)
    resource_manager_metric_prefix: str | None
    #: the family label of the files it writes, gate off / on (node pages, checkpoint reports)
    writer_family_gate_off: str
    writer_family_gate_on: str
    changes: frozenset[str] = field(default_factory=frozenset)
    gate_defaults: MappingProxyType[str, bool] = field(default_factory=lambda: _GATES_1_35)

    def has(self, change: str) -> bool:
        if change not in PULL_REQUEST:
            raise KeyError(f"unknown change {change!r}")
        return change in self.changes

    def writes(self, gate: bool) -> tuple[str, str]:
        """The (cpu, memory) state file versions a kubelet of this release writes."""
        return self.writes_gate_on if gate and self.knows_pod_level_gate else self.writes_gate_off

    def writer_family(self, gate: bool) -> str:
        """Who else writes the same files: ``1.18–1.35``, ``1.36 gate off``, ``1.37``..."""
        if gate and self.knows_pod_level_gate:
            return self.writer_family_gate_on
        return self.writer_family_gate_off

    def upstream_url(self, path: str) -> str:
        """An upstream file at this release's code."""
        return f"https://github.com/kubernetes/kubernetes/blob/{self.code_ref}/{path}"

    def __str__(self) -> str:
        return self.name


_R135 = Release(
    name="1.35",
    code_ref="release-1.35",
    checkpoint_line="1.35",
    writes_gate_off=("V2", "V1"),
    writes_gate_on=("V2", "V1"),
    cpu_reads=("V1", "V2"),
    memory_reads=("V1",),
    knows_pod_level_gate=False,
    podresources_pod_level=False,
    resource_manager_metric_prefix=None,
    writer_family_gate_off="1.18–1.35",
    writer_family_gate_on="1.18–1.35",
)
_R136 = Release(
    name="1.36",
    code_ref="release-1.36",
    checkpoint_line="1.36",
    writes_gate_off=("V2", "V1"),
    writes_gate_on=("V3", "V2"),
    cpu_reads=("V1", "V2", "V3"),
    memory_reads=("V1", "V2"),
    knows_pod_level_gate=True,
    podresources_pod_level=False,
    resource_manager_metric_prefix="",
    writer_family_gate_off="1.36 gate off",
    writer_family_gate_on="1.36 pod-level",
)
_R137 = Release(
    name="1.37",
    code_ref="release-1.37",
    checkpoint_line="1.37",
    writes_gate_off=("V4", "V3"),
    writes_gate_on=("V4", "V3"),
    cpu_reads=("V1", "V2", "V3", "V4"),
    memory_reads=("V1", "V2", "V3"),
    knows_pod_level_gate=True,
    podresources_pod_level=True,
    resource_manager_metric_prefix="kubelet_",
    writer_family_gate_off="1.37",
    writer_family_gate_on="1.37",
    changes=_CHANGES_1_37,
)
# Upstream master: the checkpoint readers and writers did not change, so 1.38 reads and
# writes files as 1.37 does.
_R138 = Release(
    name="1.38",
    code_ref="master",
    checkpoint_line="1.37",
    writes_gate_off=_R137.writes_gate_off,
    writes_gate_on=_R137.writes_gate_on,
    cpu_reads=_R137.cpu_reads,
    memory_reads=_R137.memory_reads,
    knows_pod_level_gate=True,
    podresources_pod_level=True,
    resource_manager_metric_prefix="kubelet_",
    writer_family_gate_off=_R137.writer_family_gate_off,
    writer_family_gate_on=_R137.writer_family_gate_on,
    changes=_CHANGES_1_38,
)

TABLE: tuple[Release, ...] = (_R135, _R136, _R137, _R138)
_BY_NAME = {r.name: r for r in TABLE}

#: The release names, oldest first.
RELEASES: tuple[str, ...] = tuple(r.name for r in TABLE)
#: The release a node, a request or a conformance case runs as when none is named.
DEFAULT_RELEASE = _R137.name
#: The newest release (upstream master).
NEWEST = TABLE[-1].name

#: The first release that knows the PodLevelResourceManagers gate (and the checkpoint code line
#: that introduced pod entries).
GATE_SINCE = next(r.name for r in TABLE if r.knows_pod_level_gate)
#: The first release answering PodResources by the pod-level rules (kubernetes#138738).
POD_LEVEL_PODRESOURCES_SINCE = next(r.name for r in TABLE if r.podresources_pod_level)
#: The newest checkpoint code line (1.38 reads and writes files as 1.37 does).
NEWEST_CHECKPOINT_LINE = TABLE[-1].checkpoint_line
#: The oldest release of the table, newest of the pre-pod-level checkpoint family 1.18–1.35.
OLDEST = TABLE[0].name

#: Checkpoint reader families: a release reads state files as the newest release of its family
#: does (pkg/kubelet/cm/{cpu,memory}manager/state of v1.17, v1.35, v1.36, v1.37; 1.38 runs
#: 1.37's line), with their labels. 1.17 is the last release of the V1-only CPU format.
CHECKPOINT_FAMILIES: dict[str, str] = {
    "1.17": "≤1.17",
    **{r.name: ("1.18–" + r.name if r is TABLE[0] else r.name) for r in TABLE},
}
OLDEST_CHECKPOINT_FAMILY = next(iter(CHECKPOINT_FAMILIES))


def _minor(name: str) -> int:
    return int(name.split(".")[1])


_BY_MINOR = {_minor(r.name): r for r in TABLE}


def checkpoint_family(minor: int) -> str | None:
    """The checkpoint family kubelet ``1.<minor>`` reads state files as (``None``: a release
    not modelled, newer than the table or below 1.1)."""
    if minor < 1 or minor > _minor(NEWEST):
        return None
    if minor <= _minor(OLDEST_CHECKPOINT_FAMILY):
        return OLDEST_CHECKPOINT_FAMILY
    if minor <= _minor(OLDEST):
        return OLDEST
    return _BY_MINOR[minor].name


#: Which releases write each state file version (manager, version) -> label.
STATE_FILE_WRITERS: dict[tuple[str, str], str] = {
    ("cpu", "V1"): "≤1.17",
    ("cpu", "V2"): "1.18–1.35; 1.36 gate off",
    ("cpu", "V3"): "1.36 pod-level",
    ("cpu", "V4"): "1.37",
    ("memory", "V1"): "1.21–1.35; 1.36 gate off",
    ("memory", "V2"): "1.36 pod-level",
    ("memory", "V3"): "1.37",
}
#: The release that brought the memory manager (no memory_manager_state before it).
MEMORY_MANAGER_SINCE = "1.21"
#: The memory manager came with 1.21: its oldest family label starts there.
MEMORY_FAMILY_LABEL = {"1.18–1.35": "1.21–1.35"}

#: The first release carrying each change.
INTRODUCED: dict[str, str] = {
    change: next(r.name for r in TABLE if change in r.changes) for change in PULL_REQUEST
}


def complaint(release: str) -> str | None:
    """What is wrong with ``release`` as a kubelet release (``None``: one of ``RELEASES``);
    every refusal of an unknown release says this."""
    if release in _BY_NAME:
        return None
    return f"unsupported kubelet release {release!r}; use one of {', '.join(RELEASES)}"


def get(release: str | Release) -> Release:
    """The table row of ``release``; ``ValueError`` names the supported releases."""
    if isinstance(release, Release):
        return release
    row = _BY_NAME.get(release)
    if row is None:
        raise ValueError(complaint(release))
    return row


def has(release: str | Release, change: str) -> bool:
    """Whether a kubelet of ``release`` carries ``change``."""
    return get(release).has(change)


def changes_in(release: str | Release) -> list[str]:
    """The changes a release carries, in table order."""
    row = get(release)
    return [c for c in PULL_REQUEST if c in row.changes]


def is_newer(release: str | Release, than: str | Release) -> bool:
    """Whether ``release`` comes after ``than`` in the table."""
    return TABLE.index(get(release)) > TABLE.index(get(than))

"""Building the observed node's views: its ``NodeSnapshot`` (pods, default and reserved CPUs,
memory tables), the pods' identities, stale entries (kubernetes#129819) and the CPU pools.

Placement comes from the state files or, when they cannot be read, from PodResources with the
consumer arithmetic of ``podresources.md`` §7 (pkg/kubelet/apis/podresources/server_v1.go fills
those answers). What the sources cannot tell is said in a note: a container's isolation inside
a pod budget is reported by PodResources (1.37: ``cpu_ids`` only for an exclusive slice); for a
container it does not list, or without PodResources, it is inferred from the CPU sets.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.checkpoint import CPUCheckpointState, MemoryCheckpointState
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.state import Block as MemoryBlock
from app.domain.observed.matching import (
    Recorded,
    match_recorded,
    memory_block,
    recorded_entries,
)
from app.domain.observed.model import (
    FILE_NAMES,
    SOURCE_CHECKPOINT,
    SOURCE_PODRESOURCES,
    SOURCE_SYSFS,
    UID_ONLY_NAMESPACE,
    CheckpointFile,
    Observation,
    ObservedNode,
    PodIdentity,
    StaleEntry,
)
from app.domain.observed.state_files import cpu_state_of, infer_config, memory_state_of
from app.domain.podresources import (
    ContainerMemory,
    ContainerResources,
    PodResources,
    cpu_set_of,
)
from app.domain.pools import Pools, derive_pools, pools_from_snapshot
from app.domain.snapshot import (
    ContainerAllocation,
    ContainerKind,
    Isolation,
    NodeSnapshot,
    NUMAMemoryState,
    PodAllocation,
)

# -- building the snapshot --------------------------------------------------------------------


def _memory_of(blocks: Iterable[ContainerMemory]) -> tuple[MemoryBlock, ...]:
    return tuple(
        MemoryBlock(
            tuple(m.topology.numa_ids()) if m.topology is not None else (), m.memory_type, m.size
        )
        for m in blocks
    )


#: A container's CPU set and its isolation, by container name.
_CPUSide = dict[str, tuple[CPUSet, Isolation]]


def _reported_isolation(container: ContainerResources) -> Isolation:
    """What PodResources says of a container's CPUs: 1.37 lists ``cpu_ids`` only for an
    exclusive slice, so a listed container without them runs in the pod shared pool."""
    return "container" if container.cpu_ids else "pod"


def _inferred_isolation(told: set[Isolation], holders: int) -> Isolation:
    """A container PodResources does not list: the isolation of the listed containers holding
    the same set, else a set several containers hold is the pod shared pool."""
    if len(told) == 1:
        (isolation,) = told
        return isolation
    return "pod" if holders > 1 else "container"


def _cpu_from_podresources(pr: PodResources) -> tuple[CPUSet | None, _CPUSide]:
    """Without CPU state, what PodResources reports (podresources.md §7): a container's
    ``cpu_ids`` is its exclusive slice, the rest of the pod's ``cpu_ids`` its shared pool."""
    out: _CPUSide = {}
    pod_cpus = cpu_set_of(pr.cpu_ids) if pr.cpu_ids else None
    held = 0
    for c in pr.containers:
        if c.cpu_ids:
            cpus = cpu_set_of(c.cpu_ids)
            held |= cpus.mask
            out[c.name] = (cpus, "container")
    if pod_cpus is not None:
        pool = CPUSet.from_mask(pod_cpus.mask & ~held)
        for c in pr.containers:
            if c.name not in out:
                out[c.name] = (pool, "pod")
    return pod_cpus, out


class _Builder:
    """One build: the observation, the configuration, the states the files hold, how their
    pods join PodResources' pods, and what has been built and noted so far."""

    def __init__(self, obs: Observation, config: KubeletConfig) -> None:
        self.obs = obs
        self.config = config
        self.cpu = cpu_state_of(obs.cpu)
        self.mem = memory_state_of(obs.memory)
        self.notes: list[str] = list(obs.notes)
        self.pr_pods = obs.list_response.pod_resources if obs.list_response is not None else ()
        self.recorded = recorded_entries(self.cpu, self.mem)
        self.matching = match_recorded(
            self.recorded, self.pr_pods, self.cpu is not None, self.mem is not None
        )
        self.pod_dirs = set(obs.pod_uids) if obs.pod_uids is not None else None
        self.pods: list[PodAllocation] = []
        self.identities: list[PodIdentity] = []
        self.stale: list[StaleEntry] = []

    # -- one pod ---------------------------------------------------------------------------
    def _cpu_side(
        self, rec: Recorded | None, pr: PodResources | None, label: str
    ) -> tuple[CPUSet | None, _CPUSide]:
        """The pod entry and each container's (cpuset, isolation) for the CPU manager."""
        if self.cpu is not None:
            if rec is None:
                return None, {}
            return rec.pod_cpus, self._cpu_from_state(rec, pr, label)
        if pr is None:
            return None, {}
        return _cpu_from_podresources(pr)

    def _cpu_from_state(self, rec: Recorded, pr: PodResources | None, label: str) -> _CPUSide:
        """Each container's set from the CPU state file; inside a pod budget, its isolation as
        PodResources reports it, or inferred from the sets for a container it does not list."""
        listed = {c.name: c for c in pr.containers} if pr is not None else {}
        holders: dict[int, int] = {}  # how many containers hold each set
        told: dict[int, set[Isolation]] = {}  # what PodResources says of each set
        for cname, cpus in rec.cpus.items():
            holders[cpus.mask] = holders.get(cpus.mask, 0) + 1
            if cname in listed:
                told.setdefault(cpus.mask, set()).add(_reported_isolation(listed[cname]))
        out: _CPUSide = {}
        inferred: list[str] = []
        for cname, cpus in sorted(rec.cpus.items()):
            isolation: Isolation = "container"
            if rec.pod_cpus is not None:
                if cname in listed:
                    isolation = _reported_isolation(listed[cname])
                else:
                    inferred.append(cname)
                    isolation = _inferred_isolation(told.get(cpus.mask, set()), holders[cpus.mask])
            out[cname] = (cpus, isolation)
        if inferred:
            self.notes.append(
                f"{label}: PodResources does not report the isolation of "
                f"{', '.join(inferred)}; inferred from the CPU sets (the set of a listed "
                f"container, else a set several containers hold is the pod shared pool and "
                f"a set one container holds an exclusive slice: a container alone in the "
                f"pool, or a regular init container whose slice was reused, looks the same)"
            )
        return out

    def _memory_side(
        self, rec: Recorded | None, pr: PodResources | None
    ) -> tuple[tuple[MemoryBlock, ...], dict[str, tuple[MemoryBlock, ...]]]:
        if self.mem is not None:
            if rec is None:
                return (), {}
            return rec.pod_memory or (), dict(rec.memory)
        if pr is None:
            return (), {}
        containers = {c.name: _memory_of(c.memory) for c in pr.containers if c.memory}
        return _memory_of(pr.memory), containers

    def _memory_isolation(
        self,
        blocks: tuple[MemoryBlock, ...],
        reported: ContainerResources | None,
        pod_memory: tuple[MemoryBlock, ...],
    ) -> Isolation | None:
        """``host`` without blocks; with a memory state file, what PodResources tells of a
        container it lists (its own blocks, else the pod's); ``None`` when nothing tells."""
        if not blocks:
            return "host"
        if reported is not None and self.mem is not None:
            if reported.memory:
                return "container"
            if pod_memory:
                return "pod"
        return None

    def pod(
        self, rec: Recorded | None, pr: PodResources | None, uid: str, key: tuple[str, str]
    ) -> PodAllocation:
        namespace, name = key
        label = f"pod {namespace}/{name}" if pr is not None else f"pod UID {uid}"
        pod_cpus, cpu_side = self._cpu_side(rec, pr, label)
        pod_memory, mem_side = self._memory_side(rec, pr)
        listed = [c.name for c in pr.containers] if pr is not None else []
        reported = {c.name: c for c in pr.containers} if pr is not None else {}
        known = sorted((set(cpu_side) | set(mem_side)) - set(listed))
        containers: list[ContainerAllocation] = []
        for cname in [*known, *listed]:
            kind: ContainerKind = "init" if pr is not None and cname not in reported else "app"
            cpus, isolation = cpu_side.get(cname, (CPUSet(), "host"))
            blocks = mem_side.get(cname, ())
            containers.append(
                ContainerAllocation(
                    name=cname,
                    kind=kind,
                    cpuset=cpus,
                    isolation=isolation,
                    memory=blocks,
                    memory_isolation=self._memory_isolation(
                        blocks, reported.get(cname), pod_memory
                    ),
                )
            )
        return PodAllocation(
            uid=uid,
            name=name,
            namespace=namespace,
            qos_class="",
            containers=tuple(containers),
            pod_cpuset=pod_cpus,
            pod_memory=pod_memory,
        )

    # -- the node's pods -------------------------------------------------------------------
    def add_named_pods(self) -> None:
        """The pods PodResources names, by namespace/name, joined with their checkpoint
        entries where the matching found them."""
        matched = {i: uid for uid, i in self.matching.matched.items()}
        pr_pods = self.pr_pods
        for i in sorted(range(len(pr_pods)), key=lambda i: (pr_pods[i].namespace, pr_pods[i].name)):
            pr = pr_pods[i]
            uid = matched.get(i, "")
            rec = self.recorded.get(uid) if uid else None
            self.pods.append(self.pod(rec, pr, uid, (pr.namespace, pr.name)))
            sources = (SOURCE_CHECKPOINT, SOURCE_PODRESOURCES) if uid else (SOURCE_PODRESOURCES,)
            live_dir = (uid in self.pod_dirs) if uid and self.pod_dirs is not None else None
            key = f"{pr.namespace}/{pr.name}"
            self.identities.append(
                PodIdentity(uid, pr.namespace, pr.name, key, sources, live_dir=live_dir)
            )
            if (
                not uid
                and _reports_allocations(pr)
                and (self.cpu is not None or self.mem is not None)
            ):
                self.notes.append(
                    f"PodResources reports allocations for pod {pr.namespace}/{pr.name} that no "
                    "checkpoint entry matches (the state changed between the reads?)"
                )

    def _is_stale(self, uid: str, live_dir: bool | None) -> bool:
        """A checkpoint pod no PodResources pod matches is stale (kubernetes#129819) unless its
        pod directory exists; with no pod directories read, only when no PodResources pod
        could be it."""
        return (
            live_dir is not True
            and (self.pod_dirs is not None or self.obs.list_response is not None)
            and (live_dir is False or uid not in self.matching.candidates)
        )

    def add_uid_only_pods(self) -> None:
        """The checkpoint pods no PodResources pod was joined with, known by their UID."""
        for uid, rec in self.recorded.items():
            if uid in self.matching.matched:
                continue
            live_dir = (uid in self.pod_dirs) if self.pod_dirs is not None else None
            is_stale = self._is_stale(uid, live_dir)
            if uid in self.matching.ambiguous:
                self.notes.append(
                    f"pod UID {uid}: its allocations fit several PodResources pods; not joined"
                )
            key = f"{UID_ONLY_NAMESPACE}/{uid}"
            self.pods.append(self.pod(rec, None, uid, (UID_ONLY_NAMESPACE, uid)))
            self.identities.append(
                PodIdentity(
                    uid, None, None, key, (SOURCE_CHECKPOINT,), stale=is_stale, live_dir=live_dir
                )
            )
            if is_stale:
                self.stale.extend(_stale_entries(uid, self.cpu, self.mem))

    # -- the node --------------------------------------------------------------------------
    def _default_cpus(self, all_cpus: CPUSet, pods: tuple[PodAllocation, ...]) -> CPUSet:
        """The shared pool: the CPU state's default set (every CPU for the none policy, which
        writes an empty set); from PodResources, what no pod holds; else every CPU."""
        if self.cpu is not None:
            if self.cpu.policy_name == "none":
                return all_cpus
            return self.cpu.default_cpu_set
        if self.obs.list_response is not None:
            held = 0
            for p in pods:
                held |= p.exclusive_cpus().mask | (p.pod_cpuset.mask if p.pod_cpuset else 0)
            return CPUSet.from_mask(all_cpus.mask & ~held)
        return all_cpus

    def _reserved_cpus(self, all_cpus: CPUSet) -> CPUSet:
        """The CPUs PodResources does not call allocatable, else the configured
        ``reservedSystemCPUs``; unknown (said in a note for the static policy) without both."""
        allocatable = self.obs.allocatable
        if allocatable is not None and allocatable.cpu_ids:
            return all_cpus - cpu_set_of(allocatable.cpu_ids)
        if self.config.reserved_system_cpus is not None:
            return self.config.reserved_system_cpus
        if self.config.cpu_manager_policy == "static":
            self.notes.append(
                "the reserved CPUs are unknown: PodResources did not answer and the "
                "configuration has no reservedSystemCPUs"
            )
        return CPUSet()

    def _source(self) -> str:
        """Where the snapshot's placement comes from."""
        if self.cpu is not None:
            return SOURCE_CHECKPOINT
        if self.obs.list_response is not None:
            return SOURCE_PODRESOURCES
        return SOURCE_CHECKPOINT if self.mem is not None else SOURCE_SYSFS

    def snapshot(self) -> NodeSnapshot | None:
        """The node's snapshot of the pods built so far; ``None`` without a topology."""
        topo = self.obs.topology
        if topo is None:
            return None
        all_cpus = topo.all_cpus
        pods = tuple(self.pods)
        default = self._default_cpus(all_cpus, pods)
        reserved = self._reserved_cpus(all_cpus)
        stray = [c for c in (reserved | default) if c not in topo.cpu_details]
        if stray:
            self.notes.append(
                f"the kubelet's CPU ids {cpu_set_of(stray)} are not online CPUs of this "
                "host's topology"
            )
        return NodeSnapshot(
            name=self.obs.name,
            simulated=False,
            topology=topo,
            config=self.config,
            reserved_cpus=reserved & all_cpus,
            default_cpuset=default & all_cpus,
            pods=pods,
            memory=_numa_memory(self.mem),
            source=self._source(),
            observed_at=self.obs.observed_at,
            notes=tuple(self.notes),
        )


def _numa_memory(state: MemoryCheckpointState | None) -> tuple[NUMAMemoryState, ...]:
    if state is None:
        return ()
    out = []
    for numa_id, node in sorted(state.machine_state.items()):
        tables = dict(sorted(node.memory_map.items()))
        out.append(NUMAMemoryState(numa_id, tables, tuple(node.cells), node.number_of_assignments))
    return tuple(out)


def _stale_entries(
    uid: str, cpu: CPUCheckpointState | None, memory: MemoryCheckpointState | None
) -> list[StaleEntry]:
    out: list[StaleEntry] = []
    if cpu is not None:
        if cpu.pod_entries and uid in cpu.pod_entries:
            out.append(StaleEntry(FILE_NAMES["cpu"], uid, None, cpus=cpu.pod_entries[uid]))
        for name, cpus in sorted(cpu.entries.get(uid, {}).items()):
            out.append(StaleEntry(FILE_NAMES["cpu"], uid, name, cpus=cpus))
    if memory is not None:
        if memory.pod_entries and uid in memory.pod_entries:
            blocks = tuple(memory_block(b) for b in memory.pod_entries[uid])
            out.append(StaleEntry(FILE_NAMES["memory"], uid, None, memory=blocks))
        for name, mblocks in sorted(memory.entries.get(uid, {}).items()):
            blocks = tuple(memory_block(b) for b in mblocks)
            out.append(StaleEntry(FILE_NAMES["memory"], uid, name, memory=blocks))
    return out


def _reports_allocations(pod: PodResources) -> bool:
    return bool(pod.cpu_ids or pod.memory) or any(c.cpu_ids or c.memory for c in pod.containers)


def _policy_mismatches(files: Iterable[CheckpointFile], config: KubeletConfig) -> list[str]:
    """A state file recording another policy than the configuration's: the kubelet refuses to
    start with that pair."""
    out = []
    for f in files:
        if f.accepted and f.policy_name is not None:
            configured = (
                config.cpu_manager_policy if f.manager == "cpu" else config.memory_manager_policy
            )
            if configured != f.policy_name:
                out.append(
                    f"{f.file} records policy {f.policy_name!r} but the configuration says "
                    f"{configured!r}: the kubelet would refuse to start with this pair"
                )
    return out


def _pools(obs: Observation, snapshot: NodeSnapshot | None) -> Pools | None:
    """The CPU pools: from PodResources' answers when both were read, else from the snapshot."""
    if snapshot is None:
        return None
    if obs.list_response is not None and obs.allocatable is not None:
        return derive_pools(
            obs.list_response,
            obs.allocatable,
            obs.topology,
            source=SOURCE_PODRESOURCES,
            observed_at=obs.observed_at,
        )
    return pools_from_snapshot(snapshot)


def build_observed_node(obs: Observation) -> ObservedNode:
    """Merge one observation into an ``ObservedNode`` (see the module docstring)."""
    inferred = obs.config is None
    config = obs.config if obs.config is not None else infer_config(obs.cpu, obs.memory)[1]
    b = _Builder(obs, config)
    files = tuple(r.file for r in (obs.cpu, obs.memory) if r is not None)
    if inferred:
        b.notes.append(
            "no kubelet configuration was read: the policies shown are the ones the state "
            "files record"
        )
    else:
        b.notes.extend(_policy_mismatches(files, config))
    if b.pod_dirs is None and obs.list_response is None and b.recorded:
        b.notes.append(
            "stale entries cannot be told: neither the pods directory nor PodResources "
            "could be read"
        )
    b.add_named_pods()
    b.add_uid_only_pods()
    snapshot = b.snapshot()
    return ObservedNode(
        name=obs.name,
        observed_at=obs.observed_at,
        snapshot=snapshot,
        sources=obs.sources,
        files=files,
        identities=tuple(b.identities),
        stale=tuple(b.stale),
        pools=_pools(obs, snapshot),
        list_response=obs.list_response,
        allocatable=obs.allocatable,
        config_path=obs.config_path,
        config_text=obs.config_text,
        config_inferred=inferred,
        pod_uids=obs.pod_uids,
        notes=tuple(b.notes),
    )

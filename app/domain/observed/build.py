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
    cpu_set_of,
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
    Observation,
    ObservedNode,
    PodIdentity,
    StaleEntry,
)
from app.domain.observed.state_files import cpu_state_of, infer_config, memory_state_of
from app.domain.podresources import ContainerMemory, PodResources
from app.domain.pools import Pools, derive_pools, pools_from_snapshot
from app.domain.snapshot import (
    ContainerAllocation,
    ContainerKind,
    Isolation,
    MemoryTable,
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


class _Builder:
    def __init__(self, obs: Observation, config: KubeletConfig) -> None:
        self.obs = obs
        self.config = config
        self.cpu = cpu_state_of(obs.cpu)
        self.mem = memory_state_of(obs.memory)
        self.notes: list[str] = list(obs.notes)

    # -- one pod ---------------------------------------------------------------------------
    def _cpu_side(
        self, rec: Recorded | None, pr: PodResources | None, label: str
    ) -> tuple[CPUSet | None, dict[str, tuple[CPUSet, Isolation]]]:
        """The pod entry and each container's (cpuset, isolation) for the CPU manager."""
        out: dict[str, tuple[CPUSet, Isolation]] = {}
        if self.cpu is not None:
            if rec is None:
                return None, out
            listed = {c.name: c for c in pr.containers} if pr is not None else {}
            holders: dict[int, int] = {}
            told: dict[int, set[Isolation]] = {}  # what PodResources says of each set
            for cname, cpus in rec.cpus.items():
                holders[cpus.mask] = holders.get(cpus.mask, 0) + 1
                reported = listed.get(cname)
                if reported is not None:
                    told.setdefault(cpus.mask, set()).add(
                        "container" if reported.cpu_ids else "pod"
                    )
            inferred: list[str] = []
            for cname, cpus in sorted(rec.cpus.items()):
                isolation: Isolation = "container"
                if rec.pod_cpus is not None:
                    reported = listed.get(cname)
                    same = told.get(cpus.mask, set())
                    if reported is not None:
                        isolation = "container" if reported.cpu_ids else "pod"
                    else:
                        inferred.append(cname)
                        if len(same) == 1:
                            (isolation,) = same  # the set of a listed container
                        elif holders[cpus.mask] > 1:
                            isolation = "pod"
                out[cname] = (cpus, isolation)
            if inferred:
                self.notes.append(
                    f"{label}: PodResources does not report the isolation of "
                    f"{', '.join(inferred)}; inferred from the CPU sets (the set of a listed "
                    f"container, else a set several containers hold is the pod shared pool and "
                    f"a set one container holds an exclusive slice: a container alone in the "
                    f"pool, or a regular init container whose slice was reused, looks the same)"
                )
            return rec.pod_cpus, out
        if pr is None:
            return None, out
        # No CPU state: what PodResources reports (podresources.md §7).
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

    def pod(
        self, rec: Recorded | None, pr: PodResources | None, uid: str, key: tuple[str, str]
    ) -> PodAllocation:
        namespace, name = key
        label = f"pod {namespace}/{name}" if pr is not None else f"pod UID {uid}"
        pod_cpus, cpu_side = self._cpu_side(rec, pr, label)
        pod_memory, mem_side = self._memory_side(rec, pr)
        listed = [c.name for c in pr.containers] if pr is not None else []
        listed_set = set(listed)
        known = sorted((set(cpu_side) | set(mem_side)) - listed_set)
        reported = {c.name: c for c in pr.containers} if pr is not None else {}
        containers: list[ContainerAllocation] = []
        for cname in [*known, *listed]:
            kind: ContainerKind = "init" if pr is not None and cname not in listed_set else "app"
            cpus, isolation = cpu_side.get(cname, (CPUSet(), "host"))
            blocks = mem_side.get(cname, ())
            memory_isolation: Isolation | None = None
            if not blocks:
                memory_isolation = "host"
            elif cname in reported and self.mem is not None:
                if reported[cname].memory:
                    memory_isolation = "container"
                elif pod_memory:
                    memory_isolation = "pod"
            containers.append(
                ContainerAllocation(
                    name=cname,
                    kind=kind,
                    cpuset=cpus,
                    isolation=isolation,
                    memory=blocks,
                    memory_isolation=memory_isolation,
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


def _numa_memory(state: MemoryCheckpointState | None) -> tuple[NUMAMemoryState, ...]:
    if state is None:
        return ()
    out = []
    for numa_id, node in sorted(state.machine_state.items()):
        tables = {
            name: MemoryTable(t.total, t.system_reserved, t.allocatable, t.reserved, t.free)
            for name, t in sorted(node.memory_map.items())
        }
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


def build_observed_node(obs: Observation) -> ObservedNode:
    """Merge one observation into an ``ObservedNode`` (see the module docstring)."""
    inferred = obs.config is None
    config = obs.config if obs.config is not None else infer_config(obs.cpu, obs.memory)[1]
    b = _Builder(obs, config)
    if inferred:
        b.notes.append(
            "no kubelet configuration was read: the policies shown are the ones the state "
            "files record"
        )
    files = tuple(r.file for r in (obs.cpu, obs.memory) if r is not None)
    for f in files:
        if f.accepted and f.policy_name is not None:
            configured = (
                config.cpu_manager_policy if f.manager == "cpu" else config.memory_manager_policy
            )
            if not inferred and configured != f.policy_name:
                b.notes.append(
                    f"{f.file} records policy {f.policy_name!r} but the configuration says "
                    f"{configured!r}: the kubelet would refuse to start with this pair"
                )
    pr_pods = obs.list_response.pod_resources if obs.list_response is not None else ()
    recorded = recorded_entries(b.cpu, b.mem)
    matching = match_recorded(recorded, pr_pods, b.cpu is not None, b.mem is not None)
    pod_dirs = set(obs.pod_uids) if obs.pod_uids is not None else None
    pr_known = obs.list_response is not None
    if pod_dirs is None and not pr_known and recorded:
        b.notes.append(
            "stale entries cannot be told: neither the pods directory nor PodResources "
            "could be read"
        )

    pods: list[PodAllocation] = []
    identities: list[PodIdentity] = []
    stale: list[StaleEntry] = []
    matched_pods = {i: uid for uid, i in matching.matched.items()}
    # Named pods (PodResources), by namespace/name.
    order = sorted(range(len(pr_pods)), key=lambda i: (pr_pods[i].namespace, pr_pods[i].name))
    for i in order:
        pr = pr_pods[i]
        uid = matched_pods.get(i, "")
        rec = recorded.get(uid) if uid else None
        pods.append(b.pod(rec, pr, uid, (pr.namespace, pr.name)))
        sources = (SOURCE_CHECKPOINT, SOURCE_PODRESOURCES) if uid else (SOURCE_PODRESOURCES,)
        identities.append(
            PodIdentity(
                uid,
                pr.namespace,
                pr.name,
                f"{pr.namespace}/{pr.name}",
                sources,
                live_dir=(uid in pod_dirs) if uid and pod_dirs is not None else None,
            )
        )
        if not uid and _reports_allocations(pr) and (b.cpu is not None or b.mem is not None):
            b.notes.append(
                f"PodResources reports allocations for pod {pr.namespace}/{pr.name} that no "
                "checkpoint entry matches (the state changed between the reads?)"
            )
    # Pods known by their UID only.
    for uid, rec in recorded.items():
        if uid in matching.matched:
            continue
        live_dir = (uid in pod_dirs) if pod_dirs is not None else None
        is_stale = (
            live_dir is not True
            and (pod_dirs is not None or pr_known)
            and (live_dir is False or uid not in matching.candidates)
        )
        if uid in matching.ambiguous:
            b.notes.append(
                f"pod UID {uid}: its allocations fit several PodResources pods; not joined"
            )
        pods.append(b.pod(rec, None, uid, (UID_ONLY_NAMESPACE, uid)))
        identities.append(
            PodIdentity(
                uid,
                None,
                None,
                f"{UID_ONLY_NAMESPACE}/{uid}",
                (SOURCE_CHECKPOINT,),
                stale=is_stale,
                live_dir=live_dir,
            )
        )
        if is_stale:
            stale.extend(_stale_entries(uid, b.cpu, b.mem))

    snapshot = _snapshot(obs, config, b, tuple(pods))
    pools: Pools | None = None
    if snapshot is not None:
        if obs.list_response is not None and obs.allocatable is not None:
            pools = derive_pools(
                obs.list_response,
                obs.allocatable,
                obs.topology,
                source=SOURCE_PODRESOURCES,
                observed_at=obs.observed_at,
            )
        else:
            pools = pools_from_snapshot(snapshot)
    return ObservedNode(
        name=obs.name,
        observed_at=obs.observed_at,
        snapshot=snapshot,
        sources=obs.sources,
        files=files,
        identities=tuple(identities),
        stale=tuple(stale),
        pools=pools,
        list_response=obs.list_response,
        allocatable=obs.allocatable,
        config_path=obs.config_path,
        config_text=obs.config_text,
        config_inferred=inferred,
        pod_uids=obs.pod_uids,
        notes=tuple(b.notes),
    )


def _reports_allocations(pod: PodResources) -> bool:
    return bool(pod.cpu_ids or pod.memory) or any(c.cpu_ids or c.memory for c in pod.containers)


def _snapshot(
    obs: Observation, config: KubeletConfig, b: _Builder, pods: tuple[PodAllocation, ...]
) -> NodeSnapshot | None:
    topo = obs.topology
    if topo is None:
        return None
    all_cpus = topo.all_cpus
    if b.cpu is not None:
        default = b.cpu.default_cpu_set
        if b.cpu.policy_name == "none":
            default = all_cpus  # the none policy writes an empty set and runs on every CPU
    elif obs.list_response is not None:
        held = 0
        for p in pods:
            held |= p.exclusive_cpus().mask | (p.pod_cpuset.mask if p.pod_cpuset else 0)
        default = CPUSet.from_mask(all_cpus.mask & ~held)
    else:
        default = all_cpus
    if obs.allocatable is not None and obs.allocatable.cpu_ids:
        reserved = all_cpus - cpu_set_of(obs.allocatable.cpu_ids)
    elif config.reserved_system_cpus is not None:
        reserved = config.reserved_system_cpus
    else:
        reserved = CPUSet()
        if config.cpu_manager_policy == "static":
            b.notes.append(
                "the reserved CPUs are unknown: PodResources did not answer and the "
                "configuration has no reservedSystemCPUs"
            )
    stray = [c for c in (reserved | default) if c not in topo.cpu_details]
    if stray:
        b.notes.append(
            f"the kubelet's CPU ids {cpu_set_of(stray)} are not online CPUs of this host's topology"
        )
    if b.cpu is not None:
        source = SOURCE_CHECKPOINT
    elif obs.list_response is not None:
        source = SOURCE_PODRESOURCES
    else:
        source = SOURCE_CHECKPOINT if b.mem is not None else SOURCE_SYSFS
    return NodeSnapshot(
        name=obs.name,
        simulated=False,
        topology=topo,
        config=config,
        reserved_cpus=reserved & all_cpus,
        default_cpuset=default & all_cpus,
        pods=pods,
        memory=_numa_memory(b.mem),
        source=source,
        observed_at=obs.observed_at,
        notes=tuple(b.notes),
    )

"""What a simulation run shows: the node's CPUs by owner (``CPUPools``, also the restart
report's), the JSON document of ``numascope simulate --json`` (``outcome_to_dict``, documented
in ``docs/simulate-json.md``) and the readable text report (``render_text``).

Both faces are built from one ``SimulationOutcome`` (``app.services.simulation``) and the
node's ``NodeSnapshot``; nothing here changes the node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.pools import cpuset_view
from app.domain.snapshot import ContainerAllocation, NodeSnapshot, PodAllocation
from app.domain.topology.model import CPUTopology
from app.domain.units import binary_quantity
from app.services.simulation import SimulatedAdmission, SimulationOutcome

FORMAT = "numascope-simulate/1"


def _mask(sets: Sequence[CPUSet]) -> CPUSet:
    m = 0
    for s in sets:
        m |= s.mask
    return CPUSet.from_mask(m)


@dataclass(frozen=True, slots=True)
class CPUPools:
    """The node's CPUs by owner (disjoint; together every CPU of the machine).

    ``reserved``: the CPU manager's reserved set; ``node_shared``: the default set minus the
    reserved CPUs; ``pod_shared``: pod budgets (pod entries) minus their exclusive slices;
    ``exclusive``: CPUs assigned to containers with isolation ``container``.
    """

    reserved: CPUSet
    node_shared: CPUSet
    pod_shared: CPUSet
    exclusive: CPUSet

    @classmethod
    def of(cls, snapshot: NodeSnapshot) -> CPUPools:
        reserved = snapshot.reserved_cpus
        exclusive = _mask([p.exclusive_cpus() for p in snapshot.pods])
        pod_shared = _mask([p.shared_pool() for p in snapshot.pods])
        return cls(reserved, snapshot.default_cpuset - reserved, pod_shared, exclusive)

    def restricted_to(self, cpus: CPUSet) -> CPUPools:
        return CPUPools(
            self.reserved & cpus, self.node_shared & cpus, self.pod_shared & cpus,
            self.exclusive & cpus,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "reserved": cpuset_view(self.reserved),
            "nodeShared": cpuset_view(self.node_shared),
            "podShared": cpuset_view(self.pod_shared),
            "exclusive": cpuset_view(self.exclusive),
        }


def container_pool(snapshot: NodeSnapshot, c: ContainerAllocation) -> tuple[str, CPUSet]:
    """Where a container runs: ``exclusive``, ``pod-shared`` or ``node-shared``, and on which
    CPUs (a shared container runs on the current default set, reserved CPUs included unless
    ``strict-cpu-reservation`` keeps them out of it)."""
    if c.isolation == "container":
        return "exclusive", c.cpuset
    if c.isolation == "pod":
        return "pod-shared", c.cpuset
    return "node-shared", snapshot.default_cpuset


def _blocks(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


def _pod_dict(snapshot: NodeSnapshot, p: PodAllocation) -> dict[str, Any]:
    containers = []
    for c in p.containers:
        pool, runs_on = container_pool(snapshot, c)
        containers.append(
            {
                "name": c.name,
                "kind": c.kind,
                "isolation": c.isolation,
                "pool": pool,
                "cpuset": cpuset_view(runs_on),
                "memory": _blocks(c.memory),
            }
        )
    return {
        "uid": p.uid,
        "namespace": p.namespace,
        "name": p.name,
        "qosClass": p.qos_class,
        "podCpuset": None if p.pod_cpuset is None else cpuset_view(p.pod_cpuset),
        "podSharedCpuset": cpuset_view(p.shared_pool()),
        "podMemory": _blocks(p.pod_memory),
        "containers": containers,
    }


def _numa_dicts(snapshot: NodeSnapshot) -> list[dict[str, Any]]:
    pools = CPUPools.of(snapshot)
    memory = {m.numa_id: m for m in snapshot.memory}
    topo = snapshot.topology
    out = []
    for n in topo.all_numa_node_ids():
        cpus = topo.cpus_of_numa_node(n) if n in topo.numa_node_ids() else CPUSet()
        m = memory.get(n)
        out.append(
            {
                "id": n,
                "cpus": cpuset_view(cpus),
                **pools.restricted_to(cpus).to_dict(),
                "memory": {}
                if m is None
                else {name: t.to_dict() for name, t in sorted(m.memory_map.items())},
            }
        )
    return out


def _admission_dict(a: SimulatedAdmission) -> dict[str, Any]:
    r = a.result
    d: dict[str, Any] = {
        "source": a.source,
        "admitted": r.admitted,
        "pod": {"uid": r.pod_uid, "namespace": r.namespace, "name": r.name},
    }
    if not r.admitted:
        d["reason"] = r.reason
        d["message"] = r.message
    if a.divergences:
        d["documentation"] = [
            {
                "key": n.key,
                "title": n.title,
                "docsSay": n.docs_say,
                "codeDoes": n.code_does,
                "upstreamFile": n.upstream_file,
                "upstreamUrl": n.upstream_url,
                "docsUrl": n.docs_url,
            }
            for n in a.divergences
        ]
    return d


def outcome_to_dict(outcome: SimulationOutcome) -> dict[str, Any]:
    """The JSON document of ``numascope simulate --json`` (``docs/simulate-json.md``)."""
    snap = outcome.node.snapshot()
    admitted = sum(1 for a in outcome.admissions if a.result.admitted)
    return {
        "format": FORMAT,
        "source": "simulation",
        "simulated": True,
        "node": _node_dict(outcome),
        "stateDir": outcome.state_dir,
        "dryRun": outcome.dry_run,
        "wrote": outcome.wrote,
        "restoredPods": outcome.restored_pods,
        "removed": [
            {"uid": p.uid, "namespace": p.namespace, "name": p.name} for p in outcome.removed
        ],
        "results": [_admission_dict(a) for a in outcome.admissions],
        "summary": {"admitted": admitted, "rejected": len(outcome.admissions) - admitted},
        "final": {
            "allCpus": cpuset_view(outcome.node.topology.all_cpus),
            "defaultCpuSet": cpuset_view(snap.default_cpuset),
            **CPUPools.of(snap).to_dict(),
            "numa": _numa_dicts(snap),
            "pods": [_pod_dict(snap, p) for p in snap.pods],
        },
    }


def _node_dict(outcome: SimulationOutcome) -> dict[str, Any]:
    """The simulated node: release, topology, configuration and the state files' versions."""
    node = outcome.node
    config = node.config
    topo = node.topology
    return {
        "name": node.name,
        "release": config.release,
        "topology": {
            "source": outcome.topology_kind,
            "argument": outcome.topology_arg,
            "name": topo.name,
            "numCpus": topo.num_cpus,
            "numCores": topo.num_cores,
            "numSockets": topo.num_sockets,
            "numNumaNodes": topo.num_numa_nodes,
        },
        "kubeletConfig": config.to_dict(),
        "featureGates": {
            "PodLevelResources": config.gate("PodLevelResources"),
            "PodLevelResourceManagers": config.gate("PodLevelResourceManagers"),
        },
        "stateFiles": outcome.versions.to_dict(),
    }


# -- text -----------------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in (header, *rows):
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=True)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _set_text(s: CPUSet) -> str:
    return str(s) if s else "-"


def _size(n: int) -> str:
    return binary_quantity(n)


def render_text(outcome: SimulationOutcome) -> str:
    """The readable report: admissions, per-NUMA pools and memory, assignments."""
    snap = outcome.node.snapshot()
    lines = [
        *_header_lines(outcome),
        *_admission_lines(outcome),
        *_cpu_lines(outcome.node.topology, snap),
        *_memory_lines(outcome.node.config, snap),
        *_assignment_lines(snap),
    ]
    return "\n".join(lines) + "\n"


def _header_lines(outcome: SimulationOutcome) -> list[str]:
    node = outcome.node
    config = node.config
    topo = node.topology
    gate = "on" if config.gate("PodLevelResourceManagers") else "off"
    lines = [
        f"Simulated node {node.name}: {topo.name} ({topo.num_cpus} CPUs, {topo.num_numa_nodes} "
        f"NUMA nodes), kubelet {config.release}, PodLevelResourceManagers {gate}",
        f"  cpuManagerPolicy {config.cpu_manager_policy}, memoryManagerPolicy "
        f"{config.memory_manager_policy}, topologyManagerPolicy "
        f"{config.topology_manager_policy}, topologyManagerScope {config.topology_manager_scope}",
    ]
    if outcome.state_dir is not None:
        what = "not written (dry run)" if outcome.dry_run else "written"
        lines.append(
            f"  state dir {outcome.state_dir}: {outcome.versions.cpu_label}, "
            f"{outcome.versions.memory_label}; {outcome.restored_pods} pod(s) restored, {what}"
        )
    elif outcome.dry_run:
        lines.append("  dry run")
    for pod in outcome.removed:
        lines.append(f"  removed {pod.key} ({pod.uid})")
    lines.append("")
    return lines


def _admission_lines(outcome: SimulationOutcome) -> list[str]:
    if not outcome.admissions:
        return []
    lines = ["Admissions"]
    rows: list[tuple[str, ...]] = []
    for a in outcome.admissions:
        r = a.result
        verdict = "admitted" if r.admitted else "rejected"
        detail = "" if r.admitted else f"{r.reason}: {r.message}"
        rows.append((f"{r.namespace}/{r.name}", verdict, detail))
    lines += _table(("POD", "RESULT", "REASON: MESSAGE"), rows)
    lines.append("")
    for a in outcome.admissions:
        for note in a.divergences:
            lines += [
                f"Note on {a.result.namespace}/{a.result.name}: {note.title}",
                f"  documentation: {note.docs_say}",
                f"  kubelet code:  {note.code_does}",
                f"  decided in {note.upstream_file}: {note.upstream_url}",
                f"  see {note.docs_url}",
                "",
            ]
    return lines


def _cpu_lines(topo: CPUTopology, snap: NodeSnapshot) -> list[str]:
    pools = CPUPools.of(snap)
    rows: list[tuple[str, ...]] = []
    for n in topo.numa_node_ids():
        part = pools.restricted_to(topo.cpus_of_numa_node(n))
        rows.append((str(n), _set_text(topo.cpus_of_numa_node(n)), *_pool_texts(part)))
    rows.append(("all", _set_text(topo.all_cpus), *_pool_texts(pools)))
    header = ("NUMA", "CPUS", "RESERVED", "NODE SHARED", "POD SHARED", "EXCLUSIVE")
    return ["CPUs per NUMA node", *_table(header, rows), ""]


def _pool_texts(pools: CPUPools) -> tuple[str, ...]:
    return tuple(
        _set_text(s) for s in (pools.reserved, pools.node_shared, pools.pod_shared, pools.exclusive)
    )


def _memory_lines(config: KubeletConfig, snap: NodeSnapshot) -> list[str]:
    lines = ["Memory per NUMA node"]
    if not snap.memory:
        lines.append(
            f"  memoryManagerPolicy {config.memory_manager_policy}: no NUMA memory accounting"
        )
    else:
        rows: list[tuple[str, ...]] = []
        for m in snap.memory:
            for name, t in sorted(m.memory_map.items()):
                sizes = (t.total, t.system_reserved, t.allocatable, t.reserved, t.free)
                rows.append((str(m.numa_id), name, *(_size(x) for x in sizes)))
        header = ("NUMA", "RESOURCE", "TOTAL", "SYSTEM RESERVED", "ALLOCATABLE", "RESERVED", "FREE")
        lines += _table(header, rows)
    lines.append("")
    return lines


def _assignment_lines(snap: NodeSnapshot) -> list[str]:
    if not snap.pods:
        return ["Assignments", "  no pods"]
    rows: list[tuple[str, ...]] = []
    for p in snap.pods:
        key = f"{p.namespace}/{p.name}"
        if p.pod_cpuset is not None or p.pod_memory:
            mem = ", ".join(_block_text(b) for b in p.pod_memory) or "-"
            budget = _set_text(p.pod_cpuset) if p.pod_cpuset is not None else "-"
            rows.append((key, "(pod budget)", "-", "-", budget, mem))
        for c in p.containers:
            pool, runs_on = container_pool(snap, c)
            mem = ", ".join(_block_text(b) for b in c.memory) or "-"
            rows.append((key, c.name, c.kind, f"{c.isolation} ({pool})", str(runs_on), mem))
    header = ("POD", "CONTAINER", "KIND", "ISOLATION", "CPUSET", "MEMORY")
    return ["Assignments", *_table(header, rows)]


def _block_text(b: Any) -> str:
    nodes = ",".join(str(n) for n in b.numa_affinity)
    return f"{b.type} {_size(b.size)} on NUMA {nodes}"

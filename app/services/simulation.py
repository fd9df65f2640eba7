"""Simulate a node: build it from a topology, a KubeletConfiguration file and a kubelet release,
admit (and remove) pods, keep its state in kubelet state files, and render what happened.

This is the use case behind ``numascope simulate`` (and anything else that wants a simulated
node with persistent state). It combines the domain engine (``app.domain.node``,
``app.domain.node_state``) with the adapters for kubelet configuration files, pod manifests
and state files.

Order of work in ``simulate``:

1. resolve the topology (a preset name, or a spec string: anything containing ``=``), read the
   kubelet configuration for the release, build the node (configuration errors name the file
   and the field);
2. parse every pod source (a file or ``-`` for stdin; multi-document YAML, JSON, ``List``
   objects) — all of them before anything is admitted;
3. with a state directory: take its lock, read ``cpu_manager_state``, ``memory_manager_state``
   and ``pods.json`` and restore the node through the release's checkpoint readers and the
   managers' start-up validation (``node_state.restore_node``);
4. remove the pods named by ``remove`` (``namespace/name`` or uid), in order;
5. admit the pods in order;
6. unless ``dry_run``: write all three files atomically (``adapters.statefiles``).

Any input problem raises ``SimulationInputError`` before step 6, so a failed run never changes
the state directory. Rejected pods are reported, not stored (the kubelet does not run them).
``dry_run`` does steps 1–5 in memory and writes nothing.

``pods.json`` (documented in ``docs/simulate-json.md``) holds the admitted pods as normalised
v1 manifests in admission order with their admission times: the kubelet's own files only carry
pod UIDs and container names. A state file that is missing while ``pods.json`` records pods is
an error (a kubelet that lost its files would re-admit its pods; this simulator asks the user
to start afresh instead).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.adapters import statefiles
from app.adapters.kubelet_files import load_kubelet_config
from app.adapters.manifests import parse_pod_manifests
from app.domain import hint_budget as hint_search
from app.domain.cpuset import CPUSet
from app.domain.doc_divergences import Divergence, divergences_for
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError
from app.domain.node import AdmissionResult, Node, NodeError
from app.domain.node_state import (
    CPU_FILE_NAME,
    MEMORY_FILE_NAME,
    PODS_FILE_NAME,
    NodeStateError,
    StateFileVersions,
    pods_document,
    pods_from_document,
    render_state_files,
    restore_node,
    state_file_versions,
)
from app.domain.pod import Pod, PodManifestError
from app.domain.pools import cpuset_view
from app.domain.presets import get_preset, parse_topology_spec
from app.domain.snapshot import ContainerAllocation, NodeSnapshot, PodAllocation
from app.domain.topology import CPUTopology, TopologyError
from app.domain.units import binary_quantity

FORMAT = "numascope-simulate/1"
DEFAULT_NODE_NAME = "simulated"
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


class SimulationInputError(Exception):
    """Bad input: topology, configuration, manifest, state directory, unknown pod to remove.

    ``source`` names the file or option at fault, ``field`` the field inside it (if known).
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        text = f"{source}: {message}" if source else message
        super().__init__(text)
        self.message = message
        self.source = source
        self.field = field


@dataclass(frozen=True, slots=True)
class PodSource:
    """Manifest text and where it came from (a path, or ``-`` for stdin)."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class SimulatedAdmission:
    source: str
    result: AdmissionResult
    # Known documentation/code differences a rejection falls under (app.domain.doc_divergences)
    divergences: tuple[Divergence, ...] = ()


@dataclass(slots=True)
class SimulationOutcome:
    """Everything a run did, ready to be rendered."""

    node: Node
    topology_kind: str  # "preset" | "spec"
    topology_arg: str
    versions: StateFileVersions
    admissions: list[SimulatedAdmission] = field(default_factory=list)
    removed: list[Pod] = field(default_factory=list)
    restored_pods: int = 0
    state_dir: str | None = None
    dry_run: bool = False
    wrote: bool = False

    @property
    def all_admitted(self) -> bool:
        return all(a.result.admitted for a in self.admissions)

    @property
    def exit_code(self) -> int:
        return 0 if self.all_admitted else 1

    def snapshot(self) -> NodeSnapshot:
        return self.node.snapshot()


# -- inputs ----------------------------------------------------------------------------------


def resolve_topology_arg(text: str) -> tuple[str, CPUTopology]:
    """``("spec", topology)`` when ``text`` contains ``=``, else ``("preset", topology)``."""
    try:
        if "=" in text:
            return "spec", parse_topology_spec(text)
        return "preset", get_preset(text)
    except TopologyError as err:
        raise SimulationInputError(str(err), source="--topology") from None


def load_config(path: str | Path, release: str) -> KubeletConfig:
    """The KubeletConfiguration file for ``release``; errors name the file and the field."""
    try:
        return load_kubelet_config(path, release)
    except KubeletConfigError as err:
        if err.field == str(path):  # the file itself (missing, unreadable)
            raise SimulationInputError(err.message, source=str(path)) from None
        raise SimulationInputError(
            f"{err.field}: {err.message}", source=str(path), field=err.field
        ) from None


def read_pod_source(name: str, stdin: Callable[[], str] | None = None) -> PodSource:
    """Read a manifest file (``-``: standard input)."""
    if name == "-":
        reader = stdin if stdin is not None else sys.stdin.read
        return PodSource("-", reader())
    p = Path(name)
    try:
        if p.is_dir():
            raise SimulationInputError("is a directory, expected a manifest file", source=name)
        if p.stat().st_size > MAX_MANIFEST_BYTES:
            raise SimulationInputError("manifest is larger than 16 MiB", source=name)
        return PodSource(name, p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SimulationInputError("no such file", source=name) from None
    except PermissionError:
        raise SimulationInputError("permission denied", source=name) from None
    except UnicodeDecodeError:
        raise SimulationInputError("is not UTF-8 text", source=name) from None
    except OSError as err:
        raise SimulationInputError(err.strerror or str(err), source=name) from None


def parse_pod_sources(sources: Sequence[PodSource], config: KubeletConfig) -> list[tuple[str, Pod]]:
    """Every pod of every source, in order; errors name the source and the field."""
    out: list[tuple[str, Pod]] = []
    for source in sources:
        try:
            pods = parse_pod_manifests(
                source.text, pod_level_resources_enabled=config.gate("PodLevelResources")
            )
        except PodManifestError as err:
            raise SimulationInputError(str(err), source=source.name, field=err.field) from None
        out.extend((source.name, p) for p in pods)
    return out


def build_node(
    topology: CPUTopology,
    config: KubeletConfig,
    *,
    config_source: str = "kubelet config",
    name: str = DEFAULT_NODE_NAME,
    clock: Callable[[], float] = time.time,
) -> Node:
    try:
        return Node(name, topology, config, clock=clock)
    except KubeletConfigError as err:
        raise SimulationInputError(
            f"{err.field}: {err.message}", source=config_source, field=err.field
        ) from None


# -- state directory --------------------------------------------------------------------------


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SimulationInputError("is not UTF-8 text", source=str(path)) from None


def restore_from_dir(node: Node, state_dir: Path) -> int:
    """Restore ``node`` from ``state_dir``; returns the number of restored pods."""
    try:
        cpu = statefiles.read_file(state_dir, CPU_FILE_NAME)
        memory = statefiles.read_file(state_dir, MEMORY_FILE_NAME)
        pods_raw = statefiles.read_file(state_dir, PODS_FILE_NAME)
    except statefiles.StateFileError as err:
        raise SimulationInputError(err.message, source=err.path) from None
    if cpu is None and memory is None and pods_raw is None:
        return 0
    pods: list[tuple[Pod, float]] = []
    if pods_raw is not None:
        path = state_dir / PODS_FILE_NAME
        try:
            doc = json.loads(_decode(pods_raw, path))
        except json.JSONDecodeError as err:
            raise SimulationInputError(
                f"not valid JSON at line {err.lineno}, column {err.colno}", source=str(path)
            ) from None
        try:
            pods = pods_from_document(
                doc, pod_level_resources_enabled=node.config.gate("PodLevelResources")
            )
        except NodeStateError as err:
            raise SimulationInputError(err.message, source=str(state_dir)) from None
    if pods:
        for name, content in ((CPU_FILE_NAME, cpu), (MEMORY_FILE_NAME, memory)):
            if content is None:
                raise SimulationInputError(
                    f"{name} is missing but {PODS_FILE_NAME} records {len(pods)} pod(s); the "
                    f"state cannot be restored (remove {PODS_FILE_NAME} as well to start with "
                    "an empty node)",
                    source=str(state_dir),
                )
    files = {CPU_FILE_NAME: cpu, MEMORY_FILE_NAME: memory}
    try:
        restore_node(node, files, pods, str(state_dir))
    except NodeStateError as err:
        raise SimulationInputError(err.message, source=str(state_dir)) from None
    return len(pods)


def state_files_of(node: Node) -> dict[str, str]:
    """Every file a state directory holds for ``node`` (state files + ``pods.json``)."""
    files: dict[str, str] = dict(render_state_files(node))
    files[PODS_FILE_NAME] = json.dumps(pods_document(node), indent=2, sort_keys=False) + "\n"
    return files


# -- the use case -------------------------------------------------------------------------------


def simulate(
    topology: str,
    kubelet_config: str | Path,
    pods: Sequence[PodSource] = (),
    *,
    release: str = "1.37",
    state_dir: str | Path | None = None,
    dry_run: bool = False,
    remove: Sequence[str] = (),
    node_name: str = DEFAULT_NODE_NAME,
    clock: Callable[[], float] = time.time,
    hint_budget: int | None = None,
) -> SimulationOutcome:
    """Run one simulation (see the module docstring). Raises ``SimulationInputError``, or
    ``HintSearchBudgetError`` (before anything runs or is written) for a pod whose hint search
    is beyond ``hint_budget`` combinations."""
    kind, topo = resolve_topology_arg(topology)
    config = load_config(kubelet_config, release)
    node = build_node(topo, config, config_source=str(kubelet_config), name=node_name, clock=clock)
    parsed = parse_pod_sources(pods, config)
    outcome = SimulationOutcome(
        node=node,
        topology_kind=kind,
        topology_arg=topology,
        versions=state_file_versions(config),
        state_dir=None if state_dir is None else str(state_dir),
        dry_run=dry_run,
    )
    for _, pod in parsed:
        hint_search.check_node(node, pod, hint_budget, "the budget (--hint-budget)")
    if state_dir is None:
        _run(outcome, parsed, remove)
        return outcome
    directory = Path(state_dir)
    try:
        with statefiles.StateDirLock(directory):
            outcome.restored_pods = restore_from_dir(node, directory)
            _run(outcome, parsed, remove)
            if not dry_run:
                statefiles.write_files(directory, state_files_of(node))
                outcome.wrote = True
    except statefiles.StateFileError as err:
        raise SimulationInputError(err.message, source=err.path) from None
    return outcome


def _run(
    outcome: SimulationOutcome, parsed: Sequence[tuple[str, Pod]], remove: Sequence[str]
) -> None:
    node = outcome.node
    for key in remove:
        try:
            outcome.removed.append(node.remove(key))
        except NodeError as err:
            raise SimulationInputError(err.message, source="--remove") from None
    for source, pod in parsed:
        try:
            result = node.admit(pod)
        except NodeError as err:
            raise SimulationInputError(err.message, source=source, field=err.field) from None
        notes = (
            ()
            if result.admitted
            else divergences_for(node.config, pod, result.reason, result.message)
        )
        outcome.admissions.append(SimulatedAdmission(source, result, notes))


# -- views ----------------------------------------------------------------------------------------


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
    node = outcome.node
    snap = node.snapshot()
    config = node.config
    topo = node.topology
    admitted = sum(1 for a in outcome.admissions if a.result.admitted)
    return {
        "format": FORMAT,
        "source": "simulation",
        "simulated": True,
        "node": {
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
        },
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
            "allCpus": cpuset_view(topo.all_cpus),
            "defaultCpuSet": cpuset_view(snap.default_cpuset),
            **CPUPools.of(snap).to_dict(),
            "numa": _numa_dicts(snap),
            "pods": [_pod_dict(snap, p) for p in snap.pods],
        },
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
    node = outcome.node
    snap = node.snapshot()
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

    if outcome.admissions:
        lines.append("Admissions")
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

    pools = CPUPools.of(snap)
    lines.append("CPUs per NUMA node")
    cpu_rows: list[tuple[str, ...]] = []
    for n in topo.numa_node_ids():
        part = pools.restricted_to(topo.cpus_of_numa_node(n))
        cpu_rows.append(
            (
                str(n),
                _set_text(topo.cpus_of_numa_node(n)),
                _set_text(part.reserved),
                _set_text(part.node_shared),
                _set_text(part.pod_shared),
                _set_text(part.exclusive),
            )
        )
    cpu_rows.append(
        (
            "all",
            _set_text(topo.all_cpus),
            _set_text(pools.reserved),
            _set_text(pools.node_shared),
            _set_text(pools.pod_shared),
            _set_text(pools.exclusive),
        )
    )
    lines += _table(
        ("NUMA", "CPUS", "RESERVED", "NODE SHARED", "POD SHARED", "EXCLUSIVE"), cpu_rows
    )
    lines.append("")

    lines.append("Memory per NUMA node")
    if not snap.memory:
        lines.append(
            f"  memoryManagerPolicy {config.memory_manager_policy}: no NUMA memory accounting"
        )
    else:
        mem_rows: list[tuple[str, ...]] = []
        for m in snap.memory:
            for name, t in sorted(m.memory_map.items()):
                mem_rows.append(
                    (
                        str(m.numa_id),
                        name,
                        _size(t.total),
                        _size(t.system_reserved),
                        _size(t.allocatable),
                        _size(t.reserved),
                        _size(t.free),
                    )
                )
        header = ("NUMA", "RESOURCE", "TOTAL", "SYSTEM RESERVED", "ALLOCATABLE", "RESERVED", "FREE")
        lines += _table(header, mem_rows)
    lines.append("")

    lines.append("Assignments")
    if not snap.pods:
        lines.append("  no pods")
    else:
        pod_rows: list[tuple[str, ...]] = []
        for p in snap.pods:
            key = f"{p.namespace}/{p.name}"
            if p.pod_cpuset is not None or p.pod_memory:
                mem = ", ".join(_block_text(b) for b in p.pod_memory) or "-"
                budget = _set_text(p.pod_cpuset) if p.pod_cpuset is not None else "-"
                pod_rows.append((key, "(pod budget)", "-", "-", budget, mem))
            for c in p.containers:
                pool, runs_on = container_pool(snap, c)
                mem = ", ".join(_block_text(b) for b in c.memory) or "-"
                pod_rows.append((key, c.name, c.kind, f"{c.isolation} ({pool})", str(runs_on), mem))
        lines += _table(("POD", "CONTAINER", "KIND", "ISOLATION", "CPUSET", "MEMORY"), pod_rows)
    return "\n".join(lines) + "\n"


def _block_text(b: Any) -> str:
    nodes = ",".join(str(n) for n in b.numa_affinity)
    return f"{b.type} {_size(b.size)} on NUMA {nodes}"

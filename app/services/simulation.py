"""Simulate a node: build it from a topology, a KubeletConfiguration file and a kubelet release,
admit (and remove) pods, keep its state in kubelet state files, and render what happened.

This is the use case behind ``numascope simulate`` (and anything else that wants a simulated
node with persistent state). It combines the domain engine (``app.domain.node.model``,
``app.domain.node.state``) with the adapters for kubelet configuration files, pod manifests
and state files. What a run shows (its JSON document and text report) is
``app.services.simulation_report``.

Order of work in ``simulate``:

1. resolve the topology (a preset name, or a spec string: anything containing ``=``), read the
   kubelet configuration for the release, build the node (configuration errors name the file
   and the field);
2. parse every pod source (a file or ``-`` for stdin; multi-document YAML, JSON, ``List``
   objects) — all of them before anything is admitted;
3. with a state directory: take its lock, read ``cpu_manager_state``, ``memory_manager_state``
   and ``pods.json`` and restore the node through the release's checkpoint readers and the
   managers' start-up validation (``node.state.restore_node``);
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

from app.adapters import statefiles
from app.adapters.kubelet_files import load_kubelet_config
from app.adapters.manifests import parse_pod_manifests
from app.domain import hint_budget as hint_search
from app.domain import releases
from app.domain.checkpoint import CPU_FILE_NAME, MEMORY_FILE_NAME
from app.domain.doc_divergences import Divergence, divergences_for
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError
from app.domain.node.model import AdmissionResult, Node, NodeError
from app.domain.node.pods import pods_document, pods_from_document
from app.domain.node.state import restore_node
from app.domain.node.state_files import (
    PODS_FILE_NAME,
    NodeStateError,
    StateFileVersions,
    render_state_files,
    state_file_versions,
)
from app.domain.pod.model import Pod, PodManifestError
from app.domain.presets import get_preset
from app.domain.snapshot import NodeSnapshot
from app.domain.topology.model import CPUTopology, TopologyError
from app.domain.topology.spec import parse_topology_spec

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
    release: str = releases.DEFAULT_RELEASE,
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
    else:
        _run_in_dir(outcome, parsed, remove, Path(state_dir))
    return outcome


def _run_in_dir(
    outcome: SimulationOutcome,
    parsed: Sequence[tuple[str, Pod]],
    remove: Sequence[str],
    directory: Path,
) -> None:
    """Run on the node kept in ``directory``, under its lock: restore the node from the
    directory's files, run, then write the files back (unless a dry run)."""
    try:
        with statefiles.StateDirLock(directory):
            outcome.restored_pods = restore_from_dir(outcome.node, directory)
            _run(outcome, parsed, remove)
            if not outcome.dry_run:
                statefiles.write_files(directory, state_files_of(outcome.node))
                outcome.wrote = True
    except statefiles.StateFileError as err:
        raise SimulationInputError(err.message, source=err.path) from None


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

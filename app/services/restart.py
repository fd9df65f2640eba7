"""``numascope restart``: a kubelet of another (or the same) release starts on a simulated
node's state directory and re-admits its pods (the engine part is ``app.domain.restart``).

Order of work in ``restart``:

1. check the release and ``--feature-gates`` (``NAME=BOOL,...``, booleans as Go's
   ``strconv.ParseBool`` reads them, component-base's texts for bad pairs);
2. take the state directory's lock and read ``pods.json`` (the record ``simulate`` and the
   dashboard keep: pods in admission order, the machine's topology, the kubelet
   configuration), ``cpu_manager_state`` and ``memory_manager_state`` (a missing state file is
   a fresh start, as for a kubelet);
3. build the configuration for the release: ``--kubelet-config`` or the recorded one, with the
   gates of ``--feature-gates`` over it, checked as the release checks it;
4. restart (``restart_node``) and, when the kubelet started and this is not a dry run, write
   the three files as the release writes them (``simulation.state_files_of``): rejected pods
   are no longer recorded, re-admitted ones keep their admission times.

Every input problem raises ``RestartUsageError`` (exit 2) before anything is written; a kubelet
that does not start writes nothing. Exit 0 when it started and every pod kept its resources, 1
otherwise (``RestartResult.exit_code``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.adapters import statefiles
from app.domain import releases
from app.domain.checkpoint import CPU_FILE_NAME, MEMORY_FILE_NAME
from app.domain.kubelet_config import (
    KubeletConfig,
    KubeletConfigError,
)
from app.domain.node.model import Node
from app.domain.node.pods import pods_from_document
from app.domain.node.state_files import PODS_FILE_NAME, NodeStateError, state_file_versions
from app.domain.restart import (
    RestartInputError,
    RestartResult,
    TargetConfig,
    config_for_release,
    restart_for,
)
from app.domain.topology.model import CPUTopology
from app.domain.topology.record import TopologyRecordError, topology_from_record
from app.services.simulation import SimulationInputError, load_config, state_files_of
from app.services.simulation_report import CPUPools

FORMAT = "numascope-restart/1"

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class RestartUsageError(SimulationInputError):
    """Bad input for a restart; names the file or option at fault (exit 2)."""


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``NAME=BOOL,...`` as the kubelet's ``--feature-gates`` flag reads it."""
    gates: dict[str, bool] = {}
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        if "=" not in item:
            raise RestartUsageError(f"missing bool value for {item}", source="--feature-gates")
        name, value = (s.strip() for s in item.split("=", 1))
        if value in _TRUE:
            gates[name] = True
        elif value in _FALSE:
            gates[name] = False
        else:
            raise RestartUsageError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                "invalid syntax",
                source="--feature-gates",
            )
    return gates


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """What ``pods.json`` says about the node beside its pods."""

    name: str
    release: str | None
    topology: CPUTopology
    config: Mapping[str, Any]
    document: Mapping[str, Any]


def _record_document(raw: bytes | None, path: Path) -> Mapping[str, Any]:
    """``pods.json`` as a JSON object."""
    if raw is None:
        raise RestartUsageError(
            f"no {PODS_FILE_NAME}: the pods of this node are not recorded (a state directory "
            "of numascope simulate --state-dir or of the dashboard has one)",
            source=str(path.parent),
        )
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise RestartUsageError("is not UTF-8 text", source=str(path)) from None
    except json.JSONDecodeError as err:
        raise RestartUsageError(
            f"not valid JSON at line {err.lineno}, column {err.colno}", source=str(path)
        ) from None
    if not isinstance(doc, Mapping):
        raise RestartUsageError("expected a JSON object", source=str(path))
    return doc


def read_record(raw: bytes | None, path: Path) -> NodeRecord:
    """The node record of a state directory; raises ``RestartUsageError`` naming the field."""
    source = str(path)
    doc = _record_document(raw, path)
    if "topology" not in doc:
        raise RestartUsageError(
            "topology: the machine is not recorded (written by an older numascope; run "
            "numascope simulate once on this state directory to record it)",
            source=source,
            field="topology",
        )
    try:
        topology = topology_from_record(doc["topology"])
    except TopologyRecordError as err:
        raise RestartUsageError(str(err), source=source, field=err.field) from None
    config = doc.get("kubeletConfig")
    if not isinstance(config, Mapping):
        raise RestartUsageError(
            "kubeletConfig: expected the recorded KubeletConfiguration object (or pass "
            "--kubelet-config FILE)",
            source=source,
            field="kubeletConfig",
        )
    name = doc.get("node") if isinstance(doc.get("node"), str) else "simulated"
    release = doc.get("release") if isinstance(doc.get("release"), str) else None
    return NodeRecord(str(name), release, topology, config, doc)


def build_config(
    base: Mapping[str, Any], release: str, gates: Mapping[str, bool], *, source: str
) -> TargetConfig:
    """The configuration ``base`` (KubeletConfiguration spelling) for ``release`` with
    ``gates`` set over its own. A gate ``release`` refuses (one it does not know, or locked) is
    part of the answer (``TargetConfig.refusals``: the kubelet does not start); every other
    error names the option or file at fault."""
    merged = dict(base)
    if gates:
        own = merged.get("featureGates")
        merged["featureGates"] = {**(own if isinstance(own, Mapping) else {}), **gates}
    try:
        return config_for_release(merged, release)
    except KubeletConfigError as err:
        gate = err.field.removeprefix("featureGates.")
        if err.field.startswith("featureGates.") and gate in gates:
            raise RestartUsageError(
                f"{gate}: {err.message}", source="--feature-gates", field=err.field
            ) from None
        hint = ""
        if source.endswith(PODS_FILE_NAME):
            hint = (
                f" (the recorded configuration; give --kubelet-config FILE for kubelet {release})"
            )
        raise RestartUsageError(
            f"{err.field}: {err.message}{hint}", source=source, field=err.field
        ) from None


@dataclass(slots=True)
class RestartOutcome:
    result: RestartResult
    state_dir: str
    dry_run: bool
    wrote: bool
    config_source: str
    node_name: str

    @property
    def exit_code(self) -> int:
        return self.result.exit_code


def _arguments(
    state_dir: str | Path, release: str, feature_gates: str | Mapping[str, bool] | None
) -> tuple[dict[str, bool], Path]:
    """The gates to set and the state directory, or a usage error naming the bad argument."""
    problem = releases.complaint(release)
    if problem is not None:
        raise RestartUsageError(problem, source="--release")
    if isinstance(feature_gates, str):
        gates = parse_feature_gates(feature_gates)
    else:
        gates = dict(feature_gates or {})
    directory = Path(state_dir)
    if not directory.is_dir():
        what = "no such directory" if not directory.exists() else "is not a directory"
        raise RestartUsageError(what, source=str(directory))
    return gates, directory


def _restart_record(
    target: TargetConfig,
    record: NodeRecord,
    files: Mapping[str, bytes | None],
    directory: Path,
    source: str,
    clock: Callable[[], float] | None,
) -> RestartResult:
    """The recorded node's pods read as ``target`` reads them, and its kubelet restarted on
    ``files``; an input the record or configuration gets wrong is a usage error naming it."""
    try:
        pods = pods_from_document(
            record.document,
            pod_level_resources_enabled=target.config.gate("PodLevelResources"),
        )
    except NodeStateError as err:
        raise RestartUsageError(err.message, source=str(directory)) from None
    try:
        return restart_for(
            target,
            record.topology,
            files,
            pods,
            state_dir=str(directory),
            name=record.name,
            previous_release=record.release,
            clock=clock,
        )
    except RestartInputError as err:
        raise RestartUsageError(err.message, source=str(directory)) from None
    except KubeletConfigError as err:
        raise RestartUsageError(
            f"{err.field}: {err.message}", source=source, field=err.field
        ) from None


def restart(
    state_dir: str | Path,
    release: str,
    *,
    kubelet_config: str | Path | None = None,
    feature_gates: str | Mapping[str, bool] | None = None,
    dry_run: bool = False,
    clock: Callable[[], float] | None = None,
) -> RestartOutcome:
    """Restart the node of ``state_dir`` under ``release`` (see the module docstring)."""
    gates, directory = _arguments(state_dir, release, feature_gates)
    base_file: KubeletConfig | None = None
    if kubelet_config is not None:
        base_file = load_config(kubelet_config, release)
    try:
        with statefiles.StateDirLock(directory):
            files = {
                name: statefiles.read_file(directory, name)
                for name in (CPU_FILE_NAME, MEMORY_FILE_NAME)
            }
            record = read_record(
                statefiles.read_file(directory, PODS_FILE_NAME), directory / PODS_FILE_NAME
            )
            source = (
                str(kubelet_config)
                if kubelet_config is not None
                else str(directory / PODS_FILE_NAME)
            )
            base = base_file.to_dict() if base_file is not None else record.config
            target = build_config(base, release, gates, source=source)
            result = _restart_record(target, record, files, directory, source, clock)
            wrote = False
            if result.started and result.node is not None and not dry_run:
                statefiles.write_files(directory, state_files_of(result.node))
                wrote = True
    except statefiles.StateFileError as err:
        raise RestartUsageError(err.message, source=err.path) from None
    return RestartOutcome(result, str(directory), dry_run, wrote, source, record.name)


# -- views ----------------------------------------------------------------------------------


def outcome_to_dict(outcome: RestartOutcome) -> dict[str, Any]:
    """The JSON of ``numascope restart --json`` (``docs/restart-json.md``)."""
    result = outcome.result
    doc: dict[str, Any] = {"format": FORMAT, "node": outcome.node_name}
    doc.update(result.to_dict())
    versions = None
    if result.node is not None:
        versions = state_file_versions(result.node.config).to_dict()
    doc.update(
        {
            "stateDir": outcome.state_dir,
            "dryRun": outcome.dry_run,
            "wrote": outcome.wrote,
            "stateFiles": versions,
        }
    )
    return doc


def _cell(text: str | None) -> str:
    return text if text else "-"


def _change(before: Any, after: Any) -> str:
    b, a = (
        _cell(None if before is None else str(before)),
        _cell(None if after is None else str(after)),
    )
    return b if a == b else f"{b} -> {a}"


def render_text(outcome: RestartOutcome) -> str:
    """The readable report: start-up, lost entries, and what became of each pod."""
    r = outcome.result
    gate = "on" if r.gates.get("PodLevelResourceManagers") else "off"
    previous = r.previous_release or "unknown"
    lines = [
        f"Restart of node {outcome.node_name}: kubelet {previous} -> {r.release}, "
        f"PodLevelResourceManagers {gate}",
        f"  state dir {outcome.state_dir}: "
        + (
            "written"
            if outcome.wrote
            else "not written (dry run)"
            if outcome.dry_run
            else "not written"
        ),
    ]
    lines += _result_lines(r)
    if r.once_changed is not None:
        lines += ["", "Once the configuration is changed", *_result_lines(r.once_changed)]
    return "\n".join(lines) + "\n"


def _result_lines(r: RestartResult) -> list[str]:
    lines: list[str] = []
    if not r.started:
        lines += ["", "The kubelet does not start", f"  {r.error}", "", "Recovery"]
        lines += [f"  {i}. {step}" for i, step in enumerate(r.recovery, 1)]
    if r.lost:
        lines += ["", "Lost by the reader"] + [f"  {text}" for text in r.lost_named or r.lost]
    if r.started:
        counts = r.counts()
        lines += [
            "",
            "Pods (" + ", ".join(f"{n} {outcome}" for outcome, n in counts.items() if n) + ")"
            if r.pods
            else "Pods: none",
        ]
        rows: list[tuple[str, ...]] = []
        for p in r.pods:
            detail = f"{p.reason}: {p.message}" if p.reason else ""
            if p.leaked_cpus:
                detail += f" (CPUs {p.leaked_cpus} leaked, kubernetes#140989)"
            if p.budget_before is None and p.budget_after is None:
                rows.append((p.key, p.outcome, "", "", detail))
            else:
                budget = _change(p.budget_before, p.budget_after)
                rows.append((p.key, p.outcome, "(pod budget)", budget, detail))
            for c in p.containers:
                if c.before is None and c.after is None:
                    continue
                rows.append(("", "", c.name, _change(c.before, c.after), ""))
        if rows:
            lines += _table(("POD", "OUTCOME", "CONTAINER", "CPUS BEFORE -> AFTER", "REASON"), rows)
    if r.leaked_cpus:
        lines += ["", f"Leaked CPUs: {r.leaked_cpus}"] + [f"  {w}" for w in r.warnings]
    if r.node is not None:
        lines += ["", "CPUs per NUMA node after the restart", *_numa_rows(r.node)]
    return lines


def _numa_rows(node: Node) -> list[str]:
    """The pools per NUMA node, as ``simulate`` prints them."""
    topo = node.topology
    pools = CPUPools.of(node.snapshot())
    rows: list[tuple[str, ...]] = []
    for n, cpus in [*((str(n), topo.cpus_of_numa_node(n)) for n in topo.numa_node_ids()),
                    ("all", topo.all_cpus)]:  # fmt: skip
        part = pools.restricted_to(cpus)
        rows.append(
            (n, str(cpus) or "-", *(str(s) or "-" for s in (
                part.reserved, part.node_shared, part.pod_shared, part.exclusive)))
        )  # fmt: skip
    return _table(("NUMA", "CPUS", "RESERVED", "NODE SHARED", "POD SHARED", "EXCLUSIVE"), rows)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return [
        ("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in (header, *rows)
    ]

"""Upgrade readiness of one node: what a kubelet of release R does with the node's state files
at start-up, in the checkpoint inspector's words (``app.services.checkpoints.check_root_dir``).

The verdict is the inspector's own: ``check_root_dir`` runs on the node's kubelet root dir (an
observed node: ``Settings.kubelet_root``, read-only) or, for a simulated node,
``check_root_content`` on the root dir's content in memory (its state files' bytes as its
engine writes them, its KubeletConfiguration as ``config.yaml`` and one ``pods/<uid>``
directory per admitted pod, so stale-entry checks see its live pods), under
``/var/lib/kubelet``, where they live on a real node, so the recovery commands read as what to
run there.

A node's verdict is its worst file's: ``will-fail`` > ``policy-mismatch`` >
``compatible-with-loss`` > ``compatible`` (a missing file is a fresh start).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.adapters.kubelet import CONFIG_FILE_NAME, STATE_FILES
from app.domain.checkpoint import (
    COMPATIBLE,
    COMPATIBLE_WITH_LOSS,
    POLICY_MISMATCH,
    WILL_FAIL,
    InspectionReport,
)
from app.domain.kubelet_config import KubeletConfigError
from app.domain.node.state_files import GATE
from app.domain.restart import RestartResult, TargetConfig, start_up, with_node_names
from app.domain.topology.model import CPUTopology
from app.services.checkpoints import (
    CheckpointServiceError,
    DirCheck,
    FileCheck,
    RootContent,
    check_root_content,
    check_root_dir,
)
from app.services.node_views import pod_url
from app.services.nodes.errors import NodeInputError
from app.services.nodes.target_config import restart_config

KUBELET_ROOT = "/var/lib/kubelet"
_ORDER = {COMPATIBLE: 0, "missing": 0, COMPATIBLE_WITH_LOSS: 1, POLICY_MISMATCH: 2, WILL_FAIL: 3}


class UpgradeInputError(ValueError):
    """A release or gate setting the inspector cannot model (``field`` names it)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def node_verdict(node: str, check: DirCheck) -> dict[str, Any]:
    """The fleet's per-node answer from the inspector's ``DirCheck`` (its files' verdicts,
    rescues and advice, not their full reports)."""
    files = [_file_doc(f) for f in check.files]
    status = max((f["status"] for f in files), key=lambda s: _ORDER.get(s, 3), default=COMPATIBLE)
    if status == "missing":
        status = COMPATIBLE
    lost: list[str] = []
    error: str | None = None
    recovery: list[str] = []
    for f in files:
        v = f.get("verdict") or {}
        lost.extend(f"{f['name']}: {item}" for item in v.get("lostNamed") or v.get("lost", []))
        if error is None and f["status"] in (WILL_FAIL, POLICY_MISMATCH):
            error = v.get("message") or v.get("error") or f"{f['name']}: {f['status']}"
        for r in f.get("rescues", []):
            recovery.append(f"{r['command']}  # {f['name']} → {r['toVersion']}: {r['verdict']}")
        recovery.extend(with_node_names(a, [node]) for a in f.get("advice", []))
    if status in (WILL_FAIL, POLICY_MISMATCH):
        recovery.insert(0, f"drain node {node} before its kubelet is replaced")
    return {
        "node": node,
        "verdict": status,
        "lost": lost,
        "error": error,
        "recovery": recovery,
        "target": check.target.to_dict(),
        "files": files,
        "issues": [i.to_dict() for i in check.issues],
    }


def _file_doc(f: FileCheck) -> dict[str, Any]:
    """One file's part of a node's answer."""
    report = f.view.report if f.view is not None else None
    return {
        "name": f.name,
        "status": f.status,
        "version": _version(report),
        "verdict": f.verdict.to_dict() if f.verdict is not None else None,
        "rescues": [r.to_dict() for r in f.rescues],
        "advice": list(f.advice),
    }


def _version(report: InspectionReport | None) -> str | None:
    found = report.version if report is not None else None
    return found.version if found is not None else None


def _check(
    root: RootContent | Path,
    release: str,
    gate: bool | None,
    pod_names: Mapping[str, str] | None = None,
    config: Path | None = None,
) -> DirCheck:
    try:
        if isinstance(root, RootContent):
            return check_root_content(root, release, gate=gate, pod_names=pod_names, details=False)
        return check_root_dir(root, release, gate=gate, config_file=config, pod_names=pod_names)
    except CheckpointServiceError as exc:
        field = "podLevelResourceManagers" if exc.field == "gate" else "release"
        raise UpgradeInputError(exc.message, field) from None


@dataclass(frozen=True, slots=True)
class NodeFiles:
    """What a node's kubelet start-up is judged on: the machine, the configuration as the
    node's text says it, the state files and the pods (uid -> ``namespace/name``)."""

    name: str
    topology: CPUTopology
    release: str
    config_text: str
    files: Mapping[str, str | bytes | None]
    pods: Mapping[str, str]


def check_files(node: NodeFiles, release: str, gate: bool | None) -> dict[str, Any]:
    """A simulated node's verdict for a kubelet of ``release`` (``gate``: the
    ``PodLevelResourceManagers`` setting, ``None`` as configured): the start-up model
    (``app.domain.restart.start_up``, the rehearsal's own start-up, so the verdict says the
    kubelet starts exactly when the rehearsal does) judges; the inspector, on the node's files
    as a kubelet root dir in memory, gives the details per file (what is lost, rescues)."""
    try:
        target = _target_config(node.config_text, node.release, release, gate)
    except NodeInputError as exc:
        raise UpgradeInputError(exc.message, exc.field or "kubeletConfig") from None
    try:
        start = start_up(
            target,
            node.topology,
            node.files,
            state_dir=KUBELET_ROOT,
            name=node.name,
            pod_names=node.pods,  # its files' reports are then the inspector's
        )
    except KubeletConfigError as exc:
        raise UpgradeInputError(f"kubeletConfig.{exc.field}: {exc.message}", exc.field) from None
    doc = _inspect_files(node, release, target.config.gate(GATE))
    return with_start(doc, start)


@functools.lru_cache(maxsize=256)
def _target_config(text: str, current: str, release: str, gate: bool | None) -> TargetConfig:
    """``restart_config``'s configuration for ``release``, computed once per text (a fleet
    repeats a few configurations; a ``TargetConfig`` is an immutable value, and a refusal is
    raised again each time, not kept)."""
    return restart_config(text, current, release, gate)[0]


class SharedChecks:
    """``check_files`` over many nodes, shared between nodes whose inputs are the same but for
    their name (the machine, release, configuration, state files and pods): such a node's
    verdict is the first one's with the node's name written in place of the first's (the
    name is in the recovery steps, the drain line and the pod links). A demo fleet of 5,000
    nodes has about 3,000 distinct inputs; ``tests/fleet/test_upgrade_shared.py`` compares
    both ways over the fleet for every release and gate setting."""

    def __init__(self) -> None:
        # the first node's machine (its id is in the key), name, and verdict (as JSON text
        # once a second node shares it)
        self._by_inputs: dict[tuple[Any, ...], tuple[CPUTopology, str, dict[str, Any] | str]] = {}

    def __len__(self) -> int:
        """How many distinct inputs were checked."""
        return len(self._by_inputs)

    def check(self, node: NodeFiles, release: str, gate: bool | None) -> dict[str, Any]:
        key = (
            id(node.topology),
            node.release,
            node.config_text,
            tuple(sorted(node.files.items())),
            tuple(sorted(node.pods.items())),
            release,
            gate,
        )
        hit = self._by_inputs.get(key)
        if hit is not None:
            topology, name, text = hit
            if not isinstance(text, str):
                text = json.dumps(text)
                self._by_inputs[key] = (topology, name, text)
            # renamed as JSON text, in C: names are in values, never in the document's keys
            renamed: dict[str, Any] = json.loads(text.replace(name, node.name))
            return renamed
        doc = check_files(node, release, gate)
        self._by_inputs[key] = (node.topology, node.name, doc)
        return doc


def with_start(doc: dict[str, Any], start: RestartResult) -> dict[str, Any]:
    """The inspector's node ``doc`` judged by the start-up model's ``start`` (the rehearsal's
    start-up on the same files): a refused gate answers ``will-fail`` with ``onceChanged``."""
    if start.refusals:
        assert start.once_changed is not None
        once = _judged(dict(doc), start.once_changed)
        doc = {
            **doc,
            "verdict": WILL_FAIL,
            "error": start.error,
            "recovery": list(start.recovery),
            "featureGatesRefused": [r.to_dict() for r in start.refusals],
            "onceChanged": {
                k: once.get(k)
                for k in ("verdict", "lost", "error", "why", "notes", "recovery", "startup")
            },
        }
        return doc
    return _judged(doc, start)


def _judged(doc: dict[str, Any], start: RestartResult) -> dict[str, Any]:
    """The inspector's ``doc`` under the start-up model's ``start``."""
    doc["startup"] = {"started": start.started, "error": start.error}
    if start.started:
        if doc["verdict"] not in (COMPATIBLE, COMPATIBLE_WITH_LOSS):
            # the files alone looked fatal, the node's own start-up says otherwise
            doc["verdict"] = COMPATIBLE_WITH_LOSS if doc["lost"] else COMPATIBLE
            doc["error"] = None
        return doc
    if doc["verdict"] in (COMPATIBLE, COMPATIBLE_WITH_LOSS):
        doc["verdict"] = WILL_FAIL
    doc["error"] = start.error
    doc["why"] = doc.get("why") or _why(doc)
    doc["notes"] = list(start.notes)
    if not any("numascope checkpoint convert" in r for r in doc["recovery"]):
        doc["recovery"] = list(start.recovery)  # no conversion keeps this kubelet starting
    return doc


def _why(doc: dict[str, Any]) -> str | None:
    for f in doc["files"]:
        why = (f.get("verdict") or {}).get("why")
        if why:
            return f"{f['name']}: {why}"
    return None


def _inspect_files(node: NodeFiles, release: str, gate: bool) -> dict[str, Any]:
    """The inspector's verdict on the node's files as a kubelet root dir holding them: its
    state files' bytes (the bytes the kubelet would read), its configuration as
    ``config.yaml`` and one ``pods/<uid>`` directory per pod, under ``/var/lib/kubelet``."""
    states: dict[str, bytes | None] = {}
    for manager, file_name in STATE_FILES.items():
        content = node.files.get(file_name)
        states[manager] = content.encode() if isinstance(content, str) else content
    root = RootContent(
        KUBELET_ROOT,
        states,
        config_text=node.config_text or "{}\n",
        config_path=f"{KUBELET_ROOT}/{CONFIG_FILE_NAME}",
        pod_uids=tuple(sorted(node.pods)),
    )
    doc = node_verdict(node.name, _check(root, release, gate, node.pods))
    doc["lostPods"] = _lost_pods(doc, node.name, node.pods)
    return doc


def _lost_pods(doc: dict[str, Any], node: str, names: Mapping[str, str]) -> list[dict[str, str]]:
    """The pods whose entries a file's reader drops, named and with their pod page's path."""
    uids: list[str] = []
    for f in doc["files"]:
        for uid in (f.get("verdict") or {}).get("lostPods", []):
            if uid not in uids:
                uids.append(uid)
    return [
        {"uid": u, "pod": names[u], "url": pod_url(node, *names[u].split("/", 1))}
        for u in uids
        if u in names
    ]


def check_observed(
    node: str,
    kubelet_root: Path,
    config_file: Path | None,
    release: str,
    gate: bool | None,
    start: RestartResult | None = None,
) -> dict[str, Any]:
    """The verdict for the observed node's own kubelet root dir (read-only); ``start`` is the
    rehearsal's start-up on a copy of its files (``None``: not known, the inspector's alone)."""
    doc = node_verdict(node, _check(kubelet_root, release, gate, config=config_file))
    return doc if start is None else with_start(doc, start)

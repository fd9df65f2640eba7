"""Upgrade readiness of one node: what a kubelet of release R does with the node's state files
at start-up, in the checkpoint inspector's words (``app.services.checkpoints.check_root_dir``).

The verdict is the inspector's own: ``check_root_dir`` runs on the node's kubelet root dir (an
observed node: ``Settings.kubelet_root``, read-only) or, for a simulated node, on a private
scratch copy laid out like a kubelet root dir (its state files as its engine writes them, its
KubeletConfiguration as ``config.yaml`` and one ``pods/<uid>`` directory per admitted pod, so
stale-entry checks see its live pods). Paths of the scratch copy are shown as
``/var/lib/kubelet/...``, where they live on a real node, so the recovery commands read as
what to run there.

A node's verdict is its worst file's: ``will-fail`` > ``policy-mismatch`` >
``compatible-with-loss`` > ``compatible`` (a missing file is a fresh start).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from app.domain.checkpoint import COMPATIBLE, COMPATIBLE_WITH_LOSS, POLICY_MISMATCH, WILL_FAIL
from app.services.checkpoints import CheckpointServiceError, DirCheck, check_root_dir

KUBELET_ROOT = "/var/lib/kubelet"
_ORDER = {COMPATIBLE: 0, "missing": 0, COMPATIBLE_WITH_LOSS: 1, POLICY_MISMATCH: 2, WILL_FAIL: 3}


class UpgradeInputError(ValueError):
    """A release or gate setting the inspector cannot model (``field`` names it)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def node_verdict(node: str, check: DirCheck, *, root: str | None = None) -> dict[str, Any]:
    """The fleet's per-node answer from the inspector's ``DirCheck``."""
    doc = check.to_dict()
    if root is not None:
        doc = _rewrite(doc, check.root, root)
    files = doc["files"]
    status = max((f["status"] for f in files), key=lambda s: _ORDER.get(s, 3), default=COMPATIBLE)
    if status == "missing":
        status = COMPATIBLE
    lost: list[str] = []
    error: str | None = None
    recovery: list[str] = []
    for f in files:
        v = f.get("verdict") or {}
        lost.extend(f"{f['name']}: {item}" for item in v.get("lost", []))
        if error is None and f["status"] in (WILL_FAIL, POLICY_MISMATCH):
            error = v.get("message") or v.get("error") or f"{f['name']}: {f['status']}"
        for r in f.get("rescues", []):
            recovery.append(f"{r['command']}  # {f['name']} → {r['toVersion']}: {r['verdict']}")
        recovery.extend(f.get("advice", []))
    if status in (WILL_FAIL, POLICY_MISMATCH):
        recovery.insert(0, f"drain node {node} before its kubelet is replaced")
    return {
        "node": node,
        "verdict": status,
        "lost": lost,
        "error": error,
        "recovery": recovery,
        "target": doc["target"],
        "files": [
            {
                "name": f["name"],
                "status": f["status"],
                "version": _version(f.get("report")),
                "verdict": f.get("verdict"),
                "rescues": f.get("rescues", []),
                "advice": f.get("advice", []),
            }
            for f in files
        ],
        "issues": doc["issues"],
    }


def _version(report: dict[str, Any] | None) -> str | None:
    v = (report or {}).get("version")
    if isinstance(v, dict):
        v = v.get("version")
    return v if isinstance(v, str) else None


def _rewrite(doc: Any, old: str, new: str) -> Any:
    if isinstance(doc, str):
        return doc.replace(old, new)
    if isinstance(doc, list):
        return [_rewrite(x, old, new) for x in doc]
    if isinstance(doc, dict):
        return {k: _rewrite(v, old, new) for k, v in doc.items()}
    return doc


def _check(root: str | Path, release: str, gate: bool | None, config: Path | None) -> DirCheck:
    try:
        return check_root_dir(root, release, gate=gate, config_file=config)
    except CheckpointServiceError as exc:
        field = "podLevelResourceManagers" if exc.field == "gate" else "release"
        raise UpgradeInputError(exc.message, field) from None


def check_files(
    node: str,
    files: Mapping[str, str | bytes | None],
    config_text: str,
    pod_uids: Iterable[str],
    release: str,
    gate: bool | None,
) -> dict[str, Any]:
    """The verdict for a simulated node's state files (a scratch kubelet root dir)."""
    with tempfile.TemporaryDirectory(prefix="numascope-upgrade-") as tmp:
        root = Path(tmp)
        for name, content in files.items():
            if content is not None:
                data = content.encode() if isinstance(content, str) else content
                (root / name).write_bytes(data)
        (root / "config.yaml").write_text(config_text or "{}\n")
        (root / "pods").mkdir()
        for uid in pod_uids:
            os.mkdir(root / "pods" / uid)
        check = _check(root, release, gate, None)
        return node_verdict(node, check, root=KUBELET_ROOT)


def check_observed(
    node: str, kubelet_root: Path, config_file: Path | None, release: str, gate: bool | None
) -> dict[str, Any]:
    """The verdict for the observed node's own kubelet root dir (read-only)."""
    return node_verdict(node, _check(kubelet_root, release, gate, config_file))

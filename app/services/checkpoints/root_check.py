"""Checking a kubelet root dir before an upgrade or downgrade.

``check_root_dir`` models one kubelet release (``Reader``) starting on the directory: each
state file is read as that release would, with the policies of the kubelet configuration when
one is found (``--kubelet-config-file`` or ``<root>/config.yaml``), the pair is checked for
consistency (and, when ``<root>/pods/`` exists, for entries of pods the node no longer has:
``stale-entry``), and for a file the release would refuse or read with loss the conversions that
rescue it are tried (the version the release writes itself and, when different, the newest
version, which older releases read through its inline part).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.adapters.kubelet import (
    STATE_FILES,
    KubeletDirError,
    KubeletFileTooLargeError,
    KubeletRootDir,
)
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.domain import releases
from app.domain.checkpoint import (
    COMPATIBLE,
    COMPATIBLE_WITH_LOSS,
    POLICY_MISMATCH,
    WILL_FAIL,
    CPUCheckpointState,
    Issue,
    MemoryCheckpointState,
    Reader,
    TargetVerdict,
    check_consistency,
)
from app.domain.kubelet_config import RELEASES, KubeletConfig, KubeletConfigError
from app.domain.restart import recovery_steps
from app.services.checkpoints.arguments import (
    resolve_target,
)
from app.services.checkpoints.errors import (
    CheckpointFileError,
    CheckpointUsageError,
)
from app.services.checkpoints.inspection import (
    DUPLICATE_CODES,
    MANAGERS,
    SEVERITY_ORDER,
    InspectionView,
    Rescue,
    inspect_content,
)

#: A file as the pair's check reads it: its bytes, or the state decoded from them (``None``:
#: no file, or one too large to read).
PairInput = bytes | CPUCheckpointState | MemoryCheckpointState | None

# -- checking a kubelet root dir ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileCheck:
    """One state file of the root dir against the target release."""

    manager: str
    name: str
    path: str
    present: bool
    view: InspectionView | None = None
    verdict: TargetVerdict | None = None
    rescues: tuple[Rescue, ...] = ()
    advice: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        if not self.present:
            return "missing"
        if self.verdict is None:
            return WILL_FAIL
        return self.verdict.verdict

    @property
    def ok(self) -> bool:
        return self.status in ("missing", COMPATIBLE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "name": self.name,
            "path": self.path,
            "present": self.present,
            "status": self.status,
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
            "report": self.view.to_dict() if self.view is not None else None,
            "rescues": [r.to_dict() for r in self.rescues],
            "advice": list(self.advice),
        }


@dataclass(frozen=True, slots=True)
class DirCheck:
    """A kubelet root dir checked for one target release."""

    root: str
    target: Reader
    gate_source: str
    config_path: str | None
    config_problem: str | None
    policies: dict[str, str | None]
    files: tuple[FileCheck, ...]
    issues: tuple[Issue, ...] = ()
    pod_uids: tuple[str, ...] | None = None

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files) and not any(i.severity == "error" for i in self.issues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "target": self.target.to_dict(),
            "gateSource": self.gate_source,
            "kubeletConfig": self.config_path,
            "kubeletConfigProblem": self.config_problem,
            "policies": dict(self.policies),
            "ok": self.ok,
            "files": [f.to_dict() for f in self.files],
            "issues": [i.to_dict() for i in self.issues],
            "podUids": list(self.pod_uids) if self.pod_uids is not None else None,
        }


@dataclass(frozen=True, slots=True)
class RootContent:
    """What a check reads from a kubelet root dir: each state file's bytes by manager
    (``None``: absent; a file over the cap is empty here and its size is in ``too_large``),
    the KubeletConfiguration's text and path (``explicit``: named by the user, so a problem
    with it is an error, not a warning), and the pod UIDs of ``<root>/pods/`` (sorted;
    ``None``: no pods dir). A simulated node's files are such a content without a disk."""

    root: str
    states: Mapping[str, bytes | None]
    too_large: Mapping[str, int] = field(default_factory=dict)
    config_text: str | None = None
    config_path: str | None = None
    config_problem: str | None = None
    explicit: bool = False
    pod_uids: tuple[str, ...] | None = None

    def state_path(self, manager: str) -> str:
        return _joined(self.root, STATE_FILES[manager])


@functools.lru_cache(maxsize=64)  # a fleet's checks name the same root again and again
def _joined(root: str, name: str) -> str:
    return str(Path(root) / name)


def _read_root(d: KubeletRootDir) -> RootContent:
    """The root dir's content (read-only); an explicit configuration file that cannot be read
    raises."""
    try:
        d.check()
    except KubeletDirError as exc:
        raise CheckpointFileError(exc.message, "dir") from None
    path = d.config_path()
    text: str | None = None
    problem: str | None = None
    if path is not None:
        try:
            text = d.read_config_text()
        except KubeletDirError as exc:
            if d.config_file is not None:
                raise CheckpointFileError(exc.message, "kubelet-config-file") from None
            problem = exc.message
    states: dict[str, bytes | None] = {}
    too_large: dict[str, int] = {}
    for manager in MANAGERS:
        try:
            states[manager] = d.read_state(manager)
        except KubeletFileTooLargeError as exc:
            states[manager], too_large[manager] = b"", exc.size
        except KubeletDirError as exc:
            raise CheckpointFileError(exc.message, "dir") from None
    uids = d.pod_uids()
    return RootContent(
        str(d.path),
        states,
        too_large,
        text,
        None if path is None else str(path),
        problem,
        d.config_file is not None,
        None if uids is None else tuple(uids),
    )


def _load_config(
    root: RootContent, release: str
) -> tuple[KubeletConfig | None, str | None, str | None]:
    """(config, its path, the problem with it). An explicit file that cannot be parsed
    raises."""
    path = root.config_path
    if root.config_problem is not None:
        return None, path, root.config_problem
    if path is None or root.config_text is None:
        return None, None, None
    family = release if release in RELEASES else RELEASES[0]
    try:
        return parse_kubelet_config_text(root.config_text, family), path, None
    except KubeletConfigError as exc:
        problem = f"{path}: {exc}"
        if root.explicit:
            raise CheckpointUsageError(problem, "kubelet-config-file") from None
        return None, path, problem


def _gate_reads(reader: Reader, manager: str, view: InspectionView) -> bool:
    """Whether this release with the gate on reads the file's pod entries: a version that
    carries them, no newer than the one the release writes with the gate on."""
    version = view.report.version.version if view.report.version is not None else None
    cpu = manager == "cpu"
    own = releases.get(reader.release).writes(True)[0 if cpu else 1]
    pod_formats = ("V3", "V4") if cpu else ("V2", "V3")
    return version in pod_formats and version <= own


def _file_advice(
    status: str,
    rescues: tuple[Rescue, ...],
    reader: Reader,
    manager: str,
    view: InspectionView,
    root: str,
) -> tuple[str, ...]:
    """What to do about one file: a policy change's recovery, no rescue, pod entries the gate
    would keep, or converting only while the kubelet is stopped."""
    advice: list[str] = []
    if status == POLICY_MISMATCH:
        advice.append(
            "the configured policy differs from the file's: a policy change needs the "
            "documented recovery (drain, stop the kubelet, move the file aside, start)"
        )
    elif status == WILL_FAIL and not rescues:
        advice.append(
            "no conversion keeps this kubelet starting: "
            + "; ".join(recovery_steps(root, reader.release, None))
        )
    if (
        status in (COMPATIBLE_WITH_LOSS, WILL_FAIL)
        and reader.has_gate
        and _gate_reads(reader, manager, view)
        and not reader.gate
        and view.report.state is not None
        and view.report.state.pod_entries
    ):
        advice.append(
            "the file holds pod-level entries that this kubelet ignores with "
            "PodLevelResourceManagers off; enabling the gate keeps them"
        )
    if rescues:
        advice.append(
            "convert only while the kubelet is stopped; a running kubelet rewrites the file "
            "at its next state change, a starting one in its own newest format"
        )
    return tuple(advice)


def _without_memory_manager(path: str, reader: Reader) -> FileCheck:
    """A memory manager file on a release that has no memory manager: ignored."""
    return FileCheck(
        "memory",
        Path(path).name,
        path,
        True,
        advice=(f"a {reader.label} kubelet has no memory manager and ignores this file",),
        verdict=TargetVerdict(reader.key, reader.label, reader.release, reader.gate, COMPATIBLE),
    )


def _check_file(
    root: RootContent,
    manager: str,
    reader: Reader,
    policy: str | None,
    pod_names: Mapping[str, str] | None,
    details: bool,
) -> tuple[FileCheck, bytes | None]:
    """One file read as ``reader`` would, and its bytes for the pair's check (or None)."""
    path = root.state_path(manager)
    name = STATE_FILES[manager]
    content = root.states.get(manager)
    too_large = root.too_large.get(manager)
    kept = content if too_large is None else None
    if content is None:
        return FileCheck(manager, name, path, False), kept
    if manager == "memory" and reader.line == releases.OLDEST_CHECKPOINT_FAMILY:
        return _without_memory_manager(path, reader), kept
    view = inspect_content(
        content,
        source=path,
        manager=manager,
        policy=policy,
        targets=(reader,),
        size=too_large,
        state_dir=root.root,
        pod_names=pod_names,
        details=details,
    )
    verdict = view.report.verdict_for(reader.key)
    status = verdict.verdict if verdict is not None else WILL_FAIL
    lossy = status in (WILL_FAIL, COMPATIBLE_WITH_LOSS) and too_large is None
    rescues: tuple[Rescue, ...] = view.rescues.get(reader.key, ()) if lossy else ()
    advice = _file_advice(status, rescues, reader, manager, view, root.root)
    return FileCheck(manager, name, path, True, view, verdict, rescues, advice), kept


def _pair_input(check: FileCheck, content: bytes | None) -> PairInput:
    """What the pair's check reads of a file: the state the inspector already decoded from
    it (``check_consistency`` decodes the bytes the same way, and the problems it would find
    decoding are the inspector's own, left out as ``DUPLICATE_CODES``), else its bytes."""
    if content is None or check.view is None or not check.view.report.readable:
        return content
    return check.view.report.state


def _pair_issues(
    config: KubeletConfig | None,
    config_problem: str | None,
    contents: Mapping[str, PairInput],
    pod_uids: tuple[str, ...] | None,
) -> list[Issue]:
    """An unusable configuration, and the consistency of the pair of files (with the reserved
    CPUs and live pods when known)."""
    issues: list[Issue] = []
    if config_problem is not None:
        issues.append(Issue("kubelet-config-unreadable", "warning", config_problem))
    cpu_in, mem_in = contents.get("cpu"), contents.get("memory")
    if cpu_in is not None or mem_in is not None:
        reserved = config.reserved_system_cpus if config is not None else None
        strict = (
            config is not None
            and config.cpu_manager_policy_options.get("strict-cpu-reservation") == "true"
        )
        found = check_consistency(
            # a file's decoded state is of its own manager (``inspect_content`` was told it)
            cpu=None if isinstance(cpu_in, MemoryCheckpointState) else cpu_in,
            memory=None if isinstance(mem_in, CPUCheckpointState) else mem_in,
            reserved_cpus=reserved,
            strict_reservation=strict,
            live_pod_uids=pod_uids,
        )
        issues.extend(i for i in found if i.code not in DUPLICATE_CODES)
    return issues


def check_root_dir(
    root: str | Path,
    target: str,
    *,
    gate: bool | None = None,
    config_file: str | Path | None = None,
    pod_names: Mapping[str, str] | None = None,
) -> DirCheck:
    """What a kubelet of ``target`` does with the state files of ``root`` (read-only);
    ``pod_names`` (uid -> ``namespace/name``) names the pods of lost entries."""
    return check_root_content(
        _read_root(KubeletRootDir(root, config_file=config_file)),
        target,
        gate=gate,
        pod_names=pod_names,
    )


def check_root_content(
    root: RootContent,
    target: str,
    *,
    gate: bool | None = None,
    pod_names: Mapping[str, str] | None = None,
    details: bool = True,
) -> DirCheck:
    """``check_root_dir`` on a root dir's content already read (or never on a disk);
    ``details`` false leaves each file's checksums, findings and tables out of its view
    (``inspect_content``): the verdicts, rescues, advice and the pair's issues stay."""
    pre = resolve_target(target, gate, None)[0]
    config, config_path, config_problem = _load_config(root, pre.release)
    reader, gate_source = resolve_target(target, gate, config)
    policies: dict[str, str | None] = {
        "cpu": config.cpu_manager_policy if config is not None else None,
        "memory": config.memory_manager_policy if config is not None else None,
    }
    checked = {m: _check_file(root, m, reader, policies[m], pod_names, details) for m in MANAGERS}
    contents = {m: _pair_input(*checked[m]) for m in MANAGERS}
    issues = _pair_issues(config, config_problem, contents, root.pod_uids)
    return DirCheck(
        root.root,
        reader,
        gate_source,
        config_path,
        config_problem,
        policies,
        tuple(check for check, _ in checked.values()),
        tuple(sorted(issues, key=lambda i: SEVERITY_ORDER.get(i.severity, 3))),
        root.pod_uids,
    )

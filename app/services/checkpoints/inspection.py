"""Inspecting one state file: a path, an upload, or a file of the server's kubelet root dir.

The report is computed by ``app.domain.checkpoint`` (version detection, checksums, reader
models per release, verdicts) plus its consistency findings (``check_consistency``: linear in
the file, CPUs held by several pods grouped per CPU and capped) and content tables.

Inspection (``inspect_content``, ``inspect_path``, ``inspect_kubelet_file``) never raises for
bad file content: truncated, hostile or non-JSON text and files over 16 MiB give a report whose
verdicts say so. It raises ``CheckpointUsageError`` for bad arguments (unknown manager or
target) and ``CheckpointFileError`` when a path cannot be read at all (missing, permission).
Files are read through ``app.adapters.kubelet`` (read-only, 16 MiB cap).

It is CPU work on untrusted input: the web routes run it off the event loop
(``anyio.to_thread``) so that ``/healthz`` and other requests keep being answered.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.adapters.kubelet import (
    MAX_FILE_BYTES,
    KubeletDirError,
    KubeletFile,
    KubeletFileTooLargeError,
    KubeletRootDir,
    manager_for_name,
    read_capped,
)
from app.contracts.base import checked
from app.contracts.checkpoint import CheckpointReport
from app.domain.checkpoint import (
    COMPATIBLE,
    COMPATIBLE_WITH_LOSS,
    POLICY_MISMATCH,
    TARGETS,
    WILL_FAIL,
    CheckpointError,
    CheckpointTooLargeError,
    InspectionReport,
    Issue,
    Reader,
    check_consistency,
    convert,
    inspect,
    version_for,
)
from app.services.checkpoints.errors import (
    CheckpointFileError,
)
from app.services.checkpoints.tables import Table, content_tables

MANAGERS = ("cpu", "memory")
# Consistency issues that ``inspect`` already reports in its own words.
DUPLICATE_CODES = frozenset({"unreadable-file", "checksum-invalid", "content-error"})
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class InspectionView:
    """One inspected file: the domain's report plus the file's consistency findings, where it
    came from, and tables of its content."""

    source: str
    report: InspectionReport
    consistency: tuple[Issue, ...] = ()
    configured_policy: str | None = None
    targets: tuple[Reader, ...] = TARGETS
    tables: tuple[Table, ...] = ()
    #: per target key, the conversions after which that kubelet starts on the file (for the
    #: targets that fail on it or lose something)
    rescues: Mapping[str, tuple[Rescue, ...]] = field(default_factory=dict)

    @property
    def issues(self) -> tuple[Issue, ...]:
        merged = list(self.report.issues) + list(self.consistency)
        return tuple(sorted(merged, key=lambda i: SEVERITY_ORDER.get(i.severity, 3)))

    @property
    def problems(self) -> list[str]:
        """Why this file is a problem (empty: it is not). Used for exit codes."""
        out: list[str] = []
        r = self.report
        if not r.readable:
            out.append(f"unreadable: {r.error}")
        for c in r.checksums:
            if c.status == "invalid":
                out.append(f"{c.field} invalid: stored {c.stored}, computed {c.computed}")
        for issue in self.issues:
            if issue.severity == "error" and issue.code not in ("checksum-invalid", "unreadable"):
                out.append(f"{issue.code}: {issue.message}")
        if self.configured_policy is not None and any(
            v.verdict == POLICY_MISMATCH for v in r.verdicts
        ):
            out.append(
                f"policy mismatch: the file's policy is {r.policy_name!r}, configured "
                f"{self.configured_policy!r}"
            )
        return out

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """The domain's ``InspectionReport`` dict, plus ``source``, ``configuredPolicy`` and the
        consistency issues merged into ``issues``."""
        out = self.report.to_dict()
        out["source"] = self.source
        out["configuredPolicy"] = self.configured_policy
        out["targets"] = [t.key for t in self.targets]
        out["issues"] = [i.to_dict() for i in self.issues]
        out["ok"] = self.ok
        out["problems"] = self.problems
        for v in out["verdicts"]:
            v["rescues"] = [r.to_dict() for r in self.rescues.get(v["target"], ())]
        return checked(CheckpointReport, out)


@dataclass(frozen=True, slots=True)
class Rescue:
    """A conversion that makes the file readable by the target release."""

    to_version: str
    verdict: str
    lost: tuple[str, ...]
    notes: tuple[str, ...]
    command: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "toVersion": self.to_version,
            "verdict": self.verdict,
            "lost": list(self.lost),
            "notes": list(self.notes),
            "command": self.command,
        }


def _rescue_versions(manager: str, target: Reader, current: str | None) -> list[str]:
    newest = "V4" if manager == "cpu" else "V3"
    out = []
    for v in (version_for(manager, target), newest):
        if v != current and v not in out:
            out.append(v)
    return out


def rescues_for(
    path: str, content: bytes, manager: str, target: Reader, view: InspectionView
) -> tuple[Rescue, ...]:
    """The conversions (``numascope checkpoint convert … --to V``) after which a kubelet of
    ``target`` starts on the file: the version it writes itself and, when different, the
    newest one (older releases read its inline part); each with what it loses."""
    current = view.report.version.version if view.report.version is not None else None
    found: list[Rescue] = []
    for version in _rescue_versions(manager, target, current):
        try:
            result = convert(content, version, target, False, manager=manager)
        except CheckpointError:
            continue
        if result.verdict is None or result.verdict.verdict not in (
            COMPATIBLE,
            COMPATIBLE_WITH_LOSS,
        ):
            continue
        p = shlex.quote(path)
        command = (
            f"numascope checkpoint convert {p} --to {version} --release {target.key} --out {p}"
        )
        found.append(Rescue(version, result.verdict.verdict, result.lost, result.notes, command))
    return tuple(found)


# Inspection costs about 0.3 ms per member (eight release readers each decode the file):
# this bounds one inspection to seconds. A node's cpu_manager_state holds a few members per
# container; memory_manager_state a few per memory block.
MAX_INSPECT_MEMBERS = 25_000
TOO_MANY_MEMBERS = "too-many-members"


def _unread_report(data: bytes, size: int, manager: str | None) -> InspectionReport | None:
    """The report of a file too large to read (by its size, or its object members, which
    bound the work of every release reader), or ``None`` when it may be read."""
    if size > MAX_FILE_BYTES:
        code, message = "too-large", CheckpointTooLargeError(size).message
    # A colon per object member (a real state file has none inside its strings; a hostile one
    # only counts higher), counted in C.
    elif (members := data.count(b":")) > MAX_INSPECT_MEMBERS:
        code = TOO_MANY_MEMBERS
        message = (
            f"the file has {members} JSON object members; the inspector reads at most "
            f"{MAX_INSPECT_MEMBERS} (a kubelet with a thousand containers writes a few thousand)"
        )
    else:
        return None
    return InspectionReport(
        readable=False,
        size=size,
        manager=manager,
        issues=(Issue(code, "error", message),),
        error=message,
    )


def inspect_content(
    content: bytes | str,
    *,
    source: str,
    manager: str | None = None,
    policy: str | None = None,
    targets: Sequence[Reader] = TARGETS,
    size: int | None = None,
    state_dir: str | None = None,
    live_pod_uids: Sequence[str] | None = None,
    pod_names: Mapping[str, str] | None = None,
    details: bool = True,
) -> InspectionView:
    """Inspect a state file's bytes. ``source`` names it (a path, an upload's file name); a
    name like ``cpu_manager_state.bak`` tells the manager when the content does not.
    ``size`` is the real size when ``content`` was cut at the 16 MiB cap; ``state_dir`` is the
    kubelet root dir the kubelet's start-up message names (default ``/var/lib/kubelet``);
    ``live_pod_uids`` (the pods the node knows) adds ``stale-entry`` issues. ``details``
    false leaves out the file's checksums, findings and content tables (what people read;
    a fleet's upgrade verdicts use none of them)."""
    targets = tuple(targets)
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    hint = manager if manager is not None else manager_for_name(source)
    unread = _unread_report(data, size if size is not None else len(data), hint)
    if unread is not None:
        return InspectionView(source, unread, (), policy, targets)
    extra = _inspect_options(state_dir, pod_names, details)
    report = _report(data, manager, hint, policy, targets, extra)
    view = InspectionView(source, report, (), policy, targets)
    if details and report.readable and report.manager is not None:
        view = replace(
            view,
            consistency=_consistency(data, report.manager, live_pod_uids),
            tables=content_tables(report.state) if report.state is not None else (),
        )
    if report.manager is None or report.version is None:
        return view
    return replace(view, rescues=_rescues(view, data, report.manager, targets, policy))


def _inspect_options(
    state_dir: str | None, pod_names: Mapping[str, str] | None, details: bool
) -> dict[str, Any]:
    """``inspect``'s keyword arguments for what ``inspect_content`` was given."""
    extra: dict[str, Any] = {"state_dir": state_dir} if state_dir is not None else {}
    if pod_names:
        extra["pod_names"] = pod_names
    if not details:
        extra["findings"] = False  # what the view leaves out anyway: no one reads them
    return extra


def _report(
    data: bytes,
    manager: str | None,
    hint: str | None,
    policy: str | None,
    targets: tuple[Reader, ...],
    extra: dict[str, Any],
) -> InspectionReport:
    """``inspect`` of the file as its keys tell the manager, else as its name (``hint``) does:
    a truncated or hostile file has no keys to tell it."""
    report = inspect(data, manager, configured_policy=policy, targets=targets, **extra)
    if not report.readable and manager is None and hint is not None:
        report = inspect(data, hint, configured_policy=policy, targets=targets, **extra)
    return report


def _consistency(
    data: bytes, manager: str, live_pod_uids: Sequence[str] | None
) -> tuple[Issue, ...]:
    """The file's consistency findings the report does not already make."""
    found = (
        check_consistency(cpu=data, live_pod_uids=live_pod_uids)
        if manager == "cpu"
        else check_consistency(memory=data, live_pod_uids=live_pod_uids)
    )
    return tuple(i for i in found if i.code not in DUPLICATE_CODES)


def _rescues(
    view: InspectionView,
    data: bytes,
    manager: str,
    targets: tuple[Reader, ...],
    policy: str | None,
) -> dict[str, tuple[Rescue, ...]]:
    """The conversions that rescue the file, for each release that fails on it or loses
    something."""
    rescued: dict[str, tuple[Rescue, ...]] = {}
    for verdict, target in zip(view.report.verdicts, targets, strict=True):
        if verdict.verdict in (WILL_FAIL, COMPATIBLE_WITH_LOSS):
            rescues = rescues_for(view.source, data, manager, target.with_policy(policy), view)
            if rescues:
                rescued[verdict.target] = rescues
    return rescued


def read_source(path: str | Path) -> tuple[bytes | None, int | None]:
    """(content, None), or (None, size) when the file is above the cap."""
    try:
        return read_capped(path), None
    except KubeletFileTooLargeError as exc:
        return None, exc.size
    except KubeletDirError as exc:
        raise CheckpointFileError(exc.message, "file") from None


def inspect_path(
    path: str | Path,
    *,
    manager: str | None = None,
    policy: str | None = None,
    targets: Sequence[Reader] = TARGETS,
) -> InspectionView:
    """Inspect a file on disk (read-only). ``CheckpointFileError`` when it cannot be read;
    a file over 16 MiB gives an unreadable report, not an exception."""
    content, too_large = read_source(path)
    if content is None:
        assert too_large is not None
        return inspect_content(
            b"", source=str(path), manager=manager, policy=policy, targets=targets, size=too_large
        )
    return inspect_content(
        content, source=str(path), manager=manager, policy=policy, targets=targets
    )


# -- the server's kubelet root dir (the inspector page) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class KubeletFilesView:
    """The state files of the server's kubelet root dir that the inspector can open."""

    root: str
    available: bool
    problem: str | None
    files: tuple[KubeletFile, ...]

    @property
    def state_files(self) -> tuple[KubeletFile, ...]:
        return tuple(f for f in self.files if f.kind != "config")

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "available": self.available,
            "problem": self.problem,
            "files": [f.to_dict() for f in self.state_files],
        }


def kubelet_files(root: str | Path) -> KubeletFilesView:
    """List the root dir's state files and copies (never raises for a missing dir)."""
    d = KubeletRootDir(root)
    try:
        d.check()
        files = tuple(d.files())
    except KubeletDirError as exc:
        return KubeletFilesView(str(root), False, exc.message, ())
    return KubeletFilesView(str(root), True, None, files)


def inspect_kubelet_file(
    root: str | Path,
    name: str,
    *,
    policy: str | None = None,
    targets: Sequence[Reader] = TARGETS,
) -> InspectionView:
    """Inspect ``name`` (a state file or a copy of one) of the kubelet root dir, read-only.
    ``CheckpointFileError`` when there is no such file or it cannot be read."""
    d = KubeletRootDir(root)
    manager = manager_for_name(name)
    try:
        content = d.read(name)
    except KubeletFileTooLargeError as exc:
        return inspect_content(
            b"", source=str(d.path / name), manager=manager, policy=policy, targets=targets,
            size=exc.size,
        )  # fmt: skip
    except KubeletDirError as exc:
        raise CheckpointFileError(exc.message, "name") from None
    return inspect_content(
        content,
        source=str(d.path / name),
        manager=manager,
        policy=policy,
        targets=targets,
        state_dir=str(d.path),
        live_pod_uids=d.pod_uids(),
    )

"""Checkpoint use cases: inspect a state file (a path, an upload, a file of the kubelet root
dir), convert one with a backup, and check a kubelet root dir before an upgrade or downgrade.

Everything is computed by ``app.domain.checkpoint`` (version detection, checksums, reader
models per release, verdicts, conversions, consistency checks); this module reads files
through ``app.adapters.kubelet`` (read-only, 16 MiB cap), writes only through
``app.adapters.statefiles`` (temporary file in the same directory, fsync, rename, fsync of the
directory, mode 0600), and shapes the results for the CLI, the pages and the JSON API.

Inspection (``inspect_content``, ``inspect_path``, ``inspect_kubelet_file``) never raises for
bad file content: truncated, hostile or non-JSON text and files over 16 MiB give a report whose
verdicts say so. It raises ``CheckpointUsageError`` for bad arguments (unknown manager or
target) and ``CheckpointFileError`` when a path cannot be read at all (missing, permission).

``convert_file`` refuses (``ConversionRefusedError``) when the source's protecting checksum does
not verify unless ``force``. When ``out`` already exists it is first copied, atomically, to
``<out>.<UTC timestamp>.bak`` in the same directory (``cpu_manager_state.20250102T030405Z.bak``;
``-2``, ``-3``... are appended if that name is taken), so no earlier file or earlier backup is
ever overwritten; only then is ``out`` replaced atomically. ``out`` may be the source file
itself (the backup keeps the original). An ``out`` that already holds exactly the converted
bytes is left alone.

``check_root_dir`` models one kubelet release (``Reader``) starting on the directory: each
state file is read as that release would, with the policies of the kubelet configuration when
one is found (``--kubelet-config-file`` or ``<root>/config.yaml``), the pair is checked for
consistency (and, when ``<root>/pods/`` exists, for entries of pods the node no longer has:
``stale-entry``), and for a file the release would refuse or read with loss the conversions that
rescue it are tried (the version the release writes itself and, when different, the newest
version, which older releases read through its inline part).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.adapters import statefiles
from app.adapters.kubelet import (
    MAX_FILE_BYTES,
    STATE_FILES,
    KubeletDirError,
    KubeletFile,
    KubeletFileMissingError,
    KubeletFileTooLargeError,
    KubeletRootDir,
    manager_for_name,
    read_capped,
)
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.domain.checkpoint import (
    COMPATIBLE,
    COMPATIBLE_WITH_LOSS,
    CPU_VERSIONS,
    MEMORY_VERSIONS,
    POLICY_MISMATCH,
    TARGETS,
    WILL_FAIL,
    CheckpointError,
    CheckpointTooLargeError,
    ConversionError,
    ConversionResult,
    CPUCheckpointState,
    InspectionReport,
    Issue,
    MemoryCheckpointState,
    Reader,
    TargetVerdict,
    check_consistency,
    convert,
    detect_version,
    inspect,
    parse_reader,
    version_for,
)
from app.domain.kubelet_config import RELEASES, KubeletConfig, KubeletConfigError
from app.domain.units import format_bytes

MANAGERS = ("cpu", "memory")
# Consistency issues that ``inspect`` already reports in its own words.
_DUPLICATE_CODES = frozenset({"unreadable-file", "checksum-invalid", "content-error"})
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


# -- errors ------------------------------------------------------------------------------------------


class CheckpointServiceError(Exception):
    """Base class; ``message`` names what was wrong, ``field`` the argument when there is one."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class CheckpointUsageError(CheckpointServiceError):
    """An argument is not usable (unknown manager, target, version; conflicting flags)."""


class CheckpointFileError(CheckpointServiceError):
    """A file or directory cannot be read at all (missing, permission denied, not a file)."""


class UploadTooLargeError(CheckpointServiceError):
    """An uploaded file is larger than 16 MiB."""

    def __init__(self, size: int | None = None) -> None:
        what = f"{size} bytes" if size is not None else "more than 16 MiB"
        super().__init__(
            f"the uploaded file is {what}; state files larger than {MAX_FILE_BYTES} bytes "
            "(16 MiB) are refused",
            "file",
        )
        self.size = size


class EmptyUploadError(CheckpointServiceError):
    """No file, or an empty one, was uploaded."""

    def __init__(self, message: str = "no file was uploaded, or the file is empty") -> None:
        super().__init__(message, "file")


class ConversionRefusedError(CheckpointServiceError):
    """The conversion was refused (bad source checksum without force, unreadable source...)."""


# -- arguments ---------------------------------------------------------------------------------------


def parse_manager(value: str | None) -> str | None:
    """``None``/``""``/``auto`` -> ``None`` (detect); ``cpu``/``memory`` or a state file name."""
    if value is None:
        return None
    text = value.strip().lower()
    if text in ("", "auto"):
        return None
    if text in ("cpu", "cpumanager", "cpu_manager"):
        return "cpu"
    if text in ("memory", "mem", "memorymanager", "memory_manager"):
        return "memory"
    for manager, file_name in STATE_FILES.items():
        if text == file_name:
            return manager
    raise CheckpointUsageError(
        f"unknown manager {value!r}; expected cpu, memory or auto", "manager"
    )


def parse_policy(value: str | None) -> str | None:
    """The configured policy to compare with, ``None`` when not given. Kept as typed: the
    kubelet compares policy names exactly (CPU ``none``/``static``, memory ``None``/``Static``)."""
    if value is None or not value.strip():
        return None
    return value.strip()


def parse_targets(value: str | None) -> tuple[Reader, ...]:
    """Inspector targets: ``None``/``""``/``all`` -> every target; else a comma-separated list
    of ``1.35``, ``1.36-gate-on``, ``1.37 gate off``...; a bare ``1.36`` or ``1.37`` means both
    gate settings."""
    if value is None or value.strip().lower() in ("", "all"):
        return TARGETS
    out: list[Reader] = []
    for part in value.split(","):
        text = part.strip()
        if not text:
            continue
        try:
            reader = parse_reader(text)
        except CheckpointError as exc:
            raise CheckpointUsageError(exc.message, "target") from None
        lowered = text.lower().replace("_", "-").replace(" ", "-")
        explicit_gate = lowered.endswith(("-on", "-off"))
        if reader.line in ("1.36", "1.37") and not explicit_gate:
            candidates = [Reader(reader.release, False), Reader(reader.release, True)]
        else:
            candidates = [reader]
        for c in candidates:
            if c not in out:
                out.append(c)
    if not out:
        raise CheckpointUsageError(f"no target in {value!r}", "target")
    return tuple(out)


def resolve_target(
    target: str, gate: bool | None, config: KubeletConfig | None = None
) -> tuple[Reader, str]:
    """The release a ``check`` models, and where its gate setting came from (``flag``,
    ``target`` when spelt ``1.36-gate-on``, ``config``, or ``default``: the release default,
    off)."""
    try:
        reader = parse_reader(target)
    except CheckpointError as exc:
        raise CheckpointUsageError(exc.message, "target") from None
    lowered = target.strip().lower().replace("_", "-").replace(" ", "-")
    spelt = lowered.endswith(("-on", "-off"))
    if reader.line not in ("1.36", "1.37"):
        if gate or (spelt and lowered.endswith("-on")):
            raise CheckpointUsageError(
                f"the PodLevelResourceManagers gate does not exist in {reader.label}; it was "
                "added in 1.36",
                "gate",
            )
        return reader, "n/a"
    if spelt:
        if gate is not None and gate != reader.gate:
            raise CheckpointUsageError(
                f"--target {target} and --gate {'on' if gate else 'off'} disagree", "gate"
            )
        return reader, "target"
    if gate is not None:
        return Reader(reader.release, gate), "flag"
    if config is not None:
        return Reader(reader.release, config.pod_level_resource_managers), "config"
    return Reader(reader.release, False), "default"


# -- inspection --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the file's content, for people (HTML as is; the CLI upper-cases headers)."""

    key: str
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "headers": list(self.headers),
            "rows": [list(r) for r in self.rows],
        }


def _size_text(n: int) -> str:
    return f"{format_bytes(n)} ({n})" if n >= 1024 else f"{n} B"


def _block_text(b: Any) -> str:
    numa = ",".join(str(n) for n in b.numa_affinity) or "-"
    return f"{b.type} {format_bytes(b.size)} on NUMA {numa}"


def _content_tables(state: Any) -> tuple[Table, ...]:
    rows: tuple[tuple[str, ...], ...]
    if isinstance(state, CPUCheckpointState):
        tables = []
        if state.container_entries is not None and not state.entries:
            rows = tuple(
                (cid, str(c) or "(empty)", str(c.size()))
                for cid, c in sorted(state.container_entries.items())
            )
            tables.append(
                Table(
                    "entries",
                    "Entries (V1: container ID → CPUs)",
                    ("Container ID", "CPUs", "Count"),
                    rows,
                    (False, False, True),
                )
            )
        else:
            rows = tuple(
                (pod, name, str(c) or "(empty)", str(c.size()))
                for pod, containers in sorted(state.entries.items())
                for name, c in sorted(containers.items())
            )
            tables.append(
                Table(
                    "entries",
                    "Entries (container → CPUs: its exclusive slice, or its pod shared pool)",
                    ("Pod UID", "Container", "CPUs", "Count"),
                    rows,
                    (False, False, False, True),
                )
            )
        if state.pod_entries is not None:
            rows = tuple(
                (pod, str(c) or "(empty)", str(c.size()))
                for pod, c in sorted(state.pod_entries.items())
            )
            tables.append(
                Table(
                    "podEntries",
                    "Pod entries (pod-level CPU budget)",
                    ("Pod UID", "CPUs", "Count"),
                    rows,
                    (False, False, True),
                )
            )
        return tuple(tables)
    assert isinstance(state, MemoryCheckpointState)
    ms_rows = tuple(
        (
            str(node),
            res,
            _size_text(t.total),
            _size_text(t.system_reserved),
            _size_text(t.allocatable),
            _size_text(t.reserved),
            _size_text(t.free),
            str(ns.number_of_assignments),
            ",".join(str(c) for c in ns.cells) or "-",
        )
        for node, ns in sorted(state.machine_state.items())
        for res, t in sorted(ns.memory_map.items())
    )
    tables = [
        Table(
            "machineState",
            "Machine state (per NUMA node and resource)",
            (
                "NUMA",
                "Resource",
                "Total",
                "System reserved",
                "Allocatable",
                "Reserved",
                "Free",
                "Assignments",
                "Cells",
            ),
            ms_rows,
            (True, False, True, True, True, True, True, True, False),
        ),
        Table(
            "entries",
            "Entries (container → memory blocks)",
            ("Pod UID", "Container", "Blocks"),
            tuple(
                (pod, name, "; ".join(_block_text(b) for b in blocks) or "(none)")
                for pod, containers in sorted(state.entries.items())
                for name, blocks in sorted(containers.items())
            ),
        ),
    ]
    if state.pod_entries is not None:
        tables.append(
            Table(
                "podEntries",
                "Pod entries (pod-level memory blocks)",
                ("Pod UID", "Blocks"),
                tuple(
                    (pod, "; ".join(_block_text(b) for b in blocks) or "(none)")
                    for pod, blocks in sorted(state.pod_entries.items())
                ),
            )
        )
    return tuple(tables)


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

    @property
    def issues(self) -> tuple[Issue, ...]:
        merged = list(self.report.issues) + list(self.consistency)
        return tuple(sorted(merged, key=lambda i: _SEVERITY_ORDER.get(i.severity, 3)))

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
        return out


def _too_large_report(size: int, manager: str | None) -> InspectionReport:
    message = CheckpointTooLargeError(size).message
    return InspectionReport(
        readable=False,
        size=size,
        manager=manager,
        issues=(Issue("too-large", "error", message),),
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
) -> InspectionView:
    """Inspect a state file's bytes. ``source`` names it (a path, an upload's file name); a
    name like ``cpu_manager_state.bak`` tells the manager when the content does not.
    ``size`` is the real size when ``content`` was cut at the 16 MiB cap; ``state_dir`` is the
    kubelet root dir the kubelet's start-up message names (default ``/var/lib/kubelet``);
    ``live_pod_uids`` (the pods the node knows) adds ``stale-entry`` issues."""
    targets = tuple(targets)
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    real_size = size if size is not None else len(data)
    hint = manager if manager is not None else manager_for_name(source)
    if real_size > MAX_FILE_BYTES:
        return InspectionView(source, _too_large_report(real_size, hint), (), policy, targets)
    extra: dict[str, Any] = {"state_dir": state_dir} if state_dir is not None else {}
    report = inspect(data, manager, configured_policy=policy, targets=targets, **extra)
    if not report.readable and manager is None and hint is not None:
        # A truncated or hostile file has no keys to tell the manager: its name does.
        report = inspect(data, hint, configured_policy=policy, targets=targets, **extra)
    consistency: tuple[Issue, ...] = ()
    tables: tuple[Table, ...] = ()
    if report.readable and report.manager is not None:
        found = (
            check_consistency(cpu=data, live_pod_uids=live_pod_uids)
            if report.manager == "cpu"
            else check_consistency(memory=data, live_pod_uids=live_pod_uids)
        )
        consistency = tuple(i for i in found if i.code not in _DUPLICATE_CODES)
        if report.state is not None:
            tables = _content_tables(report.state)
    return InspectionView(source, report, consistency, policy, targets, tables)


def _read_source(path: str | Path) -> tuple[bytes | None, int | None]:
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
    content, too_large = _read_source(path)
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


# -- conversion --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConvertOutcome:
    """What ``convert_file`` did."""

    source: Path
    out: Path
    result: ConversionResult
    backup: Path | None = None
    same_file: bool = False
    unchanged: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "source": str(self.source),
            "out": str(self.out),
            "backup": str(self.backup) if self.backup is not None else None,
            "sameFile": self.same_file,
            "unchanged": self.unchanged,
            "manager": r.manager,
            "from": r.source.to_dict(),
            "toVersion": r.to_version,
            "target": r.target.to_dict() if r.target is not None else None,
            "lost": list(r.lost),
            "notes": list(r.notes),
            "verdict": r.verdict.to_dict() if r.verdict is not None else None,
            "bytes": len(r.content.encode("utf-8")),
        }


def _utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def backup_name(out: Path, stamp: str) -> str:
    """``<name>.<stamp>.bak``, with ``-2``, ``-3``... when taken."""
    name = f"{out.name}.{stamp}.bak"
    n = 2
    while (out.parent / name).exists():
        name = f"{out.name}.{stamp}-{n}.bak"
        n += 1
    return name


def _check_out(out: Path) -> bytes | None:
    """The current content of ``out`` (``None`` when it does not exist); refuses what must not
    be replaced."""
    if out.name.startswith("."):
        raise CheckpointUsageError(
            f"--out {out}: names starting with '.' are the kubelet's temporary files", "out"
        )
    if out.is_dir():
        raise CheckpointUsageError(f"--out {out} is a directory; give a file path", "out")
    if not out.parent.is_dir() and out.parent.exists():
        raise CheckpointUsageError(f"--out {out}: {out.parent} is not a directory", "out")
    try:
        return read_capped(out)
    except KubeletFileMissingError:
        return None
    except KubeletFileTooLargeError as exc:
        raise CheckpointUsageError(
            f"--out {out} exists and is {exc.size} bytes: not a state file; refusing to replace it",
            "out",
        ) from None
    except KubeletDirError as exc:
        raise CheckpointUsageError(
            f"--out {out} exists but cannot be read to keep a backup: {exc.reason}", "out"
        ) from None


def convert_file(
    source: str | Path,
    out: str | Path,
    *,
    to_version: str | None = None,
    release: str | None = None,
    force: bool = False,
    manager: str | None = None,
    clock: Callable[[], str] = _utc_stamp,
) -> ConvertOutcome:
    """Convert ``source`` to ``to_version`` (or the version ``release`` writes) into ``out``;
    see the module docstring for the backup rule."""
    src, dst = Path(source), Path(out)
    if to_version is None and release is None:
        raise CheckpointUsageError("give --to VERSION or --release RELEASE (or both)", "to")
    target: Reader | None = None
    if release is not None:
        try:
            target = parse_reader(release)
        except CheckpointError as exc:
            raise CheckpointUsageError(exc.message, "release") from None
    content, too_large = _read_source(src)
    if content is None:
        raise ConversionRefusedError(
            f"refusing to convert {src}: {CheckpointTooLargeError(too_large or 0).message}"
        )
    hint = manager if manager is not None else manager_for_name(src.name)
    try:
        info = detect_version(content, hint)
    except CheckpointError as exc:
        raise ConversionRefusedError(f"cannot convert {src}: {exc.message}") from None
    version: str | None = None
    if to_version is not None:
        text = to_version.strip().upper()
        version = text if text.startswith("V") else "V" + text
        allowed = CPU_VERSIONS if info.manager == "cpu" else MEMORY_VERSIONS
        if version not in allowed:
            raise CheckpointUsageError(
                f"{info.file_name} has no version {to_version!r}; expected one of "
                f"{', '.join(allowed)} (memory versions are numbered separately: memory V3 is "
                "the 1.37 format)",
                "to",
            )
    if target is not None and info.manager == "memory" and target.line == "1.17":
        raise CheckpointUsageError("there is no memory manager before 1.21", "release")
    try:
        result = convert(content, version, target, force, manager=info.manager)
    except ConversionError as exc:
        raise ConversionRefusedError(exc.message.replace("(use force", "(use --force")) from None
    current = _check_out(dst)
    same = dst.exists() and src.exists() and os.path.samefile(src, dst)
    new_bytes = result.content.encode("utf-8")
    if current is not None and current == new_bytes:
        return ConvertOutcome(src, dst, result, None, same, unchanged=True)
    backup: Path | None = None
    try:
        if current is not None:
            name = backup_name(dst, clock())
            statefiles.write_file(dst.parent, name, current)
            backup = dst.parent / name
        statefiles.write_file(dst.parent, dst.name, new_bytes)
    except statefiles.StateFileError as exc:
        raise CheckpointFileError(str(exc), "out") from None
    return ConvertOutcome(src, dst, result, backup, same)


# -- checking a kubelet root dir ---------------------------------------------------------------------


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


def _load_config(
    d: KubeletRootDir, release: str
) -> tuple[KubeletConfig | None, str | None, str | None]:
    """(config, its path, the problem with it). An explicit file that cannot be read raises."""
    path = d.config_path()
    if path is None:
        return None, None, None
    try:
        text = d.read_config_text()
    except KubeletDirError as exc:
        if d.config_file is not None:
            raise CheckpointFileError(exc.message, "kubelet-config-file") from None
        return None, str(path), exc.message
    if text is None:
        return None, None, None
    family = release if release in RELEASES else RELEASES[0]
    try:
        return parse_kubelet_config_text(text, family), str(path), None
    except KubeletConfigError as exc:
        problem = f"{path}: {exc}"
        if d.config_file is not None:
            raise CheckpointUsageError(problem, "kubelet-config-file") from None
        return None, str(path), problem


def _rescue_versions(manager: str, target: Reader, current: str | None) -> list[str]:
    newest = "V4" if manager == "cpu" else "V3"
    out = []
    for v in (version_for(manager, target), newest):
        if v != current and v not in out:
            out.append(v)
    return out


def _rescues(
    path: Path, content: bytes, manager: str, target: Reader, view: InspectionView
) -> tuple[Rescue, ...]:
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
        p = shlex.quote(str(path))
        command = (
            f"numascope checkpoint convert {p} --to {version} --release {target.key} --out {p}"
        )
        found.append(Rescue(version, result.verdict.verdict, result.lost, result.notes, command))
    return tuple(found)


def check_root_dir(
    root: str | Path,
    target: str,
    *,
    gate: bool | None = None,
    config_file: str | Path | None = None,
) -> DirCheck:
    """What a kubelet of ``target`` does with the state files of ``root`` (read-only)."""
    d = KubeletRootDir(root, config_file=config_file)
    try:
        d.check()
    except KubeletDirError as exc:
        raise CheckpointFileError(exc.message, "dir") from None
    pre = resolve_target(target, gate, None)[0]
    config, config_path, config_problem = _load_config(d, pre.release)
    reader, gate_source = resolve_target(target, gate, config)
    policies: dict[str, str | None] = {
        "cpu": config.cpu_manager_policy if config is not None else None,
        "memory": config.memory_manager_policy if config is not None else None,
    }
    contents: dict[str, bytes | None] = {}
    checks: list[FileCheck] = []
    for manager in MANAGERS:
        path = d.state_path(manager)
        try:
            content = d.read_state(manager)
            too_large = None
        except KubeletFileTooLargeError as exc:
            content, too_large = b"", exc.size
        except KubeletDirError as exc:
            raise CheckpointFileError(exc.message, "dir") from None
        contents[manager] = content if too_large is None else None
        if content is None:
            checks.append(FileCheck(manager, path.name, str(path), False))
            continue
        if manager == "memory" and reader.line == "1.17":
            checks.append(
                FileCheck(
                    manager,
                    path.name,
                    str(path),
                    True,
                    advice=("a ≤1.17 kubelet has no memory manager and ignores this file",),
                    verdict=TargetVerdict(
                        reader.key, reader.label, reader.release, reader.gate, COMPATIBLE
                    ),
                )
            )
            continue
        view = inspect_content(
            content,
            source=str(path),
            manager=manager,
            policy=policies[manager],
            targets=(reader,),
            size=too_large,
            state_dir=str(d.path),
        )
        verdict = view.report.verdict_for(reader.key)
        rescues: tuple[Rescue, ...] = ()
        advice: list[str] = []
        status = verdict.verdict if verdict is not None else WILL_FAIL
        if status in (WILL_FAIL, COMPATIBLE_WITH_LOSS) and too_large is None:
            rescues = _rescues(path, content, manager, reader, view)
        if status == POLICY_MISMATCH:
            advice.append(
                "the configured policy differs from the file's: a policy change needs the "
                "documented recovery (drain, stop the kubelet, move the file aside, start)"
            )
        elif status == WILL_FAIL and not rescues:
            advice.append(
                "no conversion rescues this file (corrupted or unreadable): drain the node, stop "
                f"the kubelet, move {path.name} aside (e.g. to {path.name}.bak), start the kubelet"
            )
        if (
            status == COMPATIBLE_WITH_LOSS
            and reader.line in ("1.36", "1.37")
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
        checks.append(
            FileCheck(
                manager,
                path.name,
                str(path),
                True,
                view,
                verdict,
                rescues,
                tuple(advice),
            )
        )
    issues: list[Issue] = []
    uids = d.pod_uids()
    pod_uids = tuple(uids) if uids is not None else None
    if config_problem is not None:
        issues.append(Issue("kubelet-config-unreadable", "warning", config_problem))
    cpu_bytes, mem_bytes = contents.get("cpu"), contents.get("memory")
    if cpu_bytes is not None or mem_bytes is not None:
        reserved = config.reserved_system_cpus if config is not None else None
        strict = (
            config is not None
            and config.cpu_manager_policy_options.get("strict-cpu-reservation") == "true"
        )
        found = check_consistency(
            cpu=cpu_bytes,
            memory=mem_bytes,
            reserved_cpus=reserved,
            strict_reservation=strict,
            live_pod_uids=pod_uids,
        )
        issues.extend(i for i in found if i.code not in _DUPLICATE_CODES)
    return DirCheck(
        str(d.path),
        reader,
        gate_source,
        config_path,
        config_problem,
        policies,
        tuple(checks),
        tuple(sorted(issues, key=lambda i: _SEVERITY_ORDER.get(i.severity, 3))),
        pod_uids,
    )


__all__ = [
    "MANAGERS",
    "CheckpointFileError",
    "CheckpointServiceError",
    "CheckpointUsageError",
    "ConversionRefusedError",
    "ConvertOutcome",
    "DirCheck",
    "EmptyUploadError",
    "FileCheck",
    "InspectionView",
    "KubeletFilesView",
    "Rescue",
    "Table",
    "UploadTooLargeError",
    "backup_name",
    "check_root_dir",
    "convert_file",
    "inspect_content",
    "inspect_kubelet_file",
    "inspect_path",
    "kubelet_files",
    "parse_manager",
    "parse_policy",
    "parse_targets",
    "resolve_target",
]

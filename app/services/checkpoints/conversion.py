"""Converting a state file to another version, with a backup.

``convert_file`` refuses (``ConversionRefusedError``) when the source's protecting checksum does
not verify unless ``force``. When ``out`` already exists it is first copied, atomically, to
``<out>.<UTC timestamp>.bak`` in the same directory (``cpu_manager_state.20250102T030405Z.bak``;
``-2``, ``-3``... are appended if that name is taken), so no earlier file or earlier backup is
ever overwritten; only then is ``out`` replaced atomically. ``out`` may be the source file
itself (the backup keeps the original). An ``out`` that already holds exactly the converted
bytes is left alone. Writes go only through ``app.adapters.statefiles`` (temporary file in the
same directory, fsync, rename, fsync of the directory, mode 0600).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.adapters import statefiles
from app.adapters.kubelet import (
    KubeletDirError,
    KubeletFileMissingError,
    KubeletFileTooLargeError,
    manager_for_name,
    read_capped,
)
from app.domain import releases
from app.domain.checkpoint import (
    CPU_VERSIONS,
    MEMORY_VERSIONS,
    CheckpointError,
    CheckpointTooLargeError,
    ConversionError,
    ConversionResult,
    Reader,
    VersionInfo,
    convert,
    detect_version,
    parse_reader,
)
from app.services.checkpoints.errors import (
    CheckpointFileError,
    CheckpointUsageError,
    ConversionRefusedError,
)
from app.services.checkpoints.inspection import read_source

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
        result = self.result.to_dict()
        content = result.pop("content")
        return {
            "source": str(self.source),
            "out": str(self.out),
            "backup": str(self.backup) if self.backup is not None else None,
            "sameFile": self.same_file,
            "unchanged": self.unchanged,
            "manager": result.pop("manager"),
            "from": result.pop("source"),
            **result,  # toVersion, target, lost, notes, verdict
            "bytes": len(content.encode("utf-8")),
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
    target = _target(release)
    content, too_large = read_source(src)
    if content is None:
        raise ConversionRefusedError(
            f"refusing to convert {src}: {CheckpointTooLargeError(too_large or 0).message}"
        )
    hint = manager if manager is not None else manager_for_name(src.name)
    try:
        info = detect_version(content, hint)
    except CheckpointError as exc:
        raise ConversionRefusedError(f"cannot convert {src}: {exc.message}") from None
    version = _version(info, to_version) if to_version is not None else None
    if (
        target is not None
        and info.manager == "memory"
        and target.line == releases.OLDEST_CHECKPOINT_FAMILY
    ):
        raise CheckpointUsageError(
            f"there is no memory manager before {releases.MEMORY_MANAGER_SINCE}", "release"
        )
    try:
        result = convert(content, version, target, force, manager=info.manager)
    except ConversionError as exc:
        raise ConversionRefusedError(exc.message.replace("(use force", "(use --force")) from None
    return _write(src, dst, result, clock)


def _target(release: str | None) -> Reader | None:
    """The kubelet ``--release`` names, which will read the converted file."""
    if release is None:
        return None
    try:
        return parse_reader(release)
    except CheckpointError as exc:
        raise CheckpointUsageError(exc.message, "release") from None


def _version(info: VersionInfo, to_version: str) -> str:
    """``--to`` as a version of the file's manager (``v2``, ``2`` and ``V2`` alike)."""
    text = to_version.strip().upper()
    version = text if text.startswith("V") else "V" + text
    allowed = CPU_VERSIONS if info.manager == "cpu" else MEMORY_VERSIONS
    if version not in allowed:
        raise CheckpointUsageError(
            f"{info.file_name} has no version {to_version!r}; expected one of "
            f"{', '.join(allowed)} (memory versions are numbered separately: memory V3 is "
            f"the {releases.STATE_FILE_WRITERS[('memory', 'V3')]} format)",
            "to",
        )
    return version


def _write(
    src: Path, dst: Path, result: ConversionResult, clock: Callable[[], str]
) -> ConvertOutcome:
    """Put the converted file at ``dst``, first keeping what ``dst`` held as a backup; nothing
    is written when ``dst`` already holds exactly the result."""
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

"""Several state files replaced as one unit, even across a crash: a commit journal kept in the
names of the staged files.

``statefiles.write_files`` is atomic per file; a crash between its renames leaves some files
new and some old, which a kubelet (or Numascope) cannot restore. The server's nodes change
their three files (``cpu_manager_state``, ``memory_manager_state``, ``pods.json``) together and
record the change in the database, so the unit here is two-phase. Each staged file names the
change's ``version`` and its target, so the directory itself is the journal:

1. ``prepare``: every new content goes to a complete, ``fsync``-ed file
   ``.numascope-next-<version>-<name>``; each current target is hard-linked to a backup
   ``.numascope-prev-<version>-<name>`` (no data is copied), or, when there is none, an empty
   ``.numascope-none-<version>-<name>`` records its absence; then one ``fsync`` of the
   directory. Failures here (a full disk, a read-only directory) leave the targets untouched
   and remove what was staged.
2. ``apply``: the staged files are renamed over the targets (not synced: see below).
3. The caller commits the database (the decision), then ``finish`` removes the backups.
   ``rollback`` (the database refused) puts the backups back.

One ``fsync`` per new file and one of the directory (there used to be six: a journal file of
its own and a second directory sync). **Why that is enough**, the ordering argument:

* Before the directory sync no target has been touched, so a crash there leaves the old files
  (the staged ones are removed on recovery: the database cannot hold their version yet).
* The directory sync makes every staged name, backup link and absence marker durable before
  the first rename: whatever renames the file system kept after a crash, each target is either
  renamed (its ``next`` file gone) or not (its ``next`` file still there, complete: fsynced),
  and its backup is there.
* After a crash, ``recover(directory, committed_version)`` decides per version: when the
  database holds it the change is rolled forward (the ``next`` files still there are renamed),
  otherwise rolled back (backups renamed over their targets, targets that had none removed).
  Either way the files end up as one version, and no running pod's CPUs move.
* Rolling forward needs only the ``next`` files, which only their own rename removes; so
  ``finish`` may remove the backups without syncing the renames first (a rename lost in a
  crash is redone from its ``next`` file). The durability of the renames themselves comes
  with the next sync of the directory, or is redone by recovery.

Every name used starts with ``.``, so readers (the kubelet's listing,
``statefiles.list_files``) skip them; ``clean_temp_files`` removes the leftovers of crashed
writes (temporary files, backups that name no version) once ``recover`` has run.

The caller holds the directory's ``StateDirLock`` from ``prepare`` to ``finish``/``rollback``
(and while recovering). Errors are ``statefiles.StateFileError`` with the failing ``errno``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.adapters import statefiles

PREFIX = ".numascope-"
NEXT = "next"
BACKUP = "prev"
ABSENT = "none"
BACKUP_PREFIX = f"{PREFIX}{BACKUP}-"
PROBE_BYTES = 4096
# Go's os.CreateTemp(dir, ".") names: "." followed by digits (ours and the kubelet's).
_TEMP_RE = re.compile(r"^\.\d+$")
# A staged file: what it is, the change's version, its target.
_STAGED_RE = re.compile(rf"^{re.escape(PREFIX)}({NEXT}|{BACKUP}|{ABSENT})-(\d+)-(.+)$")


def staged_name(kind: str, version: int, name: str) -> str:
    """The name of ``name``'s ``next`` content, ``prev`` backup or ``none`` marker of the
    change to ``version``."""
    return f"{PREFIX}{kind}-{version}-{name}"


@dataclass(slots=True)
class StagedFiles:
    """One change of several files in ``directory`` (see the module docstring)."""

    directory: Path
    files: Mapping[str, bytes | str]
    version: int
    _next: list[Path] = field(default_factory=list)  # the new contents, staged
    _backups: list[Path] = field(default_factory=list)  # backups and absence markers
    _applied: bool = False

    def _path(self, kind: str, name: str) -> Path:
        return self.directory / staged_name(kind, self.version, name)

    def prepare(self) -> StagedFiles:
        d = statefiles.ensure_dir(self.directory)
        for name in self.files:
            statefiles.check_name(name)
        try:
            for name, content in self.files.items():
                tmp = statefiles.stage_file(d, name, content)
                self._next.append(tmp)
                statefiles.replace(tmp, self._path(NEXT, name))
                self._next[-1] = self._path(NEXT, name)
            for name in self.files:
                self._back_up(name)
            statefiles.sync_dir(d)
        except BaseException:
            self._discard()
            raise
        return self

    def _back_up(self, name: str) -> None:
        backup = self._path(BACKUP, name)
        with contextlib.suppress(FileNotFoundError):
            backup.unlink()
        try:
            os.link(self.directory / name, backup)
            self._backups.append(backup)
        except FileNotFoundError:
            marker = self._path(ABSENT, name)
            try:
                marker.touch()
            except OSError as err:
                raise statefiles.StateFileError(
                    marker, f"cannot be created: {err.strerror or err}", err.errno
                ) from None
            self._backups.append(marker)
        except OSError as err:
            raise statefiles.StateFileError(
                backup, f"cannot be linked: {err.strerror or err}", err.errno
            ) from None

    def apply(self) -> None:
        """Rename every staged file over its target (recovery finishes what a crash stops)."""
        self._applied = True
        for name in self.files:
            statefiles.replace(self._path(NEXT, name), self.directory / name)
        self._next.clear()

    def finish(self) -> None:
        """The change is committed: drop the backups (best effort: one left behind is
        removed by ``recover``)."""
        self._discard()

    def rollback(self) -> None:
        """Put every target back as it was before ``prepare``."""
        if self._applied:
            _roll_back(self.directory, self.version, list(self.files))
        self._discard()

    def _discard(self) -> None:
        for path in (*self._next, *self._backups):
            with contextlib.suppress(OSError):
                path.unlink()
        self._next.clear()
        self._backups.clear()


def _roll_back(d: Path, version: int, names: list[str]) -> None:
    for name in names:
        backup = d / staged_name(BACKUP, version, name)
        if backup.exists():
            statefiles.replace(backup, d / name)
        elif (d / staged_name(ABSENT, version, name)).exists():
            with contextlib.suppress(FileNotFoundError):
                (d / name).unlink()
    statefiles.sync_dir(d)


def _staged_files(d: Path) -> dict[int, list[tuple[str, str, Path]]]:
    """The staged files in ``d`` by version: ``(kind, target, path)``."""
    try:
        entries = list(os.scandir(d))
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise statefiles.StateFileError(d, f"cannot be listed: {err.strerror}", err.errno) from None
    found: dict[int, list[tuple[str, str, Path]]] = {}
    for e in entries:
        m = _STAGED_RE.match(e.name)
        if m is None:
            continue
        kind, version, name = m.group(1), int(m.group(2)), m.group(3)
        statefiles.check_name(name)
        found.setdefault(version, []).append((kind, name, Path(e.path)))
    return found


def pending_version(directory: str | Path) -> int | None:
    """The version of an unfinished change in ``directory``, or ``None``."""
    staged = _staged_files(Path(directory))
    return max(staged) if staged else None


def recover(directory: str | Path, committed_version: int) -> str | None:
    """Finish or undo an unfinished change (see the module docstring); what was done, or
    ``None`` when there was nothing to do."""
    d = Path(directory)
    staged = _staged_files(d)
    if not staged:
        return None
    done = []
    for version in sorted(staged):
        files = staged[version]
        if committed_version >= version:
            for kind, name, path in files:
                if kind == NEXT:
                    statefiles.replace(path, d / name)
            done.append(
                f"an interrupted write of version {version} was completed (the database has it)"
            )
        else:
            _roll_back(d, version, sorted({name for _, name, _ in files}))
            done.append(
                f"an interrupted write of version {version} was undone (the database holds "
                f"version {committed_version})"
            )
        statefiles.sync_dir(d)
        for _, _, path in files:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    statefiles.sync_dir(d)
    return "; ".join(done)


def forget(directory: str | Path) -> None:
    """Remove every staged file of ``directory`` (its node is deleted)."""
    for files in _staged_files(Path(directory)).values():
        for _, _, path in files:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def clean_temp_files(directory: str | Path) -> int:
    """Remove temporary files of crashed writes (``.`` + digits, our files that name no
    change); the number removed. Leaves everything alone while a change is staged
    (``recover`` first)."""
    d = Path(directory)
    try:
        entries = list(os.scandir(d))
    except FileNotFoundError:
        return 0
    except OSError as err:
        raise statefiles.StateFileError(d, f"cannot be listed: {err.strerror}", err.errno) from None
    if any(_STAGED_RE.match(e.name) for e in entries):
        return 0
    removed = 0
    for e in entries:
        if (_TEMP_RE.match(e.name) or e.name.startswith(PREFIX)) and e.is_file():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(e.path)
                removed += 1
    return removed


def probe(directory: str | Path) -> None:
    """Check that ``directory`` takes a new file now (a few KiB, synced, then removed);
    raises ``StateFileError`` (``ENOSPC`` for a full disk, ``EROFS`` for a read-only one)."""
    d = statefiles.ensure_dir(directory)
    tmp = statefiles.stage_file(d, "probe", b"\0" * PROBE_BYTES)
    with contextlib.suppress(OSError):
        tmp.unlink()

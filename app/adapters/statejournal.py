"""Several state files replaced as one unit, even across a crash: a commit journal kept in the
names of the staged files.

``statefiles.write_files`` is atomic per file; a crash between its renames leaves some files
new and some old, which a kubelet (or Numascope) cannot restore. The server's nodes change
their three files (``cpu_manager_state``, ``memory_manager_state``, ``pods.json``) together and
record the change in the database (the decision), so a change is staged before the decision
and applied after it. Each staged file names the change's ``version`` and its target, so the
directory itself is the journal:

1. ``prepare``: every new content goes to a complete, ``fsync``-ed file
   ``.numascope-next-<version>-<name>``, then one ``fsync`` of the directory. No target is
   touched. Failures here (a full disk, a read-only directory) remove what was staged. The
   staged files are written under their own names: one a crash left half-written is of a
   version the database never got (its commit comes after this step), so recovery removes it.
2. The caller commits the database; if that fails, ``discard`` removes the staged files.
   A staged file ``discard`` could not remove would pass for the files of the next change
   of that version: ``prepare`` runs ``recover`` first, and a change that stages nothing
   must too (``recover(directory, version - 1)`` before its commit).
3. ``apply``: the staged files are renamed over their targets (not synced: see below).

One ``fsync`` per new file and one of the directory, no backups (there used to be six
``fsync``s: a journal file of its own and a second directory sync, and a hard-linked backup of
every target). **Why that is enough**, the ordering argument:

* Until the database commits, no target has been touched: a crash leaves the old files, and
  recovery removes the staged ones (the database does not hold their version).
* The directory sync before the commit makes every staged name durable, with its content
  (each file was synced): after the commit, whatever renames a crash lost, their staged files
  are still there, complete. ``recover(directory, committed_version)`` renames them (the
  database holds their version), so every target ends up new. Hence nothing ever has to be
  rolled back, and no running pod's CPUs move.
* A rename needs no sync of its own: one lost in a crash is redone by recovery, and the next
  change's directory sync makes it durable in any case.

The caller holds the directory's ``StateDirLock`` from ``prepare`` to ``apply``/``discard``
(and while recovering), so no reader of the server sees the files between the decision and the
renames: a load takes the lock and recovers first. Every name used starts with ``.``, so
readers (the kubelet's listing, ``statefiles.list_files``) skip them; ``clean_temp_files``
removes the leftovers of crashed writes once ``recover`` has run. Errors are
``statefiles.StateFileError`` with the failing ``errno``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.adapters import statefiles

PREFIX = ".numascope-"
NEXT_PREFIX = f"{PREFIX}next-"
PROBE_BYTES = 4096
#: The journal file of older releases (``version``, the temporary file of each target, which
#: targets had a hard-linked backup ``.numascope-prev-<name>``): read by recovery only, so that
#: a server upgraded after a crash in the middle of a write still finishes or undoes it.
LEGACY_JOURNAL = f"{PREFIX}journal"
_LEGACY_BACKUP = f"{PREFIX}prev-"
# Go's os.CreateTemp(dir, ".") names: "." followed by digits (ours and the kubelet's).
_TEMP_RE = re.compile(r"^\.\d+$")
# A staged file: the change's version, its target.
_STAGED_RE = re.compile(rf"^{re.escape(NEXT_PREFIX)}(\d+)-(.+)$")


def staged_name(version: int, name: str) -> str:
    """The name of ``name``'s new content in the change to ``version``."""
    return f"{NEXT_PREFIX}{version}-{name}"


@dataclass(slots=True)
class StagedFiles:
    """One change of several files in ``directory`` (see the module docstring)."""

    directory: Path
    files: Mapping[str, bytes | str]
    version: int
    _staged: list[Path] = field(default_factory=list)  # what prepare made, not yet renamed

    def _next(self, name: str) -> Path:
        return self.directory / staged_name(self.version, name)

    def prepare(self) -> StagedFiles:
        d = statefiles.ensure_dir(self.directory)
        for name in self.files:
            statefiles.check_name(name)
        # What a writer that died before its decision staged for this version (the database
        # holds the one before) must not be taken for this change's by a later recovery.
        recover(d, self.version - 1)
        try:
            for name, content in self.files.items():
                # Written in place, no temporary file and rename: a staged name counts only
                # once the database holds its version, after this whole step has synced.
                staged = self._next(name)
                self._staged.append(staged)
                statefiles.write_synced(staged, d / name, content)
            statefiles.sync_dir(d)
        except BaseException:
            self.discard()
            raise
        return self

    def apply(self) -> None:
        """The change is committed: rename every staged file over its target (what a crash
        stops, ``recover`` finishes)."""
        for name in self.files:
            statefiles.replace(self._next(name), self.directory / name)
        self._staged.clear()

    def discard(self) -> None:
        """The change is not committed: remove the staged files (the targets were never
        touched)."""
        for path in self._staged:
            with contextlib.suppress(OSError):
                path.unlink()
        self._staged.clear()


def _staged_files(d: Path) -> dict[int, list[tuple[str, Path]]]:
    """The staged files in ``d`` by version: ``(target, path)``."""
    try:
        entries = list(os.scandir(d))
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise statefiles.StateFileError(d, f"cannot be listed: {err.strerror}", err.errno) from None
    found: dict[int, list[tuple[str, Path]]] = {}
    for e in entries:
        m = _STAGED_RE.match(e.name)
        if m is not None:
            statefiles.check_name(m.group(2))
            found.setdefault(int(m.group(1)), []).append((m.group(2), Path(e.path)))
    return found


def pending_version(directory: str | Path) -> int | None:
    """The version of an unfinished change in ``directory``, or ``None``."""
    staged = _staged_files(Path(directory))
    return max(staged) if staged else None


def recover(directory: str | Path, committed_version: int) -> str | None:
    """Finish or undo an unfinished change (see the module docstring); what was done, or
    ``None`` when there was nothing to do."""
    d = Path(directory)
    legacy = _recover_legacy(d, committed_version)
    staged = _staged_files(d)
    if not staged:
        return legacy
    done = [] if legacy is None else [legacy]
    for version in sorted(staged):
        if committed_version >= version:
            for name, path in staged[version]:
                statefiles.replace(path, d / name)
            done.append(
                f"an interrupted write of version {version} was completed (the database has it)"
            )
        else:
            for _, path in staged[version]:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            done.append(
                f"an interrupted write of version {version} was undone (the database holds "
                f"version {committed_version})"
            )
    statefiles.sync_dir(d)
    return "; ".join(done)


def _recover_legacy(d: Path, committed_version: int) -> str | None:
    """``recover`` for the journal of older releases (``LEGACY_JOURNAL``)."""
    journal = d / LEGACY_JOURNAL
    try:
        doc = json.loads(journal.read_text("utf-8"))
        version = int(doc["version"])
        files = {str(k): str(v) for k, v in dict(doc["files"]).items()}
        backups = {str(k): bool(v) for k, v in dict(doc["backups"]).items()}
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise statefiles.StateFileError(journal, f"cannot be read: {err}") from None
    except (ValueError, KeyError, TypeError) as err:
        raise statefiles.StateFileError(journal, f"is not a journal: {err}") from None
    for name in (*files, *backups):
        statefiles.check_name(name)
    forward = committed_version >= version
    if forward:
        for name, tmp_name in files.items():
            if _TEMP_RE.match(tmp_name) and (d / tmp_name).exists():
                statefiles.replace(d / tmp_name, d / name)
    else:
        for name, had in backups.items():
            if had:
                statefiles.replace(d / f"{_LEGACY_BACKUP}{name}", d / name)
            else:
                with contextlib.suppress(FileNotFoundError):
                    (d / name).unlink()
    statefiles.sync_dir(d)
    journal.unlink()
    for name in backups:
        with contextlib.suppress(FileNotFoundError):
            (d / f"{_LEGACY_BACKUP}{name}").unlink()
    statefiles.sync_dir(d)
    if forward:
        return f"an interrupted write of version {version} was completed (the database has it)"
    return (
        f"an interrupted write of version {version} was undone (the database holds "
        f"version {committed_version})"
    )


def forget(directory: str | Path) -> None:
    """Remove every staged file of ``directory`` (its node is deleted)."""
    with contextlib.suppress(FileNotFoundError):
        (Path(directory) / LEGACY_JOURNAL).unlink()
    for files in _staged_files(Path(directory)).values():
        for _, path in files:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def clean_temp_files(directory: str | Path) -> int:
    """Remove temporary files of crashed writes (``.`` + digits, our files that name no
    change, such as the backups of older versions); the number removed. Leaves everything
    alone while a change is staged (``recover`` first)."""
    d = Path(directory)
    try:
        entries = list(os.scandir(d))
    except FileNotFoundError:
        return 0
    except OSError as err:
        raise statefiles.StateFileError(d, f"cannot be listed: {err.strerror}", err.errno) from None
    if any(_STAGED_RE.match(e.name) or e.name == LEGACY_JOURNAL for e in entries):
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

"""Several state files replaced as one unit, even across a crash: a small commit journal.

``statefiles.write_files`` is atomic per file; a crash between its renames leaves some files
new and some old, which a kubelet (or Numascope) cannot restore. The server's nodes change
their three files (``cpu_manager_state``, ``memory_manager_state``, ``pods.json``) together and
record the change in the database, so the unit here is two-phase:

1. ``prepare``: every new content goes to a complete, ``fsync``-ed temporary file; each current
   target is hard-linked to a backup ``.numascope-prev-<name>`` (no data is copied); then the
   journal ``.numascope-journal`` (JSON: the change's ``version``, the temporary file of every
   target, which targets had a backup) is written atomically. Failures here (a full disk, a
   read-only directory) leave the targets untouched and remove what was staged.
2. ``apply``: the temporary files are renamed over the targets, the directory synced.
3. The caller commits the database (the decision), then ``finish`` removes the journal and the
   backups. ``rollback`` (the database refused) puts the backups back.

After a crash, ``recover(directory, committed_version)`` reads the journal: when the database
holds the journal's version the change is rolled forward (the remaining renames are done),
otherwise it is rolled back from the backups. Either way the files end up as one version, and
no running pod's CPUs move. Every name used starts with ``.``, so readers (the kubelet's listing,
``statefiles.list_files``) skip them; ``clean_temp_files`` removes the leftovers of crashed
writes (never the journal's files while a journal exists).

The caller holds the directory's ``StateDirLock`` from ``prepare`` to ``finish``/``rollback``
(and while recovering). Errors are ``statefiles.StateFileError`` with the failing ``errno``.
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

JOURNAL_NAME = ".numascope-journal"
BACKUP_PREFIX = ".numascope-prev-"
PROBE_BYTES = 4096
# Go's os.CreateTemp(dir, ".") names: "." followed by digits (ours and the kubelet's).
_TEMP_RE = re.compile(r"^\.\d+$")


@dataclass(slots=True)
class StagedFiles:
    """One change of several files in ``directory`` (see the module docstring)."""

    directory: Path
    files: Mapping[str, bytes | str]
    version: int
    _temps: dict[str, Path] = field(default_factory=dict)
    _backups: dict[str, bool] = field(default_factory=dict)
    _applied: bool = False

    def prepare(self) -> StagedFiles:
        d = statefiles.ensure_dir(self.directory)
        for name in self.files:
            statefiles.check_name(name)
        try:
            for name, content in self.files.items():
                self._temps[name] = statefiles.stage_file(d, name, content)
            for name in self.files:
                target = d / name
                backup = d / f"{BACKUP_PREFIX}{name}"
                with contextlib.suppress(FileNotFoundError):
                    backup.unlink()
                try:
                    os.link(target, backup)
                    self._backups[name] = True
                except FileNotFoundError:
                    self._backups[name] = False
                except OSError as err:
                    raise statefiles.StateFileError(
                        backup, f"cannot be linked: {err.strerror or err}", err.errno
                    ) from None
            journal = {
                "version": self.version,
                "files": {name: tmp.name for name, tmp in self._temps.items()},
                "backups": self._backups,
            }
            tmp = statefiles.stage_file(d, JOURNAL_NAME, json.dumps(journal, sort_keys=True))
            self._temps[JOURNAL_NAME] = tmp
            statefiles.replace(tmp, d / JOURNAL_NAME)
            del self._temps[JOURNAL_NAME]
            statefiles.sync_dir(d)
        except BaseException:
            self._discard()
            raise
        return self

    def apply(self) -> None:
        """Rename every temporary file over its target (the journal says how to finish)."""
        d = self.directory
        self._applied = True
        for name, tmp in list(self._temps.items()):
            statefiles.replace(tmp, d / name)
            del self._temps[name]
        statefiles.sync_dir(d)

    def finish(self) -> None:
        """The change is committed: drop the journal and the backups (best effort: a journal
        left behind is rolled forward by ``recover``)."""
        with contextlib.suppress(OSError):
            (self.directory / JOURNAL_NAME).unlink()
        for name, had in self._backups.items():
            if had:
                with contextlib.suppress(OSError):
                    (self.directory / f"{BACKUP_PREFIX}{name}").unlink()

    def rollback(self) -> None:
        """Put every target back as it was before ``prepare``."""
        if self._applied:
            _roll_back(self.directory, self._backups)
        self._discard()

    def _discard(self) -> None:
        for tmp in self._temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink()
        self._temps.clear()
        for name, had in self._backups.items():
            if had:
                with contextlib.suppress(OSError):
                    (self.directory / f"{BACKUP_PREFIX}{name}").unlink()
        with contextlib.suppress(OSError):
            (self.directory / JOURNAL_NAME).unlink()


def _roll_back(d: Path, backups: Mapping[str, bool]) -> None:
    for name, had in backups.items():
        target = d / name
        if had:
            statefiles.replace(d / f"{BACKUP_PREFIX}{name}", target)
        else:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
    statefiles.sync_dir(d)


def pending_version(directory: str | Path) -> int | None:
    """The version of an unfinished change in ``directory``, or ``None``."""
    journal = _read_journal(Path(directory))
    return None if journal is None else journal[0]


def _read_journal(d: Path) -> tuple[int, dict[str, str], dict[str, bool]] | None:
    try:
        raw = (d / JOURNAL_NAME).read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise statefiles.StateFileError(d / JOURNAL_NAME, f"cannot be read: {err}") from None
    try:
        doc = json.loads(raw)
        version = int(doc["version"])
        files = {str(k): str(v) for k, v in dict(doc["files"]).items()}
        backups = {str(k): bool(v) for k, v in dict(doc["backups"]).items()}
    except (ValueError, KeyError, TypeError) as err:
        raise statefiles.StateFileError(d / JOURNAL_NAME, f"is not a journal: {err}") from None
    for name in (*files, *backups):
        statefiles.check_name(name)
    return version, files, backups


def recover(directory: str | Path, committed_version: int) -> str | None:
    """Finish or undo an unfinished change (see the module docstring); what was done, or
    ``None`` when there was nothing to do."""
    d = Path(directory)
    journal = _read_journal(d)
    if journal is None:
        return None
    version, files, backups = journal
    if committed_version >= version:
        for name, tmp_name in files.items():
            tmp = d / tmp_name
            if _TEMP_RE.match(tmp_name) and tmp.exists():
                statefiles.replace(tmp, d / name)
        statefiles.sync_dir(d)
        done = f"an interrupted write of version {version} was completed (the database has it)"
    else:
        _roll_back(d, backups)
        done = (
            f"an interrupted write of version {version} was undone (the database holds "
            f"version {committed_version})"
        )
    (d / JOURNAL_NAME).unlink()
    for name in backups:
        with contextlib.suppress(FileNotFoundError):
            (d / f"{BACKUP_PREFIX}{name}").unlink()
    statefiles.sync_dir(d)
    return done


def clean_temp_files(directory: str | Path) -> int:
    """Remove temporary files of crashed writes (``.`` + digits, old backups); the number
    removed. Leaves everything alone while a journal exists (``recover`` first)."""
    d = Path(directory)
    if (d / JOURNAL_NAME).exists():
        return 0
    try:
        entries = list(os.scandir(d))
    except FileNotFoundError:
        return 0
    except OSError as err:
        raise statefiles.StateFileError(d, f"cannot be listed: {err.strerror}", err.errno) from None
    removed = 0
    for e in entries:
        if (_TEMP_RE.match(e.name) or e.name.startswith(BACKUP_PREFIX)) and e.is_file():
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

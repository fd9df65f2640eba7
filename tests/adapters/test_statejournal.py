"""The commit journal of several state files (``app.adapters.statejournal``): one ``fsync`` per
new file and one of the directory, no backup, and recovery from any set of renames a crash kept
after the database committed (a lost rename is redone from its staged file)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from app.adapters import statefiles, statejournal

OLD = {"a": "old a", "b": "old b"}
NEW = {"a": "new a", "b": "new b", "c": "new c"}  # c is new: it had no previous version


def _visible(d: Path) -> dict[str, str]:
    return {n: (d / n).read_text() for n in sorted(os.listdir(d)) if not n.startswith(".")}


def _count_fsyncs(monkeypatch: pytest.MonkeyPatch, fail_at: int = 0) -> list[int]:
    """The descriptors ``os.fsync`` is given from now on; call ``fail_at`` fails (ENOSPC)."""
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        if len(synced) == fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_a_change_syncs_each_new_file_and_the_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statefiles.write_files(tmp_path, OLD)
    synced = _count_fsyncs(monkeypatch)
    staged = statejournal.StagedFiles(tmp_path, NEW, 2).prepare()
    assert _visible(tmp_path) == OLD  # nothing touched before the decision
    staged.apply()
    assert len(synced) == len(NEW) + 1
    assert _visible(tmp_path) == NEW
    assert sorted(os.listdir(tmp_path)) == sorted(NEW)  # nothing staged is left


@pytest.mark.parametrize("kept", [set(), {"a"}, {"a", "c"}, {"a", "b", "c"}])
def test_a_committed_change_is_completed_whatever_renames_were_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: set[str]
) -> None:
    statefiles.write_files(tmp_path, OLD)
    staged = statejournal.StagedFiles(tmp_path, NEW, 2).prepare()
    real = statefiles.replace

    def replace(tmp: Path, target: Path) -> None:  # the renames a crash kept
        if target.name in kept:
            real(tmp, target)

    monkeypatch.setattr(statefiles, "replace", replace)
    staged.apply()
    monkeypatch.undo()
    assert statejournal.pending_version(tmp_path) == (2 if kept != set(NEW) else None)
    done = statejournal.recover(tmp_path, 2)
    assert kept == set(NEW) or (done is not None and "completed" in done)
    assert _visible(tmp_path) == NEW
    assert sorted(os.listdir(tmp_path)) == sorted(NEW)


def test_a_crash_before_the_decision_leaves_the_old_files(tmp_path: Path) -> None:
    statefiles.write_files(tmp_path, OLD)
    statejournal.StagedFiles(tmp_path, NEW, 2).prepare()  # then the process dies
    assert statejournal.pending_version(tmp_path) == 2
    done = statejournal.recover(tmp_path, 1)
    assert done is not None and "undone" in done
    assert sorted(os.listdir(tmp_path)) == sorted(OLD)
    assert _visible(tmp_path) == OLD


def test_a_staged_file_a_crash_cut_short_is_removed_not_taken(tmp_path: Path) -> None:
    """Staged files are written under their own names: one half-written when the process
    died is of a version the database never got, so recovery removes it."""
    statefiles.write_files(tmp_path, OLD)
    (tmp_path / statejournal.staged_name(2, "a")).write_text("new")  # "new a" cut short
    assert statejournal.pending_version(tmp_path) == 2
    done = statejournal.recover(tmp_path, 1)
    assert done is not None and "undone" in done
    assert sorted(os.listdir(tmp_path)) == sorted(OLD) and _visible(tmp_path) == OLD


def test_a_failed_write_removes_what_was_staged_and_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statefiles.write_files(tmp_path, OLD)
    _count_fsyncs(monkeypatch, fail_at=2)  # the disk fills up on the second file
    with pytest.raises(statefiles.StateFileError, match="No space left") as info:
        statejournal.StagedFiles(tmp_path, NEW, 2).prepare()
    assert Path(info.value.path).name == "b" and info.value.errno == errno.ENOSPC
    assert sorted(os.listdir(tmp_path)) == sorted(OLD) and _visible(tmp_path) == OLD


def test_a_refused_decision_removes_what_was_staged(tmp_path: Path) -> None:
    statefiles.write_files(tmp_path, OLD)
    statejournal.StagedFiles(tmp_path, NEW, 2).prepare().discard()
    assert sorted(os.listdir(tmp_path)) == sorted(OLD)
    assert _visible(tmp_path) == OLD


@pytest.mark.parametrize("committed", [False, True])
def test_the_journal_of_an_older_release_is_still_finished_or_undone(
    tmp_path: Path, committed: bool
) -> None:
    """A crash of an older release between its renames: ``a`` renamed, ``b`` and ``c`` not,
    with its journal, its backups (``c`` had none) and its temporary files."""
    statefiles.write_files(tmp_path, OLD)
    for name in OLD:
        os.link(tmp_path / name, tmp_path / f".numascope-prev-{name}")
    temps = {name: f".{100 + i}" for i, name in enumerate(NEW)}
    for name, tmp in temps.items():
        (tmp_path / tmp).write_text(NEW[name])
    os.replace(tmp_path / temps["a"], tmp_path / "a")
    journal = {"version": 2, "files": temps, "backups": {"a": True, "b": True, "c": False}}
    (tmp_path / statejournal.LEGACY_JOURNAL).write_text(json.dumps(journal))
    done = statejournal.recover(tmp_path, 2 if committed else 1)
    assert done is not None and ("completed" if committed else "undone") in done
    assert _visible(tmp_path) == (NEW if committed else OLD)
    statejournal.clean_temp_files(tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted(NEW if committed else OLD)


def test_what_a_dead_writer_staged_is_not_taken_for_the_next_change(tmp_path: Path) -> None:
    """A writer stages version 2 of every file and dies before its decision; the next writer
    changes only ``a`` as version 2, commits, and dies before renaming: recovery puts its ``a``
    in place and leaves ``b`` as it was."""
    statefiles.write_files(tmp_path, OLD)
    statejournal.StagedFiles(tmp_path, NEW, 2).prepare()
    statejournal.StagedFiles(tmp_path, {"a": "other a"}, 2).prepare()
    statejournal.recover(tmp_path, 2)
    assert _visible(tmp_path) == {"a": "other a", "b": "old b"}

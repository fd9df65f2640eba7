"""The commit journal of several state files (``app.adapters.statejournal``): one ``fsync`` per
new file and one of the directory, and recovery from any set of renames a crash kept (a rename
the file system lost after the database committed is redone from its staged file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.adapters import statefiles, statejournal

OLD = {"a": "old a", "b": "old b"}
NEW = {"a": "new a", "b": "new b", "c": "new c"}  # c is new: it had no previous version


def _visible(d: Path) -> dict[str, str]:
    return {n: (d / n).read_text() for n in sorted(os.listdir(d)) if not n.startswith(".")}


def _staged_after(d: Path, kept_renames: set[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage NEW over OLD as version 2, then stand for a crash after ``apply`` in which the
    file system kept only the renames of ``kept_renames``."""
    statefiles.write_files(d, OLD)
    staged = statejournal.StagedFiles(d, NEW, 2).prepare()
    real = statefiles.replace

    def replace(tmp: Path, target: Path) -> None:
        if target.name in kept_renames or target.name.startswith("."):
            real(tmp, target)

    monkeypatch.setattr(statefiles, "replace", replace)
    staged.apply()
    monkeypatch.undo()


def test_a_change_syncs_each_new_file_and_the_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statefiles.write_files(tmp_path, OLD)
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    staged = statejournal.StagedFiles(tmp_path, NEW, 2).prepare()
    staged.apply()
    staged.finish()
    assert len(synced) == len(NEW) + 1
    assert _visible(tmp_path) == NEW
    assert sorted(os.listdir(tmp_path)) == sorted(NEW)  # no backup, marker or staged file


@pytest.mark.parametrize("kept", [set(), {"a"}, {"a", "c"}, {"a", "b", "c"}])
def test_a_committed_change_is_completed_whatever_renames_were_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: set[str]
) -> None:
    _staged_after(tmp_path, kept, monkeypatch)
    assert statejournal.pending_version(tmp_path) == 2
    done = statejournal.recover(tmp_path, 2)
    assert done is not None and "completed" in done
    assert _visible(tmp_path) == NEW
    assert sorted(os.listdir(tmp_path)) == sorted(NEW)


@pytest.mark.parametrize("kept", [set(), {"b"}, {"b", "c"}, {"a", "b", "c"}])
def test_an_uncommitted_change_is_undone_whatever_renames_were_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: set[str]
) -> None:
    _staged_after(tmp_path, kept, monkeypatch)
    done = statejournal.recover(tmp_path, 1)
    assert done is not None and "undone" in done
    assert _visible(tmp_path) == OLD  # c, which did not exist, is gone again
    assert sorted(os.listdir(tmp_path)) == sorted(OLD)
    assert statejournal.pending_version(tmp_path) is None


def test_a_crash_while_staging_leaves_the_old_files(tmp_path: Path) -> None:
    statefiles.write_files(tmp_path, OLD)
    staged = statejournal.StagedFiles(tmp_path, NEW, 2)
    staged.prepare()  # a crash before apply: nothing renamed
    assert statejournal.recover(tmp_path, 1) is not None
    assert sorted(os.listdir(tmp_path)) == sorted(OLD)
    assert _visible(tmp_path) == OLD

"""Atomic state files: kubelet-style temporary files, modes, fsyncs, failure behaviour, lock."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.adapters import statefiles
from app.adapters.statefiles import StateDirLock, StateFileError


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_creates_directory_and_files_with_kubelet_modes(tmp_path: Path) -> None:
    d = tmp_path / "a" / "b"
    statefiles.write_files(d, {"cpu_manager_state": '{"x":1}', "memory_manager_state": b"\x00\xff"})
    assert mode(d) & 0o777 == 0o755 & ~_umask()
    assert (d / "cpu_manager_state").read_bytes() == b'{"x":1}'
    assert (d / "memory_manager_state").read_bytes() == b"\x00\xff"
    assert mode(d / "cpu_manager_state") == 0o600
    assert sorted(os.listdir(d)) == ["cpu_manager_state", "memory_manager_state"]


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_overwrite_replaces_content_and_mode(tmp_path: Path) -> None:
    target = tmp_path / "cpu_manager_state"
    target.write_text("old")
    target.chmod(0o644)
    inode = target.stat().st_ino
    statefiles.write_file(tmp_path, "cpu_manager_state", "new")
    assert target.read_text() == "new"
    assert mode(target) == 0o600
    assert target.stat().st_ino != inode  # renamed over, not rewritten in place


def test_temporary_names_are_dot_digits_and_everything_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed: list[str] = []
    synced: list[int] = []
    real_replace, real_fsync = os.replace, os.fsync

    def replace(src: Any, dst: Any) -> None:
        renamed.append(Path(src).name)
        assert Path(src).parent == Path(dst).parent == tmp_path
        real_replace(src, dst)

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(statefiles.os, "replace", replace)
    monkeypatch.setattr(statefiles.os, "fsync", fsync)
    statefiles.write_files(tmp_path, {"a": "1", "b": "2"})
    assert len(renamed) == 2 and all(re.fullmatch(r"\.\d+", n) for n in renamed)
    assert len(synced) == 3  # both files, then the directory


def test_failure_while_writing_changes_no_target_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").write_text("old-a")
    (tmp_path / "b").write_text("old-b")
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(statefiles.os, "fsync", fsync)
    with pytest.raises(StateFileError, match="No space left on device") as info:
        statefiles.write_files(tmp_path, {"a": "new-a", "b": "new-b"})
    assert info.value.path.endswith("/b")
    assert (tmp_path / "a").read_text() == "old-a"
    assert (tmp_path / "b").read_text() == "old-b"
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_read_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert statefiles.read_file(tmp_path, "missing") is None
    assert statefiles.read_file(tmp_path / "no-dir", "missing") is None
    (tmp_path / "f").write_bytes(b"abc")
    assert statefiles.read_file(tmp_path, "f") == b"abc"
    monkeypatch.setattr(statefiles, "MAX_STATE_FILE_BYTES", 2)
    with pytest.raises(StateFileError, match="3 bytes; state files above 2 are refused"):
        statefiles.read_file(tmp_path, "f")


@pytest.mark.parametrize(
    ("setup", "call", "text"),
    [
        pytest.param(
            lambda p: (p / "d").mkdir(),
            lambda p: statefiles.read_file(p, "d"),
            "is a directory",
            id="read-directory",
        ),
        pytest.param(
            lambda p: (p / "f").write_text("x"),
            lambda p: statefiles.read_file(p / "f", "x"),
            "is not a directory",
            id="read-under-file",
        ),
        pytest.param(
            lambda p: (p / "f").write_text("x"),
            lambda p: statefiles.write_file(p / "f", "x", "y"),
            "exists and is not a directory",
            id="write-under-file",
        ),
        pytest.param(
            lambda p: None,
            lambda p: statefiles.write_file(p, ".hidden", "y"),
            "plain name",
            id="dot-name",
        ),
        pytest.param(
            lambda p: None,
            lambda p: statefiles.write_file(p, "a/b", "y"),
            "plain name",
            id="slash-name",
        ),
        pytest.param(
            lambda p: (p / "f").write_text("x"),
            lambda p: statefiles.list_files(p / "f"),
            "is not a directory",
            id="list-file",
        ),
    ],
)
def test_errors_name_the_path(tmp_path: Path, setup: Any, call: Any, text: str) -> None:
    setup(tmp_path)
    with pytest.raises(StateFileError, match=text):
        call(tmp_path)


def test_list_files_skips_temporaries(tmp_path: Path) -> None:
    assert statefiles.list_files(tmp_path / "none") == []
    (tmp_path / ".12345").write_text("in flight")
    (tmp_path / "cpu_manager_state").write_text("x")
    (tmp_path / "sub").mkdir()
    assert statefiles.list_files(tmp_path) == ["cpu_manager_state"]


def test_lock_excludes_a_second_holder(tmp_path: Path) -> None:
    with (
        StateDirLock(tmp_path),
        pytest.raises(StateFileError, match="in use by another numascope process"),
        StateDirLock(tmp_path, blocking=False),
    ):
        pass
    with StateDirLock(tmp_path, blocking=False):  # released
        pass


def test_lock_on_a_missing_directory_is_a_no_op(tmp_path: Path) -> None:
    with statefiles.locked(tmp_path / "later"):
        statefiles.write_file(tmp_path / "later", "a", "1")
    assert (tmp_path / "later" / "a").read_text() == "1"


@settings(max_examples=25, deadline=None)
@given(
    st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True), st.binary(), max_size=4)
)
def test_round_trip(tmp_path_factory: pytest.TempPathFactory, files: dict[str, bytes]) -> None:
    d = tmp_path_factory.mktemp("rt")
    statefiles.write_files(d, files)
    assert {n: statefiles.read_file(d, n) for n in files} == files
    assert statefiles.list_files(d) == sorted(files)

"""The kubelet root dir adapter: locating files, capped reads, clear errors, and never writing
(every operation leaves the directory's names, contents, modes and times as they were)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.adapters.kubelet import (
    MAX_FILE_BYTES,
    KubeletDirError,
    KubeletFileMissingError,
    KubeletFileTooLargeError,
    KubeletPermissionError,
    KubeletRootDir,
    manager_for_name,
    read_capped,
)
from app.services import checkpoints as service

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A kubelet root dir: both state files, a moved-aside copy, config.yaml, a temporary
    file of the kubelet's store, and unrelated kubelet content."""
    d = tmp_path / "kubelet"
    shutil.copytree(FIXTURES / "kubelet-1.36-gate-on", d)
    shutil.copy(FIXTURES / "kubelet-1.35" / "config.yaml", d / "config.yaml")
    shutil.copy(FIXTURES / "kubelet-1.35" / "cpu_manager_state", d / "cpu_manager_state.bak")
    (d / ".8437261").write_text("in-flight temporary file")
    (d / "pods").mkdir()
    (d / "kubeadm-flags.env").write_text("KUBELET_KUBEADM_ARGS=")
    return d


def snapshot(d: Path) -> dict[str, Any]:
    """Everything a write would change: names, types, modes, sizes, contents, mtimes and
    ctimes of the directory and of everything in it."""
    out: dict[str, Any] = {}
    for path in [d, *sorted(d.rglob("*"))]:
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        out[str(path.relative_to(d))] = (
            st.st_mode,
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            digest,
        )
    return out


# -- locating files ----------------------------------------------------------------------------------


def test_files_lists_state_files_copies_and_config(root: Path) -> None:
    files = KubeletRootDir(root).files()
    assert [(f.name, f.kind, f.manager) for f in files] == [
        ("cpu_manager_state", "state", "cpu"),
        ("memory_manager_state", "state", "memory"),
        ("cpu_manager_state.bak", "copy", "cpu"),
        ("config.yaml", "config", None),
    ]
    cpu = files[0]
    assert cpu.readable and cpu.size == (root / "cpu_manager_state").stat().st_size
    assert cpu.to_dict()["path"] == str(root / "cpu_manager_state")


def test_read_state_and_missing_files(root: Path) -> None:
    d = KubeletRootDir(root)
    assert d.read_state("cpu") == (root / "cpu_manager_state").read_bytes()
    (root / "memory_manager_state").unlink()
    assert d.read_state("memory") is None
    with pytest.raises(KubeletDirError, match="unknown manager"):
        d.state_path("gpu")


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("../etc/passwd", "plain file name"),
        ("/etc/passwd", "plain file name"),
        (".8437261", "plain file name"),
        ("..", "plain file name"),
        ("config.yaml", "is not a state file"),
        ("kubeadm-flags.env", "is not a state file"),
        ("cpu_manager_statement", "is not a state file"),
    ],
    ids=["parent", "absolute", "temp", "dotdot", "config", "other", "prefix-only"],
)
def test_read_refuses_what_is_not_a_state_file(root: Path, name: str, match: str) -> None:
    with pytest.raises(KubeletDirError, match=match):
        KubeletRootDir(root).read(name)


def test_read_a_copy(root: Path) -> None:
    data = KubeletRootDir(root).read("cpu_manager_state.bak")
    assert data == (FIXTURES / "kubelet-1.35" / "cpu_manager_state").read_bytes()


@pytest.mark.parametrize(
    ("name", "manager"),
    [
        ("cpu_manager_state", "cpu"),
        ("memory_manager_state", "memory"),
        ("cpu_manager_state.bak", "cpu"),
        ("memory_manager_state-2024-05-01", "memory"),
        ("cpu_manager_state_old", "cpu"),
        ("/var/lib/kubelet/cpu_manager_state.20250102T030405Z.bak", "cpu"),
        ("cpu_manager_statement", None),
        ("state", None),
        ("", None),
    ],
    ids=["cpu", "memory", "bak", "dated", "underscore", "path", "longer-word", "other", "empty"],
)
def test_manager_for_name(name: str, manager: str | None) -> None:
    assert manager_for_name(name) == manager


def test_config_path_explicit_auto_and_none(root: Path, tmp_path: Path) -> None:
    assert KubeletRootDir(root).config_path() == root / "config.yaml"
    text = KubeletRootDir(root).read_config_text()
    assert text is not None and "cpuManagerPolicy: static" in text
    explicit = tmp_path / "k.yaml"
    explicit.write_text("kind: KubeletConfiguration\n")
    assert KubeletRootDir(root, config_file=explicit).read_config_text() == (
        "kind: KubeletConfiguration\n"
    )
    (root / "config.yaml").unlink()
    assert KubeletRootDir(root).config_path() is None
    assert KubeletRootDir(root).read_config_text() is None
    with pytest.raises(KubeletFileMissingError):
        KubeletRootDir(root, config_file=tmp_path / "missing.yaml").read_config_text()


def test_config_that_is_not_utf8(root: Path) -> None:
    (root / "config.yaml").write_bytes(b"\xff\xfe kind")
    with pytest.raises(KubeletDirError, match="not UTF-8"):
        KubeletRootDir(root).read_config_text()


# -- errors ------------------------------------------------------------------------------------------


def test_check_missing_and_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(KubeletFileMissingError, match="does not exist"):
        KubeletRootDir(tmp_path / "none").check()
    (tmp_path / "f").write_text("")
    with pytest.raises(KubeletDirError, match="is not a directory"):
        KubeletRootDir(tmp_path / "f").check()


def test_read_capped_refuses_big_files_without_reading_them(tmp_path: Path) -> None:
    big = tmp_path / "cpu_manager_state"
    with open(big, "wb") as fh:  # sparse: nothing is really written
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(KubeletFileTooLargeError) as err:
        read_capped(big)
    assert err.value.size == MAX_FILE_BYTES + 1
    assert "16 MiB" in err.value.message and str(big) in err.value.message
    exact = tmp_path / "exact"
    with open(exact, "wb") as fh:
        fh.truncate(MAX_FILE_BYTES)
    assert len(read_capped(exact)) == MAX_FILE_BYTES
    with pytest.raises(KubeletFileTooLargeError, match="1 KiB"):
        read_capped(exact, limit=1024)


def test_read_capped_refuses_fifos_and_directories_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "cpu_manager_state"
    os.mkfifo(fifo)
    with pytest.raises(KubeletDirError, match="not a regular file"):
        read_capped(fifo)
    with pytest.raises(KubeletDirError, match="is a directory"):
        read_capped(tmp_path)
    with pytest.raises(KubeletFileMissingError, match="does not exist"):
        read_capped(tmp_path / "none")
    with pytest.raises(KubeletDirError, match="not a directory"):
        read_capped(tmp_path / "cpu_manager_state" / "x")


def test_files_marks_unusable_entries(root: Path) -> None:
    (root / "memory_manager_state").unlink()
    os.mkfifo(root / "memory_manager_state")
    with open(root / "cpu_manager_state.huge", "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    files = {f.name: f for f in KubeletRootDir(root).files()}
    assert files["memory_manager_state"].problem == "is not a regular file"
    assert "above the limit" in (files["cpu_manager_state.huge"].problem or "")
    assert files["cpu_manager_state"].readable


@pytest.mark.skipif(IS_ROOT, reason="root reads mode-0000 files anyway")
def test_permission_errors_say_what_to_do(root: Path) -> None:
    path = root / "cpu_manager_state"
    path.chmod(0)
    try:
        with pytest.raises(KubeletPermissionError, match=r"permission denied.*0600"):
            read_capped(path)
        files = {f.name: f for f in KubeletRootDir(root).files()}
        assert "permission denied" in (files["cpu_manager_state"].problem or "")
        with pytest.raises(service.CheckpointFileError, match="permission denied"):
            service.check_root_dir(root, "1.37")
    finally:
        path.chmod(0o600)
    root.chmod(0o300)
    try:
        with pytest.raises(KubeletPermissionError, match="list"):
            KubeletRootDir(root).check()
    finally:
        root.chmod(0o755)


@pytest.mark.skipif(not IS_ROOT, reason="needs root to drop to an unprivileged user")
def test_an_unprivileged_reader_of_root_owned_0600_files(tmp_path: Path) -> None:
    """The realistic case: the kubelet's files are root's, mode 0600; a non-root agent reads.
    A forked child drops to nobody (65534) and reports what it got through a pipe."""
    d = Path(tempfile.mkdtemp(prefix="numascope-kubelet-", dir="/tmp"))
    try:
        d.chmod(0o755)
        for name in ("cpu_manager_state", "memory_manager_state"):
            shutil.copy(FIXTURES / "kubelet-1.37" / name, d / name)
            (d / name).chmod(0o600)
        before = snapshot(d)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            code = 1
            try:
                os.close(r)
                os.setgid(65534)
                os.setuid(65534)
                found: list[str] = []
                try:
                    read_capped(d / "cpu_manager_state")
                except KubeletPermissionError as exc:
                    found.append(exc.message)
                files = KubeletRootDir(d).files()
                found.append(str(files[0].problem))
                try:
                    service.check_root_dir(d, "1.37")
                except service.CheckpointFileError as exc:
                    found.append(exc.message)
                os.write(w, json.dumps(found).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        with os.fdopen(r, "rb") as fh:
            data = fh.read()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        messages = json.loads(data)
        assert len(messages) == 3
        assert "permission denied" in messages[0] and "0600" in messages[0]
        assert messages[1].startswith("permission denied")
        assert "permission denied" in messages[2]
        assert snapshot(d) == before
    finally:
        shutil.rmtree(d)


# -- never writes ------------------------------------------------------------------------------------

OPERATIONS: dict[str, Callable[[Path], object]] = {
    "check": lambda d: KubeletRootDir(d).check(),
    "files": lambda d: KubeletRootDir(d).files(),
    "read_state": lambda d: KubeletRootDir(d).read_state("cpu"),
    "read_copy": lambda d: KubeletRootDir(d).read("cpu_manager_state.bak"),
    "read_config": lambda d: KubeletRootDir(d).read_config_text(),
    "service_kubelet_files": lambda d: service.kubelet_files(d),
    "service_inspect_file": lambda d: service.inspect_kubelet_file(d, "memory_manager_state"),
    "service_inspect_path": lambda d: service.inspect_path(d / "cpu_manager_state"),
    "service_check_1.35": lambda d: service.check_root_dir(d, "1.35"),
    "service_check_1.37_on": lambda d: service.check_root_dir(d, "1.37", gate=True),
}


@pytest.mark.parametrize("operation", list(OPERATIONS), ids=list(OPERATIONS))
def test_operations_leave_the_directory_untouched(root: Path, operation: str) -> None:
    before = snapshot(root)
    OPERATIONS[operation](root)
    assert snapshot(root) == before


def test_reading_keeps_the_access_time(root: Path) -> None:
    """O_NOATIME: even relatime would bump a fresh file's atime on the first read."""
    path = root / "cpu_manager_state"
    os.utime(path, ns=(1_000_000_000, 2_000_000_000))  # atime < mtime: relatime would update
    read_capped(path)
    assert path.stat().st_atime_ns == 1_000_000_000


def test_pod_uids_of_the_pods_dir(root: Path) -> None:
    d = KubeletRootDir(root)
    assert d.pod_uids() == []
    (root / "pods" / "uid-b").mkdir()
    (root / "pods" / "uid-a").mkdir()
    (root / "pods" / ".tmp").mkdir()
    (root / "pods" / "stray-file").write_text("")
    assert d.pod_uids() == ["uid-a", "uid-b"]
    shutil.rmtree(root / "pods")
    assert d.pod_uids() is None

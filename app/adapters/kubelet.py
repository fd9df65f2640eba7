"""Read-only access to a real kubelet root directory (``--root-dir``, default
``/var/lib/kubelet``): its ``cpu_manager_state`` and ``memory_manager_state``, moved-aside
copies of them (``cpu_manager_state.bak`` and the like, spec ``users.md`` §4), and the kubelet
configuration file when there is one (kubeadm keeps it at ``<root>/config.yaml``) or when one
is named explicitly.

Nothing here writes, creates, renames or deletes anything. Reads open files ``O_RDONLY``
(with ``O_NOATIME`` where the kernel allows it, so even the access time stays put), refuse
anything that is not a regular file (a FIFO would block, a device could be endless), and stop
at 16 MiB (the checkpoint package's limit): a bigger file raises ``KubeletFileTooLargeError``
after reading at most one byte more than the limit.

Errors are ``KubeletDirError`` subclasses naming the path and what was wrong (missing,
permission denied, not a directory, too large); nothing raises a bare ``OSError``.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from app.domain.checkpoint import CPU_FILE_NAME, MAX_CHECKPOINT_BYTES, MEMORY_FILE_NAME
from app.domain.units import format_bytes

#: The file names of the two state files, by manager.
STATE_FILES: dict[str, str] = {"cpu": CPU_FILE_NAME, "memory": MEMORY_FILE_NAME}
#: One directory per pod, named by its UID.
PODS_DIR_NAME = "pods"
#: Where kubeadm puts the KubeletConfiguration (read only when present).
CONFIG_FILE_NAME = "config.yaml"
#: Largest kubelet configuration read (the same limit as ``kubelet_files``).
MAX_CONFIG_BYTES = 1024 * 1024
MAX_FILE_BYTES = MAX_CHECKPOINT_BYTES


class KubeletDirError(Exception):
    """A kubelet root directory or one of its files cannot be read."""

    def __init__(self, path: str | Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)
        self.message = f"{path}: {message}"
        self.reason = message


class KubeletFileMissingError(KubeletDirError):
    """The file or directory does not exist."""


class KubeletPermissionError(KubeletDirError):
    """The process may not read the file or list the directory."""


class KubeletFileTooLargeError(KubeletDirError):
    """The file is larger than the limit (16 MiB for state files)."""

    def __init__(self, path: str | Path, size: int, limit: int) -> None:
        super().__init__(
            path,
            f"is {size} bytes; files larger than {limit} bytes ({format_bytes(limit)}) are refused",
        )
        self.size = size
        self.limit = limit


def _os_error(path: str | Path, err: OSError, what: str) -> KubeletDirError:
    if err.errno == errno.ENOENT:
        return KubeletFileMissingError(path, "does not exist")
    if err.errno in (errno.EACCES, errno.EPERM):
        return KubeletPermissionError(
            path,
            f"permission denied ({what}); the kubelet keeps its files mode 0600, so reading them "
            "needs root or a copy made readable by an administrator",
        )
    if err.errno == errno.ENOTDIR:
        return KubeletDirError(path, "a parent of this path is not a directory")
    if err.errno == errno.ELOOP:
        return KubeletDirError(path, "too many levels of symbolic links")
    return KubeletDirError(path, f"cannot be read ({what}): {err.strerror or err}")


def _open_readonly(path: Path) -> int:
    """``open(O_RDONLY)``; ``O_NOATIME`` when permitted (owner or CAP_FOWNER), else without.
    ``O_NONBLOCK`` so a FIFO planted under a state file name cannot hang the open."""
    base = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, base | noatime)
        except PermissionError:
            pass  # EPERM: not the owner; retry without O_NOATIME (EACCES is re-raised below)
    return os.open(path, base)


def read_capped(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises ``KubeletFileMissingError``, ``KubeletPermissionError``,
    ``KubeletFileTooLargeError`` or ``KubeletDirError`` (not a regular file, I/O error)."""
    p = Path(path)
    try:
        fd = _open_readonly(p)
    except IsADirectoryError:
        raise KubeletDirError(p, "is a directory, expected a file") from None
    except OSError as err:
        raise _os_error(p, err, "open") from None
    try:
        try:
            st = os.fstat(fd)
        except OSError as err:
            raise _os_error(p, err, "stat") from None
        if stat.S_ISDIR(st.st_mode):
            raise KubeletDirError(p, "is a directory, expected a file")
        if not stat.S_ISREG(st.st_mode):
            raise KubeletDirError(p, "is not a regular file")
        if st.st_size > limit:
            raise KubeletFileTooLargeError(p, st.st_size, limit)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as err:
                raise _os_error(p, err, "read") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # the file grew while being read
            raise KubeletFileTooLargeError(p, total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def manager_for_name(name: str) -> str | None:
    """``cpu`` / ``memory`` for a state file name or a moved-aside copy of one
    (``cpu_manager_state.bak``, ``memory_manager_state-2024-05-01``), else ``None``."""
    base = Path(name).name
    for manager, file_name in STATE_FILES.items():
        if base == file_name or (base.startswith(file_name) and base[len(file_name)] in ".-_~"):
            return manager
    return None


@dataclass(frozen=True, slots=True)
class KubeletFile:
    """A file of interest in the root dir: ``kind`` is ``state`` (the kubelet's own file),
    ``copy`` (a moved-aside copy) or ``config``. ``problem`` says why it cannot be read."""

    name: str
    path: Path
    kind: str
    manager: str | None
    size: int | None
    mtime: float | None
    problem: str | None = None

    @property
    def readable(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": str(self.path),
            "kind": self.kind,
            "manager": self.manager,
            "size": self.size,
            "mtime": self.mtime,
            "readable": self.readable,
            "problem": self.problem,
        }


class KubeletRootDir:
    """A kubelet root directory, read-only.

    ``config_file`` names a KubeletConfiguration explicitly; otherwise ``<root>/config.yaml``
    is used when it exists.
    """

    def __init__(self, path: str | Path, *, config_file: str | Path | None = None) -> None:
        self.path = Path(path)
        self.config_file = Path(config_file) if config_file is not None else None

    def __repr__(self) -> str:
        return f"KubeletRootDir({str(self.path)!r})"

    def check(self) -> None:
        """Raise unless the root dir exists, is a directory and can be listed."""
        try:
            st = os.stat(self.path)
        except OSError as err:
            raise _os_error(self.path, err, "stat") from None
        if not stat.S_ISDIR(st.st_mode):
            raise KubeletDirError(self.path, "is not a directory (expected the kubelet root dir)")
        self._names()

    def _names(self) -> list[str]:
        try:
            return sorted(os.listdir(self.path))
        except OSError as err:
            raise _os_error(self.path, err, "list") from None

    def state_path(self, manager: str) -> Path:
        try:
            return self.path / STATE_FILES[manager]
        except KeyError:
            raise KubeletDirError(
                self.path, f"unknown manager {manager!r}; expected cpu or memory"
            ) from None

    def _describe(self, name: str, kind: str) -> KubeletFile:
        p = self.path / name
        manager = manager_for_name(name) if kind != "config" else None
        try:
            st = os.stat(p)
        except OSError as err:
            return KubeletFile(name, p, kind, manager, None, None, _os_error(p, err, "stat").reason)
        problem = None
        if not stat.S_ISREG(st.st_mode):
            problem = "is not a regular file"
        elif not os.access(p, os.R_OK):
            problem = "permission denied (the kubelet keeps its files mode 0600)"
        elif st.st_size > (MAX_CONFIG_BYTES if kind == "config" else MAX_FILE_BYTES):
            problem = f"is {st.st_size} bytes, above the limit"
        return KubeletFile(name, p, kind, manager, st.st_size, st.st_mtime, problem)

    def files(self) -> list[KubeletFile]:
        """The state files, their moved-aside copies and ``config.yaml``, present ones only:
        state files first (CPU, memory), then copies by name, then the configuration."""
        names = self._names()
        out: list[KubeletFile] = []
        for file_name in STATE_FILES.values():
            if file_name in names:
                out.append(self._describe(file_name, "state"))
        for name in names:
            if name.startswith("."):  # in-flight temporary files of the kubelet's store
                continue
            if name not in STATE_FILES.values() and manager_for_name(name) is not None:
                out.append(self._describe(name, "copy"))
        if CONFIG_FILE_NAME in names:
            out.append(self._describe(CONFIG_FILE_NAME, "config"))
        return out

    def read(self, name: str) -> bytes:
        """A state file or a copy of one, by plain name (no paths: ``..`` and ``/`` are
        refused, so only files of this directory can be read). A refused name is named as
        given, without the directory: an answer to a probing request never shows where the
        kubelet root is."""
        given = repr(name[:100])
        if not name or "/" in name or name in (".", "..") or name.startswith("."):
            raise KubeletDirError(given, "is not a plain file name of the kubelet root dir")
        if manager_for_name(name) is None:
            raise KubeletDirError(
                given,
                "is not a state file (cpu_manager_state, memory_manager_state or a copy of one)",
            )
        return read_capped(self.path / name)

    def read_state(self, manager: str) -> bytes | None:
        """The content of ``cpu_manager_state`` / ``memory_manager_state``; ``None`` when the
        file does not exist (the kubelet then writes a fresh one)."""
        try:
            return read_capped(self.state_path(manager))
        except KubeletFileMissingError:
            return None

    def pod_uids(self) -> list[str] | None:
        """The pod UIDs of ``<root>/pods/`` (one directory per pod the kubelet knows), sorted;
        ``None`` when there is no pods dir or it cannot be listed."""
        pods = self.path / PODS_DIR_NAME
        try:
            entries = list(os.scandir(pods))
        except OSError:
            return None
        return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())

    def config_path(self) -> Path | None:
        """The explicit configuration file, else ``<root>/config.yaml`` if present."""
        if self.config_file is not None:
            return self.config_file
        candidate = self.path / CONFIG_FILE_NAME
        return candidate if candidate.is_file() else None

    def read_config_text(self) -> str | None:
        """The KubeletConfiguration text, or ``None`` when there is none; an explicit file
        that is missing or unreadable raises."""
        p = self.config_path()
        if p is None:
            return None
        data = read_capped(p, MAX_CONFIG_BYTES)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise KubeletDirError(p, "is not UTF-8 text") from None


__all__ = [
    "CONFIG_FILE_NAME",
    "MAX_FILE_BYTES",
    "PODS_DIR_NAME",
    "STATE_FILES",
    "KubeletDirError",
    "KubeletFile",
    "KubeletFileMissingError",
    "KubeletFileTooLargeError",
    "KubeletPermissionError",
    "KubeletRootDir",
    "manager_for_name",
    "read_capped",
]

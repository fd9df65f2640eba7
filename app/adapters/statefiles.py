"""Atomic state files in a directory: what a simulated node keeps between runs.

Writes follow the kubelet's file store (pkg/kubelet/util/store/filestore.go and
pkg/kubelet/checkpointmanager, spec ``checkpoints.md`` §2):

1. the directory is created with mode 0755 when missing;
2. each file is written to a temporary file *in the same directory* whose name is ``.``
   followed by random digits (Go's ``os.CreateTemp(dir, ".")``), mode 0600;
3. the bytes are written, flushed and ``fsync``-ed, the file closed;
4. the temporary file is renamed over the target (the target keeps mode 0600);
5. the directory is ``fsync``-ed so the rename itself is durable.

``write_files`` writes several files as one step: every temporary file is complete and
synced before the first rename, so a failure while writing leaves every target untouched
(temporary files are removed); only a crash between the renames can mix old and new files.

Readers skip names starting with ``.`` (in-flight temporary files), like the kubelet's
listing. ``StateDirLock`` serialises two Numascope processes working on the same directory
(an advisory ``flock`` on the directory itself, so nothing extra appears in it).

Errors are ``StateFileError`` naming the path and what failed; nothing here raises a bare
``OSError``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

#: Files larger than this are refused before reading (the checkpoint package's limit).
MAX_STATE_FILE_BYTES = 16 * 1024 * 1024

FILE_MODE = 0o600
DIR_MODE = 0o755


class StateFileError(Exception):
    """A state file or directory could not be read or written."""

    def __init__(self, path: str | Path, message: str, errno: int | None = None) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)
        self.message = message
        #: The ``errno`` of the failing call (``ENOSPC``, ``EROFS``…), when there was one.
        self.errno = errno


def _describe(err: OSError) -> str:
    return err.strerror or str(err)


def check_name(name: str) -> None:
    if not name or name.startswith(".") or "/" in name or name in ("..",):
        raise StateFileError(name, "a state file name must be a plain name not starting with '.'")


def read_file(directory: str | Path, name: str) -> bytes | None:
    """The content of ``directory/name``, or ``None`` when there is no such file."""
    check_name(name)
    path = Path(directory) / name
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise StateFileError(path, "is a directory, expected a file")
        if size > MAX_STATE_FILE_BYTES:
            raise StateFileError(
                path, f"is {size} bytes; state files above {MAX_STATE_FILE_BYTES} are refused"
            )
        with open(path, "rb") as fh:
            return fh.read(MAX_STATE_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise StateFileError(directory, "is not a directory") from None
    except OSError as err:
        raise StateFileError(path, f"cannot be read: {_describe(err)}", err.errno) from None


def list_files(directory: str | Path) -> list[str]:
    """Names of the regular files in ``directory`` (temporary ``.``-files skipped), sorted;
    an empty list when the directory does not exist."""
    d = Path(directory)
    try:
        entries = list(os.scandir(d))
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise StateFileError(d, "is not a directory") from None
    except OSError as err:
        raise StateFileError(d, f"cannot be listed: {_describe(err)}", err.errno) from None
    return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_file())


def _ensure_dir(d: Path) -> None:
    try:
        d.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except FileExistsError:
        raise StateFileError(d, "exists and is not a directory") from None
    except OSError as err:
        raise StateFileError(d, f"cannot be created: {_describe(err)}", err.errno) from None
    if not d.is_dir():
        raise StateFileError(d, "exists and is not a directory")


def _create_temp(d: Path) -> tuple[int, Path]:
    """``os.CreateTemp(dir, ".")``: a new file named ``.`` + random digits, mode 0600."""
    for _ in range(10000):
        path = d / f".{secrets.randbelow(10**10)}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileExistsError:
            continue
        return fd, path
    raise StateFileError(d, "cannot create a temporary file: too many name collisions")


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as err:  # some file systems refuse fsync on directories
        if err.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def stage_file(d: Path, name: str, content: bytes | str) -> Path:
    """A complete, synced temporary file in ``d`` holding ``content`` (to be renamed over
    ``d/name``); nothing is left behind when it fails."""
    try:
        fd, tmp = _create_temp(d)
    except OSError as err:
        raise StateFileError(
            d, f"cannot create a temporary file: {_describe(err)}", err.errno
        ) from None
    _write_synced(fd, tmp, d / name, content)
    return tmp


def write_synced(path: Path, target: Path, content: bytes | str) -> None:
    """``path`` created (or emptied) with mode 0600, holding ``content`` and synced; removed
    when that fails, with an error naming ``target`` (the file ``path`` is to become). Not
    atomic: for a name nothing reads until a later decision says so."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    except OSError as err:
        raise StateFileError(target, f"cannot be written: {_describe(err)}", err.errno) from None
    _write_synced(fd, path, target, content)


def _write_synced(fd: int, path: Path, target: Path, content: bytes | str) -> None:
    """Write ``content`` to the open ``fd`` (of ``path``), sync and close it; on failure
    remove ``path`` and name ``target`` in the error."""
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as err:
        with contextlib.suppress(OSError):
            path.unlink()
        raise StateFileError(target, f"cannot be written: {_describe(err)}", err.errno) from None


def sync_dir(d: Path) -> None:
    """``fsync`` the directory so that renames and removals in it are durable."""
    try:
        _fsync_dir(d)
    except OSError as err:
        raise StateFileError(d, f"cannot be synced: {_describe(err)}", err.errno) from None


def replace(tmp: Path, target: Path) -> None:
    try:
        os.replace(tmp, target)
    except OSError as err:
        raise StateFileError(target, f"cannot be replaced: {_describe(err)}", err.errno) from None


def ensure_dir(directory: str | Path) -> Path:
    d = Path(directory)
    _ensure_dir(d)
    return d


def write_files(directory: str | Path, files: Mapping[str, bytes | str]) -> None:
    """Atomically replace ``directory/<name>`` by each given content (``str`` is UTF-8)."""
    d = Path(directory)
    for name in files:
        check_name(name)
    _ensure_dir(d)
    staged: list[tuple[Path, Path]] = []
    try:
        for name, content in files.items():
            staged.append((stage_file(d, name, content), d / name))
        for tmp, target in staged:
            replace(tmp, target)
        staged = []
        sync_dir(d)
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_file(directory: str | Path, name: str, content: bytes | str) -> None:
    """Atomically replace one file."""
    write_files(directory, {name: content})


class StateDirLock:
    """An exclusive advisory lock on a state directory (``flock`` on the directory).

    A directory that does not exist yet is not locked (there is nothing to protect); the
    lock is taken when it exists on entry.
    """

    def __init__(self, directory: str | Path, *, blocking: bool = True) -> None:
        self.directory = Path(directory)
        self.blocking = blocking
        self._fd: int | None = None

    def __enter__(self) -> StateDirLock:
        try:
            fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return self
        except NotADirectoryError:
            raise StateFileError(self.directory, "is not a directory") from None
        except OSError as err:
            raise StateFileError(
                self.directory, f"cannot be opened: {_describe(err)}", err.errno
            ) from None
        flags = fcntl.LOCK_EX | (0 if self.blocking else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            os.close(fd)
            raise StateFileError(self.directory, "is in use by another numascope process") from None
        except OSError as err:
            os.close(fd)
            raise StateFileError(
                self.directory, f"cannot be locked: {_describe(err)}", err.errno
            ) from None
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def locked(directory: str | Path) -> Iterator[None]:
    """``with locked(dir): ...`` — shorthand for ``StateDirLock``."""
    with StateDirLock(directory):
        yield

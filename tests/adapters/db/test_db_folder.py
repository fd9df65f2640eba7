"""A SQLite database in a folder the process cannot write (a container's data volume owned by
another user) is refused at start-up with a message naming the folder and the UID — not
SQLite's "unable to open database file" at the first write. ``numascope serve`` prints it and
exits 1 (scripts/image-smoke.sh checks that in the image).

Root may write anywhere, so under root the check runs in a forked child that has become
``nobody`` (no exec: the interpreter may lie in a directory only root can read)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.adapters.db.engine import DatabaseConfigError, make_engine

NOBODY = 65534


def refusal(url: str) -> str:
    try:
        make_engine(url).dispose()
    except DatabaseConfigError as err:
        return str(err)
    return "no error"


def as_another_user(check: Callable[[], str]) -> tuple[str, int]:
    """``check()`` run by a user that owns none of the test's files; its text and UID."""
    if os.geteuid() != 0:
        return check(), os.getuid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, run, report, leave without cleanup handlers
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            text = check()
        except BaseException as err:
            text = f"raised {err!r}"
        os.write(write, text.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    return text, NOBODY


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder everyone may enter but only its owner (this process's user) may write."""
    path = Path(tempfile.mkdtemp(prefix="dbfolder-", dir="/tmp"))
    path.chmod(0o755)
    if os.geteuid() != 0:
        path.chmod(0o555)
    try:
        yield path
    finally:
        path.chmod(0o755)
        shutil.rmtree(path, ignore_errors=True)


def test_a_folder_the_user_cannot_write_is_named_with_the_uid(base: Path) -> None:
    text, uid = as_another_user(lambda: refusal(f"sqlite:///{base}/numascope.db"))
    assert text.startswith(f"the database folder {base} is not writable by UID {uid} "), text
    assert "NUMASCOPE_DATABASE_URL" in text


def test_a_folder_that_cannot_be_created(base: Path) -> None:
    text, uid = as_another_user(lambda: refusal(f"sqlite:///{base}/data/nodes/numascope.db"))
    assert text.startswith(
        f"the database folder {base}/data/nodes cannot be created (Permission denied) by UID {uid}"
    ), text


def test_a_writable_folder_is_created_and_used(tmp_path: Path) -> None:
    assert refusal(f"sqlite:///{tmp_path}/new/dir/numascope.db") == "no error"
    assert (tmp_path / "new" / "dir").is_dir()

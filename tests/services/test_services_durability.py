"""Durable or nothing: a change the state files or the database cannot record leaves nothing
behind (engine, log, files), answers 507/503 naming the cause, and makes /readyz unready.

Fault injection uses real file systems: a full tmpfs mounted over the state directory and a
read-only bind mount of it (root ignores file modes, so ``chmod`` would prove nothing); the
failing database is a commit the database refuses. Interrupted writes are left exactly as a
crash leaves them (the journal, some renames done) and recovered by a new service.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event
from sqlalchemy.exc import OperationalError

from app.adapters import statejournal
from app.adapters.db import node_repo
from app.domain.checkpoint import CPU_FILE_NAME, MEMORY_FILE_NAME
from app.domain.node.state_files import PODS_FILE_NAME
from app.services import simulation
from app.services.demo import bubble_pod, classic_pod
from app.services.nodes.errors import NodeUnavailableError, StorageFullError
from app.services.nodes.service import NodeService
from app.services.nodes.store import RenderCache, pods_json
from app.web.app import create_app
from tests.helpers import POD_SCOPE, SMALL, make_settings

YAML = {"Content-Type": "application/yaml"}


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def _can_mount(tmp_path: Path) -> bool:
    probe = tmp_path / "mount-probe"
    probe.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe))
    except (subprocess.CalledProcessError, FileNotFoundError):
        return False
    _umount(probe)
    return True


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[list[Path]]:
    if os.geteuid() != 0 or not _can_mount(tmp_path):
        pytest.skip("needs root and mount(8) for real fault injection")
    mounted: list[Path] = []
    yield mounted
    for path in reversed(mounted):
        _umount(path)


def _state(service: NodeService, name: str) -> object:
    snap = service.reads.snapshot(name)
    return (
        str(snap.default_cpuset),
        [(p.uid, p.pod_cpuset, [(c.name, str(c.cpuset)) for c in p.containers]) for p in snap.pods],
        snap.memory,
    )


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _admissions(service: NodeService, name: str) -> list[tuple[str, str]]:
    return [(e.action, e.name) for e in service.reads.admissions(name, limit=1000)]


def test_pods_json_from_cached_fragments_equals_the_simulator_bytes(service: NodeService) -> None:
    service.create("small", SMALL, POD_SCOPE)
    live = service.registry.nodes["small"]
    assert (
        pods_json(live.node, RenderCache()) == simulation.state_files_of(live.node)[PODS_FILE_NAME]
    )
    steps = [
        lambda: service.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",))),
        lambda: service.admit("small", classic_pod("solo", "batch", "2", "2Gi")),
        lambda: service.admit("small", classic_pod("three", "batch", "1", "1Gi")),
        lambda: service.remove_pod("small", "prod", "db"),
        lambda: service.admit("small", classic_pod("two", "batch", "1", "1Gi")),
    ]
    for step in steps:
        step()
        on_disk = (service.registry.node_dir("small") / PODS_FILE_NAME).read_text()  # type: ignore[operator]
        assert on_disk == simulation.state_files_of(live.node)[PODS_FILE_NAME]
    assert set(live.rendered.fragments) == set(live.node.pods)


def _fill(directory: Path) -> None:
    """Write until the file system is full."""
    with open(directory / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


def test_a_full_disk_gives_507_and_keeps_nothing(
    tmp_path: Path, mounts: list[Path], engine: Engine
) -> None:
    state_dir = tmp_path / "full"
    state_dir.mkdir()
    _mount("-t", "tmpfs", "-o", "size=256k", "tmpfs", str(state_dir))
    mounts.append(state_dir)
    app = create_app(make_settings(tmp_path, state_dir=state_dir))
    client = TestClient(app)
    service: NodeService = app.state.nodes
    service.create("small", SMALL, POD_SCOPE)
    assert (
        client.post(
            "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("a", "x", "1", "1Gi")
        ).status_code
        == 201
    )
    before = (_state(service, "small"), _files(state_dir / "small"), _admissions(service, "small"))
    assert client.get("/readyz").status_code == 200

    _fill(state_dir)
    for i in range(3):
        r = client.post(
            "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod(f"b{i}", "x", "1", "1Gi")
        )
        assert r.status_code == 507, r.text
        error = r.json()["error"]
        assert error["reason"] == "InsufficientStorage"
        assert "the disk is full" in error["message"] and "No space left" in error["message"]
    r = client.delete("/api/v1/nodes/small/pods/x/a")
    assert r.status_code == 507
    after = (_state(service, "small"), _files(state_dir / "small"), _admissions(service, "small"))
    assert after == before  # no phantom pod, no log row, files untouched, no temp file left
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["checks"]["durability"] == "failed"
    assert "No space left" in ready.json()["error"]["message"]

    # After a restart the acknowledged pod is there and nothing else.
    again = NodeService(app.state.engine, state_dir=state_dir)
    again.start()
    assert _state(again, "small") == before[0]
    assert again.reads.summary("small").load_error is None

    (state_dir / "filler").unlink()
    assert client.get("/readyz").status_code == 200
    r = client.post(
        "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("c", "x", "1", "1Gi")
    )
    assert r.status_code == 201


def test_a_read_only_state_dir_gives_503_and_keeps_nothing(
    tmp_path: Path, mounts: list[Path]
) -> None:
    app = create_app(make_settings(tmp_path))
    client = TestClient(app)
    service: NodeService = app.state.nodes
    service.create("small", SMALL, POD_SCOPE)
    client.post("/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("a", "x", "1", "1Gi"))
    node_dir = tmp_path / "nodes" / "small"
    before = (_state(service, "small"), _files(node_dir), _admissions(service, "small"))
    _mount("--bind", str(node_dir), str(node_dir))
    mounts.append(node_dir)
    _mount("-o", "remount,ro,bind", str(node_dir))

    r = client.post(
        "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("b", "x", "2", "1Gi")
    )
    assert r.status_code == 503, r.text
    assert r.json()["error"]["reason"] == "ServiceUnavailable"
    assert "Read-only file system" in r.json()["error"]["message"]
    assert client.delete("/api/v1/nodes/small/pods/x/a").status_code == 503
    assert (_state(service, "small"), _files(node_dir), _admissions(service, "small")) == before
    ready = client.get("/readyz")
    assert ready.status_code == 503 and "Read-only" in ready.json()["error"]["message"]

    _umount(node_dir)
    mounts.remove(node_dir)
    assert client.get("/readyz").status_code == 200
    assert (
        client.post(
            "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("b", "x", "2", "1Gi")
        ).status_code
        == 201
    )


def test_a_failing_database_gives_503_and_keeps_nothing(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path))
    client = TestClient(app)
    service: NodeService = app.state.nodes
    service.create("small", SMALL, POD_SCOPE)
    client.post("/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("a", "x", "1", "1Gi"))
    node_dir = tmp_path / "nodes" / "small"
    before = (_state(service, "small"), _files(node_dir), _admissions(service, "small"))

    def refuse(conn: object) -> None:
        raise OperationalError("COMMIT", {}, Exception("disk I/O error"))

    event.listen(app.state.engine, "commit", refuse)
    try:
        r = client.post(
            "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("b", "x", "2", "1Gi")
        )
        assert r.status_code == 503, r.text
        # A 503 that will pass names the failure in fixed words and says when to retry.
        assert "the database's disk failed (I/O error)" in r.json()["error"]["message"]
        assert r.headers["retry-after"] == "2"
        assert client.delete("/api/v1/nodes/small/pods/x/a").status_code == 503
        # The state files were written before the commit and are rolled back with it.
        assert _files(node_dir) == before[1]
        assert _state(service, "small") == before[0]
    finally:
        event.remove(app.state.engine, "commit", refuse)
    assert _admissions(service, "small") == before[2]
    assert (
        client.post(
            "/api/v1/nodes/small/pods", headers=YAML, content=classic_pod("b", "x", "2", "1Gi")
        ).status_code
        == 201
    )


def test_files_a_refused_change_left_staged_are_not_taken_by_a_later_change(
    service: NodeService, engine: Engine, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database refuses an admission and its staged files cannot be removed; the next
    change writes no files (a rejected pod) and takes the same version: a later load must not
    take the leftovers for that change's files."""
    service.create("small", SMALL, POD_SCOPE)
    service.admit("small", classic_pod("solo", "batch", "2", "2Gi"))
    node_dir = state_dir / "small"
    old_state, old_files = _state(service, "small"), _files(node_dir)

    def refuse(self: object) -> None:
        raise OperationalError("COMMIT", {}, Exception("disk I/O error"))

    monkeypatch.setattr(node_repo.NodeWrite, "commit", refuse)
    monkeypatch.setattr(statejournal.StagedFiles, "discard", lambda self: None)
    with pytest.raises(NodeUnavailableError):
        service.admit("small", classic_pod("lost", "batch", "2", "2Gi"))
    monkeypatch.undo()
    leftover = statejournal.pending_version(node_dir)
    assert leftover is not None, "nothing was left staged: the test proves nothing"
    rejected = service.admit("small", classic_pod("huge", "batch", "64", "1Gi"))
    assert not rejected.results[0].admitted
    again = NodeService(engine, state_dir=state_dir)
    again.start()
    assert "completed" not in (again.reads.summary("small").load_error or "")
    assert [p.name for p in again.reads.snapshot("small").pods] == ["solo"]
    assert _state(again, "small") == old_state
    assert _files(node_dir) == old_files


class _Crash(BaseException):
    """Stands for the process dying: nothing after it runs, no cleanup catches it."""


@pytest.mark.parametrize("committed", [False, True], ids=["before-commit", "after-commit"])
def test_a_crash_between_the_renames_never_moves_cpus(
    service: NodeService,
    engine: Engine,
    state_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    committed: bool,
) -> None:
    service.create("small", SMALL, POD_SCOPE)
    service.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    service.admit("small", classic_pod("solo", "batch", "2", "2Gi"))
    old_state = _state(service, "small")
    node_dir = state_dir / "small"
    old_files = _files(node_dir)
    renames: list[str] = []
    real_replace = statejournal.statefiles.replace

    def replace_then_crash(tmp: Path, target: Path) -> None:
        if CPU_FILE_NAME in renames:  # the process is dead: nothing more reaches the disk
            raise _Crash
        real_replace(tmp, target)
        renames.append(target.name)
        if target.name == CPU_FILE_NAME:  # one file new, the others old
            raise _Crash

    def crash(self: object) -> None:
        raise _Crash

    if committed:  # the database committed, one file renamed, the others not yet
        monkeypatch.setattr(statejournal.statefiles, "replace", replace_then_crash)
    else:  # the process dies at the decision: every file staged, none renamed
        monkeypatch.setattr(node_repo.NodeWrite, "commit", crash)
        monkeypatch.setattr(statejournal.StagedFiles, "discard", crash)
    with pytest.raises(_Crash):
        service.admit("small", classic_pod("more", "batch", "2", "2Gi"))
    monkeypatch.undo()
    assert statejournal.pending_version(node_dir) is not None  # the staged files say so
    if committed:
        assert [n for n in renames if not n.startswith(".")] == [CPU_FILE_NAME]
        assert (node_dir / CPU_FILE_NAME).read_bytes() != old_files[CPU_FILE_NAME]
    else:
        visible = {n: b for n, b in _files(node_dir).items() if not n.startswith(".")}
        assert visible == old_files  # nothing touched before the decision

    again = NodeService(engine, state_dir=state_dir)
    again.start()
    error = again.reads.summary("small").load_error or ""
    files = _files(node_dir)
    assert not any(n.startswith(".") for n in files)  # staged and temporary files gone
    snap = again.reads.snapshot("small")
    if committed:
        # The database has the change: it is completed, every pod where it was.
        assert "completed" in error
        assert [p.name for p in snap.pods] == ["db", "solo", "more"]
        old = {u: cpus for u, _, cpus in old_state[1]}  # type: ignore[index]
        for uid, _, cpus in _state(again, "small")[1]:  # type: ignore[index]
            if uid in old:
                assert cpus == old[uid]
    else:
        assert "undone" in error
        assert _state(again, "small") == old_state
        assert files == old_files


def test_temp_files_of_crashed_writes_are_removed_at_start(
    service: NodeService, engine: Engine, state_dir: Path
) -> None:
    service.create("small", SMALL, POD_SCOPE)
    node_dir = state_dir / "small"
    for i in range(5):
        (node_dir / f".{1000 + i}").write_bytes(b"partial")
    # A backup an older release left behind without its journal.
    (node_dir / f"{statejournal.PREFIX}prev-{MEMORY_FILE_NAME}").write_bytes(b"old")
    again = NodeService(engine, state_dir=state_dir)
    again.start()
    assert sorted(p.name for p in node_dir.iterdir()) == sorted(
        [CPU_FILE_NAME, MEMORY_FILE_NAME, PODS_FILE_NAME]
    )


def test_the_log_and_the_state_files_disagreeing_is_reported_not_resolved(
    service: NodeService, engine: Engine, state_dir: Path
) -> None:
    service.create("small", SMALL, POD_SCOPE)
    service.admit("small", classic_pod("solo", "batch", "2", "2Gi"))
    node_dir = state_dir / "small"
    empty = dict(_files(node_dir))
    service.admit("small", classic_pod("late", "batch", "2", "2Gi"))
    kept = _state(service, "small")
    # Files of the older version (a pod acknowledged in the log is missing from them).
    for name, data in empty.items():
        (node_dir / name).write_bytes(data)
    again = NodeService(engine, state_dir=state_dir)
    again.start()
    error = again.reads.summary("small").load_error or ""
    assert "pod batch/late" in error and "not in the state files" in error
    assert [p.name for p in again.reads.snapshot("small").pods] == ["solo"]
    assert _state(again, "small") != kept  # the files win; nothing was replayed onto them
    assert _files(node_dir) == empty


def test_dry_runs_are_kept_with_a_bounded_retention(
    service: NodeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_repo, "DRY_RUN_RETENTION", 5)
    service.create("small", SMALL, POD_SCOPE)
    for i in range(12):
        service.admit("small", classic_pod(f"try-{i}", "x", "1", "1Gi"), dry_run=True)
    dry = [e.name for e in service.reads.admissions("small", limit=100) if e.action == "dry-run"]
    assert dry == [f"try-{i}" for i in range(11, 6, -1)]


def test_an_unwritable_node_refuses_changes_from_another_worker_too(
    service: NodeService, engine: Engine, state_dir: Path
) -> None:
    service.create("small", SMALL, POD_SCOPE)
    (state_dir / "small" / CPU_FILE_NAME).write_text(json.dumps({"garbage": True}))
    other = NodeService(engine, state_dir=state_dir)
    other.start()
    with pytest.raises(NodeUnavailableError):
        other.admit("small", classic_pod("a", "x", "1", "1Gi"))
    assert other.registry.durability_problems()
    assert not issubclass(NodeUnavailableError, StorageFullError)

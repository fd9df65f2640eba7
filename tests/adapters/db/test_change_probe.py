"""The SQLite change counter (``app.adapters.db.change_probe``) and the versions it lets
``node_repo.versions`` reuse: never an answer older than the last commit, by anyone."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from sqlalchemy import update

from app.adapters.db import node_repo
from app.adapters.db.change_probe import probe_for
from app.adapters.db.engine import make_engine
from app.adapters.db.tables import NodeRecord
from tests.helpers import migrated_engine

DEFINITION = {
    "topology": "laptop-1s-1numa-8t",
    "topology_kind": "preset",
    "kubelet_config": "",
    "release": "1.37",
}


def _add_node(engine: object, name: str) -> None:
    from sqlmodel import Session

    with Session(engine) as session:  # type: ignore[call-overload]
        session.add(NodeRecord(name=name, **DEFINITION))
        session.commit()


def test_every_commit_by_anyone_changes_the_stamp(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    with migrated_engine(url) as engine, migrated_engine(url) as other:
        probe = probe_for(engine)
        assert probe is not None and probe_for(engine) is probe  # one per engine
        first = probe.stamp()
        assert probe.stamp() == first  # nothing happened
        _add_node(engine, "a")  # this engine's own pool
        second = probe.stamp()
        assert second != first
        _add_node(other, "b")  # another "worker" on the same file
        third = probe.stamp()
        assert third != second
        raw = sqlite3.connect(tmp_path / "n.db")  # another program
        raw.execute("UPDATE nodes SET version = version + 1 WHERE name = 'a'")
        raw.commit()
        raw.close()
        assert probe.stamp() != third


def test_versions_follow_commits_made_elsewhere(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    with migrated_engine(url) as engine, migrated_engine(url) as other:
        _add_node(engine, "a")
        assert node_repo.versions(engine)["a"].version == 0
        assert node_repo.versions(engine)["a"].version == 0  # reused: nothing changed
        with other.begin() as conn:
            conn.execute(update(NodeRecord).values(version=NodeRecord.version + 1))
        assert node_repo.versions(engine)["a"].version == 1
        _add_node(other, "b")
        assert set(node_repo.versions(engine)) == {"a", "b"}
        # Callers may keep or change their dict: it is never the remembered one.
        mine = node_repo.versions(engine)
        mine.clear()
        assert set(node_repo.versions(engine)) == {"a", "b"}


def test_no_stale_answer_under_concurrent_commits(tmp_path: Path) -> None:
    """A writer bumps the version while readers ask: once the writer's commit returned, every
    later read sees at least that version (the stamp is read before the query)."""
    url = f"sqlite:///{tmp_path / 'n.db'}"
    with migrated_engine(url) as engine, migrated_engine(url) as writer:
        _add_node(engine, "a")
        committed = [0]
        errors: list[str] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                floor = committed[0]
                seen = node_repo.versions(engine)["a"].version
                if seen < floor:
                    errors.append(f"read {seen} after {floor} was committed")

        readers = [threading.Thread(target=read) for _ in range(3)]
        for t in readers:
            t.start()
        try:
            for n in range(1, 151):
                with writer.begin() as conn:
                    conn.execute(update(NodeRecord).values(version=n))
                committed[0] = n
        finally:
            stop.set()
            for t in readers:
                t.join()
        assert errors == []
        assert node_repo.versions(engine)["a"].version == 150


def test_no_probe_where_there_is_no_second_connection(tmp_path: Path) -> None:
    memory = make_engine("sqlite://")
    assert probe_for(memory) is None
    shared = make_engine(f"sqlite:///file:{tmp_path / 'u.db'}?mode=rwc&uri=true")
    assert probe_for(shared) is None
    memory.dispose()
    shared.dispose()


def test_the_probe_reads_rows_only_when_the_stamp_moved(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    with migrated_engine(url) as engine, migrated_engine(url) as other:
        probe = probe_for(engine)
        assert probe is not None
        _add_node(engine, "a")
        sql = "SELECT name, version FROM nodes"
        stamp, rows = probe.read(sql, None)
        assert rows == [("a", 0)]
        assert probe.read(sql, stamp) == (stamp, None)  # nothing committed since
        with other.begin() as conn:
            conn.execute(update(NodeRecord).values(version=4))
        moved, rows = probe.read(sql, stamp)
        assert moved != stamp and rows == [("a", 4)]

"""The inspector on a hostile upload, against a real ``numascope serve`` process: thousands of
entries holding CPU 0 give one capped finding, and ``/healthz`` keeps answering within a
second while such an upload is being inspected (inspection runs in a worker thread)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from app.domain.checkpoint import CPUCheckpointState, write_cpu_checkpoint
from app.domain.checkpoint.overlaps import MAX_LISTED_PODS
from app.domain.cpuset import CPUSet
from app.services.checkpoints import MAX_INSPECT_MEMBERS
from tests.processes import Server

JSON = {"Content-Type": "application/json"}


def hostile(pods: int) -> bytes:
    entries = {str(uuid.UUID(int=i)): {"app": CPUSet.parse("0")} for i in range(pods)}
    return write_cpu_checkpoint(
        CPUCheckpointState("static", CPUSet.parse("1-3"), entries), "v2"
    ).encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("serve")
    served = Server(tmp, args=["--no-demo"]).start()
    try:
        yield served.url
    finally:
        served.close()


def test_two_thousand_entries_on_cpu_0_give_one_finding(server: str) -> None:
    r = httpx.post(
        f"{server}/api/v1/checkpoints/inspect", content=hostile(2000), headers=JSON, timeout=120
    )
    assert r.status_code == 200
    assert len(r.content) < 1_000_000  # was 578 MB: one finding per pair of pods
    found = [i for i in r.json()["issues"] if i["code"] == "overlapping-exclusive"]
    assert len(found) == 1
    assert found[0]["message"].startswith("2000 pods all hold CPUs 0: ")
    assert found[0]["message"].endswith(f" and {2000 - MAX_LISTED_PODS} more")


def test_healthz_answers_within_a_second_during_a_large_inspection(server: str) -> None:
    body = hostile(11000)  # about 560 KB, 22,000 members: seconds of inspection
    done = threading.Event()
    answer: list[httpx.Response] = []

    def upload() -> None:
        try:
            with httpx.Client(timeout=300) as c:
                answer.append(
                    c.post(f"{server}/api/v1/checkpoints/inspect", content=body, headers=JSON)
                )
        finally:
            done.set()

    worker = threading.Thread(target=upload)
    started = time.monotonic()
    worker.start()
    probes: list[float] = []
    with httpx.Client(timeout=30) as probe:
        while not done.is_set():
            t0 = time.monotonic()
            assert probe.get(f"{server}/healthz").status_code == 200
            probes.append(time.monotonic() - t0)
            done.wait(0.05)
    worker.join()
    elapsed = time.monotonic() - started
    assert answer and answer[0].status_code == 200
    # The probes ran while the upload was in flight, and none waited for it.
    assert len(probes) >= 5, (elapsed, probes)
    assert max(probes) < 1.0, probes


def test_more_members_than_the_inspector_reads_is_413_before_decoding(server: str) -> None:
    body = hostile(MAX_INSPECT_MEMBERS // 2 + 1)  # two members per entry
    t0 = time.monotonic()
    r = httpx.post(f"{server}/api/v1/checkpoints/inspect", content=body, headers=JSON, timeout=60)
    assert r.status_code == 413
    error = r.json()["error"]
    assert error["reason"] == "RequestEntityTooLarge" and error["field"] == "file"
    assert error["message"].startswith(
        f"the file has {MAX_INSPECT_MEMBERS + 6} JSON object members"
    )
    assert time.monotonic() - t0 < 5  # refused before the readers run (they would take seconds)

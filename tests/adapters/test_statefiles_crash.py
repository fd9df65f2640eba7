"""Crash safety of the atomic state-file writer (``app.adapters.statefiles``).

A writer process rewrites ``cpu_manager_state`` in a loop, alternating two valid checkpoint
texts of different lengths, through ``statefiles.write_file``. It is killed with SIGKILL at
random moments, many times; after every kill the target must hold exactly one of the two texts
(never a mix, a prefix or nothing), and whatever temporary files the kills left behind must be
names a reader skips (``.`` + digits, never the target's name), so ``list_files`` still sees
only the state file.

To make many kills cheap, one helper process (a "zygote") imports the writer once and forks a
fresh writer child on request; it reports the child's pid, and after the test has killed it,
its exit status (so the test knows the child is dead before it looks, without sleeping). The
only timing is the random delay before each kill, which decides *where* in the write the kill
lands; each child starts with one of the two texts at random, so kills early in a child's
life are as likely to find either text.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.adapters import statefiles
from app.domain.checkpoint import CPUCheckpointState, inspect, write_cpu_checkpoint
from app.domain.cpuset import CPUSet

ROOT = Path(__file__).resolve().parents[2]
NAME = "cpu_manager_state"
KILLS = 200
TIME_BUDGET_S = 20.0
MIN_KILLS = 40  # on a very slow machine the budget may stop the loop early

ZYGOTE = r"""
import os, sys
from app.adapters import statefiles

directory, name, a_path, b_path = sys.argv[1:5]
texts = [open(a_path, "rb").read(), open(b_path, "rb").read()]
print("ready", flush=True)
for line in sys.stdin:
    words = line.split()
    if not words or words[0] != "fork":
        break
    pid = os.fork()
    if pid == 0:
        try:
            i = int(words[1])
            while True:
                statefiles.write_file(directory, name, texts[i % 2])
                i += 1
        finally:
            os._exit(3)
    print(pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print("dead", os.waitstatus_to_exitcode(status), flush=True)
"""


def _texts() -> tuple[bytes, bytes]:
    """A small V2 file and a much larger V3 file (many pods), both valid."""
    small = CPUCheckpointState(
        "static", CPUSet.parse("0-1,4-7"), {"pod-a": {"c1": CPUSet.parse("2-3")}}
    )
    entries = {f"pod-{i:04d}": {"app": CPUSet.from_mask(1 << (i % 64))} for i in range(300)}
    pods = {f"pod-{i:04d}": CPUSet.from_mask(3 << (i % 63)) for i in range(300)}
    large = CPUCheckpointState("static", CPUSet.parse("0-63"), entries, pods)
    a = write_cpu_checkpoint(small, "V2").encode()
    b = write_cpu_checkpoint(large, "V3").encode()
    assert len(a) != len(b)
    return a, b


def test_the_two_texts_are_valid_checkpoints() -> None:
    a, b = _texts()
    for text in (a, b):
        report = inspect(text)
        assert report.readable
        assert [c.status for c in report.checksums] == ["valid"]


def test_sigkill_at_random_moments_never_leaves_a_partial_or_missing_file(tmp_path: Path) -> None:
    a, b = _texts()
    state_dir = tmp_path / "kubelet"
    (tmp_path / "a").write_bytes(a)
    (tmp_path / "b").write_bytes(b)
    rng = random.Random(5526)
    # The first write, done before any kill: from here on the file must never be missing.
    statefiles.write_file(state_dir, NAME, a)
    zygote = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ZYGOTE,
            str(state_dir),
            NAME,
            str(tmp_path / "a"),
            str(tmp_path / "b"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    seen = {a: 0, b: 0}
    leftovers_seen = 0
    kills = 0
    started = time.monotonic()
    try:
        assert zygote.stdout.readline().strip() == "ready"
        while kills < KILLS and time.monotonic() - started < TIME_BUDGET_S:
            zygote.stdin.write(f"fork {rng.randrange(2)}\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            time.sleep(rng.uniform(0, 0.006))
            os.kill(pid, signal.SIGKILL)
            status = zygote.stdout.readline().split()
            assert status == ["dead", str(-signal.SIGKILL)], status
            kills += 1

            content = (state_dir / NAME).read_bytes()
            assert content in seen, (
                f"after kill {kills}: {len(content)} bytes that are neither text "
                f"({len(a)} or {len(b)} bytes)"
            )
            seen[content] += 1
            others = sorted(n for n in os.listdir(state_dir) if n != NAME)
            for name in others:
                assert name.startswith(".") and name[1:].isdigit(), name
            leftovers_seen = max(leftovers_seen, len(others))
            assert statefiles.list_files(state_dir) == [NAME]
            assert statefiles.read_file(state_dir, NAME) == content
            assert (state_dir / NAME).stat().st_mode & 0o777 == 0o600
    finally:
        if zygote.stdin is not None:
            zygote.stdin.close()
        zygote.wait(timeout=10)
    assert kills >= MIN_KILLS, f"only {kills} kills in {TIME_BUDGET_S} s"
    # Both texts were observed: the kills landed across the loop, not always at one spot.
    assert seen[a] > 0 and seen[b] > 0, {len(k): v for k, v in seen.items()}
    # Some kills interrupted a write between creating the temporary file and the rename.
    assert leftovers_seen > 0
    print(
        json.dumps(
            {"kills": kills, "small": seen[a], "large": seen[b], "maxTempLeft": leftovers_seen}
        )
    )


@pytest.mark.parametrize("text", ["a", "b"], ids=["small", "large"])
def test_a_completed_write_leaves_no_temporary_file(tmp_path: Path, text: str) -> None:
    a, b = _texts()
    data = a if text == "a" else b
    statefiles.write_file(tmp_path, NAME, data)
    assert os.listdir(tmp_path) == [NAME]
    assert (tmp_path / NAME).read_bytes() == data

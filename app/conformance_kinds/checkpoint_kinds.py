"""Conformance kinds ``checkpoint_checksum``, ``checkpoint_load`` and ``checkpoint_write``
(conformance README §4): each case is computed with ``app.domain.checkpoint``."""

from __future__ import annotations

from typing import Any

from app.conformance_kinds.common import Case, expect_equal
from app.domain.checkpoint import (
    CheckpointError,
    CPUCheckpointState,
    MemoryCheckpointState,
    Reader,
    compute_checksum,
    load_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)


def checkpoint_checksum(case: Case) -> list[str]:
    problems: list[str] = []
    inputs = case.inputs
    try:
        value: Any = compute_checksum(inputs["content"], inputs["algorithm"])
    except CheckpointError as exc:
        value = f"error: {exc}"
    expect_equal(problems, "checksum", case.expected["checksum"], value)
    return problems


def checkpoint_load(case: Case) -> list[str]:
    problems: list[str] = []
    inputs = case.inputs
    r = inputs["reader"]
    reader = Reader(str(r["release"]), bool(r.get("gate", False)), r.get("policy"))
    result = load_checkpoint(
        inputs["content"], inputs["manager"], reader, inputs.get("initial_containers")
    )
    expected = case.expected
    if expected["result"] == "ok":
        if not result.accepted:
            problems.append(f"result: expected ok, got error {result.error!r}")
            return problems
        state = result.state.to_dict() if result.state is not None else None
        expect_equal(problems, "state", expected["state"], state)
        return problems
    if result.accepted:
        state = result.state.to_dict() if result.state is not None else None
        problems.append(f"result: expected error, got ok with state {state!r}")
        return problems
    want = expected["error_contains"]
    if want not in (result.message or ""):
        problems.append(f"error: expected to contain {want!r}, got {result.message!r}")
    return problems


def checkpoint_write(case: Case) -> list[str]:
    problems: list[str] = []
    inputs = case.inputs
    manager = inputs["manager"]
    if manager == "cpu":
        content = write_cpu_checkpoint(
            CPUCheckpointState.from_dict(inputs["state"]), inputs["version"]
        )
    else:
        content = write_memory_checkpoint(
            MemoryCheckpointState.from_dict(inputs["state"]), inputs["version"]
        )
    expect_equal(problems, "content", case.expected["content"], content)
    return problems


HANDLERS = {
    "checkpoint_checksum": checkpoint_checksum,
    "checkpoint_load": checkpoint_load,
    "checkpoint_write": checkpoint_write,
}

"""Observed state files read the way the newest kubelet that accepts them would (follows
pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
pkg/kubelet/cm/memorymanager/state/state_checkpoint.go (v1.37) through ``app.domain.checkpoint``).

``read_state_file`` tries the 1.37 readers with the ``PodLevelResourceManagers`` gate on, then
off, then the older releases; the first reader that accepts the file wins and every newer
reader's refusal is kept with the kubelet's text. ``infer_config`` says which release and
configuration the files point to when no kubelet configuration could be read.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.domain import releases
from app.domain.checkpoint import (
    CheckpointError,
    CPUCheckpointState,
    MemoryCheckpointState,
    Reader,
    inspect,
    load_checkpoint,
)
from app.domain.kubelet_config import DEFAULT_RELEASE, KubeletConfig
from app.domain.observed.model import FILE_NAMES, CheckpointFile, StateFileReading

#: The readers tried on an observed state file, newest kubelet first.
NEWEST_FIRST: tuple[Reader, ...] = (
    Reader(releases.NEWEST_CHECKPOINT_LINE, True),
    Reader(releases.NEWEST_CHECKPOINT_LINE, False),
    Reader(releases.GATE_SINCE, True),
    Reader(releases.GATE_SINCE, False),
    Reader(releases.OLDEST),
    Reader(releases.OLDEST_CHECKPOINT_FAMILY),
)


# -- state files -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Tried:
    """The readers' answers, newest first, up to the first that accepts the file: each refusal
    with its text, and the newest kubelet's error and start-up message."""

    accepted_by: Reader | None = None
    state: CPUCheckpointState | MemoryCheckpointState | None = None
    refused: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None
    message: str | None = None


def _try_readers(content: bytes, manager: str, readers: Sequence[Reader], state_dir: str) -> _Tried:
    """Offer ``content`` to each reader in turn (a reader that ignores the file has no say)."""
    tried = _Tried()
    for reader in readers:
        try:
            result = load_checkpoint(content, manager, reader, state_dir=state_dir)
        except CheckpointError as exc:
            tried.refused.append((reader.label, exc.message))
            tried.error = tried.error or exc.message
            tried.message = tried.message or exc.message
            continue
        if result.ignored:
            continue
        if result.accepted:
            tried.accepted_by, tried.state = reader, result.state
            return tried
        tried.refused.append((reader.label, result.error or "refused"))
        if tried.error is None:
            tried.error, tried.message = result.error, result.message
    return tried


def read_state_file(
    content: bytes | None,
    manager: str,
    *,
    path: str,
    state_dir: str,
    observed_at: float,
    read_error: str | None = None,
    readers: Sequence[Reader] = NEWEST_FIRST,
) -> StateFileReading:
    """Read ``content`` (``None``: no such file) as the newest kubelet that accepts it would.

    Never raises for bad content: the refusal texts are in the returned file report."""
    base = CheckpointFile(manager, FILE_NAMES[manager], path, observed_at)
    if read_error is not None:
        return StateFileReading(replace(base, present=True, read_error=read_error))
    if content is None:
        return StateFileReading(base)
    report = inspect(content, manager, targets=(), state_dir=state_dir)
    version = report.version
    tried = _try_readers(content, manager, readers, state_dir)
    file = replace(
        base,
        present=True,
        version=version.version if version is not None else None,
        family=version.family if version is not None else None,
        label=version.label if version is not None else None,
        read_as=tried.accepted_by.label if tried.accepted_by is not None else None,
        accepted=tried.accepted_by is not None,
        policy_name=tried.state.policy_name if tried.state is not None else report.policy_name,
        error=tried.error,
        message=tried.message,
        refused_by=tuple(tried.refused),
        checksums=report.checksums,
        size=len(content),
    )
    return StateFileReading(file, tried.state)


def cpu_state_of(reading: StateFileReading | None) -> CPUCheckpointState | None:
    if reading is not None and isinstance(reading.state, CPUCheckpointState):
        return reading.state
    return None


def memory_state_of(reading: StateFileReading | None) -> MemoryCheckpointState | None:
    if reading is not None and isinstance(reading.state, MemoryCheckpointState):
        return reading.state
    return None


def _written(row: releases.Release) -> set[tuple[str, str]]:
    return {
        (manager, version)
        for gate in (False, True)
        for manager, version in zip(("cpu", "memory"), row.writes(gate), strict=True)
    }


def infer_config(
    cpu: StateFileReading | None, memory: StateFileReading | None
) -> tuple[str, KubeletConfig]:
    """The kubelet release the state files point to, and a configuration holding only what the
    files record (policies; pod-level gates and scope ``pod`` when there are pod entries)."""
    cpu_state, mem_state = cpu_state_of(cpu), memory_state_of(memory)
    versions = {
        (r.file.manager, r.file.version) for r in (cpu, memory) if r is not None and r.file.version
    }
    release = DEFAULT_RELEASE
    if versions:
        # The newest checkpoint line that introduced one of the versions found, else the oldest.
        release = releases.OLDEST
        lines = [r for r in releases.TABLE if r.name == r.checkpoint_line]
        for older, row in reversed(list(itertools.pairwise(lines))):
            if versions & (_written(row) - _written(older)):
                release = row.name
                break
    pod_level = bool(cpu_state is not None and cpu_state.pod_entries) or bool(
        mem_state is not None and mem_state.pod_entries
    )
    gates = {"PodLevelResources": True, "PodLevelResourceManagers": True} if pod_level else {}
    return release, KubeletConfig(
        release=release,
        cpu_manager_policy=cpu_state.policy_name if cpu_state is not None else "none",
        memory_manager_policy=mem_state.policy_name if mem_state is not None else "None",
        topology_manager_scope="pod" if pod_level else "container",
        feature_gates=gates,
    )

"""What each kubelet release does with a ``memory_manager_state`` at start-up (follows
pkg/kubelet/cm/memorymanager/state/state_checkpoint.go of v1.35, v1.36 and v1.37, and
pkg/kubelet/checkpointmanager/checkpoint_manager.go).

The procedures per release family are listed in ``readers``; this module runs them: the
``GetCheckpoint`` attempts per version (decode, then ``VerifyChecksum``, or ``dataChecksum``
for V3), the migrations between versions (1.36 copies V1 into the V2 object that failed, 1.37
into a fresh one), and the restore (policy comparison). There is no memory manager before
1.21: a ``<= 1.17`` reader ignores the file.
"""

from __future__ import annotations

import functools
from typing import Any

from app.domain import releases
from app.domain.checkpoint import loading
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.detect import MEMORY
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.reader import Reader
from app.domain.golang.strconv import go_quote

# -- memory ------------------------------------------------------------------------------------------

_MEMORY_NAMES = {
    releases.OLDEST: {"V1": M.LEGACY_HEADER},
    releases.GATE_SINCE: {"V1": M.V1_HEADER, "V2": M.LEGACY_HEADER},
    releases.NEWEST_CHECKPOINT_LINE: {"V1": M.V1_HEADER, "V2": M.V2_HEADER, "V3": M.LEGACY_HEADER},
}


def _verify(tree: Any, obj: dict[str, Any], version: str, reader: Reader) -> str | None:
    """``VerifyChecksum`` of ``obj`` (``tree`` decoded as ``version``): 0 passes only for the
    newest line's readers, else the legacy header name."""
    if obj["Checksum"] == 0 and reader.line == releases.NEWEST_CHECKPOINT_LINE:
        return "zero"
    if M.MEMORY_FORMATS.tree_checksum(tree, obj, version, M.LEGACY_HEADER) == obj["Checksum"]:
        return M.LEGACY_HEADER
    return None


#: ``GetCheckpoint`` of a version: ``_get_memory(f, version, reader)``; records the attempt.
_get_memory = functools.partial(
    loading.get_checkpoint, formats=M.MEMORY_FORMATS, names=_MEMORY_NAMES, verify=_verify
)


def _clone_machine_state(ms: Any) -> Any:
    if ms is None:
        return {}
    out: dict[Any, Any] = {}
    for node, s in ms.items():
        if s is None:
            out[node] = None
            continue
        out[node] = {
            "NumberOfAssignments": s["NumberOfAssignments"],
            "MemoryMap": None if s["MemoryMap"] is None else dict(s["MemoryMap"]),
            "Cells": list(s["Cells"] or ()),
        }
    return out


def _copy_v1_to_v2(src: dict[str, Any], dst: dict[str, Any]) -> None:
    """1.37 ``migrateV1CheckpointToV2Checkpoint`` (into a fresh V2): clones of every field."""
    dst["PolicyName"] = src["PolicyName"]
    dst["MachineState"] = _clone_machine_state(src["MachineState"])
    dst["Entries"] = {
        pod: {name: list(b or ()) for name, b in (c or {}).items()}
        for pod, c in (src["Entries"] or {}).items()
    }


def _v2_as_data(v2: dict[str, Any]) -> dict[str, Any]:
    """A V2 read (or V1 copied into one) as V3's data."""
    data = M.new_memory_checkpoint("data")
    data["PolicyName"] = v2["PolicyName"]
    data["MachineState"] = _clone_machine_state(v2["MachineState"])
    data["Entries"] = v2["Entries"]
    data["PodEntries"] = v2["PodEntries"]
    return data


def _migrate_v1_into_failed_v2(src: dict[str, Any], dst: dict[str, Any]) -> None:
    """1.36 ``migrateV1CheckpointToV2Checkpoint``: into the V2 object whose attempt failed,
    copying only a non-empty policy name, a non-nil machine state and non-empty entries (the
    rest, pod entries included, is what that attempt decoded)."""
    if src["PolicyName"]:
        dst["PolicyName"] = src["PolicyName"]
    if src["MachineState"] is not None:
        dst["MachineState"] = src["MachineState"]
    if src["Entries"]:
        dst["Entries"] = src["Entries"]


def _restore_memory(
    reader: Reader, data: dict[str, Any], pod_entries: Any
) -> MemoryCheckpointState:
    """``restoreState`` from a read (V1, V2 or V3 data): the policy compared."""
    policy = data["PolicyName"]
    if reader.policy is not None and reader.policy != policy:
        raise loading.LoadFailure(
            f"[memorymanager] configured policy {go_quote(reader.policy)} differs from state "
            f"checkpoint policy {go_quote(policy)}"
        )
    return M.memory_state_from_go(data, pod_entries)


# -- the procedures, one per checkpoint code line -------------------------------------------------


def _load_v1_only(f: loading.ParsedFile, reader: Reader) -> tuple[MemoryCheckpointState, str]:
    """1.21-1.35, and 1.36 with the gate off: V1 only."""
    v1 = loading.required(_get_memory(f, "V1", reader))
    return _restore_memory(reader, v1, None), "V1"


def _load_v2_or_v1(f: loading.ParsedFile, reader: Reader) -> tuple[MemoryCheckpointState, str]:
    """1.36 with the gate on: V2, else V1 copied into the failed V2 object (stale pod entries
    survive)."""
    v2, err = _get_memory(f, "V2", reader)
    loaded_as = "V2"
    if err is not None:
        v1 = loading.required(_get_memory(f, "V1", reader))
        loaded_as = "V1"
        _migrate_v1_into_failed_v2(v1, v2)
    return _restore_memory(reader, v2, loading.pod_entries_of(v2)), loaded_as


def _load_v3_or_older(f: loading.ParsedFile, reader: Reader) -> tuple[MemoryCheckpointState, str]:
    """1.37: V3; a file without data and dataChecksum falls back to V2, then V1 (copied into a
    fresh V2)."""
    data, loaded_as = loading.read_data_or_older(
        lambda v: _get_memory(f, v, reader),
        M.MEMORY_FORMATS,
        ("V2", "V1"),
        _copy_v1_to_v2,
        _v2_as_data,
    )
    return _restore_memory(reader, data, loading.gated_pod_entries(reader, data)), loaded_as


def load_memory_checkpoint(
    content: str | bytes, reader: Reader, state_dir: str = loading.DEFAULT_STATE_DIR
) -> loading.LoadResult:
    """Run ``reader``'s start-up procedure on a ``memory_manager_state``.

    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """
    if reader.line == releases.OLDEST_CHECKPOINT_FAMILY:
        return loading.LoadResult(
            MEMORY,
            reader,
            True,
            ignored=True,
            notes=(
                f"no memory manager before {releases.MEMORY_MANAGER_SINCE}: the file is not read",
            ),
        )
    if reader.line == releases.OLDEST or (reader.line == releases.GATE_SINCE and not reader.gate):
        procedure = _load_v1_only
    elif reader.line == releases.GATE_SINCE:
        procedure = _load_v2_or_v1
    else:
        procedure = _load_v3_or_older
    return loading.run_procedure(MEMORY, reader, content, state_dir, lambda f: procedure(f, reader))

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

from typing import Any

from app.domain import releases
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.loading import (
    CORRUPT,
    DEFAULT_STATE_DIR,
    MEMORY,
    Attempt,
    LoadFailure,
    LoadResult,
    ParsedFile,
    rejected,
)
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.reader import Reader
from app.domain.golang.strconv import go_quote

# -- memory ------------------------------------------------------------------------------------------

_MEMORY_NAMES = {
    releases.OLDEST: {"V1": M.LEGACY_HEADER},
    releases.GATE_SINCE: {"V1": M.V1_HEADER, "V2": M.LEGACY_HEADER},
    releases.NEWEST_CHECKPOINT_LINE: {"V1": M.V1_HEADER, "V2": M.V2_HEADER, "V3": M.LEGACY_HEADER},
}
_MEMORY_T = {"V1": M.MEMORY_V1_T, "V2": M.MEMORY_V2_T}


def _get_memory(f: ParsedFile, version: str, reader: Reader) -> tuple[dict[str, Any], str | None]:
    name = _MEMORY_NAMES[reader.line].get(version)
    if f.syntax_error is not None:
        err: str | None = f.syntax_error
        if version == "V3":
            err = f"failed to deserialize memory manager checkpoint: {err}"
        f.attempts.append(Attempt(version, False, err))
        return M.new_memory_checkpoint(version), err
    obj, jerr = M.decode_memory(f.tree, version, name)
    if version == "V3":
        if jerr is not None:
            err = f"failed to deserialize memory manager checkpoint: {jerr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        data = M.new_memory_checkpoint("data")
        obj["CheckpointData"] = data
        derr = unmarshal_text(obj["Data"], M.MEMORY_DATA_T, data)
        if derr is not None:
            err = f"failed to deserialize memory manager checkpoint data: {derr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        if obj["DataChecksum"] != string_checksum(obj["Data"]):
            f.attempts.append(Attempt(version, False, CORRUPT))
            return obj, CORRUPT
        f.attempts.append(Attempt(version, True, None, "dataChecksum"))
        return obj, None
    if jerr is not None:
        f.attempts.append(Attempt(version, False, str(jerr)))
        return obj, str(jerr)
    stored = obj["Checksum"]
    if stored == 0 and reader.line == releases.NEWEST_CHECKPOINT_LINE:
        f.attempts.append(Attempt(version, True, None, "zero"))
        return obj, None
    if struct_checksum(obj, _MEMORY_T[version], M.LEGACY_HEADER) == stored:
        f.attempts.append(Attempt(version, True, None, M.LEGACY_HEADER))
        return obj, None
    f.attempts.append(Attempt(version, False, CORRUPT))
    return obj, CORRUPT


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
    reader: Reader, policy: str, machine_state: Any, entries: Any, pod_entries: Any
) -> MemoryCheckpointState:
    if reader.policy is not None and reader.policy != policy:
        raise LoadFailure(
            f"[memorymanager] configured policy {go_quote(reader.policy)} differs from state "
            f"checkpoint policy {go_quote(policy)}"
        )
    return MemoryCheckpointState(
        policy,
        M.machine_state_from_go(machine_state),
        M.entries_from_go(entries),
        None if pod_entries is None else M.pod_entries_from_go(pod_entries),
    )


def load_memory_checkpoint(
    content: str | bytes, reader: Reader, state_dir: str = DEFAULT_STATE_DIR
) -> LoadResult:
    """Run ``reader``'s start-up procedure on a ``memory_manager_state``.

    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """
    if reader.line == releases.OLDEST_CHECKPOINT_FAMILY:
        return LoadResult(
            MEMORY,
            reader,
            True,
            ignored=True,
            notes=(
                f"no memory manager before {releases.MEMORY_MANAGER_SINCE}: the file is not read",
            ),
        )
    f = ParsedFile(content)
    loaded_as: str | None = None
    try:
        if reader.line == releases.OLDEST or (
            reader.line == releases.GATE_SINCE and not reader.gate
        ):
            v1, err = _get_memory(f, "V1", reader)
            if err is not None:
                raise LoadFailure(err)
            loaded_as = "V1"
            state = _restore_memory(
                reader, v1["PolicyName"], v1["MachineState"], v1["Entries"], None
            )
        elif reader.line == releases.GATE_SINCE:
            v2, err = _get_memory(f, "V2", reader)
            loaded_as = "V2"
            if err is not None:
                v1, err = _get_memory(f, "V1", reader)
                if err is not None:
                    raise LoadFailure(err)
                loaded_as = "V1"
                _migrate_v1_into_failed_v2(v1, v2)
            state = _restore_memory(
                reader,
                v2["PolicyName"],
                v2["MachineState"],
                v2["Entries"],
                v2["PodEntries"] if v2["PodEntries"] is not None else {},
            )
        else:
            v3, err = _get_memory(f, "V3", reader)
            loaded_as = "V3"
            if err is None:
                data = v3["CheckpointData"]
            elif v3["Data"] or v3["DataChecksum"]:
                raise LoadFailure(f"could not load v3 checkpoint: {err}")
            else:
                v2, err = _get_memory(f, "V2", reader)
                loaded_as = "V2"
                if err is not None:
                    v1, err = _get_memory(f, "V1", reader)
                    if err is not None:
                        raise LoadFailure(err)
                    loaded_as = "V1"
                    v2 = M.new_memory_checkpoint("V2")
                    _copy_v1_to_v2(v1, v2)
                data = M.new_memory_checkpoint("data")
                data["PolicyName"] = v2["PolicyName"]
                data["MachineState"] = _clone_machine_state(v2["MachineState"])
                data["Entries"] = v2["Entries"]
                data["PodEntries"] = v2["PodEntries"]
            pods = None
            if reader.gate:
                pods = data["PodEntries"] if data["PodEntries"] is not None else {}
            state = _restore_memory(
                reader, data["PolicyName"], data["MachineState"], data["Entries"], pods
            )
    except LoadFailure as fail:
        return rejected(MEMORY, reader, fail.error, state_dir, f.attempts)
    return LoadResult(MEMORY, reader, True, state, loaded_as=loaded_as, attempts=tuple(f.attempts))

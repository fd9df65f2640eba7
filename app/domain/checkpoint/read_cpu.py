"""What each kubelet release does with a ``cpu_manager_state`` at start-up (follows
pkg/kubelet/cm/cpumanager/state/state_checkpoint.go of v1.17, v1.35, v1.36 and v1.37, and
pkg/kubelet/checkpointmanager/checkpoint_manager.go).

The procedures per release family are listed in ``readers``; this module runs them: the
``GetCheckpoint`` attempts per version (decode, then ``VerifyChecksum`` against the header names
that release accepts, or ``dataChecksum`` for V4), the migrations between versions, and the
restore (policy comparison, every cpuset parsed). Where Go iterates a map, errors are looked
for in sorted order so results are deterministic.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from app.domain import releases
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import loading
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import CPU
from app.domain.checkpoint.reader import Reader
from app.domain.golang.strconv import go_quote

# -- CPU ---------------------------------------------------------------------------------------------

# Go struct names per release (they appear in JSON type-error texts).
_CPU_NAMES = {
    releases.OLDEST_CHECKPOINT_FAMILY: {"V1": "state.CPUManagerCheckpoint"},
    releases.OLDEST: {"V1": C.V1_HEADER, "V2": C.LEGACY_HEADER},
    releases.GATE_SINCE: {"V1": C.V1_HEADER, "V2": C.V2_HEADER, "V3": C.LEGACY_HEADER},
    releases.NEWEST_CHECKPOINT_LINE: {
        "V1": C.V1_HEADER,
        "V2": C.V2_HEADER,
        "V3": C.V3_HEADER,
        "V4": C.LEGACY_HEADER,
    },
}


def _cpu_headers(version: str, reader: Reader) -> tuple[str, ...]:
    """Header names a reader's ``VerifyChecksum`` accepts, in the order it tries them."""
    if version == "V1":
        return (C.LEGACY_HEADER,)
    if version == "V2":
        if reader.has_gate and not reader.gate:
            return (C.V2_HEADER, C.LEGACY_HEADER)
        return (C.LEGACY_HEADER,)
    if version == "V3":
        if reader.line == releases.NEWEST_CHECKPOINT_LINE:
            return (C.V3_HEADER, C.LEGACY_HEADER)
        return (C.LEGACY_HEADER,)
    raise AssertionError(version)


def _verify(tree: Any, obj: dict[str, Any], version: str, reader: Reader) -> str | None:
    """``VerifyChecksum`` of ``obj`` (``tree`` decoded as ``version``): 0 passes for V1 and
    V2, else a header name the reader accepts."""
    stored = obj["Checksum"]
    if stored == 0 and version in ("V1", "V2"):
        return "zero"
    for header in _cpu_headers(version, reader):
        if C.CPU_FORMATS.tree_checksum(tree, obj, version, header) == stored:
            return header
    return None


#: ``GetCheckpoint`` of a version: ``_get_cpu(f, version, reader)``; records the attempt.
_get_cpu = functools.partial(
    loading.get_checkpoint, formats=C.CPU_FORMATS, names=_CPU_NAMES, verify=_verify
)


def _migrate_v1_to_v2(
    src: dict[str, Any], dst: dict[str, Any], initial: Mapping[str, Sequence[str]] | None
) -> str | None:
    if src["PolicyName"]:
        dst["PolicyName"] = src["PolicyName"]
    if src["DefaultCPUSet"]:
        dst["DefaultCPUSet"] = src["DefaultCPUSet"]
    for container_id in sorted(src["Entries"] or {}):
        ref = (initial or {}).get(container_id)
        if ref is None:
            return f"containerID '{container_id}' not found in initial containers list"
        pod_uid, name = ref[0], ref[1]
        if dst["Entries"] is None:
            dst["Entries"] = {}
        dst["Entries"].setdefault(pod_uid, {})[name] = src["Entries"][container_id]
    return None


def _migrate_v2_to_v3(src: dict[str, Any], dst: dict[str, Any]) -> None:
    if src["PolicyName"]:
        dst["PolicyName"] = src["PolicyName"]
    if src["DefaultCPUSet"]:
        dst["DefaultCPUSet"] = src["DefaultCPUSet"]
    if src["Entries"]:
        dst["Entries"] = {pod: dict(c or {}) for pod, c in src["Entries"].items()}


def _v3_as_data(src: dict[str, Any]) -> dict[str, Any]:
    """A V3 read migrated to V4's data."""
    data = C.new_cpu_checkpoint("data")
    _migrate_v2_to_v3(src, data)
    if src.get("PodEntries"):
        data["PodEntries"] = {pod: {"CPUSet": e["CPUSet"]} for pod, e in src["PodEntries"].items()}
    return data


def _load_cpu_v2_chain(
    f: loading.ParsedFile, reader: Reader, initial: Mapping[str, Sequence[str]] | None
) -> tuple[dict[str, Any], str]:
    """``loadAndMigrateCheckpointV2`` (1.36): V2, else V1 migrated; the last error wins."""
    v2, err = _get_cpu(f, "V2", reader)
    if err is None:
        return v2, "V2"
    v1 = loading.required(_get_cpu(f, "V1", reader))
    tmp = C.new_cpu_checkpoint("V2")
    merr = _migrate_v1_to_v2(v1, tmp, initial)
    if merr is not None:
        raise loading.LoadFailure(f"failed to migrate checkpoint from v1 to v2: {merr}")
    return tmp, "V1"


def _check_policy(reader: Reader, policy: str) -> None:
    if reader.policy is not None and reader.policy != policy:
        raise loading.LoadFailure(
            f"configured policy {go_quote(reader.policy)} differs from state checkpoint policy "
            f"{go_quote(policy)}"
        )


def _refuse(error: str) -> None:
    raise loading.LoadFailure(error)


def _restore_cpu(reader: Reader, data: dict[str, Any], pod_entries: Any) -> CPUCheckpointState:
    """``restoreState`` from a read (V2, V3 or V4 data): policy compared, every cpuset parsed
    (the first that does not parse stops the kubelet)."""
    _check_policy(reader, data["PolicyName"])
    return C.cpu_state_from_go(data, pod_entries, _refuse)


# -- the procedures, one per checkpoint code line -------------------------------------------------


def _load_v1_only(f: loading.ParsedFile, reader: Reader) -> tuple[CPUCheckpointState, str]:
    """<= 1.17: V1 only, the state keyed by container ID."""
    v1 = loading.required(_get_cpu(f, "V1", reader))
    _check_policy(reader, v1["PolicyName"])
    return C.cpu_v1_state_from_go(v1, _refuse), "V1"


def _load_v1_or_v2(
    f: loading.ParsedFile, reader: Reader, initial: Mapping[str, Sequence[str]] | None
) -> tuple[CPUCheckpointState, str]:
    """1.18-1.35: V1, then V2 (the V2 error is returned); either is migrated onto a V2."""
    v1, err = _get_cpu(f, "V1", reader)
    if err is not None:
        v1 = {"PolicyName": "", "DefaultCPUSet": "", "Entries": None, "Checksum": 0}
        v2 = loading.required(_get_cpu(f, "V2", reader))
        loaded_as = "V2"
    else:
        v2 = C.new_cpu_checkpoint("V2")
        loaded_as = "V1"
    merr = _migrate_v1_to_v2(v1, v2, initial)
    if merr is not None:
        raise loading.LoadFailure(
            f"error migrating v1 checkpoint state to v2 checkpoint state: {merr}"
        )
    return _restore_cpu(reader, v2, None), loaded_as


def _load_v3_or_v2_chain(
    f: loading.ParsedFile, reader: Reader, initial: Mapping[str, Sequence[str]] | None
) -> tuple[CPUCheckpointState, str]:
    """1.36: gate off the V2 chain; gate on V3, else the V2 chain copied into the V3 object
    that failed (so pod entries decoded by that attempt survive)."""
    if not reader.gate:
        v2, loaded_as = _load_cpu_v2_chain(f, reader, initial)
        return _restore_cpu(reader, v2, None), loaded_as
    v3, err = _get_cpu(f, "V3", reader)
    loaded_as = "V3"
    if err is not None:
        v2, loaded_as = _load_cpu_v2_chain(f, reader, initial)
        _migrate_v2_to_v3(v2, v3)
    return _restore_cpu(reader, v3, loading.pod_entries_of(v3)), loaded_as


def _load_v4_or_older(f: loading.ParsedFile, reader: Reader) -> tuple[CPUCheckpointState, str]:
    """1.37: V4; a file without data and dataChecksum falls back to V3, then V2."""
    data, loaded_as = loading.read_data_or_older(
        lambda v: _get_cpu(f, v, reader),
        C.CPU_FORMATS,
        ("V3", "V2"),
        _migrate_v2_to_v3,
        _v3_as_data,
    )
    return _restore_cpu(reader, data, loading.gated_pod_entries(reader, data)), loaded_as


def load_cpu_checkpoint(
    content: str | bytes,
    reader: Reader,
    initial_containers: Mapping[str, Sequence[str]] | None = None,
    state_dir: str = loading.DEFAULT_STATE_DIR,
) -> loading.LoadResult:
    """Run ``reader``'s start-up procedure on a ``cpu_manager_state``.

    ``initial_containers`` maps a container ID to ``(pod UID, container name)``: the runtime's
    container list a 1.18+ kubelet uses to migrate V1 entries.
    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """

    def procedure(f: loading.ParsedFile) -> tuple[CPUCheckpointState, str]:
        if reader.line == releases.OLDEST_CHECKPOINT_FAMILY:
            return _load_v1_only(f, reader)
        if reader.line == releases.OLDEST:
            return _load_v1_or_v2(f, reader, initial_containers)
        if reader.line == releases.GATE_SINCE:
            return _load_v3_or_v2_chain(f, reader, initial_containers)
        return _load_v4_or_older(f, reader)

    return loading.run_procedure(
        CPU, reader, content, state_dir, procedure, pure=initial_containers is None
    )

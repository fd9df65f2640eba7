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

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain import releases
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.gocpuset import GoCPUSetError, parse_cpuset
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.loading import (
    CORRUPT,
    CPU,
    DEFAULT_STATE_DIR,
    Attempt,
    LoadFailure,
    LoadResult,
    ParsedFile,
    rejected,
)
from app.domain.checkpoint.reader import Reader
from app.domain.cpuset import CPUSet
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


_CPU_T = {"V1": C.CPU_V1_T, "V2": C.CPU_V2_T, "V3": C.CPU_V3_T}


def _get_cpu(f: ParsedFile, version: str, reader: Reader) -> tuple[dict[str, Any], str | None]:
    """``GetCheckpoint`` for a CPU version; records the attempt."""
    name = _CPU_NAMES[reader.line].get(version)
    if f.syntax_error is not None:
        obj = C.new_cpu_checkpoint(version)
        err: str | None = f.syntax_error
        if version == "V4":
            err = f"failed to deserialize cpu manager checkpoint: {err}"
        f.attempts.append(Attempt(version, False, err))
        return obj, err
    obj, jerr = C.decode_cpu(f.tree, version, name)
    if version == "V4":
        if jerr is not None:
            err = f"failed to deserialize cpu manager checkpoint: {jerr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        data = C.new_cpu_checkpoint("data")
        obj["CheckpointData"] = data
        derr = unmarshal_text(obj["Data"], C.CPU_DATA_T, data)
        if derr is not None:
            err = f"failed to deserialize cpu manager checkpoint data: {derr}"
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
    if stored == 0 and version in ("V1", "V2"):
        f.attempts.append(Attempt(version, True, None, "zero"))
        return obj, None
    for header in _cpu_headers(version, reader):
        if struct_checksum(obj, _CPU_T[version], header) == stored:
            f.attempts.append(Attempt(version, True, None, header))
            return obj, None
    f.attempts.append(Attempt(version, False, CORRUPT))
    return obj, CORRUPT


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


def _migrate_v3_to_v4(src: dict[str, Any], data: dict[str, Any]) -> None:
    _migrate_v2_to_v3(src, data)
    if src.get("PodEntries"):
        data["PodEntries"] = {pod: {"CPUSet": e["CPUSet"]} for pod, e in src["PodEntries"].items()}


def _load_cpu_v2_chain(
    f: ParsedFile, reader: Reader, initial: Mapping[str, Sequence[str]] | None
) -> tuple[dict[str, Any], str]:
    """``loadAndMigrateCheckpointV2`` (1.36): V2, else V1 migrated; the last error wins."""
    v2, err = _get_cpu(f, "V2", reader)
    if err is None:
        return v2, "V2"
    v1, err = _get_cpu(f, "V1", reader)
    if err is not None:
        raise LoadFailure(err)
    tmp = C.new_cpu_checkpoint("V2")
    merr = _migrate_v1_to_v2(v1, tmp, initial)
    if merr is not None:
        raise LoadFailure(f"failed to migrate checkpoint from v1 to v2: {merr}")
    return tmp, "V1"


def _restore_cpu(
    reader: Reader,
    policy: str,
    default_text: str,
    entries: Any,
    pod_entries: Any,
) -> CPUCheckpointState:
    if reader.policy is not None and reader.policy != policy:
        raise LoadFailure(
            f"configured policy {go_quote(reader.policy)} differs from state checkpoint policy "
            f"{go_quote(policy)}"
        )
    try:
        default = parse_cpuset(default_text)
    except GoCPUSetError as exc:
        raise LoadFailure(
            f"could not parse default cpu set {go_quote(default_text)}: {exc}"
        ) from None
    assignments: dict[str, dict[str, CPUSet]] = {}
    for pod in sorted(entries or {}):
        containers = entries[pod] or {}
        parsed: dict[str, CPUSet] = {}
        for name in sorted(containers):
            text = containers[name]
            try:
                parsed[name] = parse_cpuset(text)
            except GoCPUSetError as exc:
                raise LoadFailure(
                    f"could not parse cpuset {go_quote(text)} for container {go_quote(name)} "
                    f"in pod {go_quote(pod)}: {exc}"
                ) from None
        assignments[pod] = parsed
    pods: dict[str, CPUSet] | None = None
    if pod_entries is not None:
        pods = {
            pod: (e["CPUSet"] if e["CPUSet"] is not None else CPUSet())
            for pod, e in pod_entries.items()
        }
    return CPUCheckpointState(policy, default, assignments, pods)


def _restore_cpu_v1_only(reader: Reader, v1: dict[str, Any]) -> CPUCheckpointState:
    # <= 1.17: the state is keyed by container ID.
    policy = v1["PolicyName"]
    if reader.policy is not None and reader.policy != policy:
        raise LoadFailure(
            f"configured policy {go_quote(reader.policy)} differs from state checkpoint policy "
            f"{go_quote(policy)}"
        )
    try:
        default = parse_cpuset(v1["DefaultCPUSet"])
    except GoCPUSetError as exc:
        raise LoadFailure(
            f"could not parse default cpu set {go_quote(v1['DefaultCPUSet'])}: {exc}"
        ) from None
    containers: dict[str, CPUSet] = {}
    for cid in sorted(v1["Entries"] or {}):
        text = v1["Entries"][cid]
        try:
            containers[cid] = parse_cpuset(text)
        except GoCPUSetError as exc:
            raise LoadFailure(
                f"could not parse cpuset {go_quote(text)} for container id {go_quote(cid)}: {exc}"
            ) from None
    return CPUCheckpointState(policy, default, {}, None, containers)


def load_cpu_checkpoint(
    content: str | bytes,
    reader: Reader,
    initial_containers: Mapping[str, Sequence[str]] | None = None,
    state_dir: str = DEFAULT_STATE_DIR,
) -> LoadResult:
    """Run ``reader``'s start-up procedure on a ``cpu_manager_state``.

    ``initial_containers`` maps a container ID to ``(pod UID, container name)``: the runtime's
    container list a 1.18+ kubelet uses to migrate V1 entries.
    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """
    f = ParsedFile(content)
    loaded_as: str | None = None
    try:
        if reader.line == releases.OLDEST_CHECKPOINT_FAMILY:
            v1, err = _get_cpu(f, "V1", reader)
            if err is not None:
                raise LoadFailure(err)
            loaded_as = "V1"
            state = _restore_cpu_v1_only(reader, v1)
        elif reader.line == releases.OLDEST:
            v1, err = _get_cpu(f, "V1", reader)
            if err is not None:
                v1 = {"PolicyName": "", "DefaultCPUSet": "", "Entries": None, "Checksum": 0}
                v2, err = _get_cpu(f, "V2", reader)
                if err is not None:
                    raise LoadFailure(err)
                loaded_as = "V2"
            else:
                v2 = C.new_cpu_checkpoint("V2")
                loaded_as = "V1"
            merr = _migrate_v1_to_v2(v1, v2, initial_containers)
            if merr is not None:
                raise LoadFailure(
                    f"error migrating v1 checkpoint state to v2 checkpoint state: {merr}"
                )
            state = _restore_cpu(reader, v2["PolicyName"], v2["DefaultCPUSet"], v2["Entries"], None)
        elif reader.line == releases.GATE_SINCE:
            if not reader.gate:
                v2, loaded_as = _load_cpu_v2_chain(f, reader, initial_containers)
                state = _restore_cpu(
                    reader, v2["PolicyName"], v2["DefaultCPUSet"], v2["Entries"], None
                )
            else:
                v3, err = _get_cpu(f, "V3", reader)
                loaded_as = "V3"
                if err is not None:
                    v2, loaded_as = _load_cpu_v2_chain(f, reader, initial_containers)
                    _migrate_v2_to_v3(v2, v3)
                state = _restore_cpu(
                    reader,
                    v3["PolicyName"],
                    v3["DefaultCPUSet"],
                    v3["Entries"],
                    v3["PodEntries"] if v3["PodEntries"] is not None else {},
                )
        else:
            v4, err = _get_cpu(f, "V4", reader)
            loaded_as = "V4"
            if err is None:
                data = v4["CheckpointData"]
            elif v4["Data"] or v4["DataChecksum"]:
                raise LoadFailure(f"could not load v4 checkpoint: {err}")
            else:
                v3, err = _get_cpu(f, "V3", reader)
                loaded_as = "V3"
                if err is not None:
                    v2, err = _get_cpu(f, "V2", reader)
                    if err is not None:
                        raise LoadFailure(err)
                    loaded_as = "V2"
                    v3 = C.new_cpu_checkpoint("V3")
                    _migrate_v2_to_v3(v2, v3)
                data = C.new_cpu_checkpoint("data")
                _migrate_v3_to_v4(v3, data)
            pods = None
            if reader.gate:
                pods = data["PodEntries"] if data["PodEntries"] is not None else {}
            state = _restore_cpu(
                reader, data["PolicyName"], data["DefaultCPUSet"], data["Entries"], pods
            )
    except LoadFailure as fail:
        return rejected(CPU, reader, fail.error, state_dir, f.attempts)
    return LoadResult(CPU, reader, True, state, loaded_as=loaded_as, attempts=tuple(f.attempts))

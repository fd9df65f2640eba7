"""The content of a state file regardless of any reader: the newest part of the file
(``data`` for CPU V4 / memory V3, the inline fields otherwise), decoded and normalised, plus
the inline part older releases read. Problems that would stop a kubelet (unparsable cpusets)
are reported as issue texts instead of exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import CPU, VersionInfo
from app.domain.checkpoint.gocpuset import GoCPUSetError, parse_cpuset
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.cpuset import CPUSet
from app.domain.golang.strconv import go_quote

State = CPUCheckpointState | MemoryCheckpointState


@dataclass(frozen=True, slots=True)
class FileContent:
    """``state``: the authoritative content (pod entries included where the format has
    them); ``inline``: for CPU V4 / memory V3, the inline part older releases read.
    ``problems``: texts of decode or parse errors met on the way."""

    state: State | None
    inline: State | None
    problems: tuple[str, ...]


def _cpu_state(
    policy: str, default: str, entries: Any, pod_entries: Any, problems: list[str]
) -> CPUCheckpointState:
    try:
        default_set = parse_cpuset(default)
    except GoCPUSetError as exc:
        problems.append(f"could not parse default cpu set {go_quote(default)}: {exc}")
        default_set = CPUSet()
    parsed: dict[str, dict[str, CPUSet]] = {}
    for pod in sorted(entries or {}):
        inner: dict[str, CPUSet] = {}
        for name, text in sorted((entries[pod] or {}).items()):
            try:
                inner[name] = parse_cpuset(text)
            except GoCPUSetError as exc:
                problems.append(
                    f"could not parse cpuset {go_quote(text)} for container {go_quote(name)} "
                    f"in pod {go_quote(pod)}: {exc}"
                )
        parsed[pod] = inner
    pods = None
    if pod_entries is not None:
        pods = {
            pod: (e["CPUSet"] if e["CPUSet"] is not None else CPUSet())
            for pod, e in pod_entries.items()
        }
    return CPUCheckpointState(policy, default_set, parsed, pods)


def _cpu_v1_state(obj: dict[str, Any], problems: list[str]) -> CPUCheckpointState:
    try:
        default_set = parse_cpuset(obj["DefaultCPUSet"])
    except GoCPUSetError as exc:
        problems.append(f"could not parse default cpu set {go_quote(obj['DefaultCPUSet'])}: {exc}")
        default_set = CPUSet()
    containers: dict[str, CPUSet] = {}
    for cid, text in sorted((obj["Entries"] or {}).items()):
        try:
            containers[cid] = parse_cpuset(text)
        except GoCPUSetError as exc:
            problems.append(
                f"could not parse cpuset {go_quote(text)} for container id {go_quote(cid)}: {exc}"
            )
    return CPUCheckpointState(obj["PolicyName"], default_set, {}, None, containers)


def _memory_state(obj: dict[str, Any], pods: Any) -> MemoryCheckpointState:
    return MemoryCheckpointState(
        obj["PolicyName"],
        M.machine_state_from_go(obj["MachineState"]),
        M.entries_from_go(obj["Entries"]),
        None if pods is None else M.pod_entries_from_go(pods),
    )


def file_content(tree: Any, info: VersionInfo) -> FileContent:
    """Decode the file's content for the detected ``info``."""
    problems: list[str] = []
    state: State | None = None
    inline: State | None = None
    v = info.version
    if info.manager == CPU:
        if v in ("V4", "V4-reverted"):
            outer, err = C.decode_cpu(tree, v)
            if err is not None:
                problems.append(f"failed to deserialize cpu manager checkpoint: {err}")
            if v == "V4":
                inline = _cpu_state(
                    outer["PolicyName"], outer["DefaultCPUSet"], outer["Entries"], None, problems
                )
            data = C.new_cpu_checkpoint("data")
            derr = unmarshal_text(outer["Data"], C.CPU_DATA_T, data)
            if derr is not None:
                problems.append(f"failed to deserialize cpu manager checkpoint data: {derr}")
            else:
                state = _cpu_state(
                    data["PolicyName"],
                    data["DefaultCPUSet"],
                    data["Entries"],
                    data["PodEntries"] if data["PodEntries"] is not None else {},
                    problems,
                )
        else:
            obj, err = C.decode_cpu(tree, v)
            if err is not None:
                problems.append(str(err))
            elif v == "V1":
                state = _cpu_v1_state(obj, problems)
            else:
                pods = obj.get("PodEntries")
                if v == "V3" and pods is None:
                    pods = {}
                state = _cpu_state(
                    obj["PolicyName"], obj["DefaultCPUSet"], obj["Entries"], pods, problems
                )
        return FileContent(state, inline, tuple(problems))
    if v == "V3":
        outer, err = M.decode_memory(tree, "V3")
        if err is not None:
            problems.append(f"failed to deserialize memory manager checkpoint: {err}")
        inline = _memory_state(outer, None)
        data = M.new_memory_checkpoint("data")
        derr = unmarshal_text(outer["Data"], M.MEMORY_DATA_T, data)
        if derr is not None:
            problems.append(f"failed to deserialize memory manager checkpoint data: {derr}")
        else:
            state = _memory_state(data, data["PodEntries"] or {})
    else:
        obj, err = M.decode_memory(tree, v)
        if err is not None:
            problems.append(str(err))
        else:
            state = _memory_state(obj, (obj.get("PodEntries") or {}) if v == "V2" else None)
    return FileContent(state, inline, tuple(problems))

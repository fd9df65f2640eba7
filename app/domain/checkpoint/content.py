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
from app.domain.checkpoint.data_twin import read_twin
from app.domain.checkpoint.detect import CPU, VersionInfo
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.gojson_scan import TreeMemo
from app.domain.checkpoint.gotypes import GoType
from app.domain.checkpoint.loading import pod_entries_of
from app.domain.checkpoint.memory_state import MemoryCheckpointState

State = CPUCheckpointState | MemoryCheckpointState


@dataclass(frozen=True, slots=True)
class FileContent:
    """``state``: the authoritative content (pod entries included where the format has
    them); ``inline``: for CPU V4 / memory V3, the inline part older releases read.
    ``problems``: texts of decode or parse errors met on the way."""

    state: State | None
    inline: State | None
    problems: tuple[str, ...]


_contents = TreeMemo()


def file_content(tree: Any, info: VersionInfo, text: str | None = None) -> FileContent:
    """Decode the file's content for the detected ``info`` (kept for a kept tree: the
    inspector and the consistency checks ask for it); ``text``, the file's text when known,
    lets a data-carrying file written as a kubelet writes it be decoded once (``read_twin``:
    the same content, without the second decode)."""
    known, content = _contents.get(tree, info)
    if not known:
        content = _contents.put(tree, _file_content(tree, info, text), info)
    return content


def _file_content(tree: Any, info: VersionInfo, text: str | None) -> FileContent:
    problems: list[str] = []
    formats = C.CPU_FORMATS if info.manager == CPU else M.MEMORY_FORMATS
    twin = None
    if text is not None and info.version == formats.data_version:
        twin = read_twin(tree, text, formats, info.version, None)
    if twin is not None:  # both decodes without error: the inline part, then the data
        outer, data = twin
        if info.manager == CPU:
            inline: State | None = C.cpu_state_from_go(outer, None, problems.append)
            state: State | None = C.cpu_state_from_go(data, pod_entries_of(data), problems.append)
        else:
            inline = M.memory_state_from_go(outer, None)
            state = M.memory_state_from_go(data, pod_entries_of(data))
    elif info.manager == CPU:
        state, inline = _cpu_content(tree, info.version, problems)
    else:
        state, inline = _memory_content(tree, info.version, problems)
    return FileContent(state, inline, tuple(problems))


def _cpu_content(tree: Any, v: str, problems: list[str]) -> tuple[State | None, State | None]:
    if v not in ("V4", "V4-reverted"):
        obj, err = C.decode_cpu(tree, v)
        if err is not None:
            problems.append(str(err))
            return None, None
        if v == "V1":
            return C.cpu_v1_state_from_go(obj, problems.append), None
        pods = obj.get("PodEntries")
        if v == "V3" and pods is None:
            pods = {}
        return C.cpu_state_from_go(obj, pods, problems.append), None
    outer, err = C.decode_cpu(tree, v)
    if err is not None:
        problems.append(f"failed to deserialize cpu manager checkpoint: {err}")
    inline = C.cpu_state_from_go(outer, None, problems.append) if v == "V4" else None
    data = _data(outer, C.new_cpu_checkpoint("data"), C.CPU_DATA_T, "cpu manager", problems)
    if data is None:
        return None, inline
    return C.cpu_state_from_go(data, pod_entries_of(data), problems.append), inline


def _memory_content(tree: Any, v: str, problems: list[str]) -> tuple[State | None, State | None]:
    if v != "V3":
        obj, err = M.decode_memory(tree, v)
        if err is not None:
            problems.append(str(err))
            return None, None
        pods = (obj.get("PodEntries") or {}) if v == "V2" else None
        return M.memory_state_from_go(obj, pods), None
    outer, err = M.decode_memory(tree, "V3")
    if err is not None:
        problems.append(f"failed to deserialize memory manager checkpoint: {err}")
    inline = M.memory_state_from_go(outer, None)
    data = _data(
        outer, M.new_memory_checkpoint("data"), M.MEMORY_DATA_T, "memory manager", problems
    )
    if data is None:
        return None, inline
    return M.memory_state_from_go(data, pod_entries_of(data)), inline


def _data(
    outer: dict[str, Any], data: dict[str, Any], data_t: GoType, what: str, problems: list[str]
) -> dict[str, Any] | None:
    """The ``data`` string of a CPU V4 / memory V3 file decoded into ``data``."""
    err = unmarshal_text(outer["Data"], data_t, data)
    if err is not None:
        problems.append(f"failed to deserialize {what} checkpoint data: {err}")
        return None
    return data

"""Conversions between state-file versions, with an explicit report of what is lost
(spec ``checkpoints.md`` §12.2).

The source is read with the same decoder the kubelet uses; its protecting checksum must verify
(``dataChecksum`` for CPU V4 / memory V3, ``checksum`` otherwise) unless ``force`` is given.
The output is written the way the target's kubelet writes it, with fresh checksums.

Which version a target release needs:

===========================  ==========  ==========
target                       CPU         memory
===========================  ==========  ==========
1.37 (gate on or off)        V4          V3
1.36 gate on                 V3          V2
1.36 gate off, 1.18-1.35     V2          V1
<= 1.17                      V1          (none)
===========================  ==========  ==========

Versions without pod entries (CPU V1/V2, memory V1) drop them: each dropped entry is listed in
``lost``. V1 CPU files key entries by container ID, so converting to or from V1 needs the
runtime's container list (``initial_containers``: container ID -> (pod UID, container name)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain import releases
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.content import State, file_content
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import (
    CPU,
    MEMORY,
    VersionInfo,
    detect_tree,
    parse_checkpoint_text,
)
from app.domain.checkpoint.errors import CheckpointError, ConversionError
from app.domain.checkpoint.findings import checksum_reports
from app.domain.checkpoint.loading import DEFAULT_STATE_DIR, LoadResult
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.reader import Reader, parse_reader
from app.domain.checkpoint.readers import load_checkpoint
from app.domain.checkpoint.target_verdict import (
    COMPATIBLE,
    TargetVerdict,
    describe_pod_entry,
    uncovered_pod_entry,
    verdict_for_result,
)


@dataclass(frozen=True, slots=True)
class ConversionResult:
    """The converted file and what the conversion did."""

    content: str
    manager: str
    source: VersionInfo
    to_version: str
    target: Reader | None
    lost: tuple[str, ...]
    notes: tuple[str, ...]
    verdict: TargetVerdict | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "manager": self.manager,
            "source": self.source.to_dict(),
            "toVersion": self.to_version,
            "target": self.target.to_dict() if self.target is not None else None,
            "lost": list(self.lost),
            "notes": list(self.notes),
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
        }


def version_for(manager: str, target: Reader) -> str:
    """The version a kubelet of ``target`` writes (and reads without loss)."""
    if manager == CPU:
        if target.line == releases.NEWEST_CHECKPOINT_LINE:
            return "V4"
        if target.line == releases.GATE_SINCE and target.gate:
            return "V3"
        if target.line == releases.OLDEST_CHECKPOINT_FAMILY:
            return "V1"
        return "V2"
    if target.line == releases.OLDEST_CHECKPOINT_FAMILY:
        raise ConversionError(
            f"there is no memory manager before {releases.MEMORY_MANAGER_SINCE}: nothing to write"
        )
    if target.line == releases.NEWEST_CHECKPOINT_LINE:
        return "V3"
    if target.line == releases.GATE_SINCE and target.gate:
        return "V2"
    return "V1"


def _target(target_release: Reader | str | None) -> Reader | None:
    if target_release is None or isinstance(target_release, Reader):
        return target_release
    return parse_reader(target_release)


def convert(
    content: str | bytes,
    to_version: str | int | None = None,
    target_release: Reader | str | None = None,
    force: bool = False,
    *,
    manager: str | None = None,
    initial_containers: Mapping[str, Sequence[str]] | None = None,
) -> ConversionResult:
    """Convert a state file to ``to_version`` (or the version ``target_release`` needs).

    Raises ``ConversionError`` when the source does not verify (unless ``force``), cannot be
    decoded, needs a container list that was not given, or would not be readable by
    ``target_release`` (unless ``force``).
    """
    target = _target(target_release)
    try:
        _, tree = parse_checkpoint_text(content)
        info = detect_tree(tree, manager)
    except CheckpointError as exc:
        raise ConversionError(f"cannot convert: {exc.message}") from None
    notes = _source_checksum_notes(tree, info, force)
    lost: list[str] = []
    state = _source_state(tree, info, force, lost)
    version = _version(to_version, target, info.manager)
    if isinstance(state, CPUCheckpointState):
        out = _convert_cpu(state, version, initial_containers, lost, notes)
    else:
        out = _convert_memory(state, version, lost, notes)
    verdict = None
    if target is not None:
        result = load_checkpoint(out, info.manager, target, initial_containers, DEFAULT_STATE_DIR)
        verdict = _target_verdict(result, state, version, force, lost, notes)
    return ConversionResult(
        out, info.manager, info, version, target, tuple(lost), tuple(notes), verdict
    )


def _target_verdict(
    result: LoadResult, state: State, version: str, force: bool, lost: list[str], notes: list[str]
) -> TargetVerdict:
    """What the target release does with the written file: unreadable refuses the
    conversion unless ``force``; its losses and notes join the conversion's."""
    target = result.reader
    verdict = verdict_for_result(result, _after(state, version), None, False, machine=state)
    if not result.accepted and not force:
        raise ConversionError(
            f"{version} is not readable by a {target.label} kubelet: {result.error} "
            "(use force to write it anyway)"
        )
    if verdict.verdict != COMPATIBLE:
        notes.append(f"a {target.label} kubelet: {verdict.verdict}")
    notes.extend(verdict.notes)
    lost.extend(x for x in verdict.lost if x not in lost)
    return verdict


def _source_checksum_notes(tree: Any, info: VersionInfo, force: bool) -> list[str]:
    """The source's protecting checksum (``dataChecksum`` where there is one) must verify
    unless ``force``; what was found, as notes."""
    notes: list[str] = []
    checks = {c.field: c for c in checksum_reports(tree, info)}
    guard = "dataChecksum" if "dataChecksum" in checks else "checksum"
    if info.version == "V4-reverted":
        notes.append("source is the unreleased single-checksum V4 layout (kubernetes#137820)")
    status = checks[guard].status
    if status == "invalid":
        msg = (
            f"source {guard} {checks[guard].stored} does not match the computed "
            f"{checks[guard].computed}: the file is corrupted or was edited by hand"
        )
        if not force:
            raise ConversionError(f"refusing to convert: {msg} (use force to convert anyway)")
        notes.append(f"forced: {msg}")
    elif status == "unverified":
        notes.append(f"source {guard} is 0: not verified")
    if guard == "dataChecksum" and checks["checksum"].status == "invalid":
        notes.append("the source's inline checksum is invalid; the inline part is rewritten")
    return notes


def _source_state(tree: Any, info: VersionInfo, force: bool, lost: list[str]) -> State:
    """The source's content; values that do not parse refuse the conversion unless
    ``force`` (then they are listed in ``lost``)."""
    fc = file_content(tree, info)
    if fc.state is None:
        raise ConversionError(
            "cannot convert: the content does not decode: " + "; ".join(fc.problems)
        )
    if fc.problems:
        if not force:
            raise ConversionError(
                "refusing to convert: " + "; ".join(fc.problems) + " (use force to drop them)"
            )
        lost.extend(f"unparsable value dropped: {p}" for p in fc.problems)
    return fc.state


def _version(to_version: str | int | None, target: Reader | None, manager: str) -> str:
    """The version to write: the one asked for, else the one ``target`` writes."""
    if to_version is None:
        if target is None:
            raise ConversionError("give the version to write or a target release")
        return version_for(manager, target)
    versions = C.CPU_VERSIONS if manager == CPU else M.MEMORY_VERSIONS
    try:
        return C.normalise_version(to_version, versions)
    except CheckpointError as exc:
        raise ConversionError(exc.message) from None


def _after(state: Any, version: str) -> Any:
    """The content the written file holds (pod entries gone for versions without them)."""
    if isinstance(state, CPUCheckpointState) and version in ("V1", "V2"):
        return CPUCheckpointState(
            state.policy_name, state.default_cpu_set, state.entries, None, state.container_entries
        )
    if isinstance(state, MemoryCheckpointState) and version == "V1":
        return MemoryCheckpointState(state.policy_name, state.machine_state, state.entries, None)
    return state


def _drop_pod_entries(state: Any, lost: list[str], notes: list[str], version: str) -> None:
    pods = state.pod_entries or {}
    for uid in sorted(pods):
        lost.append(describe_pod_entry(state, uid))
        gap = uncovered_pod_entry(state, uid)
        if gap:
            notes.append(
                f"{version} has no pod entries and the container entries do not hold {gap}: "
                "a kubelet's start-up validation (validateState) refuses the file"
            )


def _convert_cpu(
    state: CPUCheckpointState,
    version: str,
    initial: Mapping[str, Sequence[str]] | None,
    lost: list[str],
    notes: list[str],
) -> str:
    entries: dict[str, dict[str, Any]] = {pod: dict(c) for pod, c in state.entries.items()}
    if state.container_entries is not None and version != "V1":
        _migrate_container_ids(state.container_entries, initial, version, entries)
        notes.append("V1 container-ID entries migrated with the container list")
    container_entries: dict[str, Any] | None = None
    if version == "V1":
        if state.container_entries is not None:
            container_entries = dict(state.container_entries)
        else:
            container_entries = _container_id_entries(state, initial)
        entries = {}
    pod_entries = state.pod_entries
    if version in ("V1", "V2") and pod_entries:
        _drop_pod_entries(state, lost, notes, version)
    out_state = CPUCheckpointState(
        state.policy_name,
        state.default_cpu_set,
        entries,
        pod_entries if version in ("V3", "V4") else None,
        container_entries,
    )
    return C.write_cpu_checkpoint(out_state, version)


def _migrate_container_ids(
    container_entries: Mapping[str, Any],
    initial: Mapping[str, Sequence[str]] | None,
    version: str,
    entries: dict[str, dict[str, Any]],
) -> None:
    """V1 entries (container ID -> cpuset) into ``entries`` (pod -> container -> cpuset) with
    the runtime's container list, as the kubelet's V1 -> V2 migration does."""
    if container_entries and initial is None:
        raise ConversionError(
            "a V1 file keys entries by container ID: give initial_containers "
            "(container ID -> pod UID, container name) to convert to " + version
        )
    for cid, cset in sorted(container_entries.items()):
        ref = (initial or {}).get(cid)
        if ref is None:
            raise ConversionError(f"containerID '{cid}' not found in initial containers list")
        entries.setdefault(ref[0], {})[ref[1]] = cset


def _container_id_entries(
    state: CPUCheckpointState, initial: Mapping[str, Sequence[str]] | None
) -> dict[str, Any]:
    """The state's entries keyed by container ID (V1), found in the container list."""
    by_ref = {(ref[0], ref[1]): cid for cid, ref in (initial or {}).items()}
    container_entries: dict[str, Any] = {}
    for pod, containers in sorted(state.entries.items()):
        for name, cset in sorted(containers.items()):
            found = by_ref.get((pod, name))
            if found is None:
                raise ConversionError(
                    f"V1 keys entries by container ID: no container ID for pod {pod!r} "
                    f"container {name!r} in initial_containers"
                )
            container_entries[found] = cset
    return container_entries


def _convert_memory(
    state: MemoryCheckpointState, version: str, lost: list[str], notes: list[str]
) -> str:
    if version == "V1" and state.pod_entries:
        _drop_pod_entries(state, lost, notes, version)
        state = MemoryCheckpointState(state.policy_name, state.machine_state, state.entries, None)
    return M.write_memory_checkpoint(state, version)


__all__ = ["MEMORY", "ConversionResult", "convert", "version_for"]

"""Inspection of a state file: detected manager, version and release family, every checksum
with its status, the content, and a verdict per kubelet release (spec ``checkpoints.md`` §8,
``users.md`` §5.3).

Verdicts:

* ``compatible``: the release starts with the file's content;
* ``compatible-with-loss``: it starts, but without something the file holds: pod-level entries
  dropped by a gate-on reader (1.36 reading a 1.37 file), pod entries a gate-off reader ignores
  while the pod's resources are not covered by its containers (start-up validation may then
  fail, spec §8 "Uncertain"), or an inline part that differs from ``data``;
* ``will-fail``: the kubelet refuses to start; ``error`` is its text;
* ``policy-mismatch``: the file reads, but its policy differs from the configured one.

``inspect`` never raises for bad input: truncated text, non-JSON, wrong types, files over
16 MiB and hostile nesting all give a report with ``readable = False`` or will-fail verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.checkpoint.consistency import check_consistency
from app.domain.checkpoint.content import FileContent, State, file_content
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import (
    CPU,
    FILE_NAMES,
    MEMORY,
    VersionInfo,
    detect_tree,
    normalise_manager,
    parse_checkpoint_text,
)
from app.domain.checkpoint.errors import CheckpointError
from app.domain.checkpoint.findings import ChecksumReport, Issue, checksum_reports
from app.domain.checkpoint.gotext import go_text
from app.domain.checkpoint.loading import DEFAULT_STATE_DIR, LoadResult
from app.domain.checkpoint.memory_state import Block, MemoryCheckpointState
from app.domain.checkpoint.reader import TARGETS, Reader
from app.domain.checkpoint.readers import load_checkpoint
from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology

COMPATIBLE = "compatible"
COMPATIBLE_WITH_LOSS = "compatible-with-loss"
WILL_FAIL = "will-fail"
POLICY_MISMATCH = "policy-mismatch"
VERDICTS = (COMPATIBLE, COMPATIBLE_WITH_LOSS, WILL_FAIL, POLICY_MISMATCH)


@dataclass(frozen=True, slots=True)
class TargetVerdict:
    """What one kubelet release does with the file."""

    target: str
    label: str
    release: str
    gate: bool
    verdict: str
    loaded_as: str | None = None
    lost: tuple[str, ...] = ()
    error: str | None = None
    message: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "label": self.label,
            "release": self.release,
            "gate": self.gate,
            "verdict": self.verdict,
            "loadedAs": self.loaded_as,
            "lost": list(self.lost),
            "error": self.error,
            "message": self.message,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class InspectionReport:
    """Everything known about one state file."""

    readable: bool
    size: int
    manager: str | None = None
    version: VersionInfo | None = None
    policy_name: str | None = None
    checksums: tuple[ChecksumReport, ...] = ()
    state: State | None = None
    inline_state: State | None = None
    verdicts: tuple[TargetVerdict, ...] = ()
    issues: tuple[Issue, ...] = ()
    error: str | None = None

    def verdict_for(self, target: str) -> TargetVerdict | None:
        for v in self.verdicts:
            if v.target == target:
                return v
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; checkpoint data keeps the kubelet's key names."""
        vi = self.version
        return {
            "readable": self.readable,
            "size": self.size,
            "manager": self.manager,
            "file": FILE_NAMES.get(self.manager or ""),
            "version": vi.version if vi else None,
            "label": vi.label if vi else None,
            "family": vi.family if vi else None,
            "display": vi.display if vi else None,
            "header": vi.header if vi else None,
            "policyName": self.policy_name,
            "checksums": [c.to_dict() for c in self.checksums],
            "state": self.state.to_dict() if self.state is not None else None,
            "inlineState": self.inline_state.to_dict() if self.inline_state is not None else None,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "issues": [i.to_dict() for i in self.issues],
            "error": self.error,
        }


# -- verdicts -----------------------------------------------------------------------------------------


def _fmt_blocks(blocks: Sequence[Block]) -> str:
    return ", ".join(
        f"{b.type} {b.size} bytes on NUMA {','.join(map(str, b.numa_affinity)) or '-'}"
        for b in blocks
    )


def _describe_pod_entry(state: State, uid: str) -> str:
    if isinstance(state, CPUCheckpointState):
        cset = (state.pod_entries or {}).get(uid, CPUSet())
        return f"podEntries[{uid}] (cpuSet {str(cset) or 'empty'})"
    assert isinstance(state, MemoryCheckpointState)
    blocks = (state.pod_entries or {}).get(uid, ())
    return f"podEntries[{uid}] ({_fmt_blocks(blocks) or 'no blocks'})"


def _uncovered(state: State, uid: str) -> str | None:
    """What of a pod entry no container entry of the pod accounts for (``None``: covered)."""
    if isinstance(state, CPUCheckpointState):
        pod = (state.pod_entries or {}).get(uid, CPUSet())
        held = CPUSet().union(*state.entries.get(uid, {}).values())
        rest = pod - held
        return f"CPUs {rest} of pod {uid}" if rest else None
    assert isinstance(state, MemoryCheckpointState)
    pod_totals: dict[str, int] = {}
    for b in (state.pod_entries or {}).get(uid, ()):
        pod_totals[b.type] = pod_totals.get(b.type, 0) + b.size
    held_bytes: dict[str, int] = {}
    for blocks in state.entries.get(uid, {}).values():
        for b in blocks:
            held_bytes[b.type] = held_bytes.get(b.type, 0) + b.size
    diff = [f"{t} {n} bytes" for t, n in sorted(pod_totals.items()) if held_bytes.get(t, 0) != n]
    return f"{', '.join(diff)} of pod {uid}" if diff else None


def _state_differences(content: State, read: State) -> list[str]:
    out: list[str] = []
    if content.policy_name != read.policy_name:
        out.append(
            f"policyName: the file's data has {content.policy_name!r}, read {read.policy_name!r}"
        )
    if isinstance(content, CPUCheckpointState) and isinstance(read, CPUCheckpointState):
        if content.container_entries is not None:
            return out
        if content.default_cpu_set != read.default_cpu_set:
            out.append(
                f"defaultCpuSet: the file's data has {str(content.default_cpu_set)!r}, read "
                f"{str(read.default_cpu_set)!r}"
            )
        if dict(content.entries) != dict(read.entries):
            out.append("entries: the container entries read differ from the file's data")
    elif isinstance(content, MemoryCheckpointState) and isinstance(read, MemoryCheckpointState):
        if dict(content.machine_state) != dict(read.machine_state):
            out.append("machineState: the machine state read differs from the file's data")
        if dict(content.entries) != dict(read.entries):
            out.append("entries: the container entries read differ from the file's data")
    return out


def _verdict(
    result: LoadResult, content: State | None, info: VersionInfo | None, synthetic: bool
) -> TargetVerdict:
    r = result.reader
    notes: list[str] = list(result.notes)

    def make(verdict: str, **kw: Any) -> TargetVerdict:
        return TargetVerdict(
            r.key, r.label, r.release, r.gate, verdict, loaded_as=result.loaded_as, **kw
        )

    if info is not None and info.manager == CPU and info.version == "V1":
        if r.line == "1.37":
            notes.append(
                "uncertain: whether 1.37 still falls back to V1 files is not confirmed upstream; "
                "modelled on the 1.37 loader, whose oldest version is V2"
            )
        elif r.line != "1.17" and synthetic:
            notes.append(
                "V1 entries are migrated with the runtime's container list: every container ID "
                "must still exist on the node"
            )
    if info is not None and info.manager == MEMORY and r.line == "1.36":
        notes.append("uncertain: whether 1.36 accepts a zero memory checksum (modelled: no)")
    if not result.accepted:
        verdict = POLICY_MISMATCH if result.policy_mismatch else WILL_FAIL
        return make(verdict, error=result.error, message=result.message, notes=tuple(notes))
    if result.ignored or result.state is None or content is None:
        return make(COMPATIBLE, notes=tuple(notes))
    read = result.state
    file_pods = content.pod_entries or {}
    kept = read.pod_entries or {}
    dropped = [uid for uid in sorted(file_pods) if uid not in kept]
    lost: list[str] = []
    verdict = COMPATIBLE
    if dropped:
        if r.gate:
            verdict = COMPATIBLE_WITH_LOSS
            lost.extend(_describe_pod_entry(content, uid) for uid in dropped)
        else:
            notes.append(
                "pod-level entries are ignored by this release (PodLevelResourceManagers off): "
                + ", ".join(dropped)
            )
            uncovered = [u for u in (_uncovered(content, uid) for uid in dropped) if u]
            if uncovered:
                verdict = COMPATIBLE_WITH_LOSS
                lost.extend(_describe_pod_entry(content, uid) for uid in dropped)
                notes.append(
                    "not held by any container entry: "
                    + "; ".join(uncovered)
                    + " — start-up validation works from container entries alone and may fail "
                    "(spec §8, uncertain)"
                )
    stale = sorted(set(kept) - set(file_pods))
    if stale:
        notes.append(
            "pod entries restored that the file's current content does not hold (left over "
            "from a failed newer-format attempt): " + ", ".join(stale)
        )
    differences = _state_differences(content, read)
    if differences:
        verdict = COMPATIBLE_WITH_LOSS
        lost.extend(differences)
    return make(verdict, lost=tuple(lost), notes=tuple(notes))


def _size(content: str | bytes) -> int:
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass"))
    return len(content)


def inspect(
    content: str | bytes,
    manager: str | None = None,
    *,
    configured_policy: str | None = None,
    initial_containers: Mapping[str, Sequence[str]] | None = None,
    targets: Sequence[Reader] = TARGETS,
    state_dir: str = DEFAULT_STATE_DIR,
    consistency: bool = False,
    topology: CPUTopology | None = None,
    reserved_cpus: CPUSet | None = None,
    live_pod_uids: Iterable[str] | None = None,
) -> InspectionReport:
    """Inspect a state file (bytes or text). ``manager`` (``cpu``/``memory`` or the file name)
    is detected when omitted. ``configured_policy`` enables the policy comparison.
    ``consistency`` adds the issues of ``check_consistency`` on the content (implied by
    ``topology``, ``reserved_cpus`` or ``live_pod_uids``, the last for ``stale-entry``
    issues). Never raises for bad file content."""
    size = _size(content)
    issues: list[Issue] = []
    mgr: str | None = None
    if manager is not None:
        try:
            mgr = normalise_manager(manager)
        except CheckpointError as exc:
            return InspectionReport(False, size, error=exc.message)
    try:
        text, tree = _parse(content)
    except CheckpointError as exc:
        issues.append(Issue("unreadable", "error", exc.message))
        verdicts = _verdicts_for_unreadable(content, mgr, configured_policy, targets, state_dir)
        return InspectionReport(
            False,
            size,
            manager=mgr,
            verdicts=verdicts,
            issues=tuple(issues),
            error=exc.message,
        )
    try:
        info = detect_tree(tree, mgr)
    except CheckpointError as exc:
        issues.append(Issue("unknown-format", "error", exc.message))
        verdicts = _verdicts_for_unreadable(text, mgr, configured_policy, targets, state_dir)
        return InspectionReport(
            False, size, manager=mgr, verdicts=verdicts, issues=tuple(issues), error=exc.message
        )
    mgr = info.manager
    fc: FileContent = file_content(tree, info)
    for problem in fc.problems:
        issues.append(Issue("content-error", "error", problem))
    checks = checksum_reports(tree, info)
    for c in checks:
        if c.status == "invalid":
            issues.append(
                Issue(
                    "checksum-invalid",
                    "error",
                    f"{c.field} {c.stored} does not match the computed {c.computed} ({c.algorithm})",
                )
            )
    if info.version == "V4-reverted":
        issues.append(
            Issue(
                "unreleased-format",
                "warning",
                "the single-checksum V4 layout (kubernetes#137820) was reverted before any "
                "release; no kubelet reads it",
            )
        )
    if info.manager == CPU and info.version == "V3" and info.header == "v3name":
        issues.append(
            Issue(
                "v3-type-name",
                "warning",
                "the checksum was computed under state.CPUManagerCheckpointV3: 1.37 accepts "
                "it, a released 1.36 does not",
            )
        )
    if fc.inline is not None and fc.state is not None:
        for diff in _state_differences(fc.state, fc.inline):
            issues.append(Issue("inline-differs", "warning", "inline part vs data: " + diff))
    synthetic = False
    containers = initial_containers
    state = fc.state
    wants_checks = consistency or topology is not None or reserved_cpus is not None
    if state is not None and (wants_checks or live_pod_uids is not None):
        issues.extend(
            check_consistency(
                state if isinstance(state, CPUCheckpointState) else None,
                state if isinstance(state, MemoryCheckpointState) else None,
                topology,
                reserved_cpus=reserved_cpus,
                live_pod_uids=live_pod_uids,
            )
        )
    if containers is None and isinstance(state, CPUCheckpointState) and state.container_entries:
        synthetic = True
        containers = {cid: (f"(pod of {cid})", cid) for cid in state.container_entries}
    found: list[TargetVerdict] = []
    for target in targets:
        reader = target.with_policy(configured_policy)
        result = load_checkpoint(text, mgr, reader, containers, state_dir)
        found.append(_verdict(result, state, info, synthetic))
    return InspectionReport(
        readable=True,
        size=size,
        manager=mgr,
        version=info,
        policy_name=state.policy_name if state is not None else None,
        checksums=checks,
        state=state,
        inline_state=fc.inline,
        verdicts=tuple(found),
        issues=tuple(issues),
    )


def _parse(content: str | bytes) -> tuple[str, Any]:
    return parse_checkpoint_text(content)


def _verdicts_for_unreadable(
    content: str | bytes,
    mgr: str | None,
    configured_policy: str | None,
    targets: Sequence[Reader],
    state_dir: str,
) -> tuple[TargetVerdict, ...]:
    """Readers' outcomes for a file that is not a checkpoint (needs the manager)."""
    if mgr is None:
        return ()
    try:
        text = go_text(content)
    except CheckpointError:
        return ()
    out = []
    for target in targets:
        result = load_checkpoint(text, mgr, target.with_policy(configured_policy), None, state_dir)
        out.append(_verdict(result, None, None, False))
    return tuple(out)


__all__ = [
    "COMPATIBLE",
    "COMPATIBLE_WITH_LOSS",
    "POLICY_MISMATCH",
    "VERDICTS",
    "WILL_FAIL",
    "ChecksumReport",
    "InspectionReport",
    "Issue",
    "TargetVerdict",
    "inspect",
]

"""Inspection of a state file: detected manager, version and release family, every checksum
with its status, the content, and a verdict per kubelet release (spec ``checkpoints.md`` §8,
``users.md`` §5.3; the verdicts are ``target_verdict``'s).

``inspect`` never raises for bad input: truncated text, non-JSON, wrong types, files over
16 MiB and hostile nesting all give a report with ``readable = False`` or will-fail verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain import releases
from app.domain.checkpoint.consistency import check_consistency
from app.domain.checkpoint.content import FileContent, State, file_content
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import (
    CPU,
    FILE_NAMES,
    VersionInfo,
    detect_tree,
    normalise_manager,
    parse_checkpoint_text,
)
from app.domain.checkpoint.errors import CheckpointError
from app.domain.checkpoint.findings import ChecksumReport, Issue, checksum_reports
from app.domain.checkpoint.gotext import go_text
from app.domain.checkpoint.loading import DEFAULT_STATE_DIR
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.reader import TARGETS, Reader
from app.domain.checkpoint.readers import load_checkpoint
from app.domain.checkpoint.target_verdict import (
    TargetVerdict,
    state_differences,
    verdict_for_result,
)
from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology


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


def _size(content: str | bytes) -> int:
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass"))
    return len(content)


def _content_issues(
    fc: FileContent, checks: Sequence[ChecksumReport], info: VersionInfo
) -> list[Issue]:
    """What is wrong with the file itself: content errors, invalid checksums, an unreleased
    layout, the V3 type name no release accepts, an inline part that differs from the data."""
    issues: list[Issue] = []
    for problem in fc.problems:
        issues.append(Issue("content-error", "error", problem))
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
                "the checksum was computed under state.CPUManagerCheckpointV3: "
                f"{releases.NEWEST_CHECKPOINT_LINE} accepts it, a released {releases.GATE_SINCE} "
                "does not",
            )
        )
    if fc.inline is not None and fc.state is not None:
        for diff in state_differences(fc.state, fc.inline):
            issues.append(Issue("inline-differs", "warning", "inline part vs data: " + diff))
    return issues


def _target_verdicts(
    text: str,
    mgr: str,
    state: State | None,
    info: VersionInfo,
    targets: Sequence[Reader],
    configured_policy: str | None,
    initial_containers: Mapping[str, Sequence[str]] | None,
    state_dir: str,
    pod_names: Mapping[str, str] | None,
) -> list[TargetVerdict]:
    """What each target release does with the readable file; V1's container IDs stand for
    pods of their own when the caller does not know the pods."""
    synthetic = False
    containers = initial_containers
    if containers is None and isinstance(state, CPUCheckpointState) and state.container_entries:
        synthetic = True
        containers = {cid: (f"(pod of {cid})", cid) for cid in state.container_entries}
    found: list[TargetVerdict] = []
    for target in targets:
        reader = target.with_policy(configured_policy)
        result = load_checkpoint(text, mgr, reader, containers, state_dir)
        found.append(verdict_for_result(result, state, info, synthetic, names=pod_names))
    return found


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
    pod_names: Mapping[str, str] | None = None,
) -> InspectionReport:
    """Inspect a state file (bytes or text). ``manager`` (``cpu``/``memory`` or the file name)
    is detected when omitted. ``configured_policy`` enables the policy comparison.
    ``consistency`` adds the issues of ``check_consistency`` on the content (implied by
    ``topology``, ``reserved_cpus`` or ``live_pod_uids``, the last for ``stale-entry``
    issues). ``pod_names`` (uid -> ``namespace/name``) names the pods of lost entries. Never
    raises for bad file content."""
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
    checks = checksum_reports(tree, info)
    issues.extend(_content_issues(fc, checks, info))
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
    found = _target_verdicts(
        text, mgr, state, info, targets, configured_policy, initial_containers, state_dir, pod_names
    )
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
        out.append(verdict_for_result(result, None, None, False))
    return tuple(out)


__all__ = ["InspectionReport", "inspect"]

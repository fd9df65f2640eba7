"""Inspection of a state file: detected manager, version and release family, every checksum
with its status, the content, and a verdict per kubelet release (spec ``checkpoints.md`` §8,
``users.md`` §5.3; the verdicts are ``target_verdict``'s).

``inspect`` never raises for bad input: truncated text, non-JSON, wrong types, files over
16 MiB and hostile nesting all give a report with ``readable = False`` or will-fail verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    sniff_manager,
)
from app.domain.checkpoint.errors import CheckpointError
from app.domain.checkpoint.findings import ChecksumReport, Issue, checksum_reports
from app.domain.checkpoint.gojson_scan import TreeMemo
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
from app.domain.golang.strconv import go_quote
from app.domain.kubelet_config import CPU_POLICIES, MEMORY_POLICIES
from app.domain.topology.model import CPUTopology


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


def _forced_manager_issues(tree: Any, forced: str | None, mgr: str) -> list[Issue]:
    """A manager named by the caller that the content contradicts: the readers still run as
    that manager's (it is what the kubelet does with the file under that name), but the
    report must not pass the file off as that manager's state."""
    if forced is None:
        return []
    named = sniff_manager(tree)
    if named is None or named == mgr:
        return []
    return [
        Issue(
            "manager-mismatch",
            "error",
            f"the file was inspected as the {mgr} manager's state, but by its keys it is a "
            f"{named}_manager_state; the {mgr} manager's readers below judge it under that name",
        )
    ]


def _policy_name_issues(state: object, mgr: str) -> list[Issue]:
    """A policy name no kubelet has. The kubelet compares the file's policy with its configured
    one at start (``configured policy %q differs from state checkpoint policy %q``) and the
    configured one is always a real policy, so such a file never starts; the verdicts, asked
    without a configured policy, assume the two match. The name is quoted (Go's ``%q``) and
    cut, never echoed raw."""
    name = getattr(state, "policy_name", None)
    known = CPU_POLICIES if mgr == CPU else MEMORY_POLICIES
    if name is None or name in known:
        return []
    shown = go_quote(name if len(name) <= 64 else name[:64]) + ("…" if len(name) > 64 else "")
    return [
        Issue(
            "unknown-policy",
            "error",
            f"policyName {shown} is no {mgr} manager policy (the kubelet has "
            + " and ".join(f'"{p}"' for p in known)
            + "): every kubelet refuses the file at start ('configured policy … differs from "
            "state checkpoint policy …'); the verdicts below assume a configuration that "
            "matches the file, which no kubelet can have",
        )
    ]


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
    findings: bool = True,
) -> InspectionReport:
    """Inspect a state file (bytes or text). ``manager`` (``cpu``/``memory`` or the file name)
    is detected when omitted. ``configured_policy`` enables the policy comparison.
    ``consistency`` adds the issues of ``check_consistency`` on the content (implied by
    ``topology``, ``reserved_cpus`` or ``live_pod_uids``, the last for ``stale-entry``
    issues). ``pod_names`` (uid -> ``namespace/name``) names the pods of lost entries.
    ``findings`` false leaves the checksums and the issues of a readable file out (the
    version, content and verdicts are the same: what a start-up judgement reads). Never
    raises for bad file content."""
    return _Inspection(
        configured_policy,
        initial_containers,
        targets,
        state_dir,
        consistency,
        topology,
        reserved_cpus,
        live_pod_uids,
        pod_names,
        findings,
    ).run(content, manager)


#: Reports kept per parsed file: a node's upgrade check inspects each file for the release
#: twice (the inspector's verdict and the start-up model's losses) and nodes share files
#: (``InspectionReport`` is immutable). A report with findings answers for one without.
_inspected = TreeMemo()


@dataclass(frozen=True, slots=True)
class _Inspection:
    """One ``inspect`` call: its options, and the steps of the report."""

    configured_policy: str | None
    initial_containers: Mapping[str, Sequence[str]] | None
    targets: Sequence[Reader]
    state_dir: str
    consistency: bool
    topology: CPUTopology | None
    reserved_cpus: CPUSet | None
    live_pod_uids: Iterable[str] | None
    pod_names: Mapping[str, str] | None
    findings: bool = True

    def run(self, content: str | bytes, manager: str | None) -> InspectionReport:
        size = _size(content)
        mgr: str | None = None
        if manager is not None:
            try:
                mgr = normalise_manager(manager)
            except CheckpointError as exc:
                return InspectionReport(False, size, error=exc.message)
        try:
            text, tree = _parse(content)
        except CheckpointError as exc:
            return self._unreadable(content, size, mgr, "unreadable", exc)
        key = self._memo_key(mgr, manager is not None, size)
        if key is None:
            return self._report(text, tree, size, mgr, manager)
        known, kept = _inspected.get(tree, True, *key)
        if not known and not self.findings:
            known, kept = _inspected.get(tree, False, *key)
        if known:
            assert isinstance(kept, InspectionReport)
            return kept
        core: InspectionReport | None = None
        if self.findings:
            known, core = _inspected.get(tree, False, *key)
        report = self._report(text, tree, size, mgr, manager, core)
        _inspected.put(tree, report, self.findings, *key)
        return report

    def _memo_key(self, mgr: str | None, forced: bool, size: int) -> tuple[Any, ...] | None:
        """What the report of a kept tree depends on besides the tree (``None``: options
        that are not kept, a topology or a list of live pods)."""
        if (
            self.initial_containers is not None
            or self.consistency
            or self.topology is not None
            or self.reserved_cpus is not None
            or self.live_pod_uids is not None
        ):
            return None
        names = tuple(sorted(self.pod_names.items())) if self.pod_names else None
        readers = tuple(self._reader(t) for t in self.targets)
        return (mgr, forced, size, self.configured_policy, readers, self.state_dir, names)

    def _report(
        self,
        text: str,
        tree: Any,
        size: int,
        mgr: str | None,
        manager: str | None,
        core: InspectionReport | None = None,
    ) -> InspectionReport:
        """The report on a parsed file (``core``: its report without findings, if known)."""
        try:
            info = detect_tree(tree, mgr)
        except CheckpointError as exc:
            return self._unreadable(text, size, mgr, "unknown-format", exc)
        fc: FileContent = file_content(tree, info, text)
        if core is None:
            core = InspectionReport(
                readable=True,
                size=size,
                manager=info.manager,
                version=info,
                policy_name=fc.state.policy_name if fc.state is not None else None,
                state=fc.state,
                inline_state=fc.inline,
                verdicts=tuple(self._verdicts(text, info, fc.state)),
            )
        if not self.findings:
            return core
        checks = checksum_reports(tree, info)
        issues = _forced_manager_issues(tree, manager, info.manager)
        issues += _content_issues(fc, checks, info)
        issues += self._state_issues(fc.state, info.manager)
        return replace(core, checksums=checks, issues=tuple(issues))

    def _state_issues(self, state: State | None, mgr: str) -> list[Issue]:
        """The policy name, and the consistency checks when asked for."""
        issues = _policy_name_issues(state, mgr)
        wants_checks = self.consistency or self.topology is not None
        if state is not None and (
            wants_checks or self.reserved_cpus is not None or self.live_pod_uids is not None
        ):
            issues += check_consistency(
                state if isinstance(state, CPUCheckpointState) else None,
                state if isinstance(state, MemoryCheckpointState) else None,
                self.topology,
                reserved_cpus=self.reserved_cpus,
                live_pod_uids=self.live_pod_uids,
            )
        return issues

    def _verdicts(self, text: str, info: VersionInfo, state: State | None) -> list[TargetVerdict]:
        """What each target release does with the readable file; V1's container IDs stand
        for pods of their own when the caller does not know the pods."""
        synthetic = False
        containers = self.initial_containers
        if containers is None and isinstance(state, CPUCheckpointState) and state.container_entries:
            synthetic = True
            containers = {cid: (f"(pod of {cid})", cid) for cid in state.container_entries}
        return [
            verdict_for_result(
                load_checkpoint(
                    text, info.manager, self._reader(target), containers, self.state_dir
                ),
                state,
                info,
                synthetic,
                names=self.pod_names,
            )
            for target in self.targets
        ]

    def _reader(self, target: Reader) -> Reader:
        return target.with_policy(self.configured_policy)

    def _unreadable(
        self, content: str | bytes, size: int, mgr: str | None, code: str, exc: CheckpointError
    ) -> InspectionReport:
        """The report on a file that is not a checkpoint: readers' outcomes only (they need
        the manager)."""
        verdicts: tuple[TargetVerdict, ...] = ()
        if mgr is not None:
            try:
                text = go_text(content)
            except CheckpointError:
                text = None
            if text is not None:
                verdicts = tuple(
                    verdict_for_result(
                        load_checkpoint(text, mgr, self._reader(t), None, self.state_dir),
                        None,
                        None,
                        False,
                    )
                    for t in self.targets
                )
        return InspectionReport(
            False,
            size,
            manager=mgr,
            verdicts=verdicts,
            issues=(Issue(code, "error", exc.message),),
            error=exc.message,
        )


def _parse(content: str | bytes) -> tuple[str, Any]:
    return parse_checkpoint_text(content)


__all__ = ["InspectionReport", "inspect"]

"""The text ``numascope checkpoint`` prints: the inspection report, the conversion summary and
the root-dir check, laid out as padded tables (the ``--json`` forms are the services' own
``to_dict``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.services.checkpoints import ConvertOutcome, DirCheck, FileCheck, InspectionView, Table

VERDICT_MARK = {
    "compatible": "ok",
    "compatible-with-loss": "LOSS",
    "will-fail": "FAIL",
    "policy-mismatch": "POLICY",
    "missing": "-",
}


# -- text helpers --------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> str:
    """Columns padded to their widest cell; a cell may hold several lines."""
    split = [[cell.split("\n") for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in split:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in lines))
    out = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in split:
        height = max(len(lines) for lines in row)
        for n in range(height):
            cells = [
                (lines[n] if n < len(lines) else "").ljust(w)
                for lines, w in zip(row, widths, strict=True)
            ]
            out.append(indent + "  ".join(cells).rstrip())
    return "\n".join(out)


def _content_table(t: Table) -> str:
    if not t.rows:
        return f"{t.title}: none"
    return f"{t.title}\n{table([h.upper() for h in t.headers], t.rows)}"


def _issue_lines(issues: Sequence[Any]) -> list[str]:
    return [f"  {i.severity:<8} {i.code:<28} {i.message}" for i in issues]


def _checksum_table(checksums: Sequence[Any]) -> str:
    rows = [
        (
            c.field,
            str(c.stored) if c.stored is not None else "-",
            str(c.computed) if c.computed is not None else "-",
            c.status,
            c.algorithm + (f"\n{c.note}" if c.note else ""),
        )
        for c in checksums
    ]
    return table(("FIELD", "STORED", "COMPUTED", "STATUS", "ALGORITHM / NOTE"), rows)


def _verdict_lines(verdicts: Sequence[Any]) -> list[str]:
    """The per-release verdict table, then each distinct start-up failure message once with the
    releases that log it."""
    vrows: list[tuple[str, ...]] = []
    for v in verdicts:
        detail: list[str] = []
        detail.extend(f"lost: {x}" for x in v.lost)
        if v.error:
            detail.append(f"kubelet error: {v.error}")
        if v.why:
            detail.append(f"why: {v.why}")
        detail.extend(f"note: {n}" for n in v.notes)
        vrows.append(
            (
                v.label,
                f"{v.verdict} [{VERDICT_MARK.get(v.verdict, '?')}]",
                v.loaded_as or "-",
                "\n".join(detail) or "-",
            )
        )
    lines = [table(("TARGET", "VERDICT", "READ AS", "LOST / KUBELET ERROR / NOTES"), vrows)]
    messages: dict[str, list[str]] = {}
    for v in verdicts:
        if v.message:
            messages.setdefault(v.message, []).append(v.label)
    if messages:
        lines.append("")
        lines.append("Kubelet start-up failures (as logged)")
        for message, labels in messages.items():
            lines.append(f"  {', '.join(labels)}:")
            lines.append(f"    {message}")
    return lines


def _header_lines(view: InspectionView) -> list[str]:
    """The format, file, manager, policy and read error of the inspected file."""
    r = view.report
    lines: list[str] = []
    if r.version is not None:
        lines.append(f"{r.version.display}  ·  {r.version.label}")
    else:
        lines.append("format: not a readable checkpoint")
    lines.append(f"  file       {view.source} ({r.size} bytes)")
    if r.manager is not None:
        lines.append(f"  manager    {r.manager}")
    if r.readable:
        configured = (
            f"   (configured: {view.configured_policy})"
            if view.configured_policy is not None
            else ""
        )
        lines.append(f"  policy     {r.policy_name}{configured}")
    if r.error:
        lines.append(f"  error      {r.error}")
    return lines


def render_inspection(view: InspectionView) -> str:
    r = view.report
    lines = _header_lines(view)
    if r.checksums:
        lines.append("")
        lines.append("Checksums")
        lines.append(_checksum_table(r.checksums))
    for t in view.tables:
        lines.append("")
        lines.append(_content_table(t))
    if r.verdicts:
        lines.append("")
        lines.append("Compatibility (what a kubelet of each release does at start-up)")
        lines.extend(_verdict_lines(r.verdicts))
    issues = view.issues
    lines.append("")
    if issues:
        lines.append("Issues")
        lines.extend(_issue_lines(issues))
    else:
        lines.append("Issues: none")
    lines.append("")
    problems = view.problems
    if problems:
        lines.append("Result: PROBLEM — " + "; ".join(problems))
    else:
        lines.append("Result: OK (the file reads and its checksums verify)")
    return "\n".join(lines) + "\n"


def render_conversion(outcome: ConvertOutcome) -> str:
    r = outcome.result
    target = f" for a {r.target.label} kubelet" if r.target is not None else ""
    lines = [f"converted {outcome.source} ({r.source.label}) to {r.to_version}{target}"]
    if outcome.unchanged:
        lines.append(f"  {outcome.out} already holds exactly this content: left unchanged")
    else:
        size = len(r.content.encode("utf-8"))
        lines.append(f"  wrote {outcome.out} ({size} bytes, mode 0600, atomic rename)")
        if outcome.backup is not None:
            lines.append(f"  backup of the previous {outcome.out.name}: {outcome.backup}")
    if r.lost:
        lines.append("Lost in the conversion:")
        lines.extend(f"  - {x}" for x in r.lost)
    else:
        lines.append("Lost in the conversion: nothing")
    if r.notes:
        lines.append("Notes:")
        lines.extend(f"  - {x}" for x in r.notes)
    if r.verdict is not None:
        lines.append(f"A {r.verdict.label} kubelet: {r.verdict.verdict}")
    lines.append(
        "Write a kubelet's state files only while the kubelet is stopped; a starting kubelet "
        "rewrites them in its own newest format."
    )
    return "\n".join(lines) + "\n"


def _gate_text(check: DirCheck) -> str:
    t = check.target
    if not t.has_gate:
        return "PodLevelResourceManagers does not exist in this release"
    state = "on" if t.gate else "off"
    source = {
        "flag": "from --gate",
        "target": "from --target",
        "config": "from the kubelet configuration",
        "default": "the release default; pass --gate on if the kubelet enables it",
    }.get(check.gate_source, check.gate_source)
    return f"PodLevelResourceManagers {state} ({source})"


def _file_lines(f: FileCheck) -> list[str]:
    """One state file of the root dir: its verdict, what is lost or refused, invalid checksums,
    the rescues and advice."""
    lines: list[str] = []
    if not f.present:
        return [f"{f.name}: missing [-] (the kubelet starts with a fresh file)"]
    what = ""
    if f.view is not None and f.view.report.version is not None:
        what = f" — {f.view.report.version.label}, policy {f.view.report.policy_name}"
    lines.append(f"{f.name}: {f.status} [{VERDICT_MARK.get(f.status, '?')}]{what}")
    v = f.verdict
    if f.view is not None and not f.view.report.readable:
        lines.append(f"  unreadable: {f.view.report.error}")
    if v is not None:
        lines.extend(f"  lost: {x}" for x in v.lost)
        if v.error:
            lines.append(f"  kubelet error: {v.error}")
        if v.message:
            lines.append(f"  kubelet log: {v.message}")
        if v.why:
            lines.append(f"  why: {v.why}")
        lines.extend(f"  note: {n}" for n in v.notes)
    if f.view is not None:
        for c in f.view.report.checksums:
            if c.status == "invalid":
                lines.append(f"  {c.field} invalid: stored {c.stored}, computed {c.computed}")
    for rescue in f.rescues:
        lost = "; ".join(rescue.lost) if rescue.lost else "nothing"
        lines.append(f"  rescue: convert to {rescue.to_version} → {rescue.verdict}; loses {lost}")
        lines.extend(f"    note: {n}" for n in rescue.notes)
        lines.append(f"    {rescue.command}")
    lines.extend(f"  advice: {a}" for a in f.advice)
    return lines


def render_check(check: DirCheck) -> str:
    lines = [
        f"Kubelet root dir: {check.root}",
        f"Target:           {check.target.label} — {_gate_text(check)}",
    ]
    if check.config_path is not None and check.config_problem is None:
        pol = ", ".join(f"{m}: {p}" for m, p in check.policies.items() if p is not None)
        lines.append(f"Kubelet config:   {check.config_path} (policies {pol})")
    elif check.config_problem is not None:
        lines.append(f"Kubelet config:   unusable: {check.config_problem}")
    else:
        lines.append("Kubelet config:   none found (policies are not compared)")
    if check.pod_uids is None:
        lines.append("Pods dir:         none (stale entries are not checked)")
    else:
        lines.append(f"Pods dir:         {len(check.pod_uids)} pods (stale entries are checked)")
    for f in check.files:
        lines.append("")
        lines.extend(_file_lines(f))
    lines.append("")
    if check.issues:
        lines.append("Consistency of the pair")
        lines.extend(_issue_lines(check.issues))
    else:
        lines.append("Consistency of the pair: no issues")
    lines.append("")
    if check.ok:
        lines.append(f"Result: OK — a {check.target.label} kubelet starts with these files")
    else:
        bad = [f"{f.name} {f.status}" for f in check.files if not f.ok]
        bad += [f"{i.code}" for i in check.issues if i.severity == "error"]
        lines.append("Result: PROBLEM — " + ", ".join(bad))
    return "\n".join(lines) + "\n"

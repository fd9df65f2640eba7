"""``numascope checkpoint``: inspect, convert and check the kubelet's state files.

::

    numascope checkpoint inspect FILE [--manager cpu|memory] [--policy NAME] [--target T]
                                      [--json]
    numascope checkpoint convert FILE (--to VERSION | --release R) --out FILE [--force]
                                      [--manager cpu|memory] [--json]
    numascope checkpoint check DIR --target RELEASE [--gate on|off]
                                   [--kubelet-config-file FILE] [--json]

``inspect`` prints the format (per-manager version and release family), the policy, every
checksum with its stored and computed values, the entries and pod entries, the verdict of each
kubelet release (what is lost, the kubelet's error text) and consistency issues.

``convert`` writes FILE in another version (``--to``), or in the version a release writes
(``--release``; both may be given). It refuses a source whose checksum does not verify unless
``--force``. An existing ``--out`` is first copied to ``<out>.<UTC timestamp>.bak`` next to it
(e.g. ``cpu_manager_state.20250102T030405Z.bak``; never overwriting an earlier backup), then
replaced atomically (temporary file, fsync, rename, mode 0600), so ``--out`` may be FILE itself.
Write into a kubelet root dir only while the kubelet is stopped.

``check`` reads ``cpu_manager_state`` and ``memory_manager_state`` of a kubelet root dir
(read-only) and says what a kubelet of ``--target`` does with each: compatible,
compatible-with-loss (and what), will-fail (with the kubelet's text) or policy-mismatch (policies
from ``--kubelet-config-file`` or ``DIR/config.yaml``), checks the pair's consistency, and for a
failing or lossy file prints the conversion that rescues it. The gate comes from ``--gate``, a
target spelt ``1.36-gate-on``, the kubelet configuration, or the release default (off).

Exit codes: 0 ok; 1 a problem was found (``inspect``: unreadable or corrupted file, error
issues, policy mismatch; ``convert``: refused; ``check``: a file is not plainly compatible or
the pair has an error issue); 2 usage error (bad flags, missing or unreadable file or dir).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from app.services.checkpoints import (
    CheckpointFileError,
    CheckpointServiceError,
    CheckpointUsageError,
    ConversionRefusedError,
    ConvertOutcome,
    DirCheck,
    InspectionView,
    Table,
    check_root_dir,
    convert_file,
    inspect_path,
    parse_manager,
    parse_policy,
    parse_targets,
)

PROG = "numascope checkpoint"

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


def render_inspection(view: InspectionView) -> str:
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
    if r.checksums:
        lines.append("")
        lines.append("Checksums")
        rows = [
            (
                c.field,
                str(c.stored) if c.stored is not None else "-",
                str(c.computed) if c.computed is not None else "-",
                c.status,
                c.algorithm + (f"\n{c.note}" if c.note else ""),
            )
            for c in r.checksums
        ]
        lines.append(table(("FIELD", "STORED", "COMPUTED", "STATUS", "ALGORITHM / NOTE"), rows))
    for t in view.tables:
        lines.append("")
        lines.append(_content_table(t))
    if r.verdicts:
        lines.append("")
        lines.append("Compatibility (what a kubelet of each release does at start-up)")
        vrows: list[tuple[str, ...]] = []
        for v in r.verdicts:
            detail: list[str] = []
            detail.extend(f"lost: {x}" for x in v.lost)
            if v.error:
                detail.append(f"kubelet error: {v.error}")
            detail.extend(f"note: {n}" for n in v.notes)
            vrows.append(
                (
                    v.label,
                    f"{v.verdict} [{VERDICT_MARK.get(v.verdict, '?')}]",
                    v.loaded_as or "-",
                    "\n".join(detail) or "-",
                )
            )
        lines.append(table(("TARGET", "VERDICT", "READ AS", "LOST / KUBELET ERROR / NOTES"), vrows))
        messages: dict[str, list[str]] = {}
        for v in r.verdicts:
            if v.message:
                messages.setdefault(v.message, []).append(v.label)
        if messages:
            lines.append("")
            lines.append("Kubelet start-up failures (as logged)")
            for message, labels in messages.items():
                lines.append(f"  {', '.join(labels)}:")
                lines.append(f"    {message}")
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
    if t.line not in ("1.36", "1.37"):
        return "PodLevelResourceManagers does not exist in this release"
    state = "on" if t.gate else "off"
    source = {
        "flag": "from --gate",
        "target": "from --target",
        "config": "from the kubelet configuration",
        "default": "the release default; pass --gate on if the kubelet enables it",
    }.get(check.gate_source, check.gate_source)
    return f"PodLevelResourceManagers {state} ({source})"


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
        if not f.present:
            lines.append(f"{f.name}: missing [-] (the kubelet starts with a fresh file)")
            continue
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
            lines.extend(f"  note: {n}" for n in v.notes)
        if f.view is not None:
            for c in f.view.report.checksums:
                if c.status == "invalid":
                    lines.append(f"  {c.field} invalid: stored {c.stored}, computed {c.computed}")
        for rescue in f.rescues:
            lost = "; ".join(rescue.lost) if rescue.lost else "nothing"
            lines.append(
                f"  rescue: convert to {rescue.to_version} → {rescue.verdict}; loses {lost}"
            )
            lines.extend(f"    note: {n}" for n in rescue.notes)
            lines.append(f"    {rescue.command}")
        lines.extend(f"  advice: {a}" for a in f.advice)
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


# -- commands ------------------------------------------------------------------------------------


def _fail(action: str, message: str, code: int = 2) -> int:
    print(f"{PROG} {action}: error: {message}", file=sys.stderr)
    return code


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def cmd_inspect(args: argparse.Namespace) -> int:
    try:
        view = inspect_path(
            args.file,
            manager=parse_manager(args.manager),
            policy=parse_policy(args.policy),
            targets=parse_targets(args.target),
        )
    except (CheckpointUsageError, CheckpointFileError) as exc:
        return _fail("inspect", exc.message)
    if args.json:
        _print_json(view.to_dict())
    else:
        sys.stdout.write(render_inspection(view))
    return 0 if view.ok else 1


def cmd_convert(args: argparse.Namespace) -> int:
    try:
        outcome = convert_file(
            args.file,
            args.out,
            to_version=args.to,
            release=args.release,
            force=args.force,
            manager=parse_manager(args.manager),
        )
    except ConversionRefusedError as exc:
        return _fail("convert", exc.message, 1)
    except CheckpointServiceError as exc:
        return _fail("convert", exc.message)
    if args.json:
        _print_json(outcome.to_dict())
    else:
        sys.stdout.write(render_conversion(outcome))
    return 0


def _gate_arg(value: str | None) -> bool | None:
    if value is None:
        return None
    return value == "on"


def cmd_check(args: argparse.Namespace) -> int:
    try:
        check = check_root_dir(
            args.dir,
            args.target,
            gate=_gate_arg(args.gate),
            config_file=args.kubelet_config_file,
        )
    except CheckpointServiceError as exc:
        return _fail("check", exc.message)
    if args.json:
        _print_json(check.to_dict())
    else:
        sys.stdout.write(render_check(check))
    return 0 if check.ok else 1


# -- registration --------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "checkpoint",
        help="inspect, convert and check cpu_manager_state / memory_manager_state",
        description="The kubelet's CPU and memory manager state files: version, checksums, "
        "what each kubelet release does with them, safe conversions, pre-upgrade checks.",
    )
    actions = parser.add_subparsers(dest="checkpoint_command", metavar="ACTION")

    def _usage(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=_usage)

    manager_help = "cpu or memory (default: from the content, else from the file name)"

    ins = actions.add_parser(
        "inspect",
        help="version, checksums, content and per-release verdicts of a state file",
        description="Inspect a cpu_manager_state or memory_manager_state (or a copy of one). "
        "Exit 0 when the file reads and verifies, 1 when it does not, 2 on usage errors.",
    )
    ins.add_argument("file", metavar="FILE", help="the state file (read-only)")
    ins.add_argument("--manager", choices=("cpu", "memory", "auto"), help=manager_help)
    ins.add_argument(
        "--policy",
        metavar="NAME",
        help="the configured policy to compare with (CPU none|static, memory None|Static)",
    )
    ins.add_argument(
        "--target",
        metavar="RELEASES",
        help="only these releases, comma-separated (1.35, 1.36-gate-on, 1.37...; default all)",
    )
    ins.add_argument("--json", action="store_true", help="print the report as JSON")
    ins.set_defaults(func=cmd_inspect)

    con = actions.add_parser(
        "convert",
        help="write a state file in another version (with a backup of what --out held)",
        description="Convert a state file to another version. Refuses a source whose checksum "
        "does not verify unless --force. An existing --out is first kept as "
        "<out>.<UTC timestamp>.bak, then replaced atomically (mode 0600).",
    )
    con.add_argument("file", metavar="FILE", help="the source state file (read-only)")
    con.add_argument(
        "--to",
        metavar="VERSION",
        help="CPU V1-V4 or memory V1-V3 (default: what --release writes)",
    )
    con.add_argument(
        "--release",
        metavar="R",
        help="the kubelet that will read the file: 1.35, 1.36-gate-on, 1.37...; "
        "the result is checked against it",
    )
    con.add_argument("--out", required=True, metavar="FILE", help="where to write (may be FILE)")
    con.add_argument(
        "--force",
        action="store_true",
        help="convert even when the source checksum does not verify or the target would "
        "refuse the result",
    )
    con.add_argument("--manager", choices=("cpu", "memory", "auto"), help=manager_help)
    con.add_argument("--json", action="store_true", help="print what was done as JSON")
    con.set_defaults(func=cmd_convert)

    chk = actions.add_parser(
        "check",
        help="will a kubelet of a given release start with this root dir's state files?",
        description="Read cpu_manager_state and memory_manager_state of a kubelet root dir "
        "(read-only) and model a kubelet of --target starting on them. Exit 0 when both are "
        "compatible, 1 when something is lost or refused, 2 on usage errors.",
    )
    chk.add_argument("dir", metavar="DIR", help="the kubelet root dir (e.g. /var/lib/kubelet)")
    chk.add_argument(
        "--target",
        required=True,
        metavar="RELEASE",
        help="the release about to start: 1.17, 1.35, 1.36, 1.37 (or 1.36-gate-on...)",
    )
    chk.add_argument(
        "--gate",
        choices=("on", "off"),
        help="PodLevelResourceManagers of the target (default: kubelet config, else off)",
    )
    chk.add_argument(
        "--kubelet-config-file",
        metavar="FILE",
        help="the KubeletConfiguration (default DIR/config.yaml when present): policies, "
        "reserved CPUs and the gate",
    )
    chk.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    chk.set_defaults(func=cmd_check)

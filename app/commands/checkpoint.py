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

The text reports are laid out by ``app.commands.checkpoint_text``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from app.commands import add_actions, fail, print_answer
from app.commands.checkpoint_text import render_check, render_conversion, render_inspection
from app.domain import releases
from app.services.checkpoints import (
    CheckpointFileError,
    CheckpointServiceError,
    CheckpointUsageError,
    ConversionRefusedError,
    check_root_dir,
    convert_file,
    inspect_path,
    parse_manager,
    parse_policy,
    parse_targets,
)

PROG = "numascope checkpoint"


# -- commands ------------------------------------------------------------------------------------


def _fail(action: str, message: str, code: int = 2) -> int:
    return fail(f"{PROG} {action}", message, code)


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
    print_answer(args, view, lambda v: v.to_dict(), render_inspection, ensure_ascii=False)
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
    print_answer(args, outcome, lambda v: v.to_dict(), render_conversion, ensure_ascii=False)
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
    print_answer(args, check, lambda v: v.to_dict(), render_check, ensure_ascii=False)
    return 0 if check.ok else 1


# -- registration --------------------------------------------------------------------------------


_MANAGER_HELP = "cpu or memory (default: from the content, else from the file name)"
_RELEASE_EXAMPLES = (
    f"{releases.OLDEST}, {releases.GATE_SINCE}-gate-on, {releases.DEFAULT_RELEASE}..."
)


def _inspect_arguments(ins: Any) -> None:
    ins.add_argument("file", metavar="FILE", help="the state file (read-only)")
    ins.add_argument("--manager", choices=("cpu", "memory", "auto"), help=_MANAGER_HELP)
    ins.add_argument(
        "--policy",
        metavar="NAME",
        help="the configured policy to compare with (CPU none|static, memory None|Static)",
    )
    ins.add_argument(
        "--target",
        metavar="RELEASES",
        help=f"only these releases, comma-separated ({_RELEASE_EXAMPLES}; default all)",
    )


def _convert_arguments(con: Any) -> None:
    con.add_argument("file", metavar="FILE", help="the source state file (read-only)")
    con.add_argument(
        "--to",
        metavar="VERSION",
        help="CPU V1-V4 or memory V1-V3 (default: what --release writes)",
    )
    con.add_argument(
        "--release",
        metavar="R",
        help=f"the kubelet that will read the file: {_RELEASE_EXAMPLES}; "
        "the result is checked against it",
    )
    con.add_argument("--out", required=True, metavar="FILE", help="where to write (may be FILE)")
    con.add_argument(
        "--force",
        action="store_true",
        help="convert even when the source checksum does not verify or the target would "
        "refuse the result",
    )
    con.add_argument("--manager", choices=("cpu", "memory", "auto"), help=_MANAGER_HELP)


def _check_arguments(chk: Any) -> None:
    chk.add_argument("dir", metavar="DIR", help="the kubelet root dir (e.g. /var/lib/kubelet)")
    chk.add_argument(
        "--target",
        required=True,
        metavar="RELEASE",
        help="the release about to start: "
        f"{', '.join(list(releases.CHECKPOINT_FAMILIES)[:-1])} "
        f"(or {releases.GATE_SINCE}-gate-on...)",
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


# Each action: its name, what runs it, its own arguments, what --json prints, its help line
# and its description. Every action ends with --json and answers through ``run``.
_ACTIONS: tuple[
    tuple[str, Callable[[argparse.Namespace], int], Callable[[Any], None], str, str, str], ...
] = (
    (
        "inspect",
        cmd_inspect,
        _inspect_arguments,
        "the report",
        "version, checksums, content and per-release verdicts of a state file",
        "Inspect a cpu_manager_state or memory_manager_state (or a copy of one). "
        "Exit 0 when the file reads and verifies, 1 when it does not, 2 on usage errors.",
    ),
    (
        "convert",
        cmd_convert,
        _convert_arguments,
        "what was done",
        "write a state file in another version (with a backup of what --out held)",
        "Convert a state file to another version. Refuses a source whose checksum "
        "does not verify unless --force. An existing --out is first kept as "
        "<out>.<UTC timestamp>.bak, then replaced atomically (mode 0600).",
    ),
    (
        "check",
        cmd_check,
        _check_arguments,
        "the verdicts",
        "will a kubelet of a given release start with this root dir's state files?",
        "Read cpu_manager_state and memory_manager_state of a kubelet root dir "
        "(read-only) and model a kubelet of --target starting on them. Exit 0 when both are "
        "compatible, 1 when something is lost or refused, 2 on usage errors.",
    ),
)


def register(subparsers: Any) -> None:
    actions = add_actions(
        subparsers,
        "checkpoint",
        help="inspect, convert and check cpu_manager_state / memory_manager_state",
        description="The kubelet's CPU and memory manager state files: version, checksums, "
        "what each kubelet release does with them, safe conversions, pre-upgrade checks.",
    )
    for name, run, arguments, printed, help_line, description in _ACTIONS:
        parser = actions.add_parser(name, help=help_line, description=description)
        arguments(parser)
        parser.add_argument("--json", action="store_true", help=f"print {printed} as JSON")
        parser.set_defaults(func=run)

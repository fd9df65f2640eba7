"""Sub-commands of the ``numascope`` CLI, one module each.

Each module exports ``register(subparsers)`` which adds its parser and sets
``func=<callable(args) -> int>`` as the parser default. Exit codes: 0 ok, 1 problem
found, 2 usage error. The helpers here are how every command answers: an error line on
stderr, and its result as a text report or (``--json``) a JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def fail(prog: str, message: str, code: int = 2) -> int:
    """Say ``PROG: error: MESSAGE`` on stderr; the exit code to return."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return code


def print_answer(
    args: argparse.Namespace,
    value: T,
    document: Callable[[T], Any],
    report: Callable[[T], str],
    *,
    ensure_ascii: bool = True,
) -> None:
    """Print ``value`` as its JSON document when ``--json`` was given, else as its text
    report."""
    if args.json:
        print(json.dumps(document(value), indent=2, ensure_ascii=ensure_ascii))
    else:
        sys.stdout.write(report(value))


def add_actions(subparsers: Any, name: str, **texts: str) -> Any:
    """A command made of actions (``numascope NAME ACTION``, the action in
    ``args.<NAME>_command``): the sub-parsers to add the actions to. ``NAME`` alone prints
    its help and exits 2."""
    parser = subparsers.add_parser(name, **texts)
    actions = parser.add_subparsers(dest=f"{name}_command", metavar="ACTION")

    def _usage(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    parser.set_defaults(func=_usage)
    return actions

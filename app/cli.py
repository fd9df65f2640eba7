"""The ``numascope`` command: collects the sub-commands of ``app.commands``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

import app.commands as commands_pkg
from app import __version__


def build_parser() -> argparse.ArgumentParser:
    """The parser of every sub-command."""
    return _build(_modules())[0]


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(commands_pkg.__path__))


def _build(modules: Sequence[str]) -> tuple[argparse.ArgumentParser, set[str]]:
    """The parser of the sub-commands that ``modules`` register, and their names."""
    parser = argparse.ArgumentParser(
        prog="numascope",
        description="How a Kubernetes node's CPUs and memory are handed out by the kubelet.",
    )
    parser.add_argument("--version", action="version", version=f"numascope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        module = importlib.import_module(f"{commands_pkg.__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser, set(sub.choices)


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: only its command's when that command is registered by the
    module of its name (each command module imports what it runs: ``serve`` on a node need
    not load the checkpoint inspector's, issue 20 pt 7), else every command's."""
    if argv and argv[0] in _modules():
        parser, commands = _build([argv[0]])
        if argv[0] in commands:
            return parser
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = parser_for(argv)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""Run conformance case files (format: ../shared/conformance/README.md) against the engine.

``python -m app.conformance [--json] [--kind KIND] FILE...`` prints one line per failing
case and a last line ``N passed, M failed``; it exits 1 when anything fails.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import app.conformance_kinds as kinds_pkg
from app.conformance_kinds.common import Case, ConformanceInputError, release_of

Handler = Callable[[Case], list[str]]


@dataclass(frozen=True, slots=True)
class Outcome:
    id: str
    kind: str
    passed: bool
    problems: tuple[str, ...]


def load_handlers() -> dict[str, Handler]:
    handlers: dict[str, Handler] = {}
    for info in sorted(pkgutil.iter_modules(kinds_pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{kinds_pkg.__name__}.{info.name}")
        handlers.update(getattr(module, "HANDLERS", {}))
    return handlers


def load_cases(path: str) -> list[Case]:
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict) or doc.get("format") != "conformance/1":
        raise ValueError(f"{path}: not a conformance/1 file")
    fixtures = doc.get("fixtures") or {}
    return [
        Case(
            id=c["id"],
            kind=c["kind"],
            inputs=c.get("inputs") or {},
            expected=c.get("expected") or {},
            fixtures=fixtures,
        )
        for c in doc["cases"]
    ]


def run_case(case: Case, handlers: dict[str, Handler]) -> Outcome:
    handler = handlers.get(case.kind)
    if handler is None:
        return Outcome(case.id, case.kind, False, ("unsupported kind",))
    try:
        if "release" in case.inputs:
            release_of(case)  # README §2.6: every kind accepts it; a bad one fails the case
        problems = handler(case)
    except ConformanceInputError as exc:
        problems = [f"bad inputs: {exc}"]
    except Exception as exc:  # a crash is a failure of that case, not of the run
        problems = [f"raised {type(exc).__name__}: {exc}"]
    return Outcome(case.id, case.kind, not problems, tuple(problems))


def run_files(paths: Iterable[str], kinds: Sequence[str] = ()) -> list[Outcome]:
    handlers = load_handlers()
    outcomes = []
    for path in paths:
        for case in load_cases(path):
            if kinds and case.kind not in kinds:
                continue
            outcomes.append(run_case(case, handlers))
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.conformance", description=__doc__)
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    parser.add_argument("--kind", action="append", default=[], help="only run cases of KIND")
    args = parser.parse_args(argv)
    try:
        outcomes = run_files(args.files, args.kind)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    passed = sum(o.passed for o in outcomes)
    failed = len(outcomes) - passed
    if args.json:
        report: dict[str, Any] = {
            "passed": passed,
            "failed": failed,
            "failures": [
                {"id": o.id, "kind": o.kind, "problems": list(o.problems)}
                for o in outcomes
                if not o.passed
            ],
        }
        print(json.dumps(report, indent=2))
    else:
        for o in outcomes:
            if not o.passed:
                print(f"FAIL {o.id} [{o.kind}]: {'; '.join(o.problems)}")
        print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

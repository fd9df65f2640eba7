"""The ``kubelet_restart`` conformance cases (tests/conformance/restart.json, made by
make_restart_cases.py from upstream tests and the readers' rules, out of the in-repo
allocation.json and checkpoints.json) pass; the file is what the generator writes; a
falsified expectation fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.conformance import load_cases, load_handlers, run_case
from app.conformance_kinds.common import Case

HERE = Path(__file__).resolve().parent / "conformance"
FILE = HERE / "restart.json"
CASES = load_cases(str(FILE))
HANDLERS = load_handlers()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_restart_case(case: Case) -> None:
    outcome = run_case(case, HANDLERS)
    assert outcome.passed, "; ".join(outcome.problems)


def test_the_cases_cover_every_outcome_and_both_start_results() -> None:
    outcomes = {p.get("outcome") for c in CASES for p in (c.expected.get("pods") or {}).values()}
    assert {"restored", "reallocated", "rejected"} <= outcomes
    assert {c.expected.get("started") for c in CASES} == {True, False}


def test_a_falsified_case_fails() -> None:
    case = next(c for c in CASES if c.id == "restart/restore/partial")
    wrong = Case(
        case.id, case.kind, case.inputs,
        {**case.expected, "pods": {"p": {"outcome": "restored", "containers": {"c2": "5-6"}}}},
        case.fixtures,
    )  # fmt: skip
    assert not run_case(wrong, HANDLERS).passed
    refused = next(c for c in CASES if c.id == "restart/derived/135-reads-v3")
    flipped = Case(refused.id, refused.kind, refused.inputs, {"started": True}, refused.fixtures)
    assert not run_case(flipped, HANDLERS).passed


def test_the_file_is_what_the_generator_writes(tmp_path: Path) -> None:
    out = tmp_path / "restart.json"
    subprocess.run(
        [sys.executable, str(HERE / "make_restart_cases.py"), str(HERE), str(out)],
        check=True,
        capture_output=True,
    )
    assert json.loads(out.read_text()) == json.loads(FILE.read_text())

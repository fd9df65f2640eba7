"""Every public conformance case in ../shared/conformance passes.

The folder sits beside the checkout (``NUMASCOPE_SHARED`` overrides the location). When it is
absent the cases are skipped with a reason, unless ``NUMASCOPE_REQUIRE_CONFORMANCE=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.conformance import load_cases, load_handlers, run_case
from app.conformance_kinds.common import Case

SHARED = Path(os.environ.get("NUMASCOPE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
FILES = sorted((SHARED / "conformance").glob("*.json"))
HANDLERS = load_handlers()


def _cases() -> list[Case]:
    return [case for path in FILES for case in load_cases(str(path))]


CASES = _cases()


def test_conformance_files_are_present() -> None:
    if not FILES:
        if os.environ.get("NUMASCOPE_REQUIRE_CONFORMANCE") == "1":
            pytest.fail(f"no conformance files under {SHARED / 'conformance'}")
        pytest.skip(f"no conformance files under {SHARED / 'conformance'}")
    assert len(CASES) > 0


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case: Case) -> None:
    outcome = run_case(case, HANDLERS)
    assert outcome.passed, "; ".join(outcome.problems)


def test_a_wrong_expectation_fails() -> None:
    """The runner really compares: a case with a falsified answer must fail."""
    case = Case("self-check", "cpuset_format", {"cpus": [0, 1, 2, 5]}, {"string": "0-2,4"})
    assert not run_case(case, HANDLERS).passed
    good = Case("self-check", "cpuset_format", {"cpus": [0, 1, 2, 5]}, {"string": "0-2,5"})
    assert run_case(good, HANDLERS).passed


def test_unknown_kind_is_reported() -> None:
    outcome = run_case(Case("x", "no_such_kind", {}, {}), HANDLERS)
    assert not outcome.passed and outcome.problems == ("unsupported kind",)

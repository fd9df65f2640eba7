"""Every conformance case passes: the project's own corpus, always, and the team's shared
corpus as an extra one when it is present.

* ``tests/conformance/*.json`` (in the repository, see its README.md): run on every clone; a
  missing or emptied corpus fails (``NUMASCOPE_REQUIRE_CONFORMANCE`` is no longer needed).
* ``../shared/conformance/*.json`` beside the checkout (``NUMASCOPE_SHARED`` names another
  folder holding ``conformance/``): an extra corpus. Its cases that the repository already
  holds unchanged (same id, kind, inputs, expectation and fixtures) run once, under the
  repository's file; a shared case that is new, or differs from the in-repo one of the same id,
  runs as ``shared:<id>``. Absent, it is skipped with a reason, never required.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.conformance import load_cases, load_handlers, run_case
from app.conformance_kinds.common import Case

CORPUS = Path(__file__).resolve().parent / "conformance"
SHARED = Path(os.environ.get("NUMASCOPE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
FILES = sorted(CORPUS.glob("*.json"))
SHARED_FILES = sorted((SHARED / "conformance").glob("*.json"))
HANDLERS = load_handlers()


def _cases(files: list[Path]) -> list[Case]:
    return [case for path in files for case in load_cases(str(path))]


def _key(case: Case) -> tuple[object, ...]:
    fixture = case.inputs.get("topology")
    used = case.fixtures.get(fixture) if isinstance(fixture, str) else None
    return (case.id, case.kind, case.inputs, case.expected, used)


def extra_cases(own: list[Case], shared: list[Case]) -> list[Case]:
    """The shared cases the in-repo corpus does not already hold unchanged."""
    held = [_key(c) for c in own]
    return [
        Case(f"shared:{c.id}", c.kind, c.inputs, c.expected, c.fixtures)
        for c in shared
        if _key(c) not in held
    ]


CASES = _cases(FILES)
SHARED_CASES = extra_cases(CASES, _cases(SHARED_FILES))


def test_the_in_repo_corpus_is_present() -> None:
    assert FILES, f"no conformance files under {CORPUS}"
    assert len(CASES) > 1000
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique across the corpus"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case: Case) -> None:
    outcome = run_case(case, HANDLERS)
    assert outcome.passed, "; ".join(outcome.problems)


def test_shared_corpus_is_present_or_skipped() -> None:
    if not SHARED_FILES:
        pytest.skip(f"no extra corpus under {SHARED / 'conformance'} (the in-repo one ran)")
    assert _cases(SHARED_FILES)


@pytest.mark.parametrize("case", SHARED_CASES, ids=[c.id for c in SHARED_CASES])
def test_shared_conformance_case(case: Case) -> None:
    outcome = run_case(case, HANDLERS)
    assert outcome.passed, "; ".join(outcome.problems)


def test_the_extra_corpus_keeps_only_new_or_changed_cases() -> None:
    own = Case("a", "cpuset_format", {"cpus": [0, 1]}, {"string": "0-1"})
    same = Case("a", "cpuset_format", {"cpus": [0, 1]}, {"string": "0-1"})
    changed = Case("a", "cpuset_format", {"cpus": [0, 2]}, {"string": "0,2"})
    new = Case("b", "cpuset_format", {"cpus": [3]}, {"string": "3"})
    extra = extra_cases([own], [same, changed, new])
    assert [(c.id, c.inputs) for c in extra] == [
        ("shared:a", {"cpus": [0, 2]}),
        ("shared:b", {"cpus": [3]}),
    ]


def test_a_wrong_expectation_fails() -> None:
    """The runner really compares: a case with a falsified answer must fail."""
    case = Case("self-check", "cpuset_format", {"cpus": [0, 1, 2, 5]}, {"string": "0-2,4"})
    assert not run_case(case, HANDLERS).passed
    good = Case("self-check", "cpuset_format", {"cpus": [0, 1, 2, 5]}, {"string": "0-2,5"})
    assert run_case(good, HANDLERS).passed


def test_unknown_kind_is_reported() -> None:
    outcome = run_case(Case("x", "no_such_kind", {}, {}), HANDLERS)
    assert not outcome.passed and outcome.problems == ("unsupported kind",)

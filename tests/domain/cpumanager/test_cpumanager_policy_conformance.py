"""Every public static_policy_* / pod budget / SMT text case passes, and the handlers notice a
wrong expectation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from app.conformance import load_cases
from app.conformance_kinds.common import Case
from app.conformance_kinds.cpumanager_kinds import HANDLERS

CONFORMANCE = Path(__file__).resolve().parents[2] / "conformance"  # the in-repo corpus
FILES = [CONFORMANCE / "allocation.json", CONFORMANCE / "derived-allocation.json"]


def _cases() -> list[Case]:
    out: list[Case] = []
    for f in FILES:
        out.extend(c for c in load_cases(str(f)) if c.kind in HANDLERS)
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_public_case_passes(case: Case) -> None:
    assert HANDLERS[case.kind](case) == []


def test_every_kind_is_covered() -> None:
    assert {c.kind for c in CASES} == set(HANDLERS)


def _first(kind: str, pred: object = None) -> Case:
    for c in CASES:
        if c.kind == kind and (pred is None or pred(c)):  # type: ignore[operator]
            return c
    raise AssertionError(f"no {kind} case")


@pytest.mark.parametrize(
    ("kind", "key", "value"),
    [
        ("static_policy_allocate", "cpuset", "0-63"),
        ("static_policy_allocate", "error", "boom"),
        ("static_policy_allocate_pod", "default_cpuset_after", "0"),
        ("static_policy_start", "error", "nope"),
        ("static_policy_remove", "default_cpuset_after", "0"),
        ("static_policy_allocate_cpus", "cpuset", "0-63"),
        ("static_policy_pod_sequence", "default_after_allocate", "0"),
        ("validate_pod_scope_resources", "error", "x"),
        ("smt_alignment_error_text", "message", "x"),
        ("static_policy_new", "error", "x"),
    ],
    ids=lambda v: str(v),
)
def test_handlers_report_a_wrong_expectation(kind: str, key: str, value: object) -> None:
    case = _first(kind)
    expected = copy.deepcopy(case.expected)
    expected[key] = value
    bad = Case(case.id, case.kind, case.inputs, expected, case.fixtures)
    assert HANDLERS[kind](bad) != []


def test_allocate_pod_metrics_are_compared() -> None:
    case = _first("static_policy_allocate_pod", lambda c: bool(c.expected.get("metrics")))
    expected = copy.deepcopy(case.expected)
    expected["metrics"]["allocs"] += 1
    bad = Case(case.id, case.kind, case.inputs, expected, case.fixtures)
    assert any("metrics.allocs" in p for p in HANDLERS[case.kind](bad))

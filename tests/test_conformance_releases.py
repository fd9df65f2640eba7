"""The project's own release cases (tests/conformance/releases.json) pass, and ``inputs.release``
(conformance README §2.6) really changes how a case runs.

Each change of ``app.domain.releases`` that alters an allocation has a case per release; the
pairs must disagree (a case whose answer is the same for both releases would prove nothing).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from app.conformance import load_cases, load_handlers, run_case
from app.conformance_kinds.common import Case
from app.domain import releases

FILE = Path(__file__).resolve().parent / "conformance" / "releases.json"
HANDLERS = load_handlers()
CASES = load_cases(str(FILE))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_release_case(case: Case) -> None:
    outcome = run_case(case, HANDLERS)
    assert outcome.passed, "; ".join(outcome.problems)


def test_every_case_names_a_release_and_its_source() -> None:
    doc = json.loads(FILE.read_text())
    for raw in doc["cases"]:
        assert raw["inputs"]["release"] in releases.RELEASES, raw["id"]
        assert raw["id"].endswith("/" + raw["inputs"]["release"]), raw["id"]
        assert raw["source"] and raw["notes"], raw["id"]


def test_each_change_has_cases_for_releases_that_disagree() -> None:
    groups: dict[str, list[Case]] = defaultdict(list)
    for case in CASES:
        groups[case.id.rsplit("/", 1)[0]].append(case)
    assert len(groups) == 8
    for name, group in groups.items():
        assert len({c.inputs["release"] for c in group}) >= 2, name
        answers = {json.dumps(c.expected, sort_keys=True) for c in group}
        assert len(answers) >= 2, f"{name}: every release gives the same answer"
        # Running a case as another release's kubelet must fail where the answers differ.
        first, *rest = group
        for other in rest:
            if other.expected != first.expected:
                swapped = Case(
                    first.id, first.kind, dict(first.inputs), other.expected, first.fixtures
                )
                assert not run_case(swapped, HANDLERS).passed, (first.id, other.id)


@pytest.mark.parametrize("value", ["1.34", "1.39", "master", 1.37])
def test_an_unknown_release_fails_the_case_with_the_field_named(value: object) -> None:
    case = Case("x", "cpuset_format", {"cpus": [0, 1], "release": value}, {"string": "0-1"})
    outcome = run_case(case, HANDLERS)
    assert not outcome.passed
    assert "inputs.release" in outcome.problems[0]


def test_release_absent_means_the_default_release() -> None:
    (case,) = [c for c in CASES if c.id.endswith("restore-before-smt/1.37")]
    inputs = {k: v for k, v in case.inputs.items() if k != "release"}
    assert releases.DEFAULT_RELEASE == "1.37"
    assert run_case(Case(case.id, case.kind, inputs, case.expected, case.fixtures), HANDLERS).passed


def test_min_numas_from_hint_is_refused_before_1_38() -> None:
    case = Case(
        "x",
        "take_by_topology_distributed",
        {
            "release": "1.37",
            "topology": "topoDualSocketMultiNumaPerSocketHT",
            "available": "0-79",
            "num_cpus": 8,
            "cpu_group_size": 1,
            "min_numas_from_hint": 2,
        },
        {"error": ""},
        CASES[0].fixtures,
    )
    outcome = run_case(case, HANDLERS)
    assert not outcome.passed
    assert "min_numas_from_hint" in outcome.problems[0]
    ok = Case(
        case.id,
        case.kind,
        dict(case.inputs, release="1.38"),
        {"error": "", "result": "0-1,10-11,40-41,50-51"},
        case.fixtures,
    )
    assert run_case(ok, HANDLERS).passed


def test_1_35_has_no_pod_level_path_whatever_the_case_gates_say() -> None:
    """1.35 has no PodLevelResourceManagers gate: a pod-level pod is left alone there."""
    (base,) = [c for c in CASES if c.id.endswith("no-memory-request/1.36")]
    inputs = dict(base.inputs, container="exclusive")
    expected_136 = {"error": ""}
    case_136 = Case("x", base.kind, inputs, expected_136, base.fixtures)
    assert run_case(case_136, HANDLERS).passed
    allocated = {
        "assignments": {
            "container-scope-mixed": {
                "exclusive": [{"numaAffinity": [0], "type": "memory", "size": 512 * 1024 * 1024}]
            }
        }
    }
    assert run_case(Case("x", base.kind, inputs, allocated, base.fixtures), HANDLERS).passed
    as_135 = dict(inputs, release="1.35")
    nothing = {"error": "", "assignments": {}, "machine_state_unchanged": True}
    assert run_case(Case("x", base.kind, as_135, nothing, base.fixtures), HANDLERS).passed

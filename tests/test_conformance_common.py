"""app/conformance_kinds/common.py: the shared case helpers, and the accumulator handlers built
from them noticing a wrong or missing expectation (self-contained cases, no shared files)."""

from __future__ import annotations

from typing import Any

import pytest

from app.conformance_kinds.common import (
    POD_LEVEL_GATES,
    Case,
    ConformanceInputError,
    expect_fields,
    feature_gates,
    topology_hint,
    topology_of,
)
from app.conformance_kinds.cpu_assignment_kinds import HANDLERS as CPU_ASSIGNMENT
from app.domain import releases
from app.domain.cpuset import CPUSet
from app.domain.topologymanager.bitmask import mask_of

# 2 sockets x 1 NUMA node x 2 cores x 2 threads: id -> [core, socket, numa, uncore].
FIXTURE = {
    "cpus": {
        "0": [0, 0, 0, 0],
        "1": [1, 0, 0, 0],
        "2": [0, 0, 0, 0],
        "3": [1, 0, 0, 0],
        "4": [4, 1, 1, 1],
        "5": [5, 1, 1, 1],
        "6": [4, 1, 1, 1],
        "7": [5, 1, 1, 1],
    }
}


def case(kind: str = "k", expected: dict[str, Any] | None = None, **inputs: Any) -> Case:
    inputs.setdefault("topology", "t")
    return Case("c1", kind, inputs, expected or {}, {"t": FIXTURE})


def test_topology_of_builds_each_fixture_once() -> None:
    first = topology_of(case())
    assert first.num_cpus == 8 and first.num_sockets == 2
    assert topology_of(case()) is first
    other = Case("c2", "k", {"topology": "t"}, {}, {"t": {"cpus": dict(FIXTURE["cpus"])}})
    assert topology_of(other) is not first  # another file's fixture of the same name


@pytest.mark.parametrize(
    ("inputs", "fixtures", "match"),
    [
        pytest.param({}, {}, "inputs.topology must name a fixture", id="no-name"),
        pytest.param({"topology": 3}, {}, "inputs.topology must name a fixture", id="not-a-name"),
        pytest.param(
            {"topology": "x"}, {"t": FIXTURE}, "unknown topology fixture 'x'", id="unknown"
        ),
    ],
)
def test_topology_of_errors(inputs: dict[str, Any], fixtures: dict[str, Any], match: str) -> None:
    with pytest.raises(ConformanceInputError, match=match):
        topology_of(Case("c", "k", inputs, {}, fixtures))


def test_feature_gates_default_and_override() -> None:
    r137, r135 = releases.get("1.37"), releases.get("1.35")
    assert feature_gates({}, POD_LEVEL_GATES, r137) == POD_LEVEL_GATES
    gates = feature_gates(
        {"feature_gates": {"PodLevelResources": False, "X": True}}, POD_LEVEL_GATES, r137
    )
    assert gates == {"PodLevelResources": False, "PodLevelResourceManagers": True, "X": True}
    # 1.35 has no PodLevelResourceManagers gate: whatever a case says, it is off.
    assert feature_gates({}, POD_LEVEL_GATES, r135)["PodLevelResourceManagers"] is False


def test_topology_hint() -> None:
    hint = topology_hint({"numa": [0, 2], "preferred": True})
    assert hint.numa_affinity == mask_of([0, 2]) and hint.preferred
    assert topology_hint({"numa": None}).numa_affinity is None
    assert topology_hint({"numa": [1]}).preferred is False
    with pytest.raises(ConformanceInputError, match="topology_hint must be a map"):
        topology_hint([0])


def test_expect_fields() -> None:
    problems: list[str] = []
    expect_fields(problems, {"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4})
    assert problems == ["b: expected 2, got 3"]
    problems = []
    expect_fields(problems, {}, {"a": 1}, required=("a",))
    assert problems == ["a: the case expects nothing"]
    problems = []
    expect_fields(
        problems, {"s": "2,0-1", "t": "5"}, {"s": CPUSet.parse("0-2"), "t": None}, cpusets=True
    )
    assert problems == ["t: expected '5', got null"]


@pytest.mark.parametrize(
    ("kind", "expected", "available", "ok"),
    [
        pytest.param(
            "acc_free_sockets", {"free_sockets_sorted": [0, 1]}, "0-7", True, id="sockets"
        ),
        pytest.param(
            "acc_free_sockets", {"free_sockets_sorted": [1]}, "0-7", False, id="sockets-wrong"
        ),
        pytest.param("acc_free_sockets", {}, "0-7", False, id="sockets-missing"),
        pytest.param(
            "acc_free_numa_nodes", {"free_numa_nodes_ordered": [1]}, "1-7", True, id="numa"
        ),
        pytest.param(
            "acc_free_cores", {"free_cores_ordered": [5, 4]}, "4-7", False, id="cores-order"
        ),
        pytest.param("acc_free_cpus", {"free_cpus_ordered": [4, 6, 5, 7]}, "4-7", True, id="cpus"),
        pytest.param("acc_free_sockets_and_numa_nodes", {}, "0-7", True, id="both-optional"),
        pytest.param(
            "acc_free_sockets_and_numa_nodes",
            {"free_numa_nodes_ordered": [0]},
            "0-7",
            False,
            id="both-wrong",
        ),
    ],
)
def test_accumulator_handlers(
    kind: str, expected: dict[str, Any], available: str, ok: bool
) -> None:
    problems = CPU_ASSIGNMENT[kind](case(kind, expected, available=available))
    assert (problems == []) is ok, problems


def test_acc_take_compares_only_what_is_expected() -> None:
    take = CPU_ASSIGNMENT["acc_take"]
    inputs = {"available": "0-7", "num_cpus": 4, "take_sequence": ["0,2"]}
    assert take(case("acc_take", {"num_cpus_needed_after": 2}, **inputs)) == []
    assert take(case("acc_take", {"is_satisfied": True}, **inputs)) == [
        "is_satisfied: expected True, got False"
    ]

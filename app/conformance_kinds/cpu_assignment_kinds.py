"""Conformance kinds for the CPU accumulator and takeByTopology (conformance README §3.1-3.2).

Kinds: ``acc_free_sockets``, ``acc_free_numa_nodes``, ``acc_free_sockets_and_numa_nodes``,
``acc_free_cores``, ``acc_free_cpus``, ``acc_take``, ``take_by_topology_packed``,
``take_by_topology_distributed``. Every result is computed by
``app.domain.cpumanager.cpu_assignment`` and compared with the case's expectations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.conformance_kinds.common import Case, cpuset_of, expect_cpuset, expect_equal
from app.domain.cpumanager.cpu_assignment import (
    CPUAccumulator,
    TakeByTopologyError,
    take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
)
from app.domain.cpuset import CPUSet
from app.domain.topology import CPUTopology


class ConformanceInputError(ValueError):
    """A case names a fixture or input this handler cannot find."""


def _topology(case: Case) -> CPUTopology:
    name = case.inputs.get("topology")
    if not isinstance(name, str):
        raise ConformanceInputError(f"case {case.id}: inputs.topology must name a fixture")
    fixture = case.fixtures.get(name)
    if fixture is None:
        raise ConformanceInputError(f"case {case.id}: unknown topology fixture {name!r}")
    return CPUTopology.from_fixture(name, fixture)


def _accumulator(case: Case, num_cpus: int = 0) -> CPUAccumulator:
    return CPUAccumulator(_topology(case), cpuset_of(case.inputs.get("available")), num_cpus)


def acc_free_sockets(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case)
    expect_equal(
        problems,
        "free_sockets_sorted",
        case.expected["free_sockets_sorted"],
        sorted(acc.free_sockets()),
    )
    return problems


def acc_free_numa_nodes(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case)
    expect_equal(
        problems,
        "free_numa_nodes_ordered",
        case.expected["free_numa_nodes_ordered"],
        acc.free_numa_nodes(),
    )
    return problems


def acc_free_sockets_and_numa_nodes(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case)
    if "free_sockets_ordered" in case.expected:
        expect_equal(
            problems,
            "free_sockets_ordered",
            case.expected["free_sockets_ordered"],
            acc.free_sockets(),
        )
    if "free_numa_nodes_ordered" in case.expected:
        expect_equal(
            problems,
            "free_numa_nodes_ordered",
            case.expected["free_numa_nodes_ordered"],
            acc.free_numa_nodes(),
        )
    return problems


def acc_free_cores(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case)
    expect_equal(
        problems, "free_cores_ordered", case.expected["free_cores_ordered"], acc.free_cores()
    )
    return problems


def acc_free_cpus(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case)
    expect_equal(problems, "free_cpus_ordered", case.expected["free_cpus_ordered"], acc.free_cpus())
    return problems


def acc_take(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case, int(case.inputs["num_cpus"]))
    for cpus in case.inputs.get("take_sequence") or []:
        acc.take(cpuset_of(cpus))
    checks: dict[str, Any] = {
        "is_satisfied": acc.is_satisfied(),
        "is_failed": acc.is_failed(),
        "num_cpus_needed_after": acc.num_cpus_needed,
    }
    for key, actual in checks.items():
        if key in case.expected:
            expect_equal(problems, key, case.expected[key], actual)
    return problems


def _compare_take(case: Case, run: Callable[[], CPUSet]) -> list[str]:
    problems: list[str] = []
    try:
        result, error = run(), ""
    except TakeByTopologyError as exc:
        result, error = CPUSet(), str(exc)
    expected_error = case.expected.get("error", "")
    expect_equal(problems, "error", expected_error, error)
    if "result" in case.expected:
        expect_cpuset(problems, "result", case.expected["result"], result)
    return problems


def take_by_topology_packed(case: Case) -> list[str]:
    inputs = case.inputs
    topo = _topology(case)
    return _compare_take(
        case,
        lambda: take_by_topology_numa_packed(
            topo,
            cpuset_of(inputs.get("available")),
            int(inputs["num_cpus"]),
            inputs.get("sorting", "packed"),
            bool(inputs.get("prefer_align_by_uncore_cache", False)),
        ),
    )


def take_by_topology_distributed(case: Case) -> list[str]:
    inputs = case.inputs
    topo = _topology(case)
    return _compare_take(
        case,
        lambda: take_by_topology_numa_distributed(
            topo,
            cpuset_of(inputs.get("available")),
            int(inputs["num_cpus"]),
            int(inputs["cpu_group_size"]),
            inputs.get("sorting", "packed"),
            bool(inputs.get("align_by_socket", False)),
        ),
    )


HANDLERS: dict[str, Callable[[Case], list[str]]] = {
    "acc_free_sockets": acc_free_sockets,
    "acc_free_numa_nodes": acc_free_numa_nodes,
    "acc_free_sockets_and_numa_nodes": acc_free_sockets_and_numa_nodes,
    "acc_free_cores": acc_free_cores,
    "acc_free_cpus": acc_free_cpus,
    "acc_take": acc_take,
    "take_by_topology_packed": take_by_topology_packed,
    "take_by_topology_distributed": take_by_topology_distributed,
}

"""Conformance kinds for the CPU accumulator and takeByTopology (conformance README §3.1-3.2).

Kinds: ``acc_free_sockets``, ``acc_free_numa_nodes``, ``acc_free_sockets_and_numa_nodes``,
``acc_free_cores``, ``acc_free_cpus``, ``acc_take``, ``take_by_topology_packed``,
``take_by_topology_distributed``. Every result is computed by
``app.domain.cpumanager.cpu_assignment`` and compared with the case's expectations.

``inputs.release`` (README §2.6) runs the algorithms as that release has them
(``app.domain.releases``): CPU order by topology (kubernetes#140766), whole-group capacity
(kubernetes#140730; older releases report the endless loop as an error), copied best
combinations (kubernetes#141238), all from 1.38. ``take_by_topology_distributed`` also reads
``min_numas_from_hint`` (the topology hint's NUMA count, kubernetes#139456, 1.38 only; 0 when
absent); ``align_by_socket`` is the algorithm's own argument as the README defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.conformance_kinds.common import (
    Case,
    ConformanceInputError,
    cpuset_of,
    expect_cpuset,
    expect_equal,
    expect_fields,
    release_of,
    topology_of,
)
from app.domain import releases
from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.common import TakeByTopologyError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpuset import CPUSet

Query = Callable[[CPUAccumulator], Any]


def _spread_by_topology(case: Case) -> bool:
    return release_of(case).has(releases.SPREAD_BY_TOPOLOGY)


def _accumulator(case: Case, num_cpus: int = 0) -> CPUAccumulator:
    return CPUAccumulator(
        topology_of(case),
        cpuset_of(case.inputs.get("available")),
        num_cpus,
        spread_by_topology=_spread_by_topology(case),
    )


def _accumulator_kind(queries: dict[str, Query], *, required: bool) -> Callable[[Case], list[str]]:
    """A handler comparing ``queries`` of the case's fresh accumulator with its expectations
    (every query must be expected when ``required``, else only those the case names)."""

    def handler(case: Case) -> list[str]:
        acc = _accumulator(case)
        problems: list[str] = []
        actual = {key: query(acc) for key, query in queries.items()}
        expect_fields(problems, case.expected, actual, required=tuple(queries) if required else ())
        return problems

    return handler


acc_free_sockets = _accumulator_kind(
    {"free_sockets_sorted": lambda acc: sorted(acc.free_sockets())}, required=True
)
acc_free_numa_nodes = _accumulator_kind(
    {"free_numa_nodes_ordered": CPUAccumulator.free_numa_nodes}, required=True
)
acc_free_sockets_and_numa_nodes = _accumulator_kind(
    {
        "free_sockets_ordered": CPUAccumulator.free_sockets,
        "free_numa_nodes_ordered": CPUAccumulator.free_numa_nodes,
    },
    required=False,
)
acc_free_cores = _accumulator_kind({"free_cores_ordered": CPUAccumulator.free_cores}, required=True)
acc_free_cpus = _accumulator_kind({"free_cpus_ordered": CPUAccumulator.free_cpus}, required=True)


def acc_take(case: Case) -> list[str]:
    problems: list[str] = []
    acc = _accumulator(case, int(case.inputs["num_cpus"]))
    for cpus in case.inputs.get("take_sequence") or []:
        acc.take(cpuset_of(cpus))
    actual = {
        "is_satisfied": acc.is_satisfied(),
        "is_failed": acc.is_failed(),
        "num_cpus_needed_after": acc.num_cpus_needed,
    }
    expect_fields(problems, case.expected, actual)
    return problems


def _compare_take(case: Case, run: Callable[[], CPUSet]) -> list[str]:
    problems: list[str] = []
    try:
        result, error = run(), ""
    except TakeByTopologyError as exc:  # a DistributedAllocationHangError too (1.35-1.37)
        result, error = CPUSet(), str(exc)
    expected_error = case.expected.get("error", "")
    expect_equal(problems, "error", expected_error, error)
    if "result" in case.expected:
        expect_cpuset(problems, "result", case.expected["result"], result)
    return problems


def take_by_topology_packed(case: Case) -> list[str]:
    inputs = case.inputs
    topo = topology_of(case)
    return _compare_take(
        case,
        lambda: take_by_topology_numa_packed(
            topo,
            cpuset_of(inputs.get("available")),
            int(inputs["num_cpus"]),
            inputs.get("sorting", "packed"),
            bool(inputs.get("prefer_align_by_uncore_cache", False)),
            spread_by_topology=_spread_by_topology(case),
        ),
    )


def take_by_topology_distributed(case: Case) -> list[str]:
    inputs = case.inputs
    topo = topology_of(case)
    release = release_of(case)
    min_numas = inputs.get("min_numas_from_hint", 0)
    if not isinstance(min_numas, int) or isinstance(min_numas, bool) or min_numas < 0:
        raise ConformanceInputError(
            f"inputs.min_numas_from_hint must be a whole number >= 0, got {min_numas!r}"
        )
    if min_numas and not release.has(releases.DISTRIBUTED_MIN_NUMAS_FROM_HINT):
        raise ConformanceInputError(
            f"inputs.min_numas_from_hint: release {release} has no such argument "
            f"({releases.PULL_REQUEST[releases.DISTRIBUTED_MIN_NUMAS_FROM_HINT]} is "
            f"{releases.INTRODUCED[releases.DISTRIBUTED_MIN_NUMAS_FROM_HINT]})"
        )
    group_check = release.has(releases.DISTRIBUTED_GROUP_CHECK)
    return _compare_take(
        case,
        lambda: take_by_topology_numa_distributed(
            topo,
            cpuset_of(inputs.get("available")),
            int(inputs["num_cpus"]),
            int(inputs["cpu_group_size"]),
            inputs.get("sorting", "packed"),
            bool(inputs.get("align_by_socket", False)),
            spread_by_topology=release.has(releases.SPREAD_BY_TOPOLOGY),
            hang_release=None if group_check else release.name,
            copy_best=release.has(releases.DISTRIBUTED_COPY_BEST),
            min_numas_from_hint=min_numas,
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

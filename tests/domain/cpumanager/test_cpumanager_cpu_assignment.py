"""CPU accumulator and take-by-topology: upstream tables, orderings, helpers, bad input.

The table cases are upstream's ``cpu_assignment_test.go`` expectations (on the upstream test
topologies, read from the shared conformance fixtures); the rest pins behaviour the tables do
not reach (align-by-socket, Go rounding, the accumulator's bookkeeping).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.common import (
    CPUAssignmentInputError,
    CPUSortingStrategy,
    TakeByTopologyError,
)
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.go_slices import iterate_combinations
from app.domain.cpumanager.cpu_assignment.gomath import standard_deviation
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUInfo, CPUTopology

FIXTURES = Path(__file__).resolve().parents[2] / "conformance" / "allocation.json"  # in-repo corpus


@cache
def _fixtures() -> dict:
    return json.loads(FIXTURES.read_text(encoding="utf-8"))["fixtures"]


@cache
def topo(name: str) -> CPUTopology:
    return CPUTopology.from_fixture(name, _fixtures()[name])


def cs(text: str) -> CPUSet:
    return CPUSet.parse(text)


# -- takeByTopologyNUMAPacked (upstream TestTakeByTopologyNUMAPacked and the spread table) ------

PACKED_CASES = [
    ("single-ht-too-many", "topoSingleSocketHT", "0,2,4,6", 5, "packed", False,
     "not enough cpus available to satisfy request: requested=5, available=4", ""),
    ("single-ht-zero", "topoSingleSocketHT", "0-7", 0, "packed", False, "", ""),
    ("single-ht-one", "topoSingleSocketHT", "0-7", 1, "packed", False, "", "0"),
    ("single-ht-one-some-taken", "topoSingleSocketHT", "1,3,5-7", 1, "packed", False, "", "6"),
    ("single-ht-two", "topoSingleSocketHT", "0-7", 2, "packed", False, "", "0,4"),
    ("single-ht-all", "topoSingleSocketHT", "0-7", 8, "packed", False, "", "0-7"),
    ("single-ht-two-one-free-core", "topoSingleSocketHT", "0-3,6", 2, "packed", False, "", "2,6"),
    ("dual-ht-socket", "topoDualSocketHT", "0-11", 6, "packed", False, "", "0,2,4,6,8,10"),
    ("multinuma-socket", "topoDualSocketMultiNumaPerSocketHT", "0-79", 40, "packed", False, "",
     "0-19,40-59"),
    ("multinuma-numa", "topoDualSocketMultiNumaPerSocketHT", "0-79", 20, "packed", False, "",
     "0-9,40-49"),
    ("multinuma-numa-one-taken", "topoDualSocketMultiNumaPerSocketHT", "10-39,50-79", 20,
     "packed", False, "", "10-19,50-59"),
    ("multinuma-socket-and-numa", "topoDualSocketMultiNumaPerSocketHT", "0-79", 60, "packed",
     False, "", "0-29,40-69"),
    ("multinuma-socket-and-numa-core-taken", "topoDualSocketMultiNumaPerSocketHT",
     "1-39,41-79", 60, "packed", False, "", "10-39,50-79"),
    ("dual-ht-one-from-socket0", "topoDualSocketHT", "1-5,7-11", 1, "packed", False, "", "2"),
    ("dual-ht-4-cores", "topoDualSocketHT", "0-11", 8, "packed", False, "", "0-2,4,6-8,10"),
    ("multinuma-32-cores", "topoDualSocketMultiNumaPerSocketHT", "0-79", 64, "packed", False,
     "", "0-31,40-71"),
    ("uncore-two-full-one-partial", "topoUncoreSingleSocketNoSMT", "1-15", 10, "packed", True,
     "", "1-2,4-11"),
    ("uncore-dual-ht-one", "topoDualSocketHT", "1-5,7-11", 1, "packed", True, "", "1"),
    ("uncore-first-socket", "topoUncoreDualSocketNoSMT", "0-15", 4, "packed", True, "", "0-3"),
    ("uncore-all-first-socket", "topoUncoreDualSocketNoSMT", "2-15", 6, "packed", True, "",
     "2-7"),
    ("uncore-second-socket", "topoUncoreDualSocketNoSMT", "8-15", 4, "packed", True, "",
     "8-11"),
    ("uncore-available-numa", "topoUncoreSingleSocketMultiNuma", "3,4-8,12", 2, "packed", True,
     "", "4-5"),
    ("uncore-smt-best-group", "topoUncoreSingleSocketSMT", "2-3,10-11,4-7,12-15", 6, "packed",
     True, "", "4-6,12-14"),
    ("uncore-smt-multiple", "topoUncoreSingleSocketSMT", "1-7,9-15", 10, "packed", True, "",
     "1,4-7,9,12-15"),
    ("spread-single-ht-3", "topoSingleSocketHT", "0-7", 3, "spread", False, "", "0-2"),
    ("spread-dual-ht-2", "topoDualSocketHT", "0-11", 2, "spread", False, "", "0,2"),
    ("spread-dual-ht-3", "topoDualSocketHT", "0-11", 3, "spread", False, "", "0,2,4"),
    ("spread-dual-ht-6", "topoDualSocketHT", "0-11", 6, "spread", False, "", "0,2,4,6,8,10"),
    ("spread-dual-ht-8", "topoDualSocketHT", "0-11", 8, "spread", False, "",
     "0-4,6,8,10"),
    ("spread-dual-noht-2", "topoDualSocketNoHT", "0-7", 2, "spread", False, "", "0-1"),
    ("spread-multinuma-8", "topoDualSocketMultiNumaPerSocketHT", "0-79", 8, "spread", False,
     "", "0-7"),
    ("spread-quad-fourway-12", "topoQuadSocketFourWayHT", "0-287", 12, "spread", False, "",
     "0-2,9-10,13-14,21-22,25-26,33"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "available", "num_cpus", "sorting", "uncore", "error", "expected"),
    [pytest.param(*c[1:], id=c[0]) for c in PACKED_CASES],
)
def test_take_by_topology_numa_packed_upstream_table(
    name: str,
    available: str,
    num_cpus: int,
    sorting: str,
    uncore: bool,
    error: str,
    expected: str,
) -> None:
    t = topo(name)
    if error:
        with pytest.raises(TakeByTopologyError) as info:
            take_by_topology_numa_packed(t, cs(available), num_cpus, sorting, uncore)
        assert str(info.value) == error
        return
    result = take_by_topology_numa_packed(t, cs(available), num_cpus, sorting, uncore)
    assert result == cs(expected)


# -- takeByTopologyNUMADistributed (upstream TestTakeByTopologyNUMADistributed) ---------------

MN = "topoDualSocketMultiNumaPerSocketHT"
DISTRIBUTED_CASES = [
    ("too-many", "topoSingleSocketHT", "0,2,4,6", 5, 1,
     "not enough cpus available to satisfy request: requested=5, available=4", ""),
    ("zero", "topoSingleSocketHT", "0-7", 0, 1, "", ""),
    ("socket", MN, "0-79", 40, 1, "", "0-19,40-59"),
    ("numa", MN, "0-79", 20, 1, "", "0-9,40-49"),
    ("dual-ht-one", "topoDualSocketHT", "1-5,7-11", 1, 1, "", "1"),
    ("dual-ht-one-group2", "topoDualSocketHT", "1-5,7-11", 1, 2, "", "2"),
    ("4-cores-2-per-numa", "topoDualSocketHT", "0-11", 8, 1, "", "0-3,6-9"),
    ("32-cores-8-per-numa", MN, "0-79", 64, 1, "",
     "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77"),
    ("24-cores-first-3-numa", MN, "0-79", 48, 1, "", "0-7,10-17,20-27,40-47,50-57,60-67"),
    ("24-cores-all-but-2-from-first", MN, "1-29,32-39,41-69,72-79", 48, 1, "",
     "1-8,10-17,20-27,41-48,50-57,60-67"),
    ("24-cores-last-3-numa", MN, "2-29,31-39,42-69,71-79", 48, 1, "",
     "10-17,20-27,31-38,50-57,60-67,71-78"),
    ("8-cores-2-per-numa", MN, "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16, 1, "",
     "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"),
    ("13-cores-first-2-numa", MN, "0-79", 26, 1, "", "0-6,10-16,40-45,50-55"),
    ("13-cores-first-2-numa-group2", MN, "0-79", 26, 2, "", "0-6,10-15,40-46,50-55"),
    ("31-cores-spill-numa-0-1", MN, "0-79", 62, 1, "",
     "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"),
    ("31-cores-spill-numa-0-1-2-group2", MN, "0-79", 62, 2, "",
     "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"),
    ("31-cores-spill-numa-2-3", MN, "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1, "",
     "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"),
    ("31-cores-spill-numa-0-2-3-group2", MN, "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2, "",
     "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"),
    ("best-remainder-has-cpus", MN, "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1, "",
     "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"),
    ("live-machine-failure", "topoDualSocketMultiNumaPerSocketHTLarge",
     "0,128,30,31,158,159,43-47,171-175,62,63,190,191,75-79,203-207,94,96,222,223,101-111,"
     "229-239,126,127,254,255", 28, 1, "", "43-47,75-79,96,101-105,171-174,203-206,229-232"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "available", "num_cpus", "group", "error", "expected"),
    [pytest.param(*c[1:], id=c[0]) for c in DISTRIBUTED_CASES],
)
def test_take_by_topology_numa_distributed_upstream_table(
    name: str, available: str, num_cpus: int, group: int, error: str, expected: str
) -> None:
    t = topo(name)
    if error:
        with pytest.raises(TakeByTopologyError) as info:
            take_by_topology_numa_distributed(t, cs(available), num_cpus, group)
        assert str(info.value) == error
        return
    assert take_by_topology_numa_distributed(t, cs(available), num_cpus, group) == cs(expected)


# -- align-by-socket in the distributed algorithm -----------------------------------------------


def two_socket_four_numa() -> CPUTopology:
    """Upstream issue #114642's machine: CPU c on NUMA c%4; NUMA 0,2 on socket 0, 1,3 on 1."""
    infos = [CPUInfo(c, c, (c % 4) % 2, c % 4, 0) for c in range(16)]
    return CPUTopology(infos, num_cpus=16, num_cores=16, num_sockets=2, num_numa_nodes=4)


@pytest.mark.parametrize(
    ("align", "expected"),
    [
        pytest.param(False, "0-1,4-5,8-9", id="first-best-combo-crosses-sockets"),
        pytest.param(True, "1,3,5,7,9,11", id="single-socket-combo-wins"),
    ],
)
def test_distributed_align_by_socket_prefers_single_socket_combination(
    align: bool, expected: str
) -> None:
    # NUMA 2 (socket 0) has only 2 free CPUs, so every usable pair has the same balance and
    # the first one in NUMA order (0,1: two sockets) wins unless align-by-socket is on.
    available = CPUSet.range(0, 15) - CPUSet([10, 14])
    result = take_by_topology_numa_distributed(
        two_socket_four_numa(), available, 6, 1, "packed", align
    )
    assert result == cs(expected)


def test_distributed_align_by_socket_caps_distribution_at_member_capacity() -> None:
    # Socket 1 (NUMA 1, 3) keeps 7 CPUs: 4 on NUMA 1 and 3 on NUMA 3. Seven CPUs only fit
    # in one socket if the even split is capped at the smaller member (3) and the remainder
    # goes to NUMA 1.
    available = CPUSet([1, 5, 9, 13, 3, 7, 11, 0, 2])
    result = take_by_topology_numa_distributed(
        two_socket_four_numa(), available, 7, 1, "packed", True
    )
    assert result == CPUSet([1, 5, 9, 13, 3, 7, 11])


# -- the accumulator -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "available", "sockets", "numas", "cores"),
    [
        pytest.param(MN, "0-79", [0, 1], [0, 1, 2, 3], None, id="multinuma-all-free"),
        pytest.param(MN, "1-59,61-79", [], [1, 3], None, id="multinuma-none-socket-free"),
        pytest.param("fakeTopoMultiSocketDualSocketPerNumaHT", "0-19,21-79", [0, 1, 3],
                     [0], None, id="socket-per-numa"),
        pytest.param("topoDualSocketHT", "2-5,8-11", [], [], [2, 4, 3, 5], id="dual-ht-cores"),
        pytest.param("topoSingleSocketHT", "0-6", [], [], [0, 1, 2], id="single-ht-partial"),
    ],
)  # fmt: skip
def test_accumulator_free_elements(
    name: str, available: str, sockets: list[int], numas: list[int], cores: list[int] | None
) -> None:
    acc = CPUAccumulator(topo(name), cs(available), 0)
    assert sorted(acc.free_sockets()) == sockets
    assert acc.free_numa_nodes() == numas
    if cores is not None:
        assert acc.free_cores() == cores


def test_accumulator_orderings_pack_the_most_used_element_first() -> None:
    acc = CPUAccumulator(topo("topoDualSocketHT"), cs("1-11"), 0)
    assert acc.numa_first
    assert acc.sort_available_numa_nodes() == [0, 1]  # NUMA 0 lost CPU 0
    assert acc.sort_available_cores() == [0, 2, 4, 1, 3, 5]  # core 0 has one thread left
    assert acc.free_cpus() == [6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]
    assert acc.sort_available_cpus_spread() == [2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11]


def test_accumulator_socket_first_orders_numa_nodes_inside_sockets() -> None:
    acc = CPUAccumulator(topo("topoUncoreSingleSocketMultiNuma"), cs("0-12,14-15"), 0)
    assert not acc.numa_first
    assert acc.sort_available_numa_nodes() == [1, 0]
    assert acc.sort_available_uncore_caches() == [3, 2, 0, 1]
    assert acc.free_cpus() == [8, 9, 10, 11, 12, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7]


def test_accumulator_take_bookkeeping() -> None:
    acc = CPUAccumulator(topo("topoSingleSocketHT"), cs("0-2"), 4)
    acc.take(CPUSet([0]))
    acc.take(CPUSet([1]))
    assert acc.result == CPUSet([0, 1])
    assert acc.details == CPUSet([2])
    assert acc.num_cpus_needed == 2
    assert not acc.is_satisfied()
    assert acc.is_failed()
    acc.take(CPUSet([2, 3]))
    assert acc.is_satisfied()
    assert acc.num_cpus_needed == 0


def test_accumulator_ignores_cpus_outside_the_topology() -> None:
    acc = CPUAccumulator(topo("topoSingleSocketHT"), cs("6-9"), 3)
    assert acc.details == cs("6-7")
    assert acc.is_failed()
    with pytest.raises(TakeByTopologyError, match=r"requested=3, available=4$"):
        take_by_topology_numa_packed(topo("topoSingleSocketHT"), cs("6-9"), 3)


def test_range_numa_nodes_needed_to_satisfy() -> None:
    acc = CPUAccumulator(topo(MN), cs("0-79"), 26)
    assert acc.range_numa_nodes_needed_to_satisfy(1) == (2, 4)
    assert acc.range_numa_nodes_needed_to_satisfy(2) == (2, 4)
    acc = CPUAccumulator(topo(MN), cs("0-79"), 1)
    assert acc.range_numa_nodes_needed_to_satisfy(2) == (1, 1)


def test_take_partial_uncore_only_when_it_fits_exactly() -> None:
    t = topo("topoUncoreSingleSocketSMT")  # UC0 = cores 0-3 (0-3,8-11), UC1 = cores 4-7
    acc = CPUAccumulator(t, cs("1-7,9-15"), 3)
    acc.take_partial_uncore(0)  # cores 1,2 -> 1,2,9,10; odd need drops the highest -> 1,2,9
    assert acc.result == cs("1-2,9")
    acc = CPUAccumulator(t, cs("0,8,4"), 3)
    acc.take_partial_uncore(0)  # only core 0 (2 CPUs) is there: no exact fit, nothing taken
    assert acc.result == CPUSet()
    assert acc.num_cpus_needed == 3


# -- helpers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param([0, 0, 0, 0], 0.0, id="zero"),
        pytest.param([2, 1, 1, 4], 1.225, id="rounded-3-places"),
        pytest.param([1, 2], 0.5, id="half"),
        pytest.param([10, 0, 0], 4.714, id="mean-rounded-first"),
    ],
)
def test_standard_deviation_rounds_like_go(values: list[int], expected: float) -> None:
    assert standard_deviation(values) == expected


def test_iterate_combinations_order() -> None:
    assert list(iterate_combinations([3, 1, 2], 2)) == [(3, 1), (3, 2), (1, 2)]
    assert list(iterate_combinations([1, 2], 0)) == []
    assert list(iterate_combinations([1, 2], 3)) == []


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda: take_by_topology_numa_packed("topo", CPUSet(), 1),  # type: ignore[arg-type]
            "topology must be a CPUTopology",
            id="topology-type",
        ),
        pytest.param(
            lambda: take_by_topology_numa_packed(topo(MN), "0-3", 1),  # type: ignore[arg-type]
            "available CPUs must be a CPUSet",
            id="available-type",
        ),
        pytest.param(
            lambda: take_by_topology_numa_packed(topo(MN), cs("0-3"), 1.5),  # type: ignore[arg-type]
            "number of CPUs must be an integer",
            id="num-cpus-type",
        ),
        pytest.param(
            lambda: take_by_topology_numa_packed(topo(MN), cs("0-3"), 1, "tight"),
            "unknown CPU sorting strategy 'tight'",
            id="strategy",
        ),
        pytest.param(
            lambda: take_by_topology_numa_distributed(topo(MN), cs("0-3"), 2, 0),
            "CPU group size must be a positive integer, got 0",
            id="group-size",
        ),
        pytest.param(
            lambda: CPUAccumulator(topo(MN), cs("0-3"), 1).take([1]),  # type: ignore[arg-type]
            r"take\(\) needs a CPUSet, not list",
            id="take-type",
        ),
    ],
)
def test_bad_input_raises_a_clear_error(call, message: str) -> None:
    with pytest.raises(CPUAssignmentInputError, match=message):
        call()


def test_strategy_accepts_enum_and_text() -> None:
    t = topo("topoDualSocketHT")
    assert take_by_topology_numa_packed(t, cs("0-11"), 2, CPUSortingStrategy.SPREAD) == cs("0,2")
    assert take_by_topology_numa_packed(t, cs("0-11"), 2, "spread") == cs("0,2")
    assert CPUSortingStrategy("packed") is CPUSortingStrategy.PACKED


def test_take_lowers_the_need_even_for_cpus_already_taken() -> None:
    """Upstream's take() subtracts |cpus| unconditionally; keep that bookkeeping."""
    acc = CPUAccumulator(topo("topoSingleSocketHT"), cs("0-7"), 3)
    acc.take(CPUSet([0]))
    acc.take(CPUSet([0]))
    assert acc.result == CPUSet([0])
    assert acc.num_cpus_needed == 1

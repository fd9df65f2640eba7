"""The engine's take-by-topology against the straight port, for every release.

``cpumanager_audit_go_reference`` is the straight port: upstream's cpu_assignment.go read
function by function over plain sets, every combination visited, every balance computed, Go's
slice sharing modelled with explicit backing arrays. The engine prunes the combination search
and skips balances that provably cannot win (``app.domain.cpumanager.cpu_assignment.
distributed``); these properties say it still picks exactly the same CPUs - or fails with the
same error - on random machines of up to 16 NUMA nodes (NUMA nodes inside sockets, sockets
inside NUMA nodes, and NUMA nodes spanning sockets), random free CPUs, requests, group sizes,
sorting strategies and options, with each release's switches, and on the fragmented
1,024-thread, 16-NUMA machine of the benchmark.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain import releases
from app.domain.cpumanager.cpu_assignment import distributed as D
from app.domain.cpumanager.cpu_assignment import topology_index
from app.domain.cpumanager.cpu_assignment.common import (
    DistributedAllocationHangError,
    TakeByTopologyError,
)
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.gomath import BalanceFloor, standard_deviation
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpumanager.cpu_assignment.topology_index import index_of
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUInfo, CPUTopology
from tests.domain.cpumanager import cpumanager_audit_go_reference as ref

PROPS = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def switches(release: str) -> dict[str, object]:
    """What a kubelet of ``release`` hands the take (as ``app.domain.cpumanager.take``)."""
    return {
        "spread_by_topology": releases.has(release, releases.SPREAD_BY_TOPOLOGY),
        "hang_release": None
        if releases.has(release, releases.DISTRIBUTED_GROUP_CHECK)
        else release,
        "copy_best": releases.has(release, releases.DISTRIBUTED_COPY_BEST),
        "align": releases.has(release, releases.DISTRIBUTED_ALIGN_BY_SOCKET),
        "hint": releases.has(release, releases.DISTRIBUTED_MIN_NUMAS_FROM_HINT),
    }


def machine(
    sockets: int, numa_per_socket: int, cores_per_numa: int, threads: int, spill: int = 0
) -> CPUTopology:
    """Linux numbering (sibling = cpu + cores); ``spill`` cores of each NUMA node sit in the
    next socket (a NUMA node spanning sockets)."""
    num_cores = sockets * numa_per_socket * cores_per_numa
    infos = []
    for core in range(num_cores):
        numa = core // cores_per_numa
        socket = numa // numa_per_socket
        if core % cores_per_numa < spill:
            socket = (socket + 1) % sockets
        uncore = core // max(1, cores_per_numa // 2)
        for t in range(threads):
            infos.append(CPUInfo(core + t * num_cores, core, socket, numa, uncore))
    return CPUTopology(infos)


@st.composite
def cases(draw: st.DrawFn):
    sockets = draw(st.integers(1, 4))
    # At most 8 NUMA nodes: with more, some orders make the straight port (the reference)
    # enumerate millions of combinations; the 16-NUMA classes have their own fixed cases below.
    numa_per_socket = draw(st.integers(1, 8 // sockets))
    cores = draw(st.integers(1, 6))
    threads = draw(st.integers(1, 2))
    spill = draw(st.sampled_from([0, 0, 0, 1])) if sockets > 1 and cores > 1 else 0
    if draw(st.booleans()):  # sockets inside NUMA nodes: one NUMA node per two sockets
        topo = machine(sockets, 1, cores, threads, spill)
        infos = [
            CPUInfo(i.cpu_id, i.core_id, i.socket_id, i.socket_id // 2, i.uncore_cache_id)
            for i in topo.cpu_details.values()
        ]
        topo = CPUTopology(infos)
    else:
        topo = machine(sockets, numa_per_socket, cores, threads, spill)
    rnd = draw(st.randoms(use_true_random=False))
    p = draw(st.sampled_from([0.4, 0.7, 0.9, 1.0]))
    available = {c for c in topo.cpu_details if rnd.random() < p}
    n = draw(st.integers(0, len(available) + 1))
    g = draw(st.sampled_from([1, threads, 2]))
    release = draw(st.sampled_from(releases.RELEASES))
    strategy = draw(st.sampled_from(["packed", "spread"]))
    align = draw(st.booleans())
    hint = draw(st.integers(0, topo.num_numa_nodes))
    return topo, available, n, g, release, strategy, align, hint


def engine_outcome(topo, available, n, g, release, strategy, align, hint):
    s = switches(release)
    try:
        got = take_by_topology_numa_distributed(
            topo,
            CPUSet(available),
            n,
            g,
            strategy,
            align and bool(s["align"]),
            spread_by_topology=bool(s["spread_by_topology"]),
            hang_release=s["hang_release"],  # type: ignore[arg-type]
            copy_best=bool(s["copy_best"]),
            min_numas_from_hint=hint if s["hint"] else 0,
        )
    except DistributedAllocationHangError as exc:
        found = re.search(r"remaining (\d+) CPUs", str(exc))
        assert found is not None
        return "hang", int(found.group(1))
    except TakeByTopologyError as exc:
        return "error", str(exc)
    return "cpus", sorted(got)


def reference_outcome(topo, available, n, g, release, strategy, align, hint):
    s = switches(release)
    try:
        got = ref.distributed(
            topo,
            set(available),
            n,
            g,
            strategy,
            align and bool(s["align"]),
            release=s["hang_release"],  # type: ignore[arg-type]
            copy_best=bool(s["copy_best"]),
            min_numas_from_hint=hint if s["hint"] else 0,
            spread_by_topology=bool(s["spread_by_topology"]),
        )
    except ref.HangError as exc:
        return "hang", exc.remainder
    except ref.NotEnoughError as exc:
        return "error", str(exc)
    return "cpus", sorted(got)


@PROPS
@given(cases())
def test_distributed_take_matches_the_straight_port(case) -> None:
    assert engine_outcome(*case) == reference_outcome(*case)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(cases(), st.booleans())
def test_packed_take_matches_the_straight_port(case, uncore: bool) -> None:
    topo, available, n, _, release, strategy, _, _ = case
    sbt = bool(switches(release)["spread_by_topology"])
    assert packed_outcome(topo, available, n, strategy, uncore, sbt) == ref_packed_outcome(
        topo, available, n, strategy, uncore, sbt
    )


def packed_outcome(
    topo: CPUTopology, available: set[int], n: int, strategy: str, uncore: bool, sbt: bool
) -> object:
    """The engine's packed take: the CPUs, sorted, or the error text."""
    try:
        return sorted(
            take_by_topology_numa_packed(
                topo, CPUSet(available), n, strategy, uncore, spread_by_topology=sbt
            )
        )
    except TakeByTopologyError as exc:
        return str(exc)


def ref_packed_outcome(
    topo: CPUTopology, available: set[int], n: int, strategy: str, uncore: bool, sbt: bool
) -> object:
    """The straight port's packed take: the CPUs, sorted, or the error text."""
    try:
        return sorted(ref.packed(topo, set(available), n, strategy, uncore, sbt))
    except ref.NotEnoughError as exc:
        return str(exc)


def _fragmented_1024() -> tuple[CPUTopology, set[int]]:
    """The benchmark's machine: 2 sockets x 8 NUMA nodes x 32 cores x 2 threads, a third of
    the CPUs handed out (seed 7, as bench/bench_cpu_assignment.py)."""
    topo = machine(2, 8, 32, 2)
    used = set(random.Random(7).sample(sorted(topo.cpu_details), 1024 // 3))
    return topo, set(topo.cpu_details) - used


@pytest.mark.parametrize(
    ("n", "g", "release"), [(256, 1, "1.37"), (256, 2, "1.38"), (96, 2, "1.35"), (200, 1, "1.38")]
)
def test_fragmented_1024_thread_machine_matches_the_straight_port(
    n: int, g: int, release: str
) -> None:
    topo, available = _fragmented_1024()
    case = (topo, available, n, g, release, "packed", False, 0)
    ours = engine_outcome(*case)
    assert ours[0] == "cpus"
    assert ours == reference_outcome(*case)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 4096), min_size=1, max_size=64))
def test_balance_floor_never_exceeds_the_kubelets_balance(xs: list[int]) -> None:
    floor = BalanceFloor(len(xs)).at_least(sum(xs), sum(x * x for x in xs))
    assert floor <= standard_deviation(xs)


def test_balance_floor_is_the_balance_itself_on_plain_lists() -> None:
    rnd = random.Random(3)
    lists = [[rnd.randint(0, 64) for _ in range(rnd.randint(1, 16))] for _ in range(2000)]
    assert all(
        BalanceFloor(len(xs)).at_least(sum(xs), sum(x * x for x in xs)) == standard_deviation(xs)
        for xs in lists
    )


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.integers(-4096, 4096), min_size=1, max_size=64))
def test_balance_floor_holds_for_negative_counts_too(xs: list[int]) -> None:
    """A NUMA node listed twice in the NUMA order may be left below zero by a combination."""
    floor = BalanceFloor(len(xs)).at_least(sum(xs), sum(x * x for x in xs))
    assert floor <= standard_deviation(xs)


def test_balance_floor_never_decreases_as_the_squares_grow() -> None:
    """What ``_hopeless`` relies on: for a fixed total, a larger sum of squares never has a
    lower floor."""
    rnd = random.Random(11)
    for _ in range(300):
        count = rnd.randint(1, 32)
        total = rnd.randint(-2000, 20000)
        floor = BalanceFloor(count)
        lowest = total * total // count
        squares = sorted(rnd.randint(lowest, lowest + 10**7) for _ in range(50))
        values = [floor.at_least(total, s) for s in squares]
        assert values == sorted(values)


def test_squares_below_is_where_the_floor_reaches_the_limit() -> None:
    """``squares_below`` is the last sum of squares whose floor is under the limit, for
    limits that are balances, floors, arbitrary, zero and unbounded."""
    rnd = random.Random(5)
    for _ in range(400):
        xs = [rnd.randint(0, 200) for _ in range(rnd.randint(1, 16))]
        total, squares = sum(xs), sum(x * x for x in xs)
        floor = BalanceFloor(len(xs))
        limit = rnd.choice(
            [
                standard_deviation(xs),
                floor.at_least(total, squares + rnd.randint(-50, 50)),
                rnd.random() * 60,
                0.0,
                1e308,
            ]
        )
        most = floor.squares_below(total, limit)
        lowest = total * total // len(xs)
        for s in range(max(0, lowest - 3), lowest + 300):
            assert (floor.at_least(total, s) < limit) == (s <= most)


def _first_per_prefix(m: int, kk: int, q: int, seen: set[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The subsets the previous engine scored: every one whose first q positions are new."""
    out = []
    for pos in itertools.combinations(range(m), kk):
        if kk >= q:
            if pos[:q] in seen:
                continue
            seen.add(pos[:q])
        out.append(pos)
    return out


@pytest.mark.parametrize("m", range(1, 10))
def test_subsets_to_score_is_the_seen_set_without_the_set(m: int) -> None:
    for q in range(1, m + 2):
        seen: set[tuple[int, ...]] = set()
        for kk in range(m, 0, -1):
            assert list(D._subsets_to_score(m, kk, q)) == _first_per_prefix(m, kk, q, seen)


# The input class that blew up the first fast version: NUMA nodes spanning sockets, so the
# NUMA order lists each of the 16 nodes twice (32 entries) and the even share needs 8 of them:
# it listed every candidate among the 10.5 million 8-of-32 combinations (4+ GiB). Go, and the
# straight port, visit them all too (minutes); the engine must stay small and quick.
_GUARDED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (768 * 2**20, 768 * 2**20))
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
from tests.domain.cpumanager.test_cpumanager_assignment_fast_path import engine_outcome, machine
topo = machine(4, 4, {cores}, {threads}, 1)
outcome = engine_outcome(topo, set(topo.cpu_details), {n}, {g}, "{release}", "packed", False, {hint})
print(outcome[0], len(outcome[1]) if outcome[0] == "cpus" else outcome[1])
"""


@pytest.mark.parametrize(
    ("cores", "threads", "n", "g", "release", "hint"),
    [(6, 2, 96, 1, "1.38", 0), (6, 2, 96, 1, "1.37", 0), (2, 1, 8, 1, "1.38", 8)],
)
def test_a_numa_order_listing_every_node_twice_stays_within_memory_and_cpu_limits(
    cores: int, threads: int, n: int, g: int, release: str, hint: int
) -> None:
    script = _GUARDED.format(cores=cores, threads=threads, n=n, g=g, release=release, hint=hint)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["cpus", str(n)]


def test_the_walk_never_holds_more_than_the_lookahead() -> None:
    """Counted: on the blow-up input no more than ``_LOOKAHEAD`` candidates are alive at once,
    and far fewer combinations are generated than Go's 10.5 million."""
    topo = machine(4, 4, 6, 2, 1)
    alive = 0
    most = 0
    made = 0
    real = D._Candidate

    class Counted(real):  # type: ignore[misc, valid-type]
        __slots__ = ()

        def __init__(self, *args: object) -> None:
            nonlocal alive, most, made
            super().__init__(*args)
            alive += 1
            made += 1
            most = max(most, alive)

        def __del__(self) -> None:
            nonlocal alive
            alive -= 1

    D._Candidate = Counted  # type: ignore[misc]
    try:
        got = take_by_topology_numa_distributed(topo, topo.all_cpus, 96, 1)
    finally:
        D._Candidate = real  # type: ignore[misc]
    assert got.size() == 96
    assert most <= D._LOOKAHEAD + 2
    assert made < 10_000


@pytest.mark.parametrize(("n", "g", "release"), [(36, 1, "1.38"), (24, 2, "1.36"), (36, 2, "1.37")])
def test_a_numa_order_listing_every_node_twice_matches_the_straight_port(
    n: int, g: int, release: str
) -> None:
    """The blow-up's input class where the straight port is quick (few NUMA nodes needed)."""
    topo = machine(4, 4, 6, 2, 1)
    case = (topo, set(topo.cpu_details), n, g, release, "packed", False, 0)
    ours = engine_outcome(*case)
    assert ours[0] == "cpus"
    assert ours == reference_outcome(*case)


def _without_sibling_pairs(topo: CPUTopology):
    """The take's index of ``topo`` with its cores read from the core lists instead."""
    ix = topology_index.index_of(topo)
    topology_index._INDEX_CACHE[id(topo)] = (topo, dataclasses.replace(ix, siblings=None))
    return ix


@settings(max_examples=150, deadline=None, derandomize=True)
@given(cases())
def test_sibling_pairs_take_what_the_core_lists_take(case) -> None:
    """Where the cores are ``SiblingPairs`` (Linux SMT-2 numbering), the packed and the
    distributed take pick the same CPUs as when every core is counted from its mask."""
    topo, available, n, g, release, strategy, align, hint = case
    if index_of(topo).siblings is None:
        return
    packed = (topo, available, n, g, release, strategy, align, hint)
    with_pairs = engine_outcome(*packed)
    with_pairs_packed = _packed_outcome(topo, available, n, strategy)
    _without_sibling_pairs(topo)
    assert index_of(topo).siblings is None
    assert engine_outcome(*packed) == with_pairs
    assert _packed_outcome(topo, available, n, strategy) == with_pairs_packed


def _packed_outcome(topo: CPUTopology, available: set[int], n: int, strategy: str):
    try:
        return sorted(take_by_topology_numa_packed(topo, CPUSet(available), n, strategy))
    except TakeByTopologyError as err:
        return str(err)


def test_sibling_pairs_are_the_linux_and_the_adjacent_smt2_numberings_only() -> None:
    linux = index_of(machine(2, 2, 4, 2)).siblings
    assert linux is not None and linux.stride == 16
    assert linux.keys == (1 << 16) - 1
    adjacent = CPUTopology([CPUInfo(c, c // 2, 0, c // 8, 0) for c in range(16)])
    pairs = index_of(adjacent).siblings
    assert pairs is not None and pairs.stride == 1 and pairs.keys == 0x5555
    assert index_of(machine(1, 2, 4, 1)).siblings is None  # no SMT
    assert index_of(machine(1, 1, 4, 3)).siblings is None  # three threads a core
    # a core split over two NUMA nodes
    split = CPUTopology([CPUInfo(c, c % 4, 0, c // 6, 0) for c in range(8)])
    assert index_of(split).siblings is None


@settings(max_examples=80, deadline=None, derandomize=True)
@given(cases())
def test_index_counts_and_numa_sockets_are_the_topologys_own(case) -> None:
    """The index's sockets of each NUMA node (read off its socket pairs) and its CPU counts
    are what the topology's own queries answer, NUMA nodes spanning sockets included."""
    topo = case[0]
    ix = topology_index._build_index(topo)
    assert ix.numa_sockets == {
        n: frozenset(topo.sockets_in_numa_nodes([n])) for n in topo.numa_node_ids()
    }
    assert ix.size == {
        "numa": {n: topo.cpus_of_numa_node(n).size() for n in topo.numa_node_ids()},
        "socket": {s: topo.cpus_of_socket(s).size() for s in topo.socket_ids()},
        "core": {c: topo.cpus_of_core(c).size() for c in topo.core_ids()},
        "uncore": {u: topo.cpus_of_uncore_cache(u).size() for u in topo.uncore_cache_ids()},
    }
    assert ix.cpus_per_uncore == topo.num_cpus // topo.num_uncore_cache


@settings(max_examples=200, deadline=None, derandomize=True)
@given(cases(), st.booleans())
def test_spread_take_by_topology_matches_the_straight_port(case, sbt: bool) -> None:
    """The spread take on its own, 1.38's round-robin over cores (``spread_by_topology``, read
    three runs at a time on sibling pairs) and the older socket order (a socket at a time)."""
    topo, available, n, *_ = case
    assert packed_outcome(topo, available, n, "spread", False, sbt) == ref_packed_outcome(
        topo, available, n, "spread", False, sbt
    )


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(1, 4),
    st.sampled_from([1, 3, 4]),
    st.randoms(use_true_random=False),
    st.integers(0, 50),
)
def test_spread_take_by_topology_without_sibling_pairs_matches_the_straight_port(
    sockets: int, numa_per_socket: int, cores: int, threads: int, rnd, n: int
) -> None:
    """1.38's round-robin over cores where cores are not sibling pairs (one thread, or SMT-3
    and SMT-4 as on POWER), some NUMA nodes spilling into the next socket: a socket taken
    whole or round by round."""
    spill = 1 if sockets > 1 and cores > 1 and rnd.random() < 0.3 else 0
    topo = machine(sockets, numa_per_socket, cores, threads, spill)
    assert index_of(topo).siblings is None
    available = {c for c in topo.cpu_details if rnd.random() < 0.7}
    assert packed_outcome(topo, available, n, "spread", False, True) == ref_packed_outcome(
        topo, available, n, "spread", False, True
    )

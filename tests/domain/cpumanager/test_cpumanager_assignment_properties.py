"""Hypothesis properties of take-by-topology on random regular machines.

A regular machine (every socket, NUMA node and core the same size, NUMA nodes inside sockets or
sockets inside NUMA nodes) is where upstream guarantees an exact answer: the result is a subset
of the available CPUs with exactly the requested size, an error happens iff too few CPUs are
available, and the answer does not depend on anything but the inputs.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cpumanager.cpu_assignment import accumulator
from app.domain.cpumanager.cpu_assignment.accumulator import CPUAccumulator
from app.domain.cpumanager.cpu_assignment.common import TakeByTopologyError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUInfo, CPUTopology


@st.composite
def machines(draw: st.DrawFn) -> CPUTopology:
    """Sockets x NUMA (either nesting) x cores x threads, optional split uncore caches."""
    numa_in_socket = draw(st.booleans())
    outer = draw(st.integers(1, 3))
    inner = draw(st.integers(1, 2))
    cores_per_leaf = draw(st.integers(1, 4))
    threads = draw(st.integers(1, 2))
    uncores_per_leaf = draw(st.sampled_from([1, 2])) if cores_per_leaf % 2 == 0 else 1
    linux_siblings = draw(st.booleans())  # sibling = cpu + num_cores, as on most x86 servers
    leaves = outer * inner
    num_cores = leaves * cores_per_leaf
    infos = []
    for leaf in range(leaves):
        o = leaf // inner
        socket, numa = (o, leaf) if numa_in_socket else (leaf, o)
        for c in range(cores_per_leaf):
            core_index = leaf * cores_per_leaf + c
            uncore = leaf * uncores_per_leaf + c * uncores_per_leaf // cores_per_leaf
            if linux_siblings:
                cpus = [core_index + t * num_cores for t in range(threads)]
            else:
                cpus = [core_index * threads + t for t in range(threads)]
            infos += [CPUInfo(cpu, min(cpus), socket, numa, uncore) for cpu in cpus]
    return CPUTopology(infos)


@st.composite
def requests(draw: st.DrawFn) -> tuple[CPUTopology, CPUSet, int]:
    topo = draw(machines())
    cpus = topo.all_cpus.ids()
    available = CPUSet(draw(st.lists(st.sampled_from(cpus), unique=True, max_size=len(cpus))))
    num_cpus = draw(st.integers(0, len(cpus) + 2))
    return topo, available, num_cpus


def _check(topo: CPUTopology, available: CPUSet, num_cpus: int, take) -> None:
    if num_cpus > available.size():
        try:
            take()
        except TakeByTopologyError as exc:
            assert str(exc) == (
                "not enough cpus available to satisfy request: "
                f"requested={num_cpus}, available={available.size()}"
            )
        else:
            raise AssertionError("expected a TakeByTopologyError")
        return
    result = take()
    assert result.is_subset_of(available)
    assert result.size() == num_cpus
    assert take() == result  # deterministic


@settings(max_examples=80, deadline=None)
@given(requests(), st.sampled_from(["packed", "spread"]), st.booleans())
def test_packed_takes_exactly_from_available(request, sorting: str, uncore: bool) -> None:
    topo, available, num_cpus = request
    _check(
        topo,
        available,
        num_cpus,
        lambda: take_by_topology_numa_packed(topo, available, num_cpus, sorting, uncore),
    )


@settings(max_examples=80, deadline=None)
@given(requests(), st.booleans(), st.booleans(), st.sampled_from(["packed", "spread"]))
def test_distributed_takes_exactly_from_available(
    request, whole_cores: bool, align: bool, sorting: str
) -> None:
    topo, available, num_cpus = request
    group = topo.cpus_per_core() if whole_cores else 1
    _check(
        topo,
        available,
        num_cpus,
        lambda: take_by_topology_numa_distributed(topo, available, num_cpus, group, sorting, align),
    )


@settings(max_examples=60, deadline=None)
@given(requests())
def test_packed_prefers_whole_free_cores(request) -> None:
    """With the packed strategy no core is split while a whole free core is left unused."""
    topo, available, num_cpus = request
    if num_cpus > available.size() or topo.cpus_per_core() < 2:
        return
    result = take_by_topology_numa_packed(topo, available, num_cpus)
    split = [c for c in topo.cores_of(result) if not topo.cpus_of_core(c).is_subset_of(result)]
    untouched_free = [
        c for c in topo.core_ids() if topo.cpus_of_core(c).is_subset_of(available - result)
    ]
    # a split core is only acceptable when the tail of the request is smaller than a core,
    # or when no whole free core was left to use instead
    assert len(split) <= topo.cpus_per_core() or not untouched_free


@settings(max_examples=60, deadline=None)
@given(requests())
def test_accumulator_orders_cover_the_available_cpus(request) -> None:
    topo, available, _ = request
    acc = CPUAccumulator(topo, available, 0)
    packed = acc.sort_available_cpus_packed()
    spread = acc.sort_available_cpus_spread()
    assert sorted(packed) == available.ids() == sorted(spread)
    assert len(set(packed)) == len(packed)
    assert set(acc.sort_available_numa_nodes()) == set(topo.numa_nodes_of(available))
    assert set(acc.sort_available_sockets()) == set(topo.sockets_of(available))
    assert set(acc.sort_available_cores()) == set(topo.cores_of(available))
    for n in acc.free_numa_nodes():
        assert topo.cpus_of_numa_node(n).is_subset_of(available)
    for c in acc.free_cores():
        assert topo.cpus_of_core(c).is_subset_of(available)


@given(st.integers(0, (1 << 1100) - 1), st.integers(0, 1200))
def test_lowest_bits_are_the_lowest_set_bits(mask: int, count: int) -> None:
    """``_lowest`` (a bisection for many bits) gives the ``count`` lowest set bits of the mask,
    all of them when it has fewer."""
    bits = [i for i in range(mask.bit_length()) if mask >> i & 1][:count]
    assert accumulator._lowest(mask, count) == sum(1 << i for i in bits)

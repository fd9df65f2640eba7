"""The ``allocation_per_numa`` gauge update (per-NUMA masks and popcounts) against the plain walk
over the CPUs: same counts, same keys, same insertion order, CPUs unknown to the topology
counted for NUMA node 0."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpuset import CPUSet
from app.domain.presets import get_preset
from app.domain.topology.model import CPUTopology


def plain_counts(topology: CPUTopology, cpus: CPUSet) -> dict[int, int]:
    counts: dict[int, int] = {}
    for cpu in cpus:
        info = topology.cpu_details.get(cpu)
        numa = info.numa_node_id if info is not None else 0
        counts[numa] = counts.get(numa, 0) + 1
    return counts


def gauge_after(policy: StaticPolicy, cpus: CPUSet) -> dict[int, int]:
    policy.metrics.allocation_per_numa.clear()
    policy.gauges.update_per_numa(cpus)
    return dict(policy.metrics.allocation_per_numa)


PRESETS = ["topoDualSocketMultiNumaPerSocketHT", "topoQuadSocketFourWayHT", "server-2s-4numa-128t"]


@pytest.mark.parametrize("preset", PRESETS)
@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 300)))
def test_gauge_matches_the_plain_walk(preset: str, ids: set[int]) -> None:
    topology = get_preset(preset)
    policy = StaticPolicy(topology, 1)
    cpus = CPUSet(ids)
    got = gauge_after(policy, cpus)
    want = plain_counts(topology, cpus)
    assert got == want
    assert list(got) == list(want)


@pytest.mark.parametrize(
    ("ids", "want"),
    [
        pytest.param([], {}, id="empty"),
        pytest.param([1000], {0: 1}, id="unknown-cpu-counts-for-node-0"),
        pytest.param([1000, 64], None, id="unknown-after-a-known-cpu"),
    ],
)
def test_gauge_table(ids: list[int], want: dict[int, int] | None) -> None:
    topology = get_preset("server-2s-4numa-128t")
    policy = StaticPolicy(topology, 1)
    got = gauge_after(policy, CPUSet(ids))
    expected = plain_counts(topology, CPUSet(ids)) if want is None else want
    assert got == expected
    assert list(got) == list(expected)


def test_gauge_keeps_nodes_without_cpus_untouched() -> None:
    topology = get_preset("server-2s-4numa-128t")
    policy = StaticPolicy(topology, 1)
    policy.metrics.allocation_per_numa.clear()
    policy.metrics.allocation_per_numa[3] = 7
    policy.gauges.update_per_numa(topology.cpus_of_numa_node(1))
    assert policy.metrics.allocation_per_numa == {3: 7, 1: topology.cpus_of_numa_node(1).size()}

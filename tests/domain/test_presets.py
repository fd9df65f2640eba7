"""Topology presets (app/domain/presets.py) and synthetic spec strings (topology_spec.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cpuset import CPUSet
from app.domain.presets import (
    FIXTURE_PRESETS,
    PRESETS,
    UnknownPresetError,
    build_preset,
    get_preset,
    list_presets,
    resolve_topology,
)
from app.domain.topology.model import GIB, HUGEPAGE_1G, HUGEPAGE_2M, CPUTopology, TopologyError
from app.domain.topology.spec import parse_topology_spec
from app.domain.topology.synthetic import MAX_SPEC_CPUS, TopologySpecError, synthetic_topology

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"  # the in-repo corpus


def shared_fixtures() -> dict[str, Any]:
    """The topology fixtures of the corpus taken from upstream tests (restart.json adds
    uniform machines of its own, which are no presets)."""
    fixtures: dict[str, Any] = {}
    for path in sorted(CONFORMANCE.glob("*.json")):
        if path.name == "restart.json":
            continue
        fixtures.update(json.loads(path.read_text())["fixtures"])
    return fixtures


def counts(topo: CPUTopology) -> tuple[int, int, int, int, int]:
    return (
        topo.num_cpus,
        topo.num_sockets,
        topo.num_cores,
        topo.num_numa_nodes,
        topo.num_uncore_cache,
    )


# (cpus, sockets, cores, NUMA nodes, uncore caches) as upstream declares them.
FIXTURE_COUNTS = {
    "topoSingleSocketHT": (8, 1, 4, 1, 1),
    "topoDualSocketHT": (12, 2, 6, 2, 1),
    "topoTripleSocketHT": (18, 3, 9, 3, 1),
    "topoDualSocketNoHT": (8, 2, 8, 2, 1),
    "topoDualSocketMultiNumaPerSocketHT": (80, 2, 40, 4, 1),
    "fakeTopoMultiSocketDualSocketPerNumaHT": (80, 4, 40, 2, 1),
    "topoDualSocketMultiNumaPerSocketHTLarge": (256, 2, 128, 8, 1),
    "topoQuadSocketFourWayHT": (288, 4, 72, 4, 1),
    "topoUncoreSingleSocketNoSMT": (16, 1, 16, 1, 4),
    "topoUncoreDualSocketNoSMT": (16, 2, 16, 1, 4),
    "topoUncoreSingleSocketMultiNuma": (16, 1, 16, 2, 4),
    "topoUncoreSingleSocketSMT": (16, 1, 8, 1, 2),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_COUNTS))
def test_fixture_counts(name: str) -> None:
    assert counts(get_preset(name)) == FIXTURE_COUNTS[name]


def test_fixture_presets_are_the_twelve_fixtures() -> None:
    assert set(FIXTURE_PRESETS) == set(FIXTURE_COUNTS)


def test_every_shared_fixture_has_a_preset() -> None:
    assert set(shared_fixtures()) <= set(PRESETS)


@pytest.mark.parametrize("name", sorted(FIXTURE_COUNTS))
def test_preset_equals_shared_fixture(name: str) -> None:
    fixture = shared_fixtures().get(name)
    if fixture is None:
        pytest.skip(f"{name} is not in tests/conformance")
    expected = CPUTopology.from_fixture(name, fixture)
    preset = get_preset(name)
    assert preset.cpu_details == expected.cpu_details
    assert counts(preset) == counts(expected)
    assert preset.cpus_per_core() == expected.cpus_per_core()


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_numa_node_has_memory_and_distances(name: str) -> None:
    topo = get_preset(name)
    assert topo.name == name
    assert [m.numa_id for m in topo.memory] == topo.numa_node_ids()
    for mem in topo.memory:
        assert mem.memory_bytes >= 8 * GIB
        assert mem.regular_memory_bytes() > 0
        assert mem.distances[mem.numa_id] == 10
        for other in topo.numa_node_ids():
            assert topo.distance(mem.numa_id, other) == topo.distance(other, mem.numa_id)


def test_get_preset_is_cached_and_build_is_fresh() -> None:
    assert get_preset("laptop-1s") is get_preset("laptop-1s")
    fresh = build_preset("laptop-1s")
    assert fresh is not get_preset("laptop-1s")
    assert fresh.cpu_details == get_preset("laptop-1s").cpu_details


def test_unknown_preset_lists_valid_names() -> None:
    with pytest.raises(UnknownPresetError) as info:
        get_preset("laptop")
    assert "'laptop'" in str(info.value)
    assert "laptop-1s" in str(info.value) and "topoDualSocketHT" in str(info.value)
    assert info.value.valid == tuple(PRESETS)
    assert isinstance(info.value, TopologyError)


def test_list_presets() -> None:
    infos = {i.name: i for i in list_presets()}
    assert list(infos) == list(PRESETS)
    big = infos["server-2s-8numa-512t"]
    assert (big.num_cpus, big.num_sockets, big.num_numa_nodes, big.cpus_per_core) == (
        512,
        2,
        8,
        2,
    )
    assert big.memory_bytes == 8 * 192 * GIB
    assert big.kind == "server" and infos["topoDualSocketHT"].kind == "fixture"
    assert all(i.description for i in infos.values())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("laptop-1s", (16, 1, 8, 1, 1)),
        ("server-2s-4numa-128t", (128, 2, 64, 4, 8)),
        ("server-2s-8numa-512t", (512, 2, 256, 8, 32)),
    ],
    ids=["laptop", "128t", "512t"],
)
def test_server_counts(name: str, expected: tuple[int, ...]) -> None:
    assert counts(get_preset(name)) == expected


@pytest.mark.parametrize("name", ["laptop-1s", "server-2s-4numa-128t", "server-2s-8numa-512t"])
def test_server_numbering_is_linux_like(name: str) -> None:
    topo = get_preset(name)
    half = topo.num_cpus // 2
    for cpu in range(half):
        assert topo.cpus_of_core(cpu) == CPUSet([cpu, cpu + half])
        assert topo.cpu_details[cpu + half].core_id == cpu
    # NUMA nodes are contiguous blocks of cores, in socket order.
    per_numa = topo.num_cores // topo.num_numa_nodes
    for numa in topo.numa_node_ids():
        first = numa * per_numa
        assert topo.cpus_of_numa_node(numa) == CPUSet.range(
            first, first + per_numa - 1
        ) | CPUSet.range(half + first, half + first + per_numa - 1)
    assert topo.sockets_in_numa_nodes([topo.num_numa_nodes - 1]) == [topo.num_sockets - 1]


def test_512t_memory_caches_and_distances() -> None:
    topo = get_preset("server-2s-8numa-512t")
    mem = topo.numa_memory(3)
    assert mem is not None
    assert mem.memory_bytes == 192 * GIB and mem.hugepages == {HUGEPAGE_1G: 64}
    assert mem.distances == (12, 12, 12, 10, 32, 32, 32, 32)
    assert topo.cpus_of_uncore_cache(1) == CPUSet.parse("8-15,264-271")
    assert topo.uncore_caches_of(topo.cpus_of_numa_node(7)) == [28, 29, 30, 31]


def test_128t_hugepages_and_distances() -> None:
    topo = get_preset("server-2s-4numa-128t")
    assert topo.hugepage_sizes() == [HUGEPAGE_2M]
    assert topo.distance(0, 1) == 12 and topo.distance(0, 2) == 32 and topo.distance(2, 2) == 10


def test_spec_example() -> None:
    topo = parse_topology_spec(
        "sockets=2,numa_per_socket=2,cores_per_numa=16,threads_per_core=2,"
        "memory_per_numa=64Gi,hugepages_1Gi_per_numa=8"
    )
    assert counts(topo) == (128, 2, 64, 4, 2)
    assert topo.name == "custom-2s-4numa-128t"
    mem = topo.numa_memory(0)
    assert mem is not None
    assert mem.memory_bytes == 64 * GIB and mem.hugepages == {HUGEPAGE_1G: 8}
    assert mem.regular_memory_bytes() == 56 * GIB
    assert mem.distances == (10, 11, 21, 21)


@pytest.mark.parametrize(
    ("spec", "checks"),
    [
        ("cores_per_numa=4", {"num_cpus": 8, "num_sockets": 1, "name": "custom-1s-1numa-8t"}),
        (
            " sockets = 1 , cores_per_numa=16, threads_per_core=1, cores_per_uncore=4, name=amd ",
            {"num_cpus": 16, "num_uncore_cache": 4, "name": "amd"},
        ),
        ("cores_per_numa=8,memory_per_numa=100G", {"memory": 100 * 10**9}),
        ("cores_per_numa=8,memory_per_numa=1.5Gi", {"memory": 1536 << 20}),
        ("cores_per_numa=8,memory_per_numa=512Mi,hugepages_2Mi_per_numa=10", {"memory": 512 << 20}),
        ("cores_per_numa=1,threads_per_core=8", {"num_cpus": 8, "num_cores": 1}),
        (
            "sockets=2,cores_per_numa=4,distance_remote=32",
            {"distance01": 32, "num_numa_nodes": 2},
        ),
    ],
    ids=[
        "minimal",
        "spaces-uncore-name",
        "decimal-memory",
        "fractional-memory",
        "hugepages-2Mi",
        "smt8",
        "distance",
    ],
)
def test_spec_variants(spec: str, checks: dict[str, Any]) -> None:
    topo = parse_topology_spec(spec)
    for key, value in checks.items():
        if key == "memory":
            assert topo.memory[0].memory_bytes == value
        elif key == "distance01":
            assert topo.distance(0, 1) == value
        else:
            assert getattr(topo, key) == value


def test_uncore_equal_to_numa_node_is_a_node_cache() -> None:
    # cAdvisor files an L3 covering exactly one NUMA node as a node cache: socket fallback.
    topo = parse_topology_spec("sockets=2,numa_per_socket=2,cores_per_numa=4,cores_per_uncore=4")
    assert topo.num_uncore_cache == 2
    assert topo.uncore_cache_ids() == [0, 1]


@pytest.mark.parametrize(
    ("spec", "key", "message"),
    [
        ("", None, "empty"),
        ("sockets=2", "cores_per_numa", "needs cores_per_numa"),
        ("socket=2,cores_per_numa=4", "socket", "unknown topology spec key 'socket'"),
        ("cores_per_numa=4,cores_per_numa=8", "cores_per_numa", "given twice"),
        ("cores_per_numa", "cores_per_numa", "not key=value"),
        ("cores_per_numa=4,,sockets=1", None, "empty item"),
        ("cores_per_numa=four", "cores_per_numa", "not a non-negative integer"),
        ("cores_per_numa=-1", "cores_per_numa", "not a non-negative integer"),
        ("cores_per_numa=4,sockets=0", "sockets", r"sockets=0 is out of range"),
        ("cores_per_numa=4,threads_per_core=9", "threads_per_core", "out of range"),
        ("cores_per_numa=4096,sockets=2,threads_per_core=2", "cores_per_numa", "8192"),
        ("cores_per_numa=1,sockets=8,numa_per_socket=9", "numa_per_socket", "at most 64"),
        ("cores_per_numa=4,memory_per_numa=lots", "memory_per_numa", "not a memory quantity"),
        ("cores_per_numa=4,memory_per_numa=0", "memory_per_numa", "out of range"),
        ("cores_per_numa=4,memory_per_numa=-1Gi", "memory_per_numa", "out of range"),
        ("cores_per_numa=4,memory_per_numa=2Gb", "memory_per_numa", "not a memory quantity"),
        (
            "cores_per_numa=4,memory_per_numa=4Gi,hugepages_1Gi_per_numa=5",
            "memory_per_numa",
            "more than memory_per_numa",
        ),
        ("cores_per_numa=6,cores_per_uncore=4", "cores_per_uncore", "must divide"),
        ("cores_per_numa=4,cores_per_uncore=0", "cores_per_uncore", "out of range"),
        ("cores_per_numa=4,distance_remote=5", "distance_remote", "out of range"),
        ("cores_per_numa=4,name=no spaces", "name", "must be 1-63"),
    ],
    ids=[
        "empty",
        "missing-cores",
        "unknown-key",
        "duplicate",
        "no-equals",
        "empty-item",
        "not-int",
        "negative",
        "zero-sockets",
        "smt9",
        "too-many-cpus",
        "too-many-numa",
        "bad-memory",
        "zero-memory",
        "negative-memory",
        "bad-suffix",
        "hugepages-too-big",
        "uncore-not-dividing",
        "uncore-zero",
        "distance-too-small",
        "bad-name",
    ],
)
def test_spec_errors(spec: str, key: str | None, message: str) -> None:
    with pytest.raises(TopologySpecError, match=message) as info:
        parse_topology_spec(spec)
    assert info.value.key == key


def test_unknown_key_error_lists_valid_keys() -> None:
    with pytest.raises(TopologySpecError) as info:
        parse_topology_spec("cores=4")
    assert "cores_per_numa" in str(info.value) and "hugepages_1Gi_per_numa" in str(info.value)


def test_spec_limit_is_inclusive() -> None:
    topo = parse_topology_spec("sockets=2,numa_per_socket=2,cores_per_numa=1024,threads_per_core=2")
    assert topo.num_cpus == MAX_SPEC_CPUS


def test_resolve_topology() -> None:
    assert resolve_topology("topoDualSocketHT", None) is get_preset("topoDualSocketHT")
    assert resolve_topology(None, "cores_per_numa=2").num_cpus == 4
    with pytest.raises(TopologySpecError, match="not both"):
        resolve_topology("laptop-1s", "cores_per_numa=2")
    with pytest.raises(TopologySpecError, match="give a preset"):
        resolve_topology(None, None)
    with pytest.raises(UnknownPresetError):
        resolve_topology("nope", None)


@settings(max_examples=60, deadline=None)
@given(
    sockets=st.integers(1, 4),
    numa_per_socket=st.integers(1, 4),
    cores_per_numa=st.integers(1, 12),
    threads=st.integers(1, 4),
    uncore_divisor=st.integers(0, 4),
)
def test_synthetic_topology_properties(
    sockets: int, numa_per_socket: int, cores_per_numa: int, threads: int, uncore_divisor: int
) -> None:
    cores_per_socket = numa_per_socket * cores_per_numa
    divisors = [d for d in range(1, cores_per_socket + 1) if cores_per_socket % d == 0]
    cores_per_uncore = divisors[uncore_divisor % len(divisors)] if uncore_divisor else None
    topo = synthetic_topology(
        sockets=sockets,
        numa_per_socket=numa_per_socket,
        cores_per_numa=cores_per_numa,
        threads_per_core=threads,
        cores_per_uncore=cores_per_uncore,
    )
    num_cores = sockets * numa_per_socket * cores_per_numa
    assert (topo.num_cpus, topo.num_cores) == (num_cores * threads, num_cores)
    assert topo.num_numa_nodes == sockets * numa_per_socket
    assert topo.cpus_per_core() == threads
    assert topo.all_cpus == CPUSet.range(0, num_cores * threads - 1)
    for core in topo.core_ids():
        cpus = topo.cpus_of_core(core)
        assert cpus.min() == core  # kubelet rule: core id = lowest thread
        assert cpus == CPUSet(core + t * num_cores for t in range(threads))
        assert len(topo.sockets_of(cpus)) == len(topo.numa_nodes_of(cpus)) == 1
    for uncore in topo.uncore_cache_ids():
        assert len(topo.sockets_of(topo.cpus_of_uncore_cache(uncore))) == 1
    for numa in topo.numa_node_ids():
        assert topo.cpus_of_numa_node(numa).size() == cores_per_numa * threads

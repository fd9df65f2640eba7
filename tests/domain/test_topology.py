"""CPUTopology (app/domain/topology/model.py) and its views (app/domain/topology/view.py)."""

from __future__ import annotations

import json

import pytest

from app.domain.cpuset import CPUSet
from app.domain.presets import get_preset
from app.domain.topology.model import (
    GIB,
    HUGEPAGE_1G,
    HUGEPAGE_2M,
    MIB,
    CPUInfo,
    CPUTopology,
    NUMANodeMemory,
    TopologyError,
    binary_quantity,
    discover,
    hugepage_resource_name,
)
from app.domain.topology.spec import parse_topology_spec
from app.domain.topology.view import format_bytes, render_text, topology_to_dict

DUAL_HT_FIXTURE = {
    "num_cpus": 12,
    "num_sockets": 2,
    "num_cores": 6,
    "num_numa_nodes": 2,
    "num_uncore_caches": 1,
    "cpus": {str(c): [c % 6, c % 2, c % 2, 0] for c in range(12)},
}


def test_from_fixture_uses_given_ids_and_counts() -> None:
    topo = CPUTopology.from_fixture("dual", DUAL_HT_FIXTURE)
    assert topo.name == "dual"
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets) == (12, 6, 2)
    assert topo.cpus_per_core() == 2
    assert topo.cpus_of_socket(0) == CPUSet.parse("0,2,4,6,8,10")
    assert topo.cpus_of_core(1) == CPUSet([1, 7])
    assert [m.numa_id for m in topo.memory] == [0, 1]


def test_fixture_counts_override_derived_counts() -> None:
    fixture = {**DUAL_HT_FIXTURE, "num_cpus": 10, "num_cores": 4}
    topo = CPUTopology.from_fixture("odd", fixture)
    assert (topo.num_cpus, topo.num_cores, topo.cpus_per_core()) == (10, 4, 2)


def test_queries_on_subsets() -> None:
    topo = get_preset("topoDualSocketMultiNumaPerSocketHT")
    cpus = CPUSet.parse("5,15,45")
    assert topo.numa_nodes_of(cpus) == [0, 1]
    assert topo.sockets_of(cpus) == [0]
    assert topo.cores_of(cpus) == [5, 15]
    assert topo.uncore_caches_of(cpus) == [0]
    assert topo.sockets_in_numa_nodes([1, 2]) == [0, 1]
    assert topo.numa_nodes_in_sockets([1]) == [2, 3]
    assert topo.cpus_in_numa_nodes([3]) == CPUSet.parse("30-39,70-79")
    assert topo.cpus_in_sockets([0]) == CPUSet.parse("0-19,40-59")
    assert topo.cpus_in_cores([0, 39]) == CPUSet.parse("0,39,40,79")
    assert topo.cpus_of_numa_node(9) == CPUSet()
    assert topo.cpu_socket_id(45) == 0 and topo.cpu_numa_node_id(45) == 0


def test_discover_core_id_is_lowest_thread_and_uncore_falls_back_to_socket() -> None:
    topo = discover({0: [(0, [7, 3], None), (0, [5], 9)], 1: [(1, [1, 2], None)]})
    assert topo.cpu_details[7] == CPUInfo(7, 3, 0, 0, 0)
    assert topo.cpu_details[5] == CPUInfo(5, 5, 0, 0, 9)
    assert topo.cpu_details[2] == CPUInfo(2, 1, 1, 1, 1)
    assert (topo.num_cores, topo.num_uncore_cache) == (3, 3)


@pytest.mark.parametrize(
    ("numa_cores", "message"),
    [
        ({0: [(0, [], None)]}, "no cpus provided"),
        ({0: [(0, [1, 1], None)]}, "cpus provided are not unique"),
        ({0: [(0, [1], None)], 1: [(0, [1], None)]}, "cpus provided are not unique"),
        ({}, "no cpus provided"),
    ],
    ids=["no-threads", "duplicate-in-core", "duplicate-across-nodes", "empty"],
)
def test_discover_errors(numa_cores: dict, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        discover(numa_cores)


def test_memory_helpers() -> None:
    mem = NUMANodeMemory(0, 64 * GIB, {HUGEPAGE_1G: 4, HUGEPAGE_2M: 512}, (10, 21))
    assert mem.hugepage_bytes(HUGEPAGE_1G) == 4 * GIB
    assert mem.hugepage_bytes(12345) == 0
    assert mem.regular_memory_bytes() == 59 * GIB
    topo = CPUTopology(
        [CPUInfo(0, 0, 0, 0, 0)],
        memory=[mem, NUMANodeMemory(2, 8 * GIB)],
    )
    assert topo.all_numa_node_ids() == [0, 2]
    assert topo.numa_node_ids() == [0]
    assert topo.total_memory_bytes() == 72 * GIB
    assert topo.total_hugepage_bytes(HUGEPAGE_2M) == 1 * GIB
    assert topo.hugepage_sizes() == [HUGEPAGE_2M, HUGEPAGE_1G]
    assert topo.distance(0, 1) == 21
    assert topo.distance(2, 2) == 10 and topo.distance(2, 0) == 20  # unknown: Linux defaults


@pytest.mark.parametrize(
    ("n_bytes", "text"),
    [
        (HUGEPAGE_2M, "2Mi"),
        (HUGEPAGE_1G, "1Gi"),
        (64 * 1024, "64Ki"),
        (1536 * 1024, "1536Ki"),
        (3 * MIB, "3Mi"),
        (1000, "1000"),
        (0, "0"),
    ],
)
def test_binary_quantity(n_bytes: int, text: str) -> None:
    assert binary_quantity(n_bytes) == text


def test_hugepage_resource_name() -> None:
    assert hugepage_resource_name(HUGEPAGE_1G) == "hugepages-1Gi"
    assert hugepage_resource_name(HUGEPAGE_2M) == "hugepages-2Mi"


def test_duplicate_cpus_rejected() -> None:
    with pytest.raises(TopologyError, match="not unique"):
        CPUTopology([CPUInfo(0, 0, 0, 0, 0), CPUInfo(0, 0, 0, 0, 0)])


# -- views ------------------------------------------------------------------------------


def test_topology_to_dict_shape() -> None:
    topo = parse_topology_spec(
        "sockets=2,numa_per_socket=2,cores_per_numa=2,threads_per_core=2,"
        "memory_per_numa=4Gi,hugepages_2Mi_per_numa=256,name=small"
    )
    data = topology_to_dict(topo)
    json.dumps(data)  # JSON-ready
    assert data["name"] == "small"
    assert (data["numCpus"], data["numCores"], data["numSockets"], data["numNumaNodes"]) == (
        16,
        8,
        2,
        4,
    )
    assert data["cpusPerCore"] == 2
    assert data["allCpus"] == {"cpuSet": "0-15", "cpuIds": list(range(16))}
    assert data["offlineCpus"] == {"cpuSet": "", "cpuIds": []}
    assert data["memoryBytes"] == 16 * GIB
    assert data["hugepages"] == {"hugepages-2Mi": 4 * 256 * HUGEPAGE_2M}
    assert data["sockets"][1] == {
        "id": 1,
        "cpuSet": "4-7,12-15",
        "cpuIds": [4, 5, 6, 7, 12, 13, 14, 15],
        "numaNodes": [2, 3],
        "cores": 4,
    }
    node3 = data["numaNodes"][3]
    assert node3["name"] == "node-3" and node3["type"] == "Node"
    assert node3["cpuSet"] == "6-7,14-15" and node3["cpuIds"] == [6, 7, 14, 15]
    assert node3["sockets"] == [1]
    assert node3["memoryBytes"] == 4 * GIB
    assert node3["regularMemoryBytes"] == 4 * GIB - 256 * HUGEPAGE_2M
    assert node3["hugepages"] == {
        "hugepages-2Mi": {"pageSizeBytes": HUGEPAGE_2M, "pages": 256, "bytes": 256 * HUGEPAGE_2M}
    }
    assert node3["distances"] == [21, 21, 11, 10]
    assert node3["costs"][0] == {"name": "node-0", "value": 21}
    assert len(data["cpus"]) == 16
    assert data["cpus"][9] == {"id": 9, "core": 1, "socket": 0, "numaNode": 0, "uncoreCache": 0}


def test_topology_to_dict_offline_and_memory_only_nodes() -> None:
    topo = CPUTopology(
        [CPUInfo(0, 0, 0, 0, 0), CPUInfo(2, 2, 0, 0, 0)],
        memory=[NUMANodeMemory(0, GIB), NUMANodeMemory(1, 2 * GIB)],
        offline_cpus=CPUSet([1]),
        cpu_model="Test CPU",
        cpu_flags=["avx"],
    )
    data = topology_to_dict(topo)
    assert data["offlineCpus"] == {"cpuSet": "1", "cpuIds": [1]}
    assert [n["id"] for n in data["numaNodes"]] == [0, 1]
    assert data["numaNodes"][1]["cpuIds"] == []
    assert data["numaNodes"][1]["costs"] == [
        {"name": "node-0", "value": 20},
        {"name": "node-1", "value": 10},
    ]
    assert data["cpuModel"] == "Test CPU" and data["cpuFlags"] == ["avx"]
    text = render_text(topo)
    assert "NUMANode P#1 (2 GiB; no CPUs)" in text
    assert "Offline CPUs: 1" in text
    assert "CPU model: Test CPU" in text


def test_render_text_nesting() -> None:
    text = render_text(get_preset("topoUncoreSingleSocketSMT"))
    lines = text.splitlines()
    assert lines[0].startswith("Machine 'topoUncoreSingleSocketSMT' (32 GiB total): 16 CPUs")
    assert lines[1] == "  Package P#0 (CPUs 0-15)"
    assert lines[2] == "    NUMANode P#0 (32 GiB; CPUs 0-15)"
    assert lines[3] == "      L3 P#0 (CPUs 0-3,8-11)"
    assert lines[4:7] == ["        Core P#0", "          PU P#0", "          PU P#8"]
    assert "      L3 P#1 (CPUs 4-7,12-15)" in lines
    assert sum(1 for line in lines if line.strip().startswith("PU P#")) == 16


def test_render_text_marks_elements_split_across_packages() -> None:
    text = render_text(get_preset("fakeTopoMultiSocketDualSocketPerNumaHT"))
    assert "    NUMANode P#0 (part) (64 GiB; CPUs 0-9,40-49)" in text
    assert text.count("  Package P#") == 4


def test_render_text_shows_hugepages() -> None:
    text = render_text(get_preset("server-2s-8numa-512t"))
    assert "NUMANode P#7 (192 GiB, hugepages-1Gi: 64; CPUs 224-255,480-511)" in text
    assert text.count("PU P#") == 512


@pytest.mark.parametrize(
    ("n_bytes", "text"),
    [(32 * GIB, "32 GiB"), (1536 * GIB, "1.5 TiB"), (512, "512 B"), (5 * MIB // 2, "2.5 MiB")],
)
def test_format_bytes(n_bytes: int, text: str) -> None:
    assert format_bytes(n_bytes) == text

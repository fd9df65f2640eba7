"""services/topologies.py: the CPU-map nesting, summaries, caching and host failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.presets import get_preset, list_presets
from app.domain.topology.model import GIB, HUGEPAGE_2M, CPUInfo, CPUTopology, NUMANodeMemory
from app.domain.topology.synthetic import synthetic_topology
from app.services.topologies import (
    HOST,
    HostDiscoveryError,
    TopologyService,
    UnknownTopologyError,
    build_cpu_map,
    page_size_label,
    summarize,
)


def _check_map(topo: CPUTopology) -> None:
    cpu_map = build_cpu_map(topo)
    seen: list[int] = []
    memory_shown: list[int] = []
    for socket in cpu_map.sockets:
        for numa in socket.numa_nodes:
            assert numa.show_uncore_groups == (len(numa.uncore_groups) > 1)
            if numa.memory is not None:
                memory_shown.append(numa.id)
            count = 0
            for group in numa.uncore_groups:
                for core in group.cores:
                    assert core.cpus == sorted(core.cpus)
                    for cpu in core.cpus:
                        info = topo.cpu_details[cpu]
                        assert (info.socket_id, info.numa_node_id) == (socket.id, numa.id)
                        assert (info.uncore_cache_id, info.core_id) == (group.id, core.id)
                        seen.append(cpu)
                        count += 1
            assert count == numa.cpu_count
    assert sorted(seen) == list(topo.all_cpus)
    assert len(seen) == len(set(seen))
    assert memory_shown == sorted(set(memory_shown))
    assert set(memory_shown) == {m.numa_id for m in topo.memory} & set(topo.numa_node_ids())


@pytest.mark.parametrize("name", [p.name for p in list_presets()], ids=str)
def test_cpu_map_of_presets(name: str) -> None:
    _check_map(get_preset(name))


@given(
    sockets=st.integers(1, 4),
    numa_per_socket=st.integers(1, 4),
    cores_per_numa=st.integers(1, 12),
    threads_per_core=st.sampled_from([1, 2, 4]),
    uncore=st.one_of(st.none(), st.integers(1, 6)),
)
@settings(max_examples=40, deadline=None)
def test_cpu_map_of_synthetic_topologies(
    sockets: int,
    numa_per_socket: int,
    cores_per_numa: int,
    threads_per_core: int,
    uncore: int | None,
) -> None:
    if uncore is not None and cores_per_numa % uncore:
        uncore = None
    topo = synthetic_topology(
        sockets=sockets,
        numa_per_socket=numa_per_socket,
        cores_per_numa=cores_per_numa,
        threads_per_core=threads_per_core,
        cores_per_uncore=uncore,
    )
    _check_map(topo)


def test_cores_ordered_by_lowest_cpu() -> None:
    cpu_map = build_cpu_map(get_preset("topoDualSocketHT"))
    first_cpus = [c.cpus[0] for c in cpu_map.sockets[0].numa_nodes[0].uncore_groups[0].cores]
    assert first_cpus == sorted(first_cpus)


def _memory_only_topology() -> CPUTopology:
    cpus = [CPUInfo(i, i, 0, 0, 0) for i in range(4)]
    memory = [
        NUMANodeMemory(0, 8 * GIB, {HUGEPAGE_2M: 256}, (10, 40)),
        NUMANodeMemory(1, 64 * GIB, {}, (40, 10)),
    ]
    return CPUTopology(cpus, memory=memory, name="cxl")


def test_memory_only_nodes_and_distances() -> None:
    cpu_map = build_cpu_map(_memory_only_topology())
    assert [m.numa_node for m in cpu_map.memory_only_numa_nodes] == [1]
    assert cpu_map.distances.nodes == [0, 1]
    assert cpu_map.distances.rows == [[10, 40], [40, 10]]
    assert cpu_map.distances.reported
    numa0 = cpu_map.sockets[0].numa_nodes[0].memory
    assert numa0 is not None
    assert numa0.regular_bytes == 8 * GIB - 256 * HUGEPAGE_2M
    assert [(h.page_size_label, h.pages, h.bytes) for h in numa0.hugepages] == [
        ("2Mi", 256, 512 * 1024**2)
    ]


def test_unreported_distances_use_linux_defaults() -> None:
    topo = CPUTopology([CPUInfo(0, 0, 0, 0, 0), CPUInfo(1, 1, 1, 1, 1)])
    table = build_cpu_map(topo).distances
    assert table.rows == [[10, 20], [20, 10]]
    assert not table.reported


@pytest.mark.parametrize(
    ("size", "label"),
    [(2 * 1024**2, "2Mi"), (1024**3, "1Gi"), (64 * 1024, "64Ki")],
    ids=["2Mi", "1Gi", "64Ki"],
)
def test_page_size_label(size: int, label: str) -> None:
    assert page_size_label(size) == label


def test_summary_counts_and_hides_empty_hugepage_sizes() -> None:
    topo = _memory_only_topology()
    s = summarize(topo, name="cxl", kind="host", description="d")
    assert (s.cpus, s.cores, s.sockets, s.numa_nodes) == (4, 4, 1, 1)
    assert s.memory_bytes == 72 * GIB
    assert [h.page_size_label for h in s.hugepages] == ["2Mi"]
    assert s.model_dump(by_alias=True)["jsonUrl"] == "/topologies/cxl.json"


# -- the service -------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_unknown_name_lists_host_and_presets() -> None:
    service = TopologyService(discover_host=lambda *a, **k: get_preset("laptop-1s"))
    with pytest.raises(UnknownTopologyError) as info:
        service.load("nope")
    assert info.value.known[0] == HOST
    assert "'host'" in info.value.message and "laptop-1s" in info.value.message
    assert ", host," not in info.value.message


def test_views_are_cached() -> None:
    service = TopologyService(discover_host=lambda *a, **k: get_preset("laptop-1s"))
    assert service.load("topoDualSocketHT") is service.load("topoDualSocketHT")
    assert service.load(HOST).summary.kind == "host"
    assert service.load(HOST).summary.description.startswith("This machine")


def test_preset_summary_carries_preset_kind() -> None:
    service = TopologyService(discover_host=lambda *a, **k: get_preset("laptop-1s"))
    assert service.summary("topoDualSocketHT").preset_kind == "fixture"
    assert service.summary("laptop-1s").preset_kind == "server"


def test_host_failure_is_remembered_then_retried() -> None:
    clock = FakeClock()
    calls: list[Path] = []
    errors: list[int] = []
    outcomes: list[Exception | CPUTopology] = [OSError("boom"), get_preset("laptop-1s")]

    def discover(root: Path, *, use_cpuinfo: bool) -> CPUTopology:
        calls.append(root)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    service = TopologyService(
        sysfs_root=Path("/fake/sys"),
        use_cpuinfo=False,
        discover_host=discover,
        clock=clock,
        host_retry_seconds=30,
        on_host_error=lambda: errors.append(1),
    )
    with pytest.raises(HostDiscoveryError, match=r"'/fake/sys': boom"):
        service.host()
    clock.now += 10
    with pytest.raises(HostDiscoveryError):
        service.host()
    assert len(calls) == 1 and errors == [1]
    index = service.index()
    assert index.topologies[0].available is False
    clock.now += 30
    assert service.host().num_cpus == 16
    assert service.host() is service.host()
    assert len(calls) == 2 and service.host_discovery_failures == 1

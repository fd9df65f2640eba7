"""Host discovery from fake sysfs trees (app/adapters/sysfs.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.fixtures` under bare pytest

from app.adapters import sysfs as sysfs_mod
from app.adapters.sysfs import SysfsError, discover_host
from app.domain.cpuset import CPUSet
from app.domain.presets import get_preset
from app.domain.topology.model import GIB, HUGEPAGE_1G, HUGEPAGE_2M, CPUInfo
from tests.fixtures.sysfs import (
    KB_PER_GIB,
    FakeCPU,
    FakeSysfs,
    cpu_map_text,
    fake_sysfs_from_topology,
)


@pytest.fixture(autouse=True)
def _no_cpuinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake trees must never reach py-cpuinfo."""

    def boom() -> tuple[str, tuple[str, ...]]:
        raise AssertionError("py-cpuinfo was called for a fake sysfs tree")

    monkeypatch.setattr(sysfs_mod, "host_cpu_model_and_flags", boom)


def two_socket_ht(core_ids_per_socket: bool) -> list[FakeCPU]:
    """2 sockets × 4 cores × 2 threads; core c = CPUs c and c+8; NUMA node = socket."""
    cpus = []
    for thread in range(2):
        for core in range(8):
            socket = core // 4
            hw_core = core % 4 if core_ids_per_socket else core
            cpus.append(FakeCPU(thread * 8 + core, hw_core, socket, socket, l3_id=socket))
    return cpus


def details(topo_cpus: dict[int, CPUInfo]) -> dict[int, tuple[int, int, int, int]]:
    return {
        c: (i.core_id, i.socket_id, i.numa_node_id, i.uncore_cache_id) for c, i in topo_cpus.items()
    }


@pytest.mark.parametrize(
    "per_socket", [False, True], ids=["unique-core-ids", "core-ids-per-socket"]
)
def test_two_socket_ht_tree(tmp_path: Path, per_socket: bool) -> None:
    fake = FakeSysfs(
        two_socket_ht(per_socket),
        node_memory_kb={0: 64 * KB_PER_GIB, 1: 32 * KB_PER_GIB},
        node_hugepages_kb={0: {2048: 512, 1048576: 2}, 1: {1048576: 4}},
    )
    topo = discover_host(fake.write(tmp_path), name="box")
    assert topo.name == "box"
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (16, 8, 2, 2)
    assert topo.cpus_per_core() == 2
    # Core id = lowest thread id, whatever the hardware numbering.
    assert details(topo.cpu_details) == {
        cpu: (cpu % 8, (cpu % 8) // 4, (cpu % 8) // 4, (cpu % 8) // 4) for cpu in range(16)
    }
    assert topo.cpus_of_core(5) == CPUSet([5, 13])
    assert topo.cpus_of_numa_node(1) == CPUSet.parse("4-7,12-15")
    mem0, mem1 = topo.memory
    assert mem0.memory_bytes == 64 * GIB
    assert mem0.hugepages == {HUGEPAGE_2M: 512, HUGEPAGE_1G: 2}
    assert mem1.hugepages == {HUGEPAGE_2M: 0, HUGEPAGE_1G: 4}
    assert mem0.distances == (10, 21)
    assert topo.distance(1, 0) == 21
    assert topo.offline_cpus == CPUSet()


def test_repeated_core_ids_with_gaps(tmp_path: Path) -> None:
    # Intel-style numbering: core ids 0,1,2,8,9,10 on each socket, no SMT.
    hw = [0, 1, 2, 8, 9, 10]
    cpus = [FakeCPU(s * 6 + i, hw[i], s, s) for s in range(2) for i in range(6)]
    topo = discover_host(FakeSysfs(cpus).write(tmp_path))
    assert topo.num_cores == 12
    assert [topo.cpu_core_id(c) for c in range(12)] == list(range(12))
    assert topo.cpus_per_core() == 1


def test_offline_cpus_are_left_out_and_listed(tmp_path: Path) -> None:
    cpus = [
        c if c.cpu_id not in (3, 11, 14) else FakeCPU(**{**c.__dict__, "online": False})
        for c in two_socket_ht(True)
    ]
    topo = discover_host(FakeSysfs(cpus).write(tmp_path))
    assert topo.offline_cpus == CPUSet([3, 11, 14])
    assert topo.all_cpus == CPUSet.parse("0-2,4-10,12-13,15")
    assert topo.num_cpus == 13
    assert topo.num_cores == 7  # core 3 lost both threads; core 6 keeps CPU 6
    assert topo.cpus_of_core(6) == CPUSet([6])
    assert 3 not in topo.cpu_details


def test_offline_from_per_cpu_online_file_without_global_list(tmp_path: Path) -> None:
    cpus = [FakeCPU(i, i, 0, 0, online=i != 2) for i in range(4)]
    topo = discover_host(FakeSysfs(cpus, online_file=False).write(tmp_path))
    assert topo.offline_cpus == CPUSet([2])
    assert topo.all_cpus == CPUSet([0, 1, 3])


def test_no_online_file_means_all_online(tmp_path: Path) -> None:
    cpus = [FakeCPU(i, i, 0, 0) for i in range(4)]
    root = FakeSysfs(cpus, online_file=False).write(tmp_path)
    for i in range(1, 4):
        (root / f"devices/system/cpu/cpu{i}/online").unlink()
    assert discover_host(root).all_cpus == CPUSet.parse("0-3")


def test_uncore_cache_ids(tmp_path: Path) -> None:
    # 1 socket, 1 NUMA node, 16 cores, one L3 per 4 cores (AMD CCX-like).
    cpus = [FakeCPU(i, i, 0, 0, l3_id=i // 4) for i in range(16)]
    topo = discover_host(FakeSysfs(cpus).write(tmp_path))
    assert topo.num_uncore_cache == 4
    assert topo.uncore_caches_of(CPUSet.parse("0-15")) == [0, 1, 2, 3]
    assert topo.cpus_of_uncore_cache(2) == CPUSet.parse("8-11")


def test_node_wide_l3_is_not_an_uncore_cache(tmp_path: Path) -> None:
    # Each socket's L3 spans exactly its NUMA node: cAdvisor calls it a node cache, so the
    # uncore id falls back to the socket id even though the L3 ids are 7 and 9.
    cpus = [FakeCPU(i, i % 4, i // 4, i // 4, l3_id=7 if i < 4 else 9) for i in range(8)]
    topo = discover_host(FakeSysfs(cpus).write(tmp_path))
    assert [topo.cpu_details[c].uncore_cache_id for c in (0, 7)] == [0, 1]


def test_l3_spanning_two_numa_nodes_is_an_uncore_cache(tmp_path: Path) -> None:
    # Sub-NUMA clustering: one L3 (id 5) per socket, two NUMA nodes per socket.
    cpus = [FakeCPU(i, i, 0, i // 4, l3_id=5) for i in range(8)]
    topo = discover_host(FakeSysfs(cpus).write(tmp_path))
    assert {i.uncore_cache_id for i in topo.cpu_details.values()} == {5}


def test_missing_cache_falls_back_to_socket(tmp_path: Path) -> None:
    cpus = [FakeCPU(i, i % 2, i // 2, 0) for i in range(4)]  # no index3 at all
    topo = discover_host(FakeSysfs(cpus).write(tmp_path))
    assert [i.uncore_cache_id for i in topo.cpu_details.values()] == [0, 0, 1, 1]


def test_no_numa_single_socket_gives_one_node_without_memory(tmp_path: Path) -> None:
    # cAdvisor's getCPUTopology gives pseudo nodes no memory; /proc/meminfo and the global
    # hugepages are not read for them.
    cpus = [FakeCPU(i, i % 4, 0, None) for i in range(8)]
    fake = FakeSysfs(
        cpus, numa=False, proc_meminfo_kb=16 * KB_PER_GIB, global_hugepages_kb={2048: 100}
    )
    topo = discover_host(fake.write(tmp_path))
    assert topo.numa_node_ids() == [0]
    assert topo.cpus_of_numa_node(0) == CPUSet.parse("0-7")
    assert topo.cpus_per_core() == 2
    (mem,) = topo.memory
    assert (mem.numa_id, mem.memory_bytes, mem.hugepages, mem.distances) == (0, 0, {}, ())


def test_no_numa_two_sockets_gives_one_node_per_socket(tmp_path: Path) -> None:
    cpus = [FakeCPU(i, i % 2, 1 + i // 2, None) for i in range(4)]  # sockets 1 and 2
    topo = discover_host(FakeSysfs(cpus, numa=False, proc_meminfo_kb=1000).write(tmp_path))
    assert topo.numa_node_ids() == [1, 2]
    assert topo.cpus_of_numa_node(2) == CPUSet([2, 3])
    assert [m.memory_bytes for m in topo.memory] == [0, 0]


def test_no_numa_counts_every_cpu_directory(tmp_path: Path) -> None:
    # Without NUMA, cAdvisor's NumCores (the kubelet's NumCPUs) is the number of cpuN
    # directories, offline ones included.
    cpus = [FakeCPU(i, i, 0, None, online=i != 3) for i in range(4)]
    topo = discover_host(FakeSysfs(cpus, numa=False).write(tmp_path))
    assert topo.all_cpus == CPUSet.parse("0-2")
    assert (topo.num_cpus, topo.num_cores) == (4, 3)
    assert topo.offline_cpus == CPUSet([3])


def test_memory_only_node_keeps_its_memory(tmp_path: Path) -> None:
    cpus = [FakeCPU(i, i, 0, 0) for i in range(4)]
    fake = FakeSysfs(cpus, memory_only_nodes=[1], node_memory_kb={1: 8 * KB_PER_GIB})
    topo = discover_host(fake.write(tmp_path))
    assert topo.num_numa_nodes == 1
    assert topo.all_numa_node_ids() == [0, 1]
    mem = topo.numa_memory(1)
    assert mem is not None and mem.memory_bytes == 8 * GIB
    assert topo.numa_memory(0) is not None


def test_cpulist_is_not_read(tmp_path: Path) -> None:
    # cAdvisor takes a node's CPUs from its cpuN links only: without links no CPU is found.
    cpus = [FakeCPU(i, i, 0, i // 2) for i in range(4)]
    root = FakeSysfs(cpus, write_cpu_links=False).write(tmp_path)
    with pytest.raises(SysfsError, match="could not detect number of cpus"):
        discover_host(root)


def test_cpu_without_core_id_is_skipped(tmp_path: Path) -> None:
    root = FakeSysfs(two_socket_ht(True)).write(tmp_path)
    (root / "devices/system/cpu/cpu9/topology/core_id").unlink()
    topo = discover_host(root)
    assert topo.num_cpus == 15 and 9 not in topo.cpu_details
    assert topo.cpus_of_core(1) == CPUSet([1])


def test_cpu_own_online_file_is_not_consulted(tmp_path: Path) -> None:
    # IsCPUOnline reads devices/system/cpu/online only.
    root = FakeSysfs([FakeCPU(i, i, 0, 0) for i in range(4)]).write(tmp_path)
    (root / "devices/system/cpu/cpu2/online").write_text("0\n")
    assert discover_host(root).all_cpus == CPUSet.parse("0-3")


def test_unparsable_online_list_stops_at_the_bad_range(tmp_path: Path) -> None:
    # isCPUOnline scans ranges left to right: CPUs in "0-1" are found before the bad range.
    root = FakeSysfs([FakeCPU(i, i, 0, 0) for i in range(4)]).write(tmp_path)
    (root / "devices/system/cpu/online").write_text("0-1,x,2-3\n")
    topo = discover_host(root)
    assert topo.all_cpus == CPUSet([0, 1])
    assert topo.offline_cpus == CPUSet([2, 3])


@pytest.mark.parametrize(
    "name", ["laptop-1s", "server-2s-4numa-128t", "topoDualSocketHT", "topoUncoreSingleSocketSMT"]
)
def test_round_trip_of_presets(tmp_path: Path, name: str) -> None:
    preset = get_preset(name)
    topo = discover_host(fake_sysfs_from_topology(preset).write(tmp_path))
    assert topo.cpu_details == preset.cpu_details
    for found, expected in zip(topo.memory, preset.memory, strict=True):
        assert (found.numa_id, found.memory_bytes, found.distances) == (
            expected.numa_id,
            expected.memory_bytes,
            expected.distances,
        )
        assert {k: v for k, v in found.hugepages.items() if v} == expected.hugepages
    assert (topo.num_cores, topo.num_uncore_cache) == (preset.num_cores, preset.num_uncore_cache)


def test_discovery_writes_nothing(tmp_path: Path) -> None:
    root = FakeSysfs(two_socket_ht(True), proc_meminfo_kb=1).write(tmp_path)

    def snapshot() -> dict[str, tuple[float, bytes]]:
        return {
            str(p): (p.stat().st_mtime, p.read_bytes() if p.is_file() else b"")
            for p in sorted(tmp_path.rglob("*"))
        }

    before = snapshot()
    discover_host(root)
    assert snapshot() == before


def test_cpu_map_text() -> None:
    assert cpu_map_text(CPUSet([0, 1, 33]), 40) == "00000002,00000003"


def _break(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink()
    else:
        path.write_text(text)


@pytest.mark.parametrize(
    ("relative", "text", "message"),
    [
        ("devices/system/cpu/cpu1/topology/core_id", "abc\n", "core_id: expected an integer"),
        ("devices/system/cpu/cpu8/topology/physical_package_id", "-\n", "expected an integer"),
        ("devices/system/node/node1/meminfo", "garbage\n", "no 'MemTotal"),
        ("devices/system/node/node1/distance", "10 far\n", "not a list of distances"),
        ("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "x", "expected"),
        ("devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", None, "missing"),
    ],
    ids=["core-id", "package-id", "meminfo", "distance", "hugepages", "hugepages-nr"],
)
def test_malformed_files_are_named(tmp_path: Path, relative: str, text: str, message: str) -> None:
    root = FakeSysfs(two_socket_ht(False)).write(tmp_path)
    _break(root / relative, text)
    with pytest.raises(SysfsError, match=message) as info:
        discover_host(root)
    assert info.value.path is not None and info.value.path.endswith(relative)


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(SysfsError, match="is not a directory"):
        discover_host(tmp_path / "nope")


def test_root_without_cpu_dir(tmp_path: Path) -> None:
    with pytest.raises(SysfsError, match="is missing"):
        discover_host(tmp_path)


def test_no_cpu_directories(tmp_path: Path) -> None:
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    with pytest.raises(SysfsError, match="no cpuN directories"):
        discover_host(tmp_path)


def test_no_topology_information(tmp_path: Path) -> None:
    root = FakeSysfs([FakeCPU(0, 0, 0, 0)]).write(tmp_path)
    (root / "devices/system/cpu/cpu0/topology/physical_package_id").unlink()
    with pytest.raises(SysfsError, match="no online CPU"):
        discover_host(root)


def test_cpu_linked_under_two_nodes_belongs_to_the_later(tmp_path: Path) -> None:
    # The kubelet's CPUDetails is a map filled node by node: the later node wins, and
    # cAdvisor's thread count (NumCPUs) counts the CPU twice.
    root = FakeSysfs([FakeCPU(i, i, 0, i) for i in range(2)]).write(tmp_path)
    (root / "devices/system/node/node1/cpu0").symlink_to("../../cpu/cpu0")
    topo = discover_host(root)
    assert topo.cpus_of_numa_node(1) == CPUSet([0, 1])
    assert topo.num_numa_nodes == 1 and topo.num_cpus == 3


def test_real_sysfs_uses_cpuinfo_once(monkeypatch: pytest.MonkeyPatch) -> None:
    if not Path("/sys/devices/system/cpu/cpu0/topology/core_id").exists():
        pytest.skip("no readable /sys on this machine")
    calls: list[int] = []

    def fake_info() -> tuple[str, tuple[str, ...]]:
        calls.append(1)
        return "Test CPU", ("avx2", "sse4_2")

    monkeypatch.setattr(sysfs_mod, "host_cpu_model_and_flags", fake_info)
    topo = discover_host("/sys")
    assert topo.cpu_model == "Test CPU" and topo.cpu_flags == ("avx2", "sse4_2")
    assert calls == [1]
    assert discover_host("/sys", use_cpuinfo=False).cpu_model == ""
    assert calls == [1]

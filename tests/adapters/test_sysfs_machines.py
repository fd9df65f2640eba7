"""Machine classes that real sysfs trees showed (tests/fixtures/sysfs_machines.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.fixtures` under bare pytest

from app.adapters.sysfs import SysfsError, discover_host
from app.domain.cpuset import CPUSet
from tests.fixtures.sysfs import FakeCPU, FakeSysfs
from tests.fixtures.sysfs_machines import duplicate_cpulist, kunpeng920, s390x_lpar

NUMASCOPE = str(Path(sys.executable).with_name("numascope"))


def test_kunpeng920_cpulist_with_trailing_nul(tmp_path: Path) -> None:
    root = kunpeng920().write(tmp_path)
    assert (root / "devices/system/node/node0/cpulist").read_bytes() == b"0-3\n\0"
    topo = discover_host(root)
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (16, 16, 2, 4)
    assert [topo.cpus_of_numa_node(n) for n in range(4)] == [
        CPUSet.parse(r) for r in ("0-3", "4-7", "8-11", "12-15")
    ]
    # Each die's L3 spans exactly its NUMA node: a node cache, so uncore = socket.
    assert topo.uncore_cache_ids() == [0, 1]
    assert topo.sockets_in_numa_nodes([2, 3]) == [1]


def test_s390x_groups_cores_by_book_and_drawer(tmp_path: Path) -> None:
    topo = discover_host(s390x_lpar().write(tmp_path))
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets) == (16, 8, 1)
    assert topo.numa_node_ids() == [-1] and topo.socket_ids() == [-1]
    assert topo.cpus_of_core(12) == CPUSet([12, 13])  # hardware core 0 of book 3
    assert topo.cpus_of_core(0) == CPUSet([0, 1])  # hardware core 0 of book 0
    # No cache id is read on s390x: every uncore cache is id 0.
    assert topo.uncore_cache_ids() == [0]
    (mem,) = topo.memory
    assert (mem.numa_id, mem.memory_bytes) == (-1, 0)
    assert topo.distance(-1, -1) == 10


def test_s390x_tree_read_as_another_arch_counts_six_cores(tmp_path: Path) -> None:
    # The same tree seen by a non-s390x kubelet: books and drawers are not consulted.
    topo = discover_host(s390x_lpar().write(tmp_path), arch="amd64")
    assert topo.num_cores == 6
    assert topo.cpus_of_core(0) == CPUSet([0, 1, 12, 13])


def test_s390x_cpu_without_book_id_is_skipped(tmp_path: Path) -> None:
    root = s390x_lpar().write(tmp_path)
    (root / "devices/system/cpu/cpu5/topology/book_id").unlink()
    topo = discover_host(root)
    assert 5 not in topo.cpu_details and topo.cpus_of_core(4) == CPUSet([4])


def test_s390x_topology_json_has_no_traceback(tmp_path: Path) -> None:
    root = s390x_lpar().write(tmp_path)
    done = subprocess.run(
        [NUMASCOPE, "topology", "--json", "--no-cpuinfo", "--sysfs", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["numCores"] == 8
    assert [n["id"] for n in body["numaNodes"]] == [-1]


def test_cpu_listed_under_two_nodes_in_cpulist(tmp_path: Path) -> None:
    root = duplicate_cpulist().write(tmp_path)
    assert (root / "devices/system/node/node7/cpulist").read_text() == "7,0\n"
    topo = discover_host(root)
    assert topo.num_numa_nodes == 8
    assert all(topo.cpus_of_numa_node(n) == CPUSet([n]) for n in range(8))


def test_nodes_in_glob_order_later_node_wins(tmp_path: Path) -> None:
    # node10 sorts before node2 in Go's Glob: the CPU linked under both ends up in node2.
    cpus = [FakeCPU(0, 0, 0, 2), FakeCPU(1, 1, 0, 10)]
    root = FakeSysfs(cpus).write(tmp_path)
    (root / "devices/system/node/node10/cpu0").symlink_to("../../cpu/cpu0")
    topo = discover_host(root)
    assert topo.cpu_numa_node_id(0) == 2 and topo.cpu_core_id(1) == 1


def test_unreadable_cache_stops_the_node_scan(tmp_path: Path) -> None:
    # addCacheInfo gives up on the node at the first core whose caches fail to read; the
    # cores before it keep their uncore cache, the later ones fall back to the socket.
    cpus = [FakeCPU(i, i, 0, 0, l3_id=10 + i // 2) for i in range(6)]
    root = FakeSysfs(cpus).write(tmp_path)
    (root / "devices/system/cpu/cpu2/cache/index3/size").write_text("32768\n")  # no K
    topo = discover_host(root)
    assert [topo.cpu_details[c].uncore_cache_id for c in range(6)] == [10, 10, 0, 0, 0, 0]


def test_malformed_cache_mask_is_tolerated(tmp_path: Path) -> None:
    cpus = [FakeCPU(i, i, 0, 0, l3_id=4 + i // 2) for i in range(4)]
    root = FakeSysfs(cpus).write(tmp_path)
    (root / "devices/system/cpu/cpu0/cache/index3/shared_cpu_map").write_text("zz\n")
    topo = discover_host(root)
    assert {i.uncore_cache_id for i in topo.cpu_details.values()} == {0}


def test_bad_node_name_is_named(tmp_path: Path) -> None:
    root = FakeSysfs([FakeCPU(0, 0, 0, 0)]).write(tmp_path)
    (root / "devices/system/node/nodeX1").mkdir()
    with pytest.raises(SysfsError, match="unexpected NUMA node name 'nodeX1'"):
        discover_host(root)

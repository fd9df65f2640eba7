"""Discover the host's CPU and memory topology from sysfs, read-only.

Follows google/cadvisor ``utils/sysinfo/sysinfo.go`` (``GetNodesInfo``, ``getCoresInfo``,
``addCacheInfo``, ``getCPUTopology``) and ``utils/sysfs/sysfs.go`` (``IsCPUOnline``), which
the kubelet reads through ``MachineInfo``, then pkg/kubelet/cm/cpumanager/topology/topology.go
``Discover`` (v1.37), so the result is the topology the kubelet itself would build:

* CPUs are the ``devices/system/cpu/cpuN`` directories. A CPU is online when it is listed in
  ``devices/system/cpu/online`` (no such file: CPU hotplug is off and all are online) and its
  own ``cpuN/online`` is not ``0``. Offline CPUs are left out and listed in ``offline_cpus``.
* NUMA nodes are the ``devices/system/node/nodeN`` directories; a node's CPUs are its
  ``cpulist`` plus its ``cpuN`` links. Online CPUs are grouped into cores per NUMA node by
  ``(physical_package_id, core_id)`` as cAdvisor does (hardware repeats core ids per socket);
  when ``core_id`` is missing, ``thread_siblings_list`` groups the threads instead, and a CPU
  without ``physical_package_id`` is skipped, as cAdvisor skips it.
* Kubelet rules: core id = the lowest CPU id among the core's threads; uncore cache id = the
  id of the core's first cache above L2 whose sharing CPU count differs from the node's
  thread count (cAdvisor files an L3 that spans exactly the NUMA node as a node cache, not an
  uncore cache); without one, the socket id. A core whose cache files cannot be read also
  falls back to its socket (cAdvisor gives up on the rest of that node's caches instead).
* Memory per node: ``MemTotal`` of ``nodeN/meminfo`` (0 when the file is missing),
  ``nodeN/hugepages/hugepages-<size>kB/nr_hugepages`` and the SLIT row ``nodeN/distance``
  (kept as the raw list, which the kubelet indexes by node id).
* No ``node`` directory (a kernel without NUMA): like cAdvisor's ``getCPUTopology``, one
  pseudo NUMA node per socket, with the socket's id. cAdvisor gives these nodes no memory; we
  take ``MemTotal`` from ``<root>/../proc/meminfo`` (``/proc/meminfo`` for ``/sys``; 0 when
  missing) and the pages of ``<root>/kernel/mm/hugepages``, split evenly over the pseudo
  nodes (all of it on the single node of a one-socket machine).

The CPU model and flags come from py-cpuinfo, only when asked and when the root is the real
``/sys`` (it is slow, so the answer is cached). Nothing is ever written.
"""

from __future__ import annotations

import os
import re
import socket
from functools import lru_cache
from pathlib import Path

from app.domain.cpuset import CPUSet, CPUSetError
from app.domain.topology import CPUTopology, NUMANodeMemory, TopologyError, discover

_CPU_DIR = re.compile(r"cpu([0-9]+)\Z")
_NODE_DIR = re.compile(r"node([0-9]+)\Z")
_INDEX_DIR = re.compile(r"index([0-9]+)\Z")
_HUGEPAGES_DIR = re.compile(r"hugepages-([0-9]+)kB\Z")
_MEMTOTAL = re.compile(r"MemTotal:\s*([0-9]+) kB")

REAL_SYSFS = "/sys"


class SysfsError(Exception):
    """The sysfs tree cannot be used; ``path`` is the file or directory at fault."""

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None


# -- small readers -----------------------------------------------------------------------


def _read(path: Path) -> str | None:
    """File content, or None when it does not exist."""
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise SysfsError(f"cannot read {path}: {err.strerror or err}", path) from err


def _read_int(path: Path) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise SysfsError(f"{path}: expected an integer, found {text.strip()!r}", path) from None


def _read_cpuset(path: Path) -> CPUSet | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return CPUSet.parse(text.strip())
    except CPUSetError as err:
        raise SysfsError(f"{path}: {err}", path) from None


def _numbered_dirs(parent: Path, pattern: re.Pattern[str]) -> dict[int, Path]:
    try:
        entries = list(os.scandir(parent))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as err:
        raise SysfsError(f"cannot list {parent}: {err.strerror or err}", parent) from err
    found: dict[int, Path] = {}
    for entry in entries:
        match = pattern.match(entry.name)
        if match is not None and entry.is_dir():
            found[int(match.group(1))] = Path(entry.path)
    return dict(sorted(found.items()))


def _count_shared_cpus(index_dir: Path) -> int | None:
    """CPUs sharing a cache: bits of ``shared_cpu_map`` (as cAdvisor), else ``shared_cpu_list``."""
    text = _read(index_dir / "shared_cpu_map")
    if text is not None:
        try:
            return sum(int(word, 16).bit_count() for word in text.strip().split(","))
        except ValueError:
            raise SysfsError(
                f"{index_dir / 'shared_cpu_map'}: not a hex CPU mask: {text.strip()!r}",
                index_dir / "shared_cpu_map",
            ) from None
    cpus = _read_cpuset(index_dir / "shared_cpu_list")
    return None if cpus is None else cpus.size()


def _uncore_cache_id(cpu_dir: Path, threads_per_node: int) -> int | None:
    """Id of the first cache above L2 that is not a node cache, or None (use the socket)."""
    for index_dir in _numbered_dirs(cpu_dir / "cache", _INDEX_DIR).values():
        level = _read_int(index_dir / "level")
        if level is None:
            return None
        if level <= 2:
            continue
        cache_id = _read_int(index_dir / "id")
        shared = _count_shared_cpus(index_dir)
        if cache_id is None or shared is None:
            return None
        if shared == threads_per_node:
            continue  # a node-level cache for cAdvisor
        return cache_id
    return None


def _hugepages(directory: Path) -> dict[int, int]:
    pages: dict[int, int] = {}
    for size_kb, size_dir in _numbered_dirs(directory, _HUGEPAGES_DIR).items():
        count = _read_int(size_dir / "nr_hugepages")
        if count is None:
            raise SysfsError(f"{size_dir / 'nr_hugepages'} is missing", size_dir / "nr_hugepages")
        pages[size_kb * 1024] = count
    return pages


def _mem_total(path: Path) -> int:
    """``MemTotal`` of a meminfo file in bytes; 0 when the file is missing (as cAdvisor)."""
    text = _read(path)
    if text is None:
        return 0
    match = _MEMTOTAL.search(text)
    if match is None:
        raise SysfsError(f"{path}: no 'MemTotal: <n> kB' line", path)
    return int(match.group(1)) * 1024


def _distances(path: Path) -> tuple[int, ...]:
    text = _read(path)
    if text is None:
        return ()
    try:
        return tuple(int(word) for word in text.split())
    except ValueError:
        raise SysfsError(f"{path}: not a list of distances: {text.strip()!r}", path) from None


# -- CPU model (py-cpuinfo) ------------------------------------------------------------


@lru_cache(maxsize=1)
def host_cpu_model_and_flags() -> tuple[str, tuple[str, ...]]:
    """CPU brand string and sorted flags from py-cpuinfo (cached; empty when it fails)."""
    try:
        import cpuinfo

        info = cpuinfo.get_cpu_info()
    except Exception:  # py-cpuinfo shells out and parses; any failure just means "unknown"
        return "", ()
    return str(info.get("brand_raw", "") or ""), tuple(sorted(info.get("flags", []) or []))


# -- discovery -------------------------------------------------------------------------


class _CPU:
    __slots__ = ("core_key", "cpu_id", "socket_id")

    def __init__(self, cpu_id: int, socket_id: int, core_key: tuple[str, int]) -> None:
        self.cpu_id = cpu_id
        self.socket_id = socket_id
        self.core_key = core_key


def _online_cpus(cpu_root: Path, present: dict[int, Path]) -> tuple[list[int], CPUSet]:
    online_list = _read_cpuset(cpu_root / "online")
    online: list[int] = []
    offline: list[int] = []
    for cpu_id, cpu_dir in present.items():
        flag = _read(cpu_dir / "online")
        is_online = (online_list is None or cpu_id in online_list) and (
            flag is None or flag.strip() != "0"
        )
        (online if is_online else offline).append(cpu_id)
    return online, CPUSet(offline)


def _read_cpu(cpu_id: int, cpu_dir: Path) -> _CPU | None:
    topo_dir = cpu_dir / "topology"
    socket_id = _read_int(topo_dir / "physical_package_id")
    if socket_id is None:
        return None  # cAdvisor skips CPUs without a package id
    core_id = _read_int(topo_dir / "core_id")
    if core_id is not None:
        return _CPU(cpu_id, socket_id, ("core", core_id))
    siblings = _read_cpuset(topo_dir / "thread_siblings_list")
    if siblings is None or not siblings:
        return None
    return _CPU(cpu_id, socket_id, ("siblings", siblings.min()))


def _cores_of(
    cpus: list[_CPU], present: dict[int, Path]
) -> list[tuple[int, list[int], int | None]]:
    """Group a node's CPUs into cores and find each core's uncore cache."""
    groups: dict[tuple[int, tuple[str, int]], list[int]] = {}
    for cpu in sorted(cpus, key=lambda c: c.cpu_id):
        groups.setdefault((cpu.socket_id, cpu.core_key), []).append(cpu.cpu_id)
    cores: list[tuple[int, list[int], int | None]] = []
    for (socket_id, _key), threads in groups.items():
        threads_per_node = len(groups) * len(threads)
        uncore = _uncore_cache_id(present[threads[0]], threads_per_node)
        cores.append((socket_id, threads, uncore))
    return cores


def discover_host(
    sysfs_root: str | os.PathLike[str] = REAL_SYSFS,
    *,
    use_cpuinfo: bool = True,
    name: str | None = None,
) -> CPUTopology:
    """The topology of the machine whose sysfs is mounted at ``sysfs_root``.

    ``name`` defaults to the host name for the real ``/sys`` and to ``sysfs:<root>``
    otherwise. Raises ``SysfsError`` when the tree cannot be used.
    """
    root = Path(os.path.abspath(sysfs_root))
    if not root.is_dir():
        raise SysfsError(f"sysfs root {root} is not a directory", root)
    cpu_root = root / "devices" / "system" / "cpu"
    if not cpu_root.is_dir():
        raise SysfsError(f"{cpu_root} is missing; is {root} a sysfs tree?", cpu_root)
    present = _numbered_dirs(cpu_root, _CPU_DIR)
    if not present:
        raise SysfsError(f"no cpuN directories under {cpu_root}", cpu_root)

    online, offline = _online_cpus(cpu_root, present)
    cpus: dict[int, _CPU] = {}
    for cpu_id in online:
        cpu = _read_cpu(cpu_id, present[cpu_id])
        if cpu is not None:
            cpus[cpu_id] = cpu
    if not cpus:
        raise SysfsError(
            f"no online CPU under {cpu_root} has topology/physical_package_id and core_id",
            cpu_root,
        )

    numa_cores: dict[int, list[tuple[int, list[int], int | None]]] = {}
    memory: list[NUMANodeMemory] = []
    node_dirs = _numbered_dirs(root / "devices" / "system" / "node", _NODE_DIR)
    if node_dirs:
        for numa_id, node_dir in node_dirs.items():
            listed = _read_cpuset(node_dir / "cpulist") or CPUSet()
            linked = CPUSet(_numbered_dirs(node_dir, _CPU_DIR))
            members = [cpus[c] for c in listed | linked if c in cpus]
            numa_cores[numa_id] = _cores_of(members, present)
            memory.append(
                NUMANodeMemory(
                    numa_id,
                    _mem_total(node_dir / "meminfo"),
                    _hugepages(node_dir / "hugepages"),
                    _distances(node_dir / "distance"),
                )
            )
    else:
        by_socket: dict[int, list[_CPU]] = {}
        for cpu in cpus.values():
            by_socket.setdefault(cpu.socket_id, []).append(cpu)
        share = len(by_socket)
        total = _mem_total(root.parent / "proc" / "meminfo")
        pages = _hugepages(root / "kernel" / "mm" / "hugepages")
        for socket_id, members in sorted(by_socket.items()):
            numa_cores[socket_id] = _cores_of(members, present)
            memory.append(
                NUMANodeMemory(
                    socket_id,
                    total // share,
                    {size: n // share for size, n in pages.items()},
                )
            )

    is_real = str(root) == REAL_SYSFS
    model, flags = host_cpu_model_and_flags() if use_cpuinfo and is_real else ("", ())
    if name is None:
        name = socket.gethostname() if is_real else f"sysfs:{root}"
    try:
        return discover(
            numa_cores,
            memory=memory,
            name=name,
            cpu_model=model,
            cpu_flags=flags,
            offline_cpus=offline,
        )
    except TopologyError as err:
        raise SysfsError(f"{root}: {err}", root) from None

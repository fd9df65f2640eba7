"""Discover the host's CPU and memory topology from sysfs, read-only, as the kubelet does.

The kubelet takes its topology from cAdvisor's ``MachineInfo.Topology``, built by
``GetNodesInfo`` in google/cadvisor ``lib/utils/sysinfo/sysinfo.go`` over the readers of
``lib/utils/sysfs/sysfs.go`` (lib/v0.60.5, the version Kubernetes 1.37 vendors), then turns it
into CPU details in pkg/kubelet/cm/cpumanager/topology/topology.go ``Discover`` (v1.37). This
module reads the same files in the same order and tolerates what they tolerate:

* NUMA nodes are the entries ``devices/system/node/node*[0-9]`` (Go's ``filepath.Glob``, so in
  lexical order: node10 before node2). A node's CPUs are its ``cpu*[0-9]`` links, read through
  the link; ``cpulist`` is never read (on some ARM kernels it ends in NUL bytes, and firmware
  bugs can list a CPU under two nodes there).
* Per CPU, in the node's link order: online when ``devices/system/cpu/online`` is missing or
  lists it (the CPU's own ``online`` file is not consulted; an unparsable list makes CPUs
  offline). Then ``topology/core_id`` and ``topology/physical_package_id`` (missing: the CPU is
  skipped; not an integer: discovery fails), and on s390x ``book_id`` and ``drawer_id`` too
  (missing: skipped). Threads are grouped into cores by (core id, package id), on s390x also
  by book and drawer.
* Caches, per core, of its first thread ``devices/system/cpu/cpuN/cache/index*``: ``id``
  (not on s390x, where it stays 0), ``size``, ``level``, ``type``, ``shared_cpu_map``. Any
  failure ends the cache scan of the whole node silently, the cores already seen keep theirs.
  A cache above L2 shared by exactly the node's thread count (cores x this core's threads) is
  a node cache; any other above L2 is an uncore cache, and the kubelet's uncore id is the
  first one's id, else the core's socket id.
* Per node, after its cores: ``meminfo`` (unreadable: 0 bytes; no ``MemTotal`` line: error),
  ``hugepages/*/nr_hugepages`` (no directory: none) and ``distance`` (missing: none).
* No node entries (a kernel without NUMA): every ``devices/system/cpu/cpu*[0-9]`` is grouped by
  ``physical_package_id`` (missing: skipped) into one pseudo node per package, with the
  package's id (-1 on s390x). Those nodes get no memory, hugepages or distances, as in
  cAdvisor. Go iterates a map there; we sort by id.
* Kubelet rules: core id = the lowest thread id; a CPU found under two nodes belongs to the
  later one (CPUDetails is a map filled node by node), and ``NumCPUs`` is cAdvisor's thread
  count (all CPU directories on the no-NUMA path).

The machine is taken as s390x (``runtime.GOARCH`` of its kubelet) when ``arch`` says so, for
the real ``/sys`` when ``platform.machine()`` does, and for another root when the first CPU
with a ``topology`` directory has a ``book_id`` or ``drawer_id`` (only s390x kernels write
them). ``offline_cpus`` lists the CPU directories left out that the online list or their own
``online`` file mark offline. The CPU model and flags come from py-cpuinfo, only when asked and
when the root is the real ``/sys`` (cached). Nothing is ever written.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from functools import lru_cache

from app.adapters import sysfs_files as f
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUInfo, CPUTopology, NUMANodeMemory, TopologyError

_CPU_NAME = re.compile(r"cpu([0-9]+)")
_MEMTOTAL = re.compile(rb"MemTotal:\s*([0-9]+) kB")

REAL_SYSFS = "/sys"


class SysfsError(Exception):
    """The sysfs tree cannot be used; ``path`` is the file or directory at fault."""

    def __init__(self, message: str, path: os.PathLike[str] | str | None = None) -> None:
        super().__init__(message)
        self.path = os.fspath(path) if path is not None else None


@lru_cache(maxsize=1)
def host_cpu_model_and_flags() -> tuple[str, tuple[str, ...]]:
    """CPU brand string and sorted flags from py-cpuinfo (cached; empty when it fails)."""
    try:
        import cpuinfo

        info = cpuinfo.get_cpu_info()
    except Exception:  # py-cpuinfo shells out and parses; any failure just means "unknown"
        return "", ()
    return str(info.get("brand_raw", "") or ""), tuple(sorted(info.get("flags", []) or []))


def _glob(parent: str, prefix: str) -> list[str]:
    """Names ``<prefix>*[0-9]`` in ``parent``, sorted as Go's ``filepath.Glob`` sorts them."""
    try:
        names = os.listdir(parent)
    except OSError:
        return []  # Glob ignores I/O errors
    return sorted(n for n in names if n.startswith(prefix) and n[-1:].isdigit())


class _Core:
    __slots__ = ("socket_id", "threads", "uncore")

    def __init__(self, socket_id: int) -> None:
        self.socket_id = socket_id
        self.threads: list[int] = []
        self.uncore: int | None = None


class _Reader:
    """One discovery pass over one tree."""

    def __init__(self, root: str, s390x: bool) -> None:
        self.cpu_root = os.path.join(root, "devices", "system", "cpu")
        self.s390x = s390x
        online = f.read(os.path.join(self.cpu_root, "online"))
        self.online = None if online is None else f.OnlineList(online)

    def _id(self, cpu_dir: str, name: str) -> int | None:
        path = os.path.join(cpu_dir, "topology", name)
        data = f.read(path)
        if data is None:
            return None
        try:
            return f.atoi(data, path)
        except f.FileError:  # name the file itself, not the node's link to its CPU
            real = os.path.realpath(path)
            raise f.FileError(f"{real}: expected an integer, found {f.shown(data)}", real) from None

    def _book_drawer(self, cpu_dir: str) -> tuple[bytes, bytes] | None:
        ids = []
        for name in ("book_id", "drawer_id"):
            data = f.read(os.path.join(cpu_dir, "topology", name))
            if data is None:
                return None
            ids.append(f.trim(data))
        return ids[0], ids[1]

    def cores(self, parent: str, names: list[str]) -> list[_Core]:
        """``getCoresInfo`` over the CPU entries ``names`` of ``parent``."""
        cores: dict[tuple[object, ...], _Core] = {}
        for name in names:
            match = _CPU_NAME.match(name)
            if match is None:
                raise SysfsError(f"unexpected CPU directory name {name!r} in {parent}", parent)
            cpu_id = int(match.group(1))
            if self.online is not None and not self.online.is_online(cpu_id):
                continue
            cpu_dir = os.path.join(parent, name)
            core_id = self._id(cpu_dir, "core_id")
            if core_id is None:
                continue
            socket_id = self._id(cpu_dir, "physical_package_id")
            if socket_id is None:
                continue
            key: tuple[object, ...] = (core_id, socket_id)
            if self.s390x:
                extra = self._book_drawer(cpu_dir)
                if extra is None:
                    continue
                key += extra
            core = cores.get(key)
            if core is None:
                core = cores[key] = _Core(socket_id)
            core.threads.append(cpu_id)
        return list(cores.values())

    def _cache_levels(self, cpu_id: int) -> list[tuple[int, int, int]] | None:
        """``(level, id, shared cpus)`` per cache index of a CPU; None when one fails."""
        cache_dir = os.path.join(self.cpu_root, f"cpu{cpu_id}", "cache")
        try:
            names = sorted(n for n in os.listdir(cache_dir) if n.startswith("index"))
        except OSError:
            return None
        found = []
        try:
            for name in names:
                index = os.path.join(cache_dir, name)
                cache_id: int | None = 0
                if not self.s390x:
                    data = f.read(os.path.join(index, "id"))
                    cache_id = None if data is None else f.sscanf_int(data)
                size = f.read(os.path.join(index, "size"))
                level_data = f.read(os.path.join(index, "level"))
                level = None if level_data is None else f.sscanf_int(level_data)
                kind = f.read(os.path.join(index, "type"))
                mask = f.read(os.path.join(index, "shared_cpu_map"))
                cpus = None if mask is None else f.count_mask_bits(mask)
                if (
                    cache_id is None
                    or size is None
                    or f.sscanf_size_kb(size) is None
                    or level is None
                    or kind is None
                    or cpus is None
                ):
                    return None
                found.append((level, cache_id, cpus))
        except f.FileError:
            return None
        return found

    def add_caches(self, cores: list[_Core]) -> None:
        """``addCacheInfo``: uncore caches per core; stops at the first unreadable core."""
        for core in cores:
            caches = self._cache_levels(core.threads[0])
            if caches is None:
                return
            per_node = len(cores) * len(core.threads)
            for level, cache_id, cpus in caches:
                if level > 2 and cpus != per_node and core.uncore is None:
                    core.uncore = cache_id


def _read_or_none(path: str) -> bytes | None:
    """A file cAdvisor reads with its errors ignored: unreadable counts as missing."""
    try:
        return f.read(path)
    except f.FileError:
        return None


def _mem_total(node_dir: str) -> int:
    path = os.path.join(node_dir, "meminfo")
    data = _read_or_none(path)
    if data is None:
        return 0  # "Found node without memory information"
    match = _MEMTOTAL.search(f.trim(data))
    if match is None:
        raise SysfsError(f"{path}: no 'MemTotal: <n> kB' line", path)
    return int(match.group(1)) * 1024


def _hugepages(node_dir: str) -> dict[int, int]:
    directory = os.path.join(node_dir, "hugepages")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return {}  # hugepages may be disabled
    pages: dict[int, int] = {}
    for name in names:
        parts = name.split("-")
        size_kb = f.parse_uint(parts[1].split("kB")[0]) if len(parts) > 1 else None
        if size_kb is None:
            path = os.path.join(directory, name)
            raise SysfsError(f"{path}: not a hugepages-<size>kB entry", path)
        path = os.path.join(directory, name, "nr_hugepages")
        data = f.read(path)
        if data is None:
            raise SysfsError(f"{path} is missing", path)
        count = f.sscanf_int(data)
        if count is None or count < 0:
            raise SysfsError(f"{path}: expected a page count, found {f.shown(data)}", path)
        pages[size_kb * 1024] = count
    return pages


def _distances(node_dir: str) -> tuple[int, ...]:
    path = os.path.join(node_dir, "distance")
    data = _read_or_none(path)
    if data is None:
        return ()
    text = f.trim(data).decode("ascii", errors="replace")
    row = [f.parse_uint(word) for word in text.split(" ")]
    if any(d is None for d in row):
        raise SysfsError(f"{path}: not a list of distances: {text!r}", path)
    return tuple(d for d in row if d is not None)


def _is_s390x(root: str, cpu_root: str, cpu_names: list[str], arch: str | None) -> bool:
    if arch is not None:
        return arch == "s390x"
    if root == REAL_SYSFS:
        return platform.machine() == "s390x"
    for name in cpu_names:
        topo = os.path.join(cpu_root, name, "topology")
        if os.path.isdir(topo):
            return any(os.path.exists(os.path.join(topo, n)) for n in ("book_id", "drawer_id"))
    return False


def _offline(reader: _Reader, cpu_names: list[str], found: set[int]) -> CPUSet:
    offline = []
    for name in cpu_names:
        match = _CPU_NAME.match(name)
        if match is None or int(match.group(1)) in found:
            continue
        cpu_id = int(match.group(1))
        flag = f.read(os.path.join(reader.cpu_root, name, "online"))
        listed_off = reader.online is not None and not reader.online.is_online(cpu_id)
        if listed_off or (flag is not None and f.trim(flag) == b"0"):
            offline.append(cpu_id)
    return CPUSet(offline)


def _cpu_entries(root: str) -> tuple[str, list[str]]:
    """``devices/system/cpu`` of a sysfs tree and its ``cpu*[0-9]`` entries (at least one)."""
    if not os.path.isdir(root):
        raise SysfsError(f"sysfs root {root} is not a directory", root)
    cpu_root = os.path.join(root, "devices", "system", "cpu")
    if not os.path.isdir(cpu_root):
        raise SysfsError(f"{cpu_root} is missing; is {root} a sysfs tree?", cpu_root)
    cpu_names = _glob(cpu_root, "cpu")
    if not cpu_names:
        raise SysfsError(f"no cpuN directories under {cpu_root}", cpu_root)
    return cpu_root, cpu_names


def _cpu_details(nodes: list[tuple[int, list[_Core]]], cpu_root: str) -> dict[int, CPUInfo]:
    """The kubelet's ``Discover``: a core's id is its lowest thread id, its uncore id the
    uncore cache's else the socket id; a CPU found under two nodes belongs to the later one;
    no CPU at all fails as the kubelet does."""
    details: dict[int, CPUInfo] = {}
    for numa_id, cores in nodes:
        for core in cores:
            core_id = min(core.threads)
            uncore = core.socket_id if core.uncore is None else core.uncore
            for cpu in core.threads:
                details[cpu] = CPUInfo(cpu, core_id, core.socket_id, numa_id, uncore)
    if not details:
        raise SysfsError(
            f"no online CPU under {cpu_root} has topology/core_id and physical_package_id "
            "(the kubelet would fail: could not detect number of cpus)",
            cpu_root,
        )
    return details


def _identity(root: str, use_cpuinfo: bool, name: str | None) -> tuple[str, str, tuple[str, ...]]:
    """The machine's name (the host name for the real ``/sys``, else ``sysfs:<root>``), CPU
    model and flags (py-cpuinfo, only when asked and for the real ``/sys``)."""
    is_real = root == REAL_SYSFS
    model, flags = host_cpu_model_and_flags() if use_cpuinfo and is_real else ("", ())
    if name is None:
        name = socket.gethostname() if is_real else f"sysfs:{root}"
    return name, model, flags


def discover_host(
    sysfs_root: str | os.PathLike[str] = REAL_SYSFS,
    *,
    use_cpuinfo: bool = True,
    name: str | None = None,
    arch: str | None = None,
) -> CPUTopology:
    """The topology of the machine whose sysfs is mounted at ``sysfs_root``.

    ``name`` defaults to the host name for the real ``/sys`` and to ``sysfs:<root>``
    otherwise; ``arch`` (a Go ``GOARCH``) overrides the s390x detection. Raises
    ``SysfsError`` when the tree cannot be used.
    """
    root = os.path.abspath(sysfs_root)
    cpu_root, cpu_names = _cpu_entries(root)
    try:
        reader = _Reader(root, _is_s390x(root, cpu_root, cpu_names, arch))
        nodes, memory, num_cpus = _read_nodes(reader, root, cpu_names)
        offline = _offline(
            reader, cpu_names, {t for _n, cs in nodes for c in cs for t in c.threads}
        )
    except f.FileError as err:
        raise SysfsError(str(err), err.path) from None
    details = _cpu_details(nodes, cpu_root)
    name, model, flags = _identity(root, use_cpuinfo, name)
    try:
        return CPUTopology(
            details.values(),
            num_cpus=num_cpus if num_cpus != len(details) else None,
            num_cores=sum(len(cores) for _n, cores in nodes),
            memory=memory,
            name=name,
            cpu_model=model,
            cpu_flags=flags,
            offline_cpus=offline,
        )
    except TopologyError as err:
        raise SysfsError(f"{root}: {err}", root) from None


def _read_nodes(
    reader: _Reader, root: str, cpu_names: list[str]
) -> tuple[list[tuple[int, list[_Core]]], list[NUMANodeMemory], int]:
    """``GetNodesInfo``: (node id, cores) in upstream order, memory per node, NumCores."""
    node_root = os.path.join(root, "devices", "system", "node")
    node_names = _glob(node_root, "node")
    nodes: list[tuple[int, list[_Core]]] = []
    memory: list[NUMANodeMemory] = []
    if not node_names:
        by_package: dict[int, list[str]] = {}
        for name in cpu_names:
            package = reader._id(os.path.join(reader.cpu_root, name), "physical_package_id")
            if package is not None:
                by_package.setdefault(package, []).append(name)
        for package, names in sorted(by_package.items()):
            cores = reader.cores(reader.cpu_root, names)
            reader.add_caches(cores)
            nodes.append((package, cores))
            memory.append(NUMANodeMemory(package, 0, {}))
        return nodes, memory, len(cpu_names)
    threads = 0
    for node_name in node_names:
        digits = re.match(r"node([0-9]*)", node_name)
        if digits is None or not digits.group(1):
            raise SysfsError(f"unexpected NUMA node name {node_name!r} in {node_root}", node_root)
        numa_id = int(digits.group(1))
        node_dir = os.path.join(node_root, node_name)
        cores = reader.cores(node_dir, _glob(node_dir, "cpu"))
        threads += sum(len(c.threads) for c in cores)
        reader.add_caches(cores)
        memory.append(
            NUMANodeMemory(
                numa_id, _mem_total(node_dir), _hugepages(node_dir), _distances(node_dir)
            )
        )
        nodes.append((numa_id, cores))
    return nodes, memory, threads

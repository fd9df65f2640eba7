"""Synthetic machine topologies (the builder behind the server presets and the spec strings).

Threads are numbered the way Linux does on x86: with N logical CPUs and T threads per core,
core ``c`` holds CPUs ``c, c + N/T, ...``, cores are numbered socket by socket and NUMA node by
NUMA node, and a core's id is its lowest CPU id (allocation spec §1.1). Uncore (L3) ids follow
what the kubelet would discover through cAdvisor (google/cadvisor utils/sysinfo/sysinfo.go
``addCacheInfo``): an L3 that spans exactly one NUMA node's threads is a node cache, not an
uncore cache, so its cores fall back to their socket id; without ``cores_per_uncore`` every
core falls back to its socket id. NUMA distances are SLIT rows as Linux reports them.

Out-of-range parameters raise ``TopologySpecError`` naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.domain.topology.model import GIB, CPUInfo, CPUTopology, NUMANodeMemory, TopologyError

__all__ = [
    "LOCAL_DISTANCE",
    "MAX_SPEC_CPUS",
    "MAX_SPEC_NUMA_NODES",
    "MAX_THREADS_PER_CORE",
    "TopologySpecError",
    "check_range",
    "numa_memory_for",
    "synthetic_topology",
]

#: Upper bound on the CPUs of a synthetic topology (Linux's NR_CPUS maximum).
MAX_SPEC_CPUS = 8192
#: The topology manager's NUMA bitmask is 64 bits wide.
MAX_SPEC_NUMA_NODES = 64
MAX_THREADS_PER_CORE = 8

# Distances as Linux reports them from the SLIT.
LOCAL_DISTANCE = 10


class TopologySpecError(TopologyError):
    """A synthetic topology spec string is malformed; ``key``/``value`` name the culprit."""

    def __init__(self, message: str, *, key: str | None = None, value: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


def _distance_rows(
    numa_sockets: Mapping[int, frozenset[int]], same_socket: int, remote: int
) -> dict[int, tuple[int, ...]]:
    """SLIT rows: 10 locally, ``same_socket`` when two nodes share a socket, else ``remote``."""
    ids = sorted(numa_sockets)
    rows: dict[int, tuple[int, ...]] = {}
    for a in ids:
        row = []
        for b in range(ids[-1] + 1):
            if a == b:
                row.append(LOCAL_DISTANCE)
            elif numa_sockets[a] & numa_sockets.get(b, frozenset()):
                row.append(same_socket)
            else:
                row.append(remote)
        rows[a] = tuple(row)
    return rows


def numa_memory_for(
    infos: Sequence[CPUInfo],
    memory_per_numa: int,
    hugepages_per_numa: Mapping[int, int],
    same_socket: int,
    remote: int,
) -> list[NUMANodeMemory]:
    numa_sockets: dict[int, set[int]] = {}
    for info in infos:
        numa_sockets.setdefault(info.numa_node_id, set()).add(info.socket_id)
    rows = _distance_rows({n: frozenset(s) for n, s in numa_sockets.items()}, same_socket, remote)
    pages = {size: n for size, n in sorted(hugepages_per_numa.items()) if n}
    return [NUMANodeMemory(n, memory_per_numa, dict(pages), rows[n]) for n in sorted(rows)]


def _check_shape(
    sockets: int,
    numa_per_socket: int,
    cores_per_numa: int,
    threads_per_core: int,
    cores_per_uncore: int | None,
) -> None:
    """Sockets, NUMA nodes, cores and threads within range (at most 64 NUMA nodes and 8192
    CPUs in all); an uncore cache dividing a socket's cores."""
    check_range("sockets", sockets, 1, MAX_SPEC_NUMA_NODES)
    check_range("numa_per_socket", numa_per_socket, 1, MAX_SPEC_NUMA_NODES)
    check_range("cores_per_numa", cores_per_numa, 1, MAX_SPEC_CPUS)
    check_range("threads_per_core", threads_per_core, 1, MAX_THREADS_PER_CORE)
    num_numa = sockets * numa_per_socket
    if num_numa > MAX_SPEC_NUMA_NODES:
        raise TopologySpecError(
            f"sockets × numa_per_socket = {num_numa} NUMA nodes; "
            f"at most {MAX_SPEC_NUMA_NODES} are supported",
            key="numa_per_socket",
            value=str(numa_per_socket),
        )
    num_cpus = num_numa * cores_per_numa * threads_per_core
    if num_cpus > MAX_SPEC_CPUS:
        raise TopologySpecError(
            f"the topology would have {num_cpus} CPUs; at most {MAX_SPEC_CPUS} are supported",
            key="cores_per_numa",
            value=str(cores_per_numa),
        )
    if cores_per_uncore is None:
        return
    cores_per_socket = numa_per_socket * cores_per_numa
    check_range("cores_per_uncore", cores_per_uncore, 1, cores_per_socket)
    if cores_per_socket % cores_per_uncore:
        raise TopologySpecError(
            f"cores_per_uncore={cores_per_uncore} must divide the {cores_per_socket} "
            "cores of a socket (an L3 cache never spans sockets)",
            key="cores_per_uncore",
            value=str(cores_per_uncore),
        )


def _check_memory(memory_per_numa: int, hugepages: Mapping[int, int]) -> None:
    """Hugepage counts not negative; a NUMA node's memory positive and holding its pages."""
    for size, count in hugepages.items():
        if count < 0:
            raise TopologySpecError(
                f"the count of {size}-byte hugepages ({count}) is negative",
                key="hugepages",
                value=str(count),
            )
    if memory_per_numa <= 0:
        raise TopologySpecError(
            "memory_per_numa must be positive", key="memory_per_numa", value=str(memory_per_numa)
        )
    huge_bytes = sum(size * n for size, n in hugepages.items())
    if huge_bytes > memory_per_numa:
        raise TopologySpecError(
            f"hugepages take {huge_bytes} bytes per NUMA node, more than "
            f"memory_per_numa ({memory_per_numa} bytes)",
            key="memory_per_numa",
            value=str(memory_per_numa),
        )


def _linux_cpus(
    num_cores: int,
    threads_per_core: int,
    cores_per_socket: int,
    cores_per_numa: int,
    cores_per_uncore: int | None,
) -> list[CPUInfo]:
    """The CPUs numbered as Linux does on x86 (see the module docstring); an L3 covering
    exactly a NUMA node's threads is a node cache for cAdvisor, so its cores use the socket."""
    real_uncore = cores_per_uncore is not None and cores_per_uncore != cores_per_numa
    infos: list[CPUInfo] = []
    for thread in range(threads_per_core):
        base = thread * num_cores
        for core in range(num_cores):
            socket = core // cores_per_socket
            uncore = core // cores_per_uncore if real_uncore and cores_per_uncore else socket
            infos.append(CPUInfo(base + core, core, socket, core // cores_per_numa, uncore))
    return infos


def synthetic_topology(
    *,
    sockets: int,
    numa_per_socket: int,
    cores_per_numa: int,
    threads_per_core: int,
    cores_per_uncore: int | None = None,
    memory_per_numa: int = 32 * GIB,
    hugepages_per_numa: Mapping[int, int] | None = None,
    distance_same_socket: int = 11,
    distance_remote: int = 21,
    name: str = "",
    cpu_model: str = "",
) -> CPUTopology:
    """A regular machine numbered like Linux (see the module docstring).

    Raises ``TopologySpecError`` naming the parameter that is out of range.
    """
    _check_shape(sockets, numa_per_socket, cores_per_numa, threads_per_core, cores_per_uncore)
    check_range("distance_same_socket", distance_same_socket, LOCAL_DISTANCE + 1, 254)
    check_range("distance_remote", distance_remote, LOCAL_DISTANCE + 1, 254)
    hugepages = dict(hugepages_per_numa or {})
    _check_memory(memory_per_numa, hugepages)
    num_cores = sockets * numa_per_socket * cores_per_numa
    cores_per_socket = numa_per_socket * cores_per_numa
    infos = _linux_cpus(
        num_cores, threads_per_core, cores_per_socket, cores_per_numa, cores_per_uncore
    )
    memory = numa_memory_for(
        infos, memory_per_numa, hugepages, distance_same_socket, distance_remote
    )
    return CPUTopology(infos, memory=memory, name=name, cpu_model=cpu_model)


def check_range(key: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise TopologySpecError(
            f"{key}={value} is out of range (allowed: {low}..{high})", key=key, value=str(value)
        )

"""CPU and memory topology of a node (follows pkg/kubelet/cm/cpumanager/topology/topology.go).

``CPUTopology`` mirrors the kubelet's ``topology.CPUTopology``: counts plus ``CPUDetails``
(CPU id -> core, socket, NUMA node, uncore cache). Discovery rules (§1.1 of the
allocation spec): a core's id is the lowest CPU id among its threads, and a core without an
uncore (L3) cache id uses its socket id. On top of that it carries what the memory manager
and the dashboard need: memory and hugepages per NUMA node and the NUMA distance matrix.

Per-element CPU masks are precomputed once so that queries on a subset of CPUs are a few
bitmask operations, which keeps 512-CPU machines fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.cpuset import MAX_CPU_ID, CPUSet
from app.domain.units import binary_quantity

GIB = 1024**3
MIB = 1024**2
HUGEPAGE_2M = 2 * MIB
HUGEPAGE_1G = GIB


class TopologyError(ValueError):
    """A topology description is inconsistent or malformed."""


def hugepage_resource_name(page_size: int) -> str:
    """The kubelet's resource name for a hugepage size: 2 MiB -> ``hugepages-2Mi``."""
    return f"hugepages-{binary_quantity(page_size)}"


@dataclass(frozen=True, slots=True)
class CPUInfo:
    """One logical CPU (``topology.CPUInfo``)."""

    cpu_id: int
    core_id: int
    socket_id: int
    numa_node_id: int
    uncore_cache_id: int


@dataclass(frozen=True, slots=True)
class NUMANodeMemory:
    """Memory of one NUMA node: total bytes, hugepages by page size (bytes -> pages), distances."""

    numa_id: int
    memory_bytes: int
    hugepages: Mapping[int, int] = field(default_factory=dict)
    distances: tuple[int, ...] = ()

    def hugepage_bytes(self, page_size: int) -> int:
        return self.hugepages.get(page_size, 0) * page_size

    def regular_memory_bytes(self) -> int:
        """Memory not set aside as hugepages (what the memory manager calls ``memory``)."""
        return self.memory_bytes - sum(size * n for size, n in self.hugepages.items())


def _cpu_id_of(info: CPUInfo) -> int:
    return info.cpu_id


def _sets(masks: dict[int, int]) -> dict[int, CPUSet]:
    from_mask = CPUSet.from_mask
    return {k: from_mask(masks[k]) for k in sorted(masks)}


def _cpu_details(cpus: Iterable[CPUInfo]) -> dict[int, CPUInfo]:
    """``CPUDetails``: CPU id -> its info, in id order; ids unique, in range, at least one."""
    details: dict[int, CPUInfo] = {}
    for info in sorted(cpus, key=_cpu_id_of):
        if info.cpu_id in details:
            raise TopologyError("cpus provided are not unique")
        if not 0 <= info.cpu_id <= MAX_CPU_ID:
            raise TopologyError(f"invalid cpu id {info.cpu_id} (allowed: 0..{MAX_CPU_ID})")
        details[info.cpu_id] = info
    if not details:
        raise TopologyError("no cpus provided")
    return details


class CPUTopology:
    """Counts, per-CPU details and per-NUMA memory of one machine."""

    __slots__ = (
        "_cpus_of_core",
        "_cpus_of_numa",
        "_cpus_of_socket",
        "_cpus_of_uncore",
        "all_cpus",
        "cpu_details",
        "cpu_flags",
        "cpu_model",
        "memory",
        "name",
        "num_cores",
        "num_cpus",
        "num_numa_nodes",
        "num_sockets",
        "num_uncore_cache",
        "offline_cpus",
    )

    def __init__(
        self,
        cpus: Iterable[CPUInfo],
        *,
        num_cpus: int | None = None,
        num_cores: int | None = None,
        num_sockets: int | None = None,
        num_numa_nodes: int | None = None,
        num_uncore_cache: int | None = None,
        memory: Sequence[NUMANodeMemory] = (),
        name: str = "",
        cpu_model: str = "",
        cpu_flags: Sequence[str] = (),
        offline_cpus: CPUSet | None = None,
    ) -> None:
        self.cpu_details: dict[int, CPUInfo] = _cpu_details(cpus)
        self._index_elements()
        # Counts may be given (conformance fixtures carry upstream's own numbers).
        self.num_cpus = len(self.cpu_details) if num_cpus is None else num_cpus
        self.num_cores = len(self._cpus_of_core) if num_cores is None else num_cores
        self.num_sockets = len(self._cpus_of_socket) if num_sockets is None else num_sockets
        self.num_numa_nodes = len(self._cpus_of_numa) if num_numa_nodes is None else num_numa_nodes
        self.num_uncore_cache = (
            len(self._cpus_of_uncore) if num_uncore_cache is None else num_uncore_cache
        )
        self.memory: tuple[NUMANodeMemory, ...] = tuple(sorted(memory, key=lambda m: m.numa_id))
        self.name = name
        self.cpu_model = cpu_model
        self.cpu_flags: tuple[str, ...] = tuple(cpu_flags)
        self.offline_cpus = offline_cpus if offline_cpus is not None else CPUSet()

    def _index_elements(self) -> None:
        """The four element -> CPU set indexes (core, socket, NUMA node, uncore cache) and the
        whole machine's set, built in one pass over the CPUs (the hot part on 512 CPUs)."""
        cores: dict[int, int] = {}
        sockets: dict[int, int] = {}
        numas: dict[int, int] = {}
        uncores: dict[int, int] = {}
        all_mask = 0
        for info in self.cpu_details.values():
            bit = 1 << info.cpu_id
            all_mask |= bit
            cores[info.core_id] = cores.get(info.core_id, 0) | bit
            sockets[info.socket_id] = sockets.get(info.socket_id, 0) | bit
            numas[info.numa_node_id] = numas.get(info.numa_node_id, 0) | bit
            uncores[info.uncore_cache_id] = uncores.get(info.uncore_cache_id, 0) | bit
        self.all_cpus = CPUSet.from_mask(all_mask)
        self._cpus_of_core = _sets(cores)
        self._cpus_of_socket = _sets(sockets)
        self._cpus_of_numa = _sets(numas)
        self._cpus_of_uncore = _sets(uncores)

    # -- counts (CPUTopology methods) --------------------------------------------
    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_per_uncore(self) -> int:
        return self.num_cpus // self.num_uncore_cache if self.num_uncore_cache else 0

    def cpu_core_id(self, cpu: int) -> int:
        return self.cpu_details[cpu].core_id

    def cpu_socket_id(self, cpu: int) -> int:
        return self.cpu_details[cpu].socket_id

    def cpu_numa_node_id(self, cpu: int) -> int:
        return self.cpu_details[cpu].numa_node_id

    # -- whole-machine element masks ---------------------------------------------
    def core_ids(self) -> list[int]:
        return list(self._cpus_of_core)

    def socket_ids(self) -> list[int]:
        return list(self._cpus_of_socket)

    def numa_node_ids(self) -> list[int]:
        return list(self._cpus_of_numa)

    def uncore_cache_ids(self) -> list[int]:
        return list(self._cpus_of_uncore)

    def cpus_of_core(self, core_id: int) -> CPUSet:
        return self._cpus_of_core.get(core_id, CPUSet())

    def cpus_of_socket(self, socket_id: int) -> CPUSet:
        return self._cpus_of_socket.get(socket_id, CPUSet())

    def cpus_of_numa_node(self, numa_id: int) -> CPUSet:
        return self._cpus_of_numa.get(numa_id, CPUSet())

    def cpus_of_uncore_cache(self, uncore_id: int) -> CPUSet:
        return self._cpus_of_uncore.get(uncore_id, CPUSet())

    def cpus_in_numa_nodes(self, numa_ids: Iterable[int]) -> CPUSet:
        mask = 0
        for n in numa_ids:
            mask |= self.cpus_of_numa_node(n).mask
        return CPUSet.from_mask(mask)

    def cpus_in_sockets(self, socket_ids: Iterable[int]) -> CPUSet:
        mask = 0
        for s in socket_ids:
            mask |= self.cpus_of_socket(s).mask
        return CPUSet.from_mask(mask)

    def cpus_in_cores(self, core_ids: Iterable[int]) -> CPUSet:
        mask = 0
        for c in core_ids:
            mask |= self.cpus_of_core(c).mask
        return CPUSet.from_mask(mask)

    # -- queries on a subset (CPUDetails.KeepOnly(...).X()) -------------------------
    def _ids_in(self, index: Mapping[int, CPUSet], cpus: CPUSet) -> list[int]:
        m = cpus.mask
        return [k for k, v in index.items() if v.mask & m]

    def numa_nodes_of(self, cpus: CPUSet) -> list[int]:
        return self._ids_in(self._cpus_of_numa, cpus)

    def sockets_of(self, cpus: CPUSet) -> list[int]:
        return self._ids_in(self._cpus_of_socket, cpus)

    def cores_of(self, cpus: CPUSet) -> list[int]:
        return self._ids_in(self._cpus_of_core, cpus)

    def uncore_caches_of(self, cpus: CPUSet) -> list[int]:
        return self._ids_in(self._cpus_of_uncore, cpus)

    def sockets_in_numa_nodes(self, numa_ids: Iterable[int]) -> list[int]:
        return self.sockets_of(self.cpus_in_numa_nodes(numa_ids))

    def numa_nodes_in_sockets(self, socket_ids: Iterable[int]) -> list[int]:
        return self.numa_nodes_of(self.cpus_in_sockets(socket_ids))

    # -- memory --------------------------------------------------------------------
    def numa_memory(self, numa_id: int) -> NUMANodeMemory | None:
        for m in self.memory:
            if m.numa_id == numa_id:
                return m
        return None

    def distance(self, a: int, b: int) -> int:
        """NUMA distance (SLIT); 10 locally and 20 remotely when unknown, as Linux reports.

        A row is indexed by node id, so a negative id (s390x's pseudo node -1) has none.
        """
        mem = self.numa_memory(a)
        if mem is not None and 0 <= b < len(mem.distances):
            return mem.distances[b]
        return 10 if a == b else 20

    def hugepage_sizes(self) -> list[int]:
        return sorted({size for m in self.memory for size in m.hugepages})

    def all_numa_node_ids(self) -> list[int]:
        """NUMA nodes with CPUs or memory (memory-only nodes are not in ``numa_node_ids``)."""
        return sorted(set(self._cpus_of_numa) | {m.numa_id for m in self.memory})

    def total_memory_bytes(self) -> int:
        return sum(m.memory_bytes for m in self.memory)

    def total_hugepage_bytes(self, page_size: int) -> int:
        return sum(m.hugepage_bytes(page_size) for m in self.memory)

    # -- construction helpers -----------------------------------------------------
    @classmethod
    def from_fixture(cls, name: str, fixture: Mapping[str, Any]) -> CPUTopology:
        """Build from a conformance fixture: ``cpus`` maps id -> [core, socket, numa, uncore]."""
        infos = [
            CPUInfo(int(cpu), int(v[0]), int(v[1]), int(v[2]), int(v[3]))
            for cpu, v in fixture["cpus"].items()
        ]
        numa_ids = sorted({i.numa_node_id for i in infos})
        return cls(
            infos,
            num_cpus=fixture.get("num_cpus"),
            num_cores=fixture.get("num_cores"),
            num_sockets=fixture.get("num_sockets"),
            num_numa_nodes=fixture.get("num_numa_nodes"),
            num_uncore_cache=fixture.get("num_uncore_caches"),
            memory=[NUMANodeMemory(n, 0) for n in numa_ids],
            name=name,
        )

    def __repr__(self) -> str:
        return (
            f"CPUTopology(name={self.name!r}, cpus={self.num_cpus}, cores={self.num_cores}, "
            f"sockets={self.num_sockets}, numa={self.num_numa_nodes}, "
            f"uncore={self.num_uncore_cache})"
        )


def discover(
    numa_cores: Mapping[int, Sequence[tuple[int, Sequence[int], int | None]]],
    *,
    memory: Sequence[NUMANodeMemory] = (),
    name: str = "",
    cpu_model: str = "",
    cpu_flags: Sequence[str] = (),
    offline_cpus: CPUSet | None = None,
) -> CPUTopology:
    """Build a topology the way the kubelet does from cAdvisor's machine info.

    ``numa_cores`` maps NUMA node id -> cores as ``(socket_id, thread_ids, uncore_id)``.
    Core id = lowest thread id; uncore id falls back to the socket id.
    """
    infos: list[CPUInfo] = []
    seen: set[int] = set()
    for numa_id in sorted(numa_cores):
        for socket_id, threads, uncore in numa_cores[numa_id]:
            if not threads:
                raise TopologyError("no cpus provided")
            core_id = min(threads)
            for t in threads:
                if t in seen:
                    raise TopologyError("cpus provided are not unique")
                seen.add(t)
                infos.append(
                    CPUInfo(t, core_id, socket_id, numa_id, socket_id if uncore is None else uncore)
                )
    return CPUTopology(
        infos,
        memory=memory,
        name=name,
        cpu_model=cpu_model,
        cpu_flags=cpu_flags,
        offline_cpus=offline_cpus,
    )

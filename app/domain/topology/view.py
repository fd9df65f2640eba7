"""Views of a ``CPUTopology``: a JSON-ready dict and lstopo-like indented text.

CPU ids are the OS (physical) ids the kubelet uses and are labelled ``P#`` as in lstopo
(users spec §5.1); lstopo's logical ``L#`` numbering is never shown. Every CPU set is given
both as kubelet cpu-list text (``cpuSet``) and as an ascending integer list (``cpuIds``).
NUMA nodes carry NodeResourceTopology-style ``name``/``type``/``costs`` (users spec §5.3) next
to their memory, hugepages and raw SLIT distances.
"""

from __future__ import annotations

from typing import Any

from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology, hugepage_resource_name
from app.domain.units import format_bytes


def _cpus(cpus: CPUSet) -> dict[str, Any]:
    return {"cpuSet": str(cpus), "cpuIds": cpus.list()}


def zone_name(numa_id: int) -> str:
    """NodeResourceTopology zone name of a NUMA node."""
    return f"node-{numa_id}"


def _numa_dict(topo: CPUTopology, numa_id: int) -> dict[str, Any]:
    cpus = topo.cpus_of_numa_node(numa_id)
    mem = topo.numa_memory(numa_id)
    hugepages: dict[str, Any] = {}
    distances: list[int] = []
    if mem is not None:
        for size, pages in sorted(mem.hugepages.items()):
            hugepages[hugepage_resource_name(size)] = {
                "pageSizeBytes": size,
                "pages": pages,
                "bytes": size * pages,
            }
        distances = list(mem.distances)
    all_ids = topo.all_numa_node_ids()
    return {
        "id": numa_id,
        "name": zone_name(numa_id),
        "type": "Node",
        **_cpus(cpus),
        "sockets": topo.sockets_of(cpus),
        "uncoreCaches": topo.uncore_caches_of(cpus),
        "memoryBytes": mem.memory_bytes if mem is not None else 0,
        "regularMemoryBytes": mem.regular_memory_bytes() if mem is not None else 0,
        "hugepages": hugepages,
        "distances": distances,
        "costs": [{"name": zone_name(b), "value": topo.distance(numa_id, b)} for b in all_ids],
    }


def _socket_dict(topo: CPUTopology, socket_id: int) -> dict[str, Any]:
    cpus = topo.cpus_of_socket(socket_id)
    return {
        "id": socket_id,
        **_cpus(cpus),
        "numaNodes": topo.numa_nodes_of(cpus),
        "cores": len(topo.cores_of(cpus)),
    }


def topology_to_dict(topo: CPUTopology) -> dict[str, Any]:
    """Everything about a topology as JSON-ready data (lowerCamelCase keys)."""
    return {
        "name": topo.name,
        "cpuModel": topo.cpu_model,
        "cpuFlags": list(topo.cpu_flags),
        "numCpus": topo.num_cpus,
        "numCores": topo.num_cores,
        "numSockets": topo.num_sockets,
        "numNumaNodes": topo.num_numa_nodes,
        "numUncoreCaches": topo.num_uncore_cache,
        "cpusPerCore": topo.cpus_per_core(),
        "allCpus": _cpus(topo.all_cpus),
        "offlineCpus": _cpus(topo.offline_cpus),
        "memoryBytes": topo.total_memory_bytes(),
        "hugepages": {
            hugepage_resource_name(size): topo.total_hugepage_bytes(size)
            for size in topo.hugepage_sizes()
        },
        "sockets": [_socket_dict(topo, s) for s in topo.socket_ids()],
        "numaNodes": [_numa_dict(topo, n) for n in topo.all_numa_node_ids()],
        "uncoreCaches": [
            {"id": u, **_cpus(topo.cpus_of_uncore_cache(u))} for u in topo.uncore_cache_ids()
        ],
        "cpus": [
            {
                "id": info.cpu_id,
                "core": info.core_id,
                "socket": info.socket_id,
                "numaNode": info.numa_node_id,
                "uncoreCache": info.uncore_cache_id,
            }
            for info in topo.cpu_details.values()
        ],
    }


def _memory_label(topo: CPUTopology, numa_id: int) -> str:
    mem = topo.numa_memory(numa_id)
    if mem is None:
        return "memory unknown"
    parts = [format_bytes(mem.memory_bytes)]
    for size, pages in sorted(mem.hugepages.items()):
        if pages:
            parts.append(f"{hugepage_resource_name(size)}: {pages}")
    return ", ".join(parts)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _machine_line(topo: CPUTopology) -> str:
    """``Machine 'name' (<memory> total): <counts>, <n> threads per core``."""
    header = f"Machine {topo.name!r}" if topo.name else "Machine"
    counts = ", ".join(
        _count(n, what)
        for n, what in (
            (topo.num_cpus, "CPU"),
            (topo.num_cores, "core"),
            (topo.num_sockets, "socket"),
            (topo.num_numa_nodes, "NUMA node"),
            (topo.num_uncore_cache, "uncore cache"),
        )
    )
    return (
        f"{header} ({format_bytes(topo.total_memory_bytes())} total): {counts}, "
        f"{_count(topo.cpus_per_core(), 'thread')} per core"
    )


def _package_lines(topo: CPUTopology, socket_id: int) -> list[str]:
    """A package and, nested, its NUMA nodes, L3 caches, cores and threads (a NUMA node or
    L3 reaching beyond it is shown with the CPUs it has here, marked ``(part)``)."""
    socket_cpus = topo.cpus_of_socket(socket_id)
    lines = [f"  Package P#{socket_id} (CPUs {socket_cpus})"]
    for numa_id in topo.numa_nodes_of(socket_cpus):
        numa_all = topo.cpus_of_numa_node(numa_id)
        numa_cpus = numa_all & socket_cpus
        part = " (part)" if numa_cpus != numa_all else ""
        lines.append(
            f"    NUMANode P#{numa_id}{part} ({_memory_label(topo, numa_id)}; CPUs {numa_cpus})"
        )
        for uncore_id in topo.uncore_caches_of(numa_cpus):
            uncore_all = topo.cpus_of_uncore_cache(uncore_id)
            uncore_cpus = uncore_all & numa_cpus
            part = " (part)" if uncore_cpus != uncore_all else ""
            lines.append(f"      L3 P#{uncore_id}{part} (CPUs {uncore_cpus})")
            for core_id in topo.cores_of(uncore_cpus):
                lines.append(f"        Core P#{core_id}")
                lines.extend(
                    f"          PU P#{cpu}" for cpu in topo.cpus_of_core(core_id) & uncore_cpus
                )
    return lines


def render_text(topo: CPUTopology) -> str:
    """lstopo-style tree: Machine → Package → NUMANode → L3 → Core → PU.

    A NUMA node or L3 that spans several packages (or NUMA nodes) appears under each of
    them with the CPUs it has there, marked ``(part)``.
    """
    lines = [_machine_line(topo)]
    if topo.cpu_model:
        lines.append(f"  CPU model: {topo.cpu_model}")
    for socket_id in topo.socket_ids():
        lines.extend(_package_lines(topo, socket_id))
    cpu_less = [n for n in topo.all_numa_node_ids() if not topo.cpus_of_numa_node(n)]
    for numa_id in cpu_less:
        lines.append(f"  NUMANode P#{numa_id} ({_memory_label(topo, numa_id)}; no CPUs)")
    if topo.offline_cpus:
        lines.append(f"  Offline CPUs: {topo.offline_cpus}")
    return "\n".join(lines) + "\n"

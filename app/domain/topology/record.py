"""A machine's topology as plain JSON data, for the node record kept beside the state files.

The kubelet's state files name CPUs and NUMA nodes only; a later run (``numascope restart``)
must know the machine they describe. ``topology_to_record`` writes every logical CPU as
``[core, socket, NUMA node, uncore cache]`` plus the per-NUMA memory, and
``topology_from_record`` builds an equal ``CPUTopology`` back (the same shape the conformance
fixtures use for CPUs). Errors raise ``TopologyRecordError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.domain.cpuset import CPUSet, CPUSetError
from app.domain.topology.model import CPUInfo, CPUTopology, NUMANodeMemory, TopologyError


class TopologyRecordError(ValueError):
    """A topology record that cannot describe a machine; ``field`` is the key at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def topology_to_record(topology: CPUTopology) -> dict[str, Any]:
    """The topology as JSON-ready data."""
    return {
        "name": topology.name,
        "cpus": {
            str(cpu): [i.core_id, i.socket_id, i.numa_node_id, i.uncore_cache_id]
            for cpu, i in topology.cpu_details.items()
        },
        "memory": [
            {
                "numaNode": m.numa_id,
                "bytes": m.memory_bytes,
                "hugepages": {str(size): n for size, n in sorted(m.hugepages.items())},
                "distances": list(m.distances),
            }
            for m in topology.memory
        ],
        "offline": str(topology.offline_cpus),
    }


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TopologyRecordError(field, f"expected a non-negative integer, got {value!r}")
    return value


def _cpus(obj: Any) -> list[CPUInfo]:
    if not isinstance(obj, Mapping) or not obj:
        raise TopologyRecordError("topology.cpus", "expected an object of CPUs")
    out = []
    for key, value in obj.items():
        field = f"topology.cpus.{key}"
        if not str(key).isdigit():
            raise TopologyRecordError(field, "CPU ids are decimal numbers")
        if not isinstance(value, list) or len(value) != 4:
            raise TopologyRecordError(field, "expected [core, socket, numa, uncore]")
        core, socket, numa, uncore = (_int(v, field) for v in value)
        out.append(CPUInfo(int(key), core, socket, numa, uncore))
    return out


def _memory(obj: Any) -> list[NUMANodeMemory]:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise TopologyRecordError("topology.memory", "expected a list")
    out = []
    for i, m in enumerate(obj):
        field = f"topology.memory[{i}]"
        if not isinstance(m, Mapping):
            raise TopologyRecordError(field, "expected an object")
        pages = m.get("hugepages") or {}
        if not isinstance(pages, Mapping) or not all(str(k).isdigit() for k in pages):
            raise TopologyRecordError(f"{field}.hugepages", "expected page size -> pages")
        distances = m.get("distances") or []
        if not isinstance(distances, list):
            raise TopologyRecordError(f"{field}.distances", "expected a list")
        out.append(
            NUMANodeMemory(
                _int(m.get("numaNode"), f"{field}.numaNode"),
                _int(m.get("bytes"), f"{field}.bytes"),
                {int(k): _int(v, f"{field}.hugepages") for k, v in pages.items()},
                tuple(_int(d, f"{field}.distances") for d in distances),
            )
        )
    return out


def topology_from_record(obj: Any) -> CPUTopology:
    """The ``CPUTopology`` a record describes."""
    if not isinstance(obj, Mapping):
        raise TopologyRecordError("topology", "expected an object")
    name = obj.get("name") or ""
    if not isinstance(name, str):
        raise TopologyRecordError("topology.name", "expected a string")
    try:
        offline = CPUSet.parse(str(obj.get("offline") or ""))
    except CPUSetError as exc:
        raise TopologyRecordError("topology.offline", str(exc)) from None
    try:
        return CPUTopology(
            _cpus(obj.get("cpus")),
            memory=_memory(obj.get("memory")),
            name=name,
            offline_cpus=offline,
        )
    except TopologyError as exc:
        raise TopologyRecordError("topology", str(exc)) from None

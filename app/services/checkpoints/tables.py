"""Tables of a state file's content for people: the CPU entries (per pod, container and pod
entry, or V1's container IDs) and the memory machine state and assignments. The pages show
them as they are; the CLI upper-cases the headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain.checkpoint import (
    CPUCheckpointState,
    MemoryCheckpointState,
)
from app.domain.units import format_bytes

# -- inspection --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the file's content, for people (HTML as is; the CLI upper-cases headers)."""

    key: str
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "headers": list(self.headers),
            "rows": [list(r) for r in self.rows],
        }


def _size_text(n: int) -> str:
    return f"{format_bytes(n)} ({n})" if n >= 1024 else f"{n} B"


def _block_text(b: Any) -> str:
    numa = ",".join(str(n) for n in b.numa_affinity) or "-"
    return f"{b.type} {format_bytes(b.size)} on NUMA {numa}"


def content_tables(state: Any) -> tuple[Table, ...]:
    """The tables of a CPU or a memory manager state."""
    if isinstance(state, CPUCheckpointState):
        return _cpu_tables(state)
    assert isinstance(state, MemoryCheckpointState)
    return _memory_tables(state)


def _cpu_entries_table(state: CPUCheckpointState) -> Table:
    """V1's container IDs, or the container entries of V2 and later."""
    if state.container_entries is not None and not state.entries:
        return Table(
            "entries",
            "Entries (V1: container ID → CPUs)",
            ("Container ID", "CPUs", "Count"),
            tuple(
                (cid, str(c) or "(empty)", str(c.size()))
                for cid, c in sorted(state.container_entries.items())
            ),
            (False, False, True),
        )
    return Table(
        "entries",
        "Entries (container → CPUs: its exclusive slice, or its pod shared pool)",
        ("Pod UID", "Container", "CPUs", "Count"),
        tuple(
            (pod, name, str(c) or "(empty)", str(c.size()))
            for pod, containers in sorted(state.entries.items())
            for name, c in sorted(containers.items())
        ),
        (False, False, False, True),
    )


def _cpu_tables(state: CPUCheckpointState) -> tuple[Table, ...]:
    rows: tuple[tuple[str, ...], ...]
    tables = [_cpu_entries_table(state)]
    if state.pod_entries is not None:
        rows = tuple(
            (pod, str(c) or "(empty)", str(c.size()))
            for pod, c in sorted(state.pod_entries.items())
        )
        tables.append(
            Table(
                "podEntries",
                "Pod entries (pod-level CPU budget)",
                ("Pod UID", "CPUs", "Count"),
                rows,
                (False, False, True),
            )
        )
    return tuple(tables)


def _machine_state_table(state: MemoryCheckpointState) -> Table:
    ms_rows = tuple(
        (
            str(node),
            res,
            _size_text(t.total),
            _size_text(t.system_reserved),
            _size_text(t.allocatable),
            _size_text(t.reserved),
            _size_text(t.free),
            str(ns.number_of_assignments),
            ",".join(str(c) for c in ns.cells) or "-",
        )
        for node, ns in sorted(state.machine_state.items())
        for res, t in sorted(ns.memory_map.items())
    )
    return Table(
        "machineState",
        "Machine state (per NUMA node and resource)",
        (
            "NUMA",
            "Resource",
            "Total",
            "System reserved",
            "Allocatable",
            "Reserved",
            "Free",
            "Assignments",
            "Cells",
        ),
        ms_rows,
        (True, False, True, True, True, True, True, True, False),
    )


def _memory_tables(state: MemoryCheckpointState) -> tuple[Table, ...]:
    tables = [
        _machine_state_table(state),
        Table(
            "entries",
            "Entries (container → memory blocks)",
            ("Pod UID", "Container", "Blocks"),
            tuple(
                (pod, name, "; ".join(_block_text(b) for b in blocks) or "(none)")
                for pod, containers in sorted(state.entries.items())
                for name, blocks in sorted(containers.items())
            ),
        ),
    ]
    if state.pod_entries is not None:
        tables.append(
            Table(
                "podEntries",
                "Pod entries (pod-level memory blocks)",
                ("Pod UID", "Blocks"),
                tuple(
                    (pod, "; ".join(_block_text(b) for b in blocks) or "(none)")
                    for pod, blocks in sorted(state.pod_entries.items())
                ),
            )
        )
    return tuple(tables)

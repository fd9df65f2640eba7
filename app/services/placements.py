"""Where an admitted (or would-be-admitted) attempt placed its pod: the CPUs it holds, the
NUMA nodes it touches and what each container runs on, for the verdicts of one submission on
the node page. An admitted pod's placement is read from the node as it is; a dry run's is
replayed from the admission log (``app.services.history``), since nothing of it was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db.tables import ACTION_ADMIT, ACTION_DRY_RUN
from app.domain.cpuset import CPUSet
from app.services.history import Builder, find_row, log_rows, replay
from app.services.nodes.service import NodeService


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class ContainerPlacement(_View):
    name: str
    isolation: str
    cpus: str  # what it runs on: its slice, its pod's shared pool or the node shared pool


class PlacementView(_View):
    """Where an admitted (or would-be-admitted) pod got its CPUs and memory."""

    entry: int
    pod: str
    cpus: str  # every CPU the pod holds (budget and slices); "" when it holds none
    numa_nodes: list[int]
    containers: list[ContainerPlacement]


def _placement(entry: int, alloc: Any, topo: Any, node_shared: CPUSet) -> PlacementView:
    m = alloc.pod_cpuset.mask if alloc.pod_cpuset is not None else 0
    containers = []
    for c in alloc.containers:
        if c.isolation == "container":
            m |= c.cpuset.mask
        runs = node_shared if c.isolation == "host" else c.cpuset
        containers.append(ContainerPlacement(name=c.name, isolation=c.isolation, cpus=str(runs)))
    held = CPUSet.from_mask(m)
    numa = {topo.cpu_details[cpu].numa_node_id for cpu in held}
    blocks = [*alloc.pod_memory, *(b for c in alloc.containers for b in c.memory)]
    numa.update(n for b in blocks for n in b.numa_affinity)
    return PlacementView(
        entry=entry,
        pod=f"{alloc.namespace}/{alloc.name}",
        cpus=str(held),
        numa_nodes=sorted(numa),
        containers=containers,
    )


def placements(service: NodeService, node: str, entries: Sequence[Any]) -> dict[int, PlacementView]:
    """Placement per admitted entry of one submission (``AdmissionLogEntry`` values): an
    admitted pod's from the node as it is; a dry run's replayed from the log (nothing of it
    was kept)."""
    wanted = [e for e in entries if e.admitted and e.action in (ACTION_ADMIT, ACTION_DRY_RUN)]
    if not wanted or node not in service.simulated_names():
        return {}
    out: dict[int, PlacementView] = {}
    snap = service.snapshot(node)
    node_shared = snap.default_cpuset - snap.reserved_cpus
    dry = [e for e in wanted if e.action == ACTION_DRY_RUN]
    for e in wanted:
        if e.action == ACTION_ADMIT and (alloc := snap.pod(e.namespace, e.name)) is not None:
            out[e.id] = _placement(e.id, alloc, snap.topology, node_shared - _held_all(snap))
    if dry:
        rows = log_rows(service, node)
        builder = Builder(service, node)
        for e in dry:
            row = find_row(rows, node, e.id)
            state = replay(builder, rows, before=row.id, batch=row.batch)
            result = state.dry_run(builder.pod(row))
            if result.admitted and result.allocation is not None:
                after = state.snapshot()
                free = after.default_cpuset - after.reserved_cpus - _held_all(after)
                taken = _placement(e.id, result.allocation, after.topology, free)
                out[e.id] = taken
    return out


def _held_all(snap: Any) -> CPUSet:
    m = 0
    for p in snap.pods:
        if p.pod_cpuset is not None:
            m |= p.pod_cpuset.mask
        for c in p.containers:
            if c.isolation == "container":
                m |= c.cpuset.mask
    return CPUSet.from_mask(m)

"""Where an admitted (or would-be-admitted) attempt placed its pod: the CPUs it holds, the
NUMA nodes it touches and what each container runs on, for the verdicts of one submission on
the node page. An admitted pod's placement is read from the node as it is; a dry run's is
replayed from the admission log (``app.services.history.replay``), since nothing of it was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db.tables import ACTION_ADMIT, ACTION_DRY_RUN
from app.domain.cpuset import CPUSet
from app.services.history.replay import Builder, find_row, log_rows, replay
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
    if not wanted or node not in service.registry.simulated_names():
        return {}
    out: dict[int, PlacementView] = {}
    snap = service.reads.snapshot(node)
    node_shared = snap.default_cpuset - snap.reserved_cpus
    dry = [e for e in wanted if e.action == ACTION_DRY_RUN]
    for e in wanted:
        if e.action == ACTION_ADMIT and (alloc := snap.pod(e.namespace, e.name)) is not None:
            out[e.id] = _placement(e.id, alloc, snap.topology, node_shared - _held_all(snap))
    if dry:
        out.update(_dry_run_placements(service, node, sorted(dry, key=lambda e: e.id)))
    return out


def _dry_run_placements(
    service: NodeService, node: str, dry: Sequence[Any]
) -> dict[int, PlacementView]:
    """One replay up to the first entry, then forward through the submission's rows: each
    would-be-admitted pod before an entry is admitted on the scratch state, as the dry run did
    (a page of a 3,000-pod dry run costs one replay, not one per verdict)."""
    rows = log_rows(service, node)
    builder = Builder(service, node)
    first = find_row(rows, node, dry[0].id)
    state = replay(builder, rows, before=first.id, batch=first.batch)
    by_id = {r.id: r for r in rows}
    batch_rows = [r for r in rows if r.batch == first.batch and r.id >= first.id]
    out: dict[int, PlacementView] = {}
    wanted = {e.id for e in dry}
    for r in batch_rows:
        if r.id > dry[-1].id:
            break
        if r.id not in wanted and not r.admitted:
            continue
        result = state.dry_run(builder.pod(by_id[r.id])) if r.id in wanted else None
        if result is not None and result.admitted and result.allocation is not None:
            after = state.snapshot()
            free = after.default_cpuset - after.reserved_cpus - _held_all(after)
            out[r.id] = _placement(r.id, result.allocation, after.topology, free)
        if r.admitted and r.action == ACTION_DRY_RUN:
            pod = builder.pod(r)
            if pod.uid not in state.pods and state.find_pod(pod.key) is None:
                state.admit(pod)
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

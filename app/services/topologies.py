"""Topologies for the dashboard: the host (discovered from sysfs) and the named presets.

One loader (``TopologyService.load``) builds one view model (``TopologyView``) that serves the
HTML page, its htmx fragment and the JSON twins. The view carries the JSON-ready topology from
``app.domain.topology.view.topology_to_dict`` plus the nesting the CPU map draws (lstopo order:
socket → NUMA node → L3 group → core → hardware thread).

The host topology is discovered once per service (py-cpuinfo is slow) and cached; a failed
discovery is remembered for ``host_retry_seconds`` so a broken sysfs does not stall every page.
Views are immutable and cached per name.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from app.adapters import sysfs
from app.contracts.base import WIRE_CONFIG
from app.domain import presets
from app.domain.topology.model import CPUTopology, hugepage_resource_name
from app.domain.topology.view import topology_to_dict

HOST = "host"

TopologyKind = Literal["host", "preset"]


class UnknownTopologyError(LookupError):
    """No topology has this name; ``known`` lists the names that exist (``host`` first)."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        presets_text = ", ".join(n for n in self.known if n != HOST) or "none"
        self.message = (
            f"unknown topology {name!r}: use {HOST!r} for this machine or one of the presets: "
            f"{presets_text}"
        )
        super().__init__(self.message)


class HostDiscoveryError(RuntimeError):
    """The host topology could not be discovered from sysfs."""

    def __init__(self, sysfs_root: Path, cause: str) -> None:
        self.sysfs_root = sysfs_root
        self.cause = cause
        self.message = f"could not discover the host topology from {str(sysfs_root)!r}: {cause}"
        super().__init__(self.message)


# -- view models -------------------------------------------------------------------------


class _View(BaseModel):
    # defer_build: validators are built on first use, not at import (the node agent uses few
    # of these; issue 20 pt 7).
    model_config = WIRE_CONFIG | ConfigDict(defer_build=True)


class HugepagesView(_View):
    page_size: int
    page_size_label: str
    pages: int
    bytes: int


class NumaMemoryView(_View):
    numa_node: int
    total_bytes: int
    regular_bytes: int
    hugepages: list[HugepagesView]


class CoreBox(_View):
    id: int
    cpus: list[int]


class UncoreGroup(_View):
    id: int
    cores: list[CoreBox]


class NumaBox(_View):
    id: int
    cpus: str
    cpu_count: int
    uncore_groups: list[UncoreGroup]
    show_uncore_groups: bool
    # The NUMA node also has CPUs in these other sockets (drawn there as well).
    also_in_sockets: list[int]
    memory: NumaMemoryView | None


class SocketBox(_View):
    id: int
    cpus: str
    numa_nodes: list[NumaBox]


class DistanceTable(_View):
    nodes: list[int]
    rows: list[list[int]]
    reported: bool


class CpuMap(_View):
    sockets: list[SocketBox]
    memory_only_numa_nodes: list[NumaMemoryView]
    distances: DistanceTable


class TopologySummary(_View):
    name: str
    kind: TopologyKind
    description: str
    source: Literal["sysfs", "preset"]
    # For presets: "fixture" (an upstream kubelet test topology) or "server".
    preset_kind: str | None = None
    available: bool = True
    error: str | None = None
    sockets: int = 0
    numa_nodes: int = 0
    cores: int = 0
    cpus: int = 0
    cpus_per_core: int = 0
    uncore_caches: int = 0
    memory_bytes: int = 0
    hugepages: list[HugepagesView] = []
    cpu_model: str = ""
    url: str = ""
    json_url: str = ""
    api_url: str = ""


class TopologyView(_View):
    summary: TopologySummary
    observed_at: str
    topology: dict[str, Any]
    cpu_map: CpuMap


class TopologyIndexView(_View):
    topologies: list[TopologySummary]


# -- building ----------------------------------------------------------------------------


def page_size_label(size: int) -> str:
    """The kubelet's hugepage size suffix: 2097152 -> ``2Mi``, 1073741824 -> ``1Gi``."""
    return hugepage_resource_name(size).removeprefix("hugepages-")


def _hugepages(sizes: Iterable[tuple[int, int]]) -> list[HugepagesView]:
    return [
        HugepagesView(
            page_size=size, page_size_label=page_size_label(size), pages=pages, bytes=size * pages
        )
        for size, pages in sorted(sizes)
    ]


def _numa_memory(topo: CPUTopology, numa_id: int) -> NumaMemoryView | None:
    mem = topo.numa_memory(numa_id)
    if mem is None:
        return None
    return NumaMemoryView(
        numa_node=numa_id,
        total_bytes=mem.memory_bytes,
        regular_bytes=mem.regular_memory_bytes(),
        hugepages=_hugepages(mem.hugepages.items()),
    )


def build_cpu_map(topo: CPUTopology) -> CpuMap:
    """Nest the CPUs socket → NUMA node → L3 group → core → thread, ascending ids.

    A NUMA node with CPUs in several sockets is drawn inside each socket (its memory beside
    its first appearance). L3 groups are drawn only where a NUMA node holds more than one.
    """
    sockets: list[SocketBox] = []
    memory_shown: set[int] = set()
    cpu_numa = set(topo.numa_node_ids())
    for socket_id in topo.socket_ids():
        socket_cpus = topo.cpus_of_socket(socket_id)
        numa_boxes: list[NumaBox] = []
        for numa_id in topo.numa_nodes_of(socket_cpus):
            numa_boxes.append(_numa_box(topo, socket_id, numa_id, numa_id not in memory_shown))
            memory_shown.add(numa_id)
        sockets.append(SocketBox(id=socket_id, cpus=str(socket_cpus), numa_nodes=numa_boxes))
    memory_only = [
        view
        for mem in topo.memory
        if mem.numa_id not in cpu_numa and (view := _numa_memory(topo, mem.numa_id)) is not None
    ]
    nodes = sorted(cpu_numa | {m.numa_id for m in topo.memory})
    reported = any(m.distances for m in topo.memory)
    rows = [[topo.distance(a, b) for b in nodes] for a in nodes]
    return CpuMap(
        sockets=sockets,
        memory_only_numa_nodes=memory_only,
        distances=DistanceTable(nodes=nodes, rows=rows, reported=reported),
    )


def _numa_box(topo: CPUTopology, socket_id: int, numa_id: int, with_memory: bool) -> NumaBox:
    """The part of NUMA node ``numa_id`` in socket ``socket_id``: its L3 groups of cores,
    the other sockets it spans, and (``with_memory``) its memory."""
    numa_all = topo.cpus_of_numa_node(numa_id)
    cpus = topo.cpus_of_socket(socket_id) & numa_all
    groups: list[UncoreGroup] = []
    for uncore_id in topo.uncore_caches_of(cpus):
        group_cpus = cpus & topo.cpus_of_uncore_cache(uncore_id)
        cores = [
            CoreBox(id=core_id, cpus=list(group_cpus & topo.cpus_of_core(core_id)))
            for core_id in topo.cores_of(group_cpus)
        ]
        cores.sort(key=lambda c: c.cpus[0])
        groups.append(UncoreGroup(id=uncore_id, cores=cores))
    return NumaBox(
        id=numa_id,
        cpus=str(cpus),
        cpu_count=cpus.size(),
        uncore_groups=groups,
        show_uncore_groups=len(groups) > 1,
        also_in_sockets=[s for s in topo.sockets_of(numa_all) if s != socket_id],
        memory=_numa_memory(topo, numa_id) if with_memory else None,
    )


def summarize(
    topo: CPUTopology, *, name: str, kind: TopologyKind, description: str
) -> TopologySummary:
    totals: dict[int, int] = {}
    for mem in topo.memory:
        for size, pages in mem.hugepages.items():
            if pages:
                totals[size] = totals.get(size, 0) + pages
    return TopologySummary(
        name=name,
        kind=kind,
        description=description,
        source="sysfs" if kind == "host" else "preset",
        sockets=topo.num_sockets,
        numa_nodes=topo.num_numa_nodes,
        cores=topo.num_cores,
        cpus=topo.num_cpus,
        cpus_per_core=topo.cpus_per_core(),
        uncore_caches=topo.num_uncore_cache,
        memory_bytes=sum(m.memory_bytes for m in topo.memory),
        hugepages=_hugepages(totals.items()),
        cpu_model=topo.cpu_model,
        url=f"/topologies/{name}",
        json_url=f"/topologies/{name}.json",
        api_url=f"/api/v1/topologies/{name}",
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# -- the service -------------------------------------------------------------------------

HostDiscoverer = Callable[..., CPUTopology]


class TopologyService:
    """Loads and caches topology views; one instance per app.

    ``discover_host`` defaults to ``app.adapters.sysfs.discover_host`` (tests pass a fake).
    ``on_host_error`` is called once per failed discovery (the app counts it as a metric).
    """

    def __init__(
        self,
        *,
        sysfs_root: Path = Path("/sys"),
        use_cpuinfo: bool = True,
        host_retry_seconds: float = 30.0,
        discover_host: HostDiscoverer = sysfs.discover_host,
        clock: Callable[[], float] = time.monotonic,
        on_host_error: Callable[[], None] | None = None,
    ) -> None:
        self.sysfs_root = Path(sysfs_root)
        self.use_cpuinfo = use_cpuinfo
        self.host_retry_seconds = host_retry_seconds
        self._discover_host = discover_host
        self._clock = clock
        self._on_host_error = on_host_error
        self._lock = threading.Lock()
        self._host: CPUTopology | None = None
        self._host_error: tuple[float, HostDiscoveryError] | None = None
        self._views: dict[str, TopologyView] = {}
        self._summaries: dict[str, TopologySummary] = {}
        self._presets: dict[str, presets.PresetInfo] = {p.name: p for p in presets.list_presets()}
        self.host_discovery_failures = 0

    @property
    def host_description(self) -> str:
        return f"This machine, discovered from {self.sysfs_root}"

    def preset_names(self) -> list[str]:
        return list(self._presets)

    def names(self) -> list[str]:
        return [HOST, *self._presets]

    # host ------------------------------------------------------------------------------
    def host(self) -> CPUTopology:
        """The discovered host topology (cached); raises ``HostDiscoveryError``."""
        with self._lock:
            if self._host is not None:
                return self._host
            if self._host_error is not None:
                failed_at, error = self._host_error
                if self._clock() - failed_at < self.host_retry_seconds:
                    raise error
            try:
                topo = self._discover_host(self.sysfs_root, use_cpuinfo=self.use_cpuinfo)
            except Exception as err:  # any failure of discovery is reported, never a 500
                self.host_discovery_failures += 1
                if self._on_host_error is not None:
                    self._on_host_error()
                error = HostDiscoveryError(self.sysfs_root, str(err) or type(err).__name__)
                self._host_error = (self._clock(), error)
                raise error from err
            self._host = topo
            self._host_error = None
            return topo

    # lookups ---------------------------------------------------------------------------
    def topology(self, name: str) -> CPUTopology:
        """The topology called ``name``; raises ``UnknownTopologyError``/``HostDiscoveryError``."""
        if name == HOST:
            return self.host()
        if name not in self._presets:
            raise UnknownTopologyError(name, self.names())
        return presets.get_preset(name)

    def summary(self, name: str) -> TopologySummary:
        cached = self._summaries.get(name)
        if cached is not None:
            return cached
        topo = self.topology(name)
        if name == HOST:
            result = summarize(topo, name=name, kind="host", description=self.host_description)
        else:
            info = self._presets[name]
            result = summarize(
                topo, name=name, kind="preset", description=info.description
            ).model_copy(update={"preset_kind": info.kind})
        self._summaries[name] = result
        return result

    def load(self, name: str) -> TopologyView:
        """The view of topology ``name`` (``host`` or a preset name)."""
        cached = self._views.get(name)
        if cached is not None:
            return cached
        topo = self.topology(name)
        view = TopologyView(
            summary=self.summary(name),
            observed_at=_now(),
            topology=topology_to_dict(topo),
            cpu_map=build_cpu_map(topo),
        )
        self._views[name] = view
        return view

    def index(self) -> TopologyIndexView:
        """Every topology: the host first (marked unavailable when discovery fails)."""
        try:
            host = self.summary(HOST)
        except HostDiscoveryError as err:
            host = TopologySummary(
                name=HOST,
                kind="host",
                description=self.host_description,
                source="sysfs",
                available=False,
                error=err.message,
                url=f"/topologies/{HOST}",
                json_url=f"/topologies/{HOST}.json",
                api_url=f"/api/v1/topologies/{HOST}",
            )
        return TopologyIndexView(topologies=[host, *(self.summary(n) for n in self._presets)])

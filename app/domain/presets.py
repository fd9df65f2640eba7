"""Named topologies: the upstream test fixtures, realistic servers, and synthetic spec strings.

The fixture presets reproduce, CPU for CPU, the topologies that the kubelet's own unit tests
use (``topoSingleSocketHT`` & co. in pkg/kubelet/cm/cpumanager/policy_test.go and
cpu_assignment_test.go, v1.37), as transcribed in the conformance fixtures. Their counts are
the ones upstream declares, and every CPU's uncore cache id is 0 as in upstream (the tests
never set it) except for the ``topoUncore*`` fixtures. They get plausible memory per NUMA
node (no hugepages) so that simulated nodes built on them can run the memory manager.

The server presets and ``parse_topology_spec`` (``app.domain.topology.spec``) are built by
``app.domain.topology.synthetic``, which numbers threads the way Linux does on x86 and derives
uncore (L3) ids as cAdvisor reports them (google/cadvisor utils/sysinfo/sysinfo.go
``addCacheInfo``). This module owns the named presets and ``resolve_topology``.

Built topologies are cached per name; treat them as immutable values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from app.domain.topology.model import (
    GIB,
    HUGEPAGE_1G,
    HUGEPAGE_2M,
    CPUInfo,
    CPUTopology,
    TopologyError,
)
from app.domain.topology.spec import parse_topology_spec
from app.domain.topology.synthetic import (
    TopologySpecError,
    numa_memory_for,
    synthetic_topology,
)


class UnknownPresetError(TopologyError, LookupError):
    """No preset has this name; ``valid`` lists the names that exist."""

    def __init__(self, name: str, valid: Sequence[str]) -> None:
        super().__init__(f"unknown topology preset {name!r}; valid presets: {', '.join(valid)}")
        self.name = name
        self.valid = tuple(valid)


@dataclass(frozen=True, slots=True)
class PresetInfo:
    """What the preset list shows about one preset."""

    name: str
    description: str
    kind: str  # "fixture" (an upstream test topology) or "server" (a realistic machine)
    num_cpus: int
    num_cores: int
    num_sockets: int
    num_numa_nodes: int
    num_uncore_caches: int
    cpus_per_core: int
    memory_bytes: int


# -- upstream fixtures -------------------------------------------------------------------


def _linear(
    num_cores: int,
    threads: int,
    socket: Callable[[int], int],
    numa: Callable[[int], int],
    uncore: Callable[[int], int] = lambda c: 0,
) -> list[CPUInfo]:
    """Core ``c`` = CPUs ``c, c + num_cores, ...``; its core id is ``c``."""
    return [
        CPUInfo(t * num_cores + c, c, socket(c), numa(c), uncore(c))
        for t in range(threads)
        for c in range(num_cores)
    ]


def _triple_socket_ht() -> list[CPUInfo]:
    # Siblings are adjacent (2c, 2c+1) and the core id is the pair index, not the lowest CPU.
    sockets = (1, 1, 1, 0, 0, 0, 2, 2, 2)
    return [CPUInfo(2 * c + t, c, s, s, 0) for c, s in enumerate(sockets) for t in (0, 1)]


# topoQuadSocketFourWayHT lists the core id of CPUs 0..287 in runs of consecutive core ids
# (start, length); socket = NUMA node = (core id // 2) % 4.
_QUAD_SOCKET_RUNS = (
    (0, 1),
    (64, 12),
    (64, 12),
    (64, 12),
    (63, 13),
    (1, 15),
    *((18, 40), (60, 4), (0, 16)) * 3,
    (18, 40),
    (60, 3),
)


def _quad_socket_four_way_ht() -> list[CPUInfo]:
    infos: list[CPUInfo] = []
    for start, length in _QUAD_SOCKET_RUNS:
        for core in range(start, start + length):
            socket = (core // 2) % 4
            infos.append(CPUInfo(len(infos), core, socket, socket, 0))
    return infos


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    description: str
    kind: str
    build: Callable[[], CPUTopology]


def _fixture(
    name: str,
    description: str,
    cpus: Callable[[], list[CPUInfo]],
    memory_per_numa: int = 32 * GIB,
) -> Preset:
    def build() -> CPUTopology:
        infos = cpus()
        memory = numa_memory_for(infos, memory_per_numa, {}, 11, 21)
        return CPUTopology(infos, memory=memory, name=name)

    return Preset(name, description, "fixture", build)


def _server(name: str, description: str, **kwargs: object) -> Preset:
    def build() -> CPUTopology:
        return synthetic_topology(name=name, **kwargs)  # type: ignore[arg-type]

    return Preset(name, description, "server", build)


_PRESET_LIST: tuple[Preset, ...] = (
    _fixture(
        "topoSingleSocketHT",
        "upstream test box: 1 socket, 4 cores × 2 threads (core i = CPUs i, i+4)",
        lambda: _linear(4, 2, lambda c: 0, lambda c: 0),
    ),
    _fixture(
        "topoDualSocketHT",
        "upstream test box: 2 sockets/NUMA nodes, 6 cores × 2 threads, even cores on socket 0",
        lambda: _linear(6, 2, lambda c: c % 2, lambda c: c % 2),
    ),
    _fixture(
        "topoTripleSocketHT",
        "upstream test box: 3 sockets/NUMA nodes, 9 cores × 2 adjacent threads",
        _triple_socket_ht,
    ),
    _fixture(
        "topoDualSocketNoHT",
        "upstream test box: 2 sockets/NUMA nodes, 8 cores, no SMT",
        lambda: _linear(8, 1, lambda c: c // 4, lambda c: c // 4),
    ),
    _fixture(
        "topoDualSocketMultiNumaPerSocketHT",
        "upstream test box (dual Xeon Gold 6230): 2 sockets, 2 NUMA nodes each, 40 cores × 2",
        lambda: _linear(40, 2, lambda c: c // 20, lambda c: c // 10),
        48 * GIB,
    ),
    _fixture(
        "fakeTopoMultiSocketDualSocketPerNumaHT",
        "upstream test box: 4 sockets, 2 NUMA nodes of 2 sockets each, 40 cores × 2",
        lambda: _linear(40, 2, lambda c: c // 10, lambda c: c // 20),
        64 * GIB,
    ),
    _fixture(
        "topoDualSocketMultiNumaPerSocketHTLarge",
        "upstream test box: 2 sockets, 4 NUMA nodes each, 128 cores × 2",
        lambda: _linear(128, 2, lambda c: c // 64, lambda c: c // 16),
        64 * GIB,
    ),
    _fixture(
        "topoQuadSocketFourWayHT",
        "upstream test box (Knights Landing SNC-4): 4 sockets/NUMA nodes, 72 cores × 4 threads",
        _quad_socket_four_way_ht,
        24 * GIB,
    ),
    _fixture(
        "topoUncoreSingleSocketNoSMT",
        "upstream test box: 1 socket, 16 cores, no SMT, 4 uncore caches of 4 cores",
        lambda: _linear(16, 1, lambda c: 0, lambda c: 0, lambda c: c // 4),
    ),
    _fixture(
        "topoUncoreDualSocketNoSMT",
        "upstream test box: 2 sockets, 1 NUMA node, 16 cores, no SMT, 4 uncore caches",
        lambda: _linear(16, 1, lambda c: c // 8, lambda c: 0, lambda c: c // 4),
    ),
    _fixture(
        "topoUncoreSingleSocketMultiNuma",
        "upstream test box: 1 socket, 2 NUMA nodes, 16 cores, no SMT, 4 uncore caches",
        lambda: _linear(16, 1, lambda c: 0, lambda c: c // 8, lambda c: c // 4),
    ),
    _fixture(
        "topoUncoreSingleSocketSMT",
        "upstream test box: 1 socket, 8 cores × 2 threads, 2 uncore caches of 4 cores",
        lambda: _linear(8, 2, lambda c: 0, lambda c: 0, lambda c: c // 4),
    ),
    _server(
        "laptop-1s",
        "laptop: 1 socket, 1 NUMA node, 8 cores × 2 threads, 32 GiB",
        sockets=1,
        numa_per_socket=1,
        cores_per_numa=8,
        threads_per_core=2,
        memory_per_numa=32 * GIB,
        cpu_model="11th Gen Intel(R) Core(TM) i7-11850H @ 2.50GHz",
    ),
    _server(
        "server-2s-4numa-128t",
        "2 × 32-core EPYC (NPS2): 4 NUMA nodes of 16 cores × 2, L3 per 8 cores, "
        "128 GiB and 4096 × 2Mi hugepages per NUMA node",
        sockets=2,
        numa_per_socket=2,
        cores_per_numa=16,
        threads_per_core=2,
        cores_per_uncore=8,
        memory_per_numa=128 * GIB,
        hugepages_per_numa={HUGEPAGE_2M: 4096},
        distance_same_socket=12,
        distance_remote=32,
        cpu_model="AMD EPYC 7543 32-Core Processor",
    ),
    _server(
        "server-2s-8numa-512t",
        "2 × 128-core EPYC (NPS4): 8 NUMA nodes of 32 cores × 2, L3 per 8 cores, "
        "192 GiB and 64 × 1Gi hugepages per NUMA node",
        sockets=2,
        numa_per_socket=4,
        cores_per_numa=32,
        threads_per_core=2,
        cores_per_uncore=8,
        memory_per_numa=192 * GIB,
        hugepages_per_numa={HUGEPAGE_1G: 64},
        distance_same_socket=12,
        distance_remote=32,
        cpu_model="AMD EPYC 9754 128-Core Processor",
    ),
)

PRESETS: dict[str, Preset] = {p.name: p for p in _PRESET_LIST}

#: Names of the presets that reproduce the upstream test fixtures.
FIXTURE_PRESETS: tuple[str, ...] = tuple(p.name for p in _PRESET_LIST if p.kind == "fixture")


def preset_names() -> list[str]:
    return list(PRESETS)


def build_preset(name: str) -> CPUTopology:
    """Build a preset from scratch (uncached); ``get_preset`` is the cached entry point."""
    preset = PRESETS.get(name)
    if preset is None:
        raise UnknownPresetError(name, list(PRESETS))
    return preset.build()


@cache
def get_preset(name: str) -> CPUTopology:
    """The named preset (cached: do not mutate it). Raises ``UnknownPresetError``."""
    return build_preset(name)


def list_presets() -> list[PresetInfo]:
    infos = []
    for preset in _PRESET_LIST:
        topo = get_preset(preset.name)
        infos.append(
            PresetInfo(
                name=preset.name,
                description=preset.description,
                kind=preset.kind,
                num_cpus=topo.num_cpus,
                num_cores=topo.num_cores,
                num_sockets=topo.num_sockets,
                num_numa_nodes=topo.num_numa_nodes,
                num_uncore_caches=topo.num_uncore_cache,
                cpus_per_core=topo.cpus_per_core(),
                memory_bytes=topo.total_memory_bytes(),
            )
        )
    return infos


def resolve_topology(preset: str | None, spec: str | None) -> CPUTopology:
    """The topology named by a preset or described by a spec string (exactly one of them)."""
    if preset and spec:
        raise TopologySpecError("give either a preset or a topology spec, not both")
    if preset:
        return get_preset(preset)
    if spec:
        return parse_topology_spec(spec)
    raise TopologySpecError("give a preset name or a topology spec")

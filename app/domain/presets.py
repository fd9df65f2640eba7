"""Named topologies: the upstream test fixtures, realistic servers, and synthetic spec strings.

The fixture presets reproduce, CPU for CPU, the topologies that the kubelet's own unit tests
use (``topoSingleSocketHT`` & co. in pkg/kubelet/cm/cpumanager/policy_test.go and
cpu_assignment_test.go, v1.37), as transcribed in the conformance fixtures. Their counts are
the ones upstream declares, and every CPU's uncore cache id is 0 as in upstream (the tests
never set it) except for the ``topoUncore*`` fixtures. They get plausible memory per NUMA
node (no hugepages) so that simulated nodes built on them can run the memory manager.

The server presets and ``parse_topology_spec`` number threads the way Linux does on x86:
with N logical CPUs and T threads per core, core ``c`` holds CPUs ``c, c + N/T, ...``, cores
are numbered socket by socket and NUMA node by NUMA node, and a core's id is its lowest CPU
id (allocation spec §1.1). Uncore (L3) ids follow what the kubelet would discover through
cAdvisor (google/cadvisor utils/sysinfo/sysinfo.go ``addCacheInfo``): an L3 that spans exactly
one NUMA node's threads is a node cache, not an uncore cache, so its cores fall back to their
socket id; without ``cores_per_uncore`` every core falls back to its socket id.

Built topologies are cached per name; treat them as immutable values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from app.domain.quantity import Quantity, QuantityError
from app.domain.topology import (
    GIB,
    HUGEPAGE_1G,
    HUGEPAGE_2M,
    CPUInfo,
    CPUTopology,
    NUMANodeMemory,
    TopologyError,
)

#: Upper bound on the CPUs of a synthetic topology (Linux's NR_CPUS maximum).
MAX_SPEC_CPUS = 8192
#: The topology manager's NUMA bitmask is 64 bits wide.
MAX_SPEC_NUMA_NODES = 64
MAX_THREADS_PER_CORE = 8

# Distances as Linux reports them from the SLIT.
LOCAL_DISTANCE = 10


class UnknownPresetError(TopologyError, LookupError):
    """No preset has this name; ``valid`` lists the names that exist."""

    def __init__(self, name: str, valid: Sequence[str]) -> None:
        super().__init__(f"unknown topology preset {name!r}; valid presets: {', '.join(valid)}")
        self.name = name
        self.valid = tuple(valid)


class TopologySpecError(TopologyError):
    """A synthetic topology spec string is malformed; ``key``/``value`` name the culprit."""

    def __init__(self, message: str, *, key: str | None = None, value: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


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


# -- synthetic builder ---------------------------------------------------------------


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


def _memory_for(
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
    _check_range("sockets", sockets, 1, MAX_SPEC_NUMA_NODES)
    _check_range("numa_per_socket", numa_per_socket, 1, MAX_SPEC_NUMA_NODES)
    _check_range("cores_per_numa", cores_per_numa, 1, MAX_SPEC_CPUS)
    _check_range("threads_per_core", threads_per_core, 1, MAX_THREADS_PER_CORE)
    num_numa = sockets * numa_per_socket
    if num_numa > MAX_SPEC_NUMA_NODES:
        raise TopologySpecError(
            f"sockets × numa_per_socket = {num_numa} NUMA nodes; "
            f"at most {MAX_SPEC_NUMA_NODES} are supported",
            key="numa_per_socket",
            value=str(numa_per_socket),
        )
    num_cores = num_numa * cores_per_numa
    num_cpus = num_cores * threads_per_core
    if num_cpus > MAX_SPEC_CPUS:
        raise TopologySpecError(
            f"the topology would have {num_cpus} CPUs; at most {MAX_SPEC_CPUS} are supported",
            key="cores_per_numa",
            value=str(cores_per_numa),
        )
    cores_per_socket = numa_per_socket * cores_per_numa
    if cores_per_uncore is not None:
        _check_range("cores_per_uncore", cores_per_uncore, 1, cores_per_socket)
        if cores_per_socket % cores_per_uncore:
            raise TopologySpecError(
                f"cores_per_uncore={cores_per_uncore} must divide the {cores_per_socket} "
                "cores of a socket (an L3 cache never spans sockets)",
                key="cores_per_uncore",
                value=str(cores_per_uncore),
            )
    _check_range("distance_same_socket", distance_same_socket, LOCAL_DISTANCE + 1, 254)
    _check_range("distance_remote", distance_remote, LOCAL_DISTANCE + 1, 254)
    hugepages = dict(hugepages_per_numa or {})
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

    # An L3 covering exactly a NUMA node's threads is a node cache for cAdvisor.
    real_uncore = cores_per_uncore is not None and cores_per_uncore != cores_per_numa
    infos: list[CPUInfo] = []
    for thread in range(threads_per_core):
        base = thread * num_cores
        for core in range(num_cores):
            socket = core // cores_per_socket
            uncore = core // cores_per_uncore if real_uncore and cores_per_uncore else socket
            infos.append(CPUInfo(base + core, core, socket, core // cores_per_numa, uncore))
    memory = _memory_for(infos, memory_per_numa, hugepages, distance_same_socket, distance_remote)
    return CPUTopology(infos, memory=memory, name=name, cpu_model=cpu_model)


def _check_range(key: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise TopologySpecError(
            f"{key}={value} is out of range (allowed: {low}..{high})", key=key, value=str(value)
        )


# -- spec strings ----------------------------------------------------------------------

_SPEC_INT_KEYS = (
    "sockets",
    "numa_per_socket",
    "cores_per_numa",
    "threads_per_core",
    "cores_per_uncore",
    "hugepages_1Gi_per_numa",
    "hugepages_2Mi_per_numa",
    "distance_same_socket",
    "distance_remote",
)
_SPEC_KEYS = (*_SPEC_INT_KEYS, "memory_per_numa", "name")
_SPEC_DEFAULTS = {"sockets": 1, "numa_per_socket": 1, "threads_per_core": 2}
_REQUIRED_KEYS = ("cores_per_numa",)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")
_INT_RE = re.compile(r"[0-9]+\Z")
_MAX_MEMORY = 1024**5  # 1 PiB per NUMA node is plenty


def _parse_memory(key: str, text: str) -> int:
    try:
        value = Quantity.parse(text).value()
    except QuantityError:
        raise TopologySpecError(
            f"{key}={text!r} is not a memory quantity (e.g. 64Gi, 512Mi, 100G)",
            key=key,
            value=text,
        ) from None
    if not 0 < value <= _MAX_MEMORY:
        raise TopologySpecError(
            f"{key}={text!r} is out of range (1 byte .. 1Pi)", key=key, value=text
        )
    return value


def parse_topology_spec(spec: str) -> CPUTopology:
    """Build a topology from ``"sockets=2,numa_per_socket=2,cores_per_numa=16,..."``.

    Keys: ``sockets`` (default 1), ``numa_per_socket`` (1), ``cores_per_numa`` (required),
    ``threads_per_core`` (2), ``cores_per_uncore`` (default: no uncore caches, i.e. the
    socket), ``memory_per_numa`` (a quantity, default 32Gi), ``hugepages_1Gi_per_numa``,
    ``hugepages_2Mi_per_numa`` (page counts, default 0), ``distance_same_socket`` (11),
    ``distance_remote`` (21) and ``name``. Raises ``TopologySpecError``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise TopologySpecError("the topology spec is empty (e.g. sockets=2,cores_per_numa=8)")
    values: dict[str, str] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            raise TopologySpecError(f"empty item in topology spec {spec!r}")
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise TopologySpecError(f"item {item!r} is not key=value", key=key)
        if key not in _SPEC_KEYS:
            raise TopologySpecError(
                f"unknown topology spec key {key!r}; valid keys: {', '.join(_SPEC_KEYS)}",
                key=key,
                value=value,
            )
        if key in values:
            raise TopologySpecError(f"key {key!r} is given twice", key=key, value=value)
        values[key] = value
    ints: dict[str, int] = dict(_SPEC_DEFAULTS)
    for key in _SPEC_INT_KEYS:
        if key in values:
            text = values[key]
            if not _INT_RE.match(text):
                raise TopologySpecError(
                    f"{key}={text!r} is not a non-negative integer", key=key, value=text
                )
            if len(text.lstrip("0")) > 12:  # beyond every range below (and int()'s limit)
                raise TopologySpecError(
                    f"{key}={text[:20]}… ({len(text)} digits) is out of range",
                    key=key,
                    value=text[:20],
                )
            ints[key] = int(text.lstrip("0") or "0")
    for key in _REQUIRED_KEYS:
        if key not in values:
            raise TopologySpecError(f"the topology spec needs {key}", key=key)
    memory = _parse_memory("memory_per_numa", values.get("memory_per_numa", "32Gi"))
    name = values.get("name", "")
    if name and not _NAME_RE.match(name):
        raise TopologySpecError(
            f"name={name!r} must be 1-63 letters, digits, '.', '_' or '-'", key="name", value=name
        )
    for key in ("hugepages_1Gi_per_numa", "hugepages_2Mi_per_numa"):
        _check_range(key, ints.get(key, 0), 0, 1 << 30)
    if not name:
        num_numa = ints["sockets"] * ints["numa_per_socket"]
        threads = num_numa * ints["cores_per_numa"] * ints["threads_per_core"]
        name = f"custom-{ints['sockets']}s-{num_numa}numa-{threads}t"
    return synthetic_topology(
        sockets=ints["sockets"],
        numa_per_socket=ints["numa_per_socket"],
        cores_per_numa=ints["cores_per_numa"],
        threads_per_core=ints["threads_per_core"],
        cores_per_uncore=ints.get("cores_per_uncore"),
        memory_per_numa=memory,
        hugepages_per_numa={
            HUGEPAGE_1G: ints.get("hugepages_1Gi_per_numa", 0),
            HUGEPAGE_2M: ints.get("hugepages_2Mi_per_numa", 0),
        },
        distance_same_socket=ints.get("distance_same_socket", 11),
        distance_remote=ints.get("distance_remote", 21),
        name=name,
    )


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
        memory = _memory_for(infos, memory_per_numa, {}, 11, 21)
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

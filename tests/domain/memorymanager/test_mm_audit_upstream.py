"""Audit of the Static memory manager policy against upstream
pkg/kubelet/cm/memorymanager/policy_static.go and policy_static_test.go (v1.37 line).

* ``TestStaticPolicyStart`` and ``TestStaticPolicyAllocate`` tables transcribed (inputs and
  expected outcome), run through ``StaticPolicy.start`` / ``allocate``;
* ``regenerateHints`` and ``isNUMAAffinitiesEqual`` build ``bitmask.NewBitMask`` from the stored
  NUMA ids and treat its error (an id outside 0..63) as "no hints" / "not equal" instead of
  failing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.machine import NUMANodeInfo
from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.memorymanager.state import Block, MemoryManagerState, MemoryTable, NUMANodeState
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint

MB = 1 << 20
GB = 1 << 30
HP1G = "hugepages-1Gi"


def table(
    allocatable: int, free: int, reserved: int, system_reserved: int, total: int
) -> MemoryTable:
    return MemoryTable(total, system_reserved, allocatable, reserved, free)


def numa(
    memory: MemoryTable | None,
    hugepages: MemoryTable | None = None,
    cells: tuple[int, ...] = (0,),
    assignments: int = 0,
    extra: dict[str, MemoryTable] | None = None,
) -> NUMANodeState:
    memory_map: dict[str, MemoryTable] = {}
    if memory is not None:
        memory_map["memory"] = memory
    if hugepages is not None:
        memory_map[HP1G] = hugepages
    memory_map.update(extra or {})
    return NUMANodeState(assignments, memory_map, list(cells))


def hp(n: int = 1, free: int | None = None, reserved: int = 0, sr: int = 0) -> MemoryTable:
    return table(n * GB, n * GB if free is None else free, reserved, sr, n * GB)


def machine(*nodes: tuple[int, int, int]) -> tuple[NUMANodeInfo, ...]:
    """(id, memory bytes, 1Gi hugepages)."""
    return tuple(NUMANodeInfo(i, mem, ((GB, pages),)) for i, mem, pages in nodes)


def reserved(*ids: int) -> dict[int, dict[str, int]]:
    return {i: {"memory": 512 * MB} for i in ids}


@dataclass
class StartCase:
    name: str
    machine_state: dict[int, NUMANodeState]
    machine_info: tuple[NUMANodeInfo, ...]
    assignments: dict[str, dict[str, tuple[Block, ...]]] = field(default_factory=dict)
    error: str = ""
    system_reserved: dict[int, dict[str, int]] = field(default_factory=lambda: reserved(0))


DIFFERENT = "[memorymanager] the expected machine state is different from the real one"


def _mem(ids: tuple[int, ...], kind: str, size: int) -> Block:
    return Block(ids, kind, size)


START_CASES = [
    StartCase(
        "empty machine state with assignments",
        {},
        (),
        {"pod": {"container1": (_mem((0,), "memory", 512 * MB),)}},
        "[memorymanager] machine state can not be empty when it has memory assignments",
    ),
    StartCase("fills the default state", {}, machine((0, 3 * GB, 1))),
    StartCase(
        "machine state without every NUMA node",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), hp())},
        machine((0, 2 * GB, 1), (1, 2 * GB, 1)),
        error=DIFFERENT,
    ),
    StartCase(
        "machine state without the memory resource",
        {0: numa(None, hp())},
        machine((0, 2 * GB, 1)),
        error=DIFFERENT,
    ),
    StartCase(
        "wrong total memory",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 1536 * MB))},
        machine((0, 2 * GB, 1)),
        error=DIFFERENT,
    ),
    StartCase(
        "wrong system reserved memory",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 1024, 2 * GB))},
        machine((0, 2 * GB, 1)),
        error=DIFFERENT,
    ),
    StartCase(
        "reserved memory differs from the assignments",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), assignments=1)},
        machine((0, 2 * GB, 1)),
        {"pod": {"container1": (_mem((0,), "memory", 512 * MB),)}},
        DIFFERENT,
    ),
    StartCase(
        "wrong hugepages size (memory allocatable would go below zero)",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), hp())},
        machine((0, 2 * GB, 2)),
        error=DIFFERENT,
    ),
    StartCase(
        "wrong system reserved hugepages",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), table(GB, GB, 0, GB, 2 * GB))},
        machine((0, 2 * GB, 2)),
        error=DIFFERENT,
    ),
    StartCase(
        "hugepages reserved differ from the assignments",
        {
            0: numa(
                table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB),
                table(4 * GB, GB, 3 * GB, 0, 4 * GB),
                assignments=2,
            )
        },
        machine((0, 2 * GB, 4)),
        {
            "pod1": {"container1": (_mem((0,), HP1G, GB),)},
            "pod2": {"container2": (_mem((0,), HP1G, GB),)},
        },
        DIFFERENT,
    ),
    StartCase(
        "assignment on a NUMA node that does not exist",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), hp())},
        machine((0, 2 * GB, 1)),
        {"pod1": {"container1": (_mem((1,), "memory", GB),)}},
        "[memorymanager] (pod: pod1, container: container1) the memory assignment uses the NUMA "
        "that does not exist",
    ),
    StartCase(
        "assignment of a resource that does not exist",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), hp(), assignments=2)},
        machine((0, 2 * GB, 1)),
        {
            "pod1": {
                "container1": (
                    _mem((0,), "memory", GB),
                    _mem((0,), "hugepages-2Mi", GB),
                )
            }
        },
        "[memorymanager] (pod: pod1, container: container1) the memory assignment uses memory "
        "resource that does not exist",
    ),
    StartCase(
        "number of assignments differs",
        {0: numa(table(1536 * MB, 1536 * MB, 0, 512 * MB, 2 * GB), hp(), assignments=1)},
        machine((0, 2 * GB, 1)),
        {"pod1": {"container1": (_mem((0,), "memory", GB), _mem((0,), HP1G, GB))}},
        DIFFERENT,
    ),
    StartCase(
        "cross NUMA reserved memory matches the assignments",
        {
            0: numa(
                table(640 * MB, 0, 640 * MB, 512 * MB, 2176 * MB),
                hp(free=0, reserved=GB),
                (0, 1),
                4,
            ),
            1: numa(
                table(640 * MB, 256 * MB, 384 * MB, 512 * MB, 2176 * MB),
                hp(free=0, reserved=GB),
                (0, 1),
                4,
            ),
        },
        machine((0, 2176 * MB, 1), (1, 2176 * MB, 1)),
        {
            "pod1": {"container1": (_mem((0, 1), "memory", 768 * MB), _mem((0, 1), HP1G, GB))},
            "pod2": {"container2": (_mem((0, 1), "memory", 256 * MB), _mem((0, 1), HP1G, GB))},
        },
        system_reserved=reserved(0, 1),
    ),
]


@pytest.mark.parametrize("case", START_CASES, ids=[c.name for c in START_CASES])
def test_upstream_static_policy_start(case: StartCase) -> None:
    """``TestStaticPolicyStart``."""
    policy = StaticPolicy(case.machine_info, case.system_reserved)
    state = MemoryManagerState(
        {n: s.clone() for n, s in case.machine_state.items()},
        {pod: dict(cs) for pod, cs in case.assignments.items()},
    )
    before = {n: s.clone() for n, s in state.machine_state.items()}
    error = ""
    try:
        policy.start(state)
    except MemoryManagerError as exc:
        error = exc.message
    assert error == case.error
    if error:
        return
    if case.machine_state:
        assert state.machine_state == before
    else:
        assert state.machine_state == policy.get_default_machine_state()
        node0 = state.machine_state[0]
        assert node0.memory_map["memory"] == table(1536 * MB, 1536 * MB, 0, 512 * MB, 3 * GB)
        assert node0.memory_map[HP1G] == hp()
        assert node0.cells == [0] and node0.number_of_assignments == 0


# -- TestStaticPolicyAllocate ---------------------------------------------------------------


def guaranteed(name: str) -> Container:
    req = {"cpu": "1000Mi", "memory": "1Gi", HP1G: "1Gi"}
    return Container(name, ResourceRequirements(req, dict(req)))


def burstable(name: str) -> Container:
    req = {"cpu": "1000Mi", "memory": "1Gi", HP1G: "1Gi"}
    lim = {"cpu": "1000Mi", "memory": "2Gi", HP1G: "2Gi"}
    return Container(name, ResourceRequirements(req, lim))


def one_pod(uid: str, c: Container) -> Pod:
    return Pod(uid, uid, "default", (c,), (), None)


@dataclass
class AllocateCase:
    name: str
    machine_state: dict[int, NUMANodeState]
    pod: Pod
    hint: TopologyHint
    error: str = ""
    assignments: dict[str, dict[str, tuple[Block, ...]]] = field(default_factory=dict)
    expected_blocks: tuple[Block, ...] | None = None
    expected_state: dict[int, NUMANodeState] | None = None
    system_reserved: dict[int, dict[str, int]] = field(default_factory=lambda: reserved(0))


def _single_node(free: int, reserved_: int, hp_free: int = GB, count: int = 0) -> NUMANodeState:
    return numa(
        table(1536 * MB, free, reserved_, 512 * MB, 2 * GB),
        hp(free=hp_free, reserved=GB - hp_free),
        (0,),
        count,
    )


def _three_nodes() -> dict[int, NUMANodeState]:
    return {
        0: numa(table(GB, 512 * MB, 512 * MB, 512 * MB, 1536 * MB), hp(), (0,), 1),
        1: numa(table(512 * MB, 512 * MB, 0, 512 * MB, 1536 * MB), hp(), (1,), 0),
        2: numa(table(512 * MB, 512 * MB, 0, 512 * MB, 1536 * MB), hp(), (2,), 0),
    }


ALLOCATE_CASES = [
    AllocateCase(
        "nothing for a non-guaranteed pod",
        {0: _single_node(1536 * MB, 0)},
        one_pod("pod1", burstable("container1")),
        TopologyHint(None, False),
        expected_state={0: _single_node(1536 * MB, 0)},
    ),
    AllocateCase(
        "nothing once the container is in the state",
        {0: _single_node(512 * MB, 1024 * MB)},
        one_pod("pod1", guaranteed("container1")),
        TopologyHint(None, False),
        assignments={"pod1": {"container1": (Block((0,), "memory", GB),)}},
        expected_blocks=(Block((0,), "memory", GB),),
        expected_state={0: _single_node(512 * MB, 1024 * MB)},
    ),
    AllocateCase(
        "default hint when the topology manager gave none",
        {0: _single_node(1536 * MB, 0)},
        one_pod("pod1", guaranteed("container1")),
        TopologyHint(None, False),
        expected_blocks=(Block((0,), HP1G, GB), Block((0,), "memory", GB)),
        expected_state={0: _single_node(512 * MB, 1024 * MB, hp_free=0, count=2)},
    ),
    AllocateCase(
        "default hint calculation fails",
        {0: _single_node(512 * MB, 1024 * MB, hp_free=0, count=2)},
        one_pod("pod2", guaranteed("container2")),
        TopologyHint(None, False),
        "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough "
        "memory is available",
        assignments={"pod1": {"container1": (Block((0,), "memory", GB), Block((0,), HP1G, GB))}},
    ),
    AllocateCase(
        "preferred empty hint but the default hint is not preferred",
        _three_nodes(),
        one_pod("pod2", guaranteed("container2")),
        TopologyHint(None, True),
        "[memorymanager] failed to find the default preferred hint",
        assignments={"pod1": {"container1": (Block((0,), "memory", 512 * MB),)}},
        system_reserved=reserved(0, 1, 2),
    ),
    AllocateCase(
        "hint too small and no extension possible",
        {
            0: numa(table(512 * MB, 512 * MB, 0, 512 * MB, GB), hp(), (0,), 0),
            1: numa(table(1536 * MB, 512 * MB, GB, 512 * MB, 2 * GB), hp(), (1, 2), 1),
            2: numa(table(1536 * MB, 512 * MB, GB, 512 * MB, 2 * GB), hp(), (1, 2), 1),
        },
        one_pod("pod1", guaranteed("container1")),
        TopologyHint(mask_of([0]), False),
        "[memorymanager] failed to find NUMA nodes to extend the current topology hint",
        system_reserved=reserved(0, 1, 2),
    ),
    AllocateCase(
        "preferred hint extended to a non-preferred one",
        _three_nodes(),
        one_pod("pod2", guaranteed("container2")),
        TopologyHint(mask_of([1]), True),
        "[memorymanager] failed to find the extended preferred hint",
        assignments={"pod1": {"container1": (Block((0,), "memory", 512 * MB),)}},
        system_reserved=reserved(0, 1, 2),
    ),
    AllocateCase(
        "memory from several NUMA nodes",
        {n: numa(table(512 * MB, 512 * MB, 0, 512 * MB, GB), hp(), (n,), 0) for n in range(4)},
        one_pod("pod1", guaranteed("container1")),
        TopologyHint(None, True),
        expected_blocks=(Block((0, 1), HP1G, GB), Block((0, 1), "memory", GB)),
        expected_state={
            0: numa(table(512 * MB, 0, 512 * MB, 512 * MB, GB), hp(free=0, reserved=GB), (0, 1), 2),
            1: numa(table(512 * MB, 0, 512 * MB, 512 * MB, GB), hp(), (0, 1), 2),
            2: numa(table(512 * MB, 512 * MB, 0, 512 * MB, GB), hp(), (2,), 0),
            3: numa(table(512 * MB, 512 * MB, 0, 512 * MB, GB), hp(), (3,), 0),
        },
        system_reserved=reserved(0, 1, 2, 3),
    ),
]


@pytest.mark.parametrize("case", ALLOCATE_CASES, ids=[c.name for c in ALLOCATE_CASES])
def test_upstream_static_policy_allocate(case: AllocateCase) -> None:
    """``TestStaticPolicyAllocate`` (the first container of the pod, a fresh policy)."""
    policy = StaticPolicy((), case.system_reserved)
    state = MemoryManagerState(
        {n: s.clone() for n, s in case.machine_state.items()},
        {pod: dict(cs) for pod, cs in case.assignments.items()},
    )
    before = {n: s.clone() for n, s in state.machine_state.items()}
    error = ""
    try:
        policy.allocate(state, case.pod, case.pod.containers[0], case.hint)
    except MemoryManagerError as exc:
        error = exc.message
    assert error == case.error
    if error:
        assert state.machine_state == before
        return
    blocks = state.get_memory_blocks(case.pod.uid, case.pod.containers[0].name)
    if case.expected_blocks is None:
        assert blocks is None
    else:
        assert blocks is not None
        assert sorted(blocks, key=lambda b: b.type) == sorted(
            case.expected_blocks, key=lambda b: b.type
        )
    assert case.expected_state is not None
    assert state.machine_state == case.expected_state


# -- bitmask errors ---------------------------------------------------------------------------


def test_regenerate_hints_with_an_out_of_range_numa_id_gives_no_hints() -> None:
    """``regenerateHints``: ``bitmask.NewBitMask`` fails for id 64 -> nil hints (no panic)."""
    policy = StaticPolicy((), reserved(0))
    c = guaranteed("c")
    state = MemoryManagerState(
        {0: _single_node(1536 * MB, 0)},
        {"p": {"c": (Block((64,), "memory", GB), Block((0,), HP1G, GB))}},
    )
    assert policy.get_topology_hints(state, one_pod("p", c), c) is None


def test_init_blocks_with_an_out_of_range_numa_id_are_not_shrunk() -> None:
    """``isNUMAAffinitiesEqual`` is false when a bitmask cannot be built: the init
    container's block keeps its size and the app container is still allocated."""
    policy = StaticPolicy((), reserved(0))
    init = Container("init", guaranteed("init").resources)
    app = guaranteed("app")
    pod = Pod("p", "p", "default", (app,), (init,), None)
    state = MemoryManagerState(
        {0: _single_node(1536 * MB, 0)},
        {"p": {"init": (Block((0, 64), "memory", GB),)}},
    )
    policy.allocate(state, pod, app, TopologyHint(mask_of([0]), True))
    assert state.get_memory_blocks("p", "init") == (Block((0, 64), "memory", GB),)
    assert state.get_memory_blocks("p", "app") is not None

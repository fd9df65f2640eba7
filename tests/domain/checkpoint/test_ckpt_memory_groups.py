"""Memory assignments summed per NUMA group in one pass equal the plain reading: for every
group and resource, the blocks whose NUMA nodes all lie in the group."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint import check_consistency
from app.domain.checkpoint.consistency_memory import _assignment_blocks, _groups
from app.domain.checkpoint.memory_state import (
    Block,
    MemoryCheckpointState,
    MemoryTable,
    NUMANodeState,
)

RESOURCES = ("memory", "hugepages-2Mi", "hugepages-1Gi")

blocks = st.builds(
    Block,
    st.lists(st.integers(0, 6), max_size=3, unique=True).map(lambda x: tuple(sorted(x))),
    st.sampled_from((*RESOURCES, "unknown")),
    st.sampled_from((1, 2, 4)),
)
tables = st.builds(MemoryTable, *(st.sampled_from((0, 1, 2, 4, 8)) for _ in range(5)))
node_states = st.builds(
    NUMANodeState,
    st.integers(0, 4),
    st.dictionaries(st.sampled_from(RESOURCES), tables, max_size=3),
    st.lists(st.integers(0, 5), max_size=3, unique=True).map(tuple),
)
pod_names = st.sampled_from(("a", "b", "c", "d"))
states = st.builds(
    MemoryCheckpointState,
    st.just("Static"),
    st.dictionaries(st.integers(0, 4), node_states, max_size=5),
    st.dictionaries(
        pod_names,
        st.dictionaries(st.sampled_from(("x", "y")), st.tuples(blocks, blocks), max_size=2),
    ),
    st.none() | st.dictionaries(pod_names, st.lists(blocks, max_size=2).map(tuple), max_size=3),
)


def _plain(state: MemoryCheckpointState) -> list[str]:
    """The reading before the one-pass sums: a pass over every block per group and resource."""
    ms = state.machine_state
    blocks = _assignment_blocks(state)
    out = []
    for group in _groups((b for _, b in blocks), ms):
        inside = [b for _, b in blocks if b.numa_affinity and set(b.numa_affinity) <= group]
        resources = sorted(
            {r for n in group if n in ms for r in ms[n].memory_map} | {b.type for b in inside}
        )
        for res in resources:
            reserved = sum(
                ms[n].memory_map[res].reserved for n in group if n in ms and res in ms[n].memory_map
            )
            assigned = sum(b.size for b in inside if b.type == res)
            if reserved != assigned:
                nodes = ",".join(map(str, sorted(group)))
                out.append(
                    f"NUMA {nodes} {res}: reserved {reserved} bytes, assignments {assigned} bytes"
                )
    return out


@settings(max_examples=300, deadline=None)
@given(states)
def test_group_sums_equal_the_plain_reading(state: MemoryCheckpointState) -> None:
    found = [
        i.message for i in check_consistency(memory=state) if i.code == "assignments-vs-reserved"
    ]
    assert found == _plain(state)

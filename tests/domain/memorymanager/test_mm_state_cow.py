"""Copy-on-write of the memory manager's machine state: the policy never changes a node state
it holds in place, so a ``snapshot`` taken before an operation still shows the state before it
(what ``Node`` relies on to roll back a rejected admission)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.state import MemoryManagerState, clone_machine_state
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint
from tests.domain.memorymanager.test_mm_helpers import container, pod, policy, started


def test_machine_state_for_update_clones_only_the_named_nodes() -> None:
    state = started(policy(3))
    updated = state.machine_state_for_update([1, 1, 7])  # 7 is not a node: skipped
    assert updated == state.machine_state
    assert updated is not state.machine_state
    assert updated[0] is state.machine_state[0]
    assert updated[2] is state.machine_state[2]
    assert updated[1] is not state.machine_state[1]
    updated[1].memory_map["memory"].free -= 1
    assert (
        state.machine_state[1].memory_map["memory"].free == updated[1].memory_map["memory"].free + 1
    )


def test_replace_machine_state_takes_the_map_as_is() -> None:
    state = started(policy(2))
    updated = state.machine_state_for_update([0])
    state.replace_machine_state(updated)
    assert state.machine_state is updated


def test_snapshot_shares_nodes_and_container_maps() -> None:
    p = policy(2)
    state = started(p)
    c, d = container("c", "1Gi"), container("d", "1Gi")
    p.allocate(state, pod("a", c, d), c, TopologyHint(0b01, True))
    p.allocate(state, pod("a", c, d), d, TopologyHint(0b01, True))
    snap = state.snapshot()
    assert snap == state
    assert snap.machine_state is state.machine_state
    assert snap.assignments is not state.assignments
    assert snap.assignments["a"] is state.assignments["a"]
    state.delete("a", "c")
    state.set_memory_blocks("a", "e", ())
    assert set(snap.assignments["a"]) == {"c", "d"}
    assert set(state.assignments["a"]) == {"d", "e"}
    state.delete("a", "d")
    state.delete("a", "e")
    assert "a" not in state.assignments and set(snap.assignments["a"]) == {"c", "d"}


_step = st.one_of(
    st.tuples(
        st.just("add"),
        st.sampled_from(["512Mi", "1Gi", "3Gi", "7Gi"]),
        st.one_of(st.none(), st.sets(st.integers(0, 2), min_size=1).map(mask_of)),
    ),
    st.tuples(st.just("remove"), st.integers(0, 20), st.none()),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_step, max_size=20))
def test_operations_never_change_a_snapshot(steps: list[tuple[str, Any, Any]]) -> None:
    p = policy(3, memory_gi=8)
    state = MemoryManagerState()
    p.start(state)
    live: list[str] = []
    for i, (op, arg, mask) in enumerate(steps):
        snap = state.snapshot()
        before = clone_machine_state(state.machine_state)
        if op == "add":
            c = container("c", arg)
            uid = f"pod-{i}"
            hint = None if mask is None else TopologyHint(mask, True)
            try:
                p.allocate(state, pod(uid, c), c, hint)
                live.append(uid)
            except MemoryManagerError:
                pass
        elif live:
            p.remove_container(state, live.pop(arg % len(live)), "c")
        assert snap.machine_state == before

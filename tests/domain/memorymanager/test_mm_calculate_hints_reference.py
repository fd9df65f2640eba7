"""``calculate_hints`` (subset sums, comprehensions, fast paths) against a plain per-mask loop
that follows upstream ``calculateHints`` literally: random NUMA ids, tables (possibly missing
or negative), groups, assignments, several resources and init-container reusable memory."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.memorymanager.state import MemoryTable, NUMANodeState
from app.domain.topologymanager.bitmask import bits, iterate_bitmasks
from app.domain.topologymanager.hint import TopologyHint
from tests.domain.memorymanager.test_mm_helpers import GI, container, pod, policy

RESOURCES = ("memory", "hugepages-1Gi")


def reference(
    machine_state: dict[int, NUMANodeState],
    requested: dict[str, int],
    reusable: dict[int, dict[str, int]] | None,
) -> dict[str, list[TopologyHint]]:
    nodes = sorted(machine_state)
    min_size = len(nodes)
    found: list[int] = []

    def total(mask_nodes: list[int], resource: str, attr: str) -> int:
        out = 0
        for n in mask_nodes:
            table = machine_state[n].memory_map.get(resource)
            out += 0 if table is None else getattr(table, attr)
        return out

    for mask in iterate_bitmasks(nodes):
        mask_nodes = bits(mask)
        if any(total(mask_nodes, r, "allocatable") < size for r, size in requested.items()):
            continue
        min_size = min(min_size, len(mask_nodes))
        if len(mask_nodes) == 1:
            if len(machine_state[mask_nodes[0]].cells) > 1:
                continue
        elif any(
            machine_state[n].number_of_assignments > 0
            and (
                len(set(machine_state[n].cells)) != len(machine_state[n].cells)
                or sorted(machine_state[n].cells) != mask_nodes
            )
            for n in mask_nodes
        ):
            continue
        reuse = (reusable or {}).get(mask, {})
        if any(
            total(mask_nodes, r, "free") + reuse.get(r, 0) < size for r, size in requested.items()
        ):
            continue
        found.append(mask)
    if not found:
        return {}
    return {r: [TopologyHint(m, m.bit_count() == min_size) for m in found] for r in requested}


@st.composite
def scenarios(draw: Any) -> tuple[dict[int, NUMANodeState], dict[str, int], Any]:
    ids = sorted(draw(st.sets(st.integers(0, 9), min_size=1, max_size=5)))
    sizes = st.integers(-2, 8).map(lambda g: g * GI)
    machine: dict[int, NUMANodeState] = {}
    for n in ids:
        memory_map = {}
        for r in RESOURCES:
            if draw(st.booleans()) or r == "memory":
                alloc = draw(sizes)
                free = draw(sizes)
                memory_map[r] = MemoryTable(alloc, 0, alloc, alloc - free, free)
        grouped = draw(st.booleans())
        cells = sorted(draw(st.sets(st.sampled_from(ids), min_size=1))) if grouped else [n]
        if draw(st.booleans()):
            cells = cells + cells[:1]  # a duplicate never matches a mask
        machine[n] = NUMANodeState(draw(st.integers(0, 2)), memory_map, cells)
    requested = {
        r: draw(st.integers(0, 12).map(lambda g: g * GI // 2))
        for r in draw(st.sets(st.sampled_from(RESOURCES), min_size=1))
    }
    reusable = None
    if draw(st.booleans()):
        masks = st.sets(st.sampled_from(ids), min_size=1).map(lambda s: sum(1 << n for n in s))
        reusable = draw(
            st.dictionaries(
                masks,
                st.dictionaries(
                    st.sampled_from(RESOURCES), st.integers(0, 4).map(lambda g: g * GI)
                ),
                max_size=3,
            )
        )
    return machine, requested, reusable


def _policy_with_reuse(uid: str, reusable: Any) -> StaticPolicy:
    p = policy(2)
    if reusable is not None:
        p.init_containers_reusable_memory[uid] = reusable
    return p


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_calculate_hints_matches_the_plain_loop(
    scenario: tuple[dict[int, NUMANodeState], dict[str, int], Any],
) -> None:
    machine, requested, reusable = scenario
    p = _policy_with_reuse("p", reusable)
    got = p.calculate_hints(machine, pod("p", container("c")), requested)
    assert got == reference(machine, requested, reusable)


@pytest.mark.parametrize(
    ("free_gi", "want"),
    [
        pytest.param((8, 8), [(0b01, True), (0b10, True), (0b11, False)], id="both-fit"),
        pytest.param((1, 8), [(0b10, True), (0b11, False)], id="one-fits"),
        pytest.param((1, 1), [(0b11, False)], id="only-both"),
        pytest.param((0, 0), [], id="none"),
    ],
)
def test_calculate_hints_table(free_gi: tuple[int, int], want: list[tuple[int, bool]]) -> None:
    machine = {
        n: NUMANodeState(0, {"memory": MemoryTable(8 * GI, 0, 8 * GI, 0, f * GI)}, [n])
        for n, f in enumerate(free_gi)
    }
    got = policy(2).calculate_hints(machine, pod("p", container("c")), {"memory": 2 * GI})
    expected = {"memory": [TopologyHint(m, pref) for m, pref in want]} if want else {}
    assert got == expected

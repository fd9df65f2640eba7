"""Conformance kinds ``mm_allocate`` and ``mm_start`` (README §3.5), and the project's own
``mm_pod_topology_hints``; ``inputs.release`` picks the release the static memory policy runs
as (README §2.6, ``app.domain.releases``).

``mm_pod_topology_hints`` (used by ``tests/conformance/releases.json``): inputs
``machine_state``, ``system_reserved``, ``assignments``, optional ``pod_entries`` (pod uid ->
blocks), ``pod`` and ``feature_gates``; one ``GetPodTopologyHints`` call (the state as given,
Start not run). Expected ``hints``: ``null`` (no preference) or resource -> list of
``{numa, preferred}`` in the order the policy returns them. It is how upstream's
``TestMemoryManagerRestoreState`` (kubernetes#141070) reads the restored hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.conformance_kinds.common import (
    POD_LEVEL_GATES,
    Case,
    ConformanceInputError,
    expect_equal,
    feature_gates,
    release_of,
    topology_hint,
)
from app.domain.memorymanager.errors import MemoryManagerError
from app.domain.memorymanager.machine import NUMANodeInfo
from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.memorymanager.state import (
    Block,
    MemoryManagerState,
    NUMANodeMap,
    assignments_from_dict,
    block_from_dict,
    machine_state_from_dict,
)
from app.domain.pod.manifest import pod_from_conformance
from app.domain.topologymanager.hint import TopologyHint


def _system_reserved(raw: Mapping[str, Any] | None) -> dict[int, dict[str, int]]:
    return {int(n): {r: int(v) for r, v in res.items()} for n, res in (raw or {}).items()}


def _policy(case: Case, nodes: tuple[NUMANodeInfo, ...] = ()) -> StaticPolicy:
    inputs = case.inputs
    gates = feature_gates(inputs, POD_LEVEL_GATES, release_of(case))
    return StaticPolicy(
        nodes,
        _system_reserved(inputs.get("system_reserved")),
        None,
        pod_level_resources=bool(gates["PodLevelResources"]),
        pod_level_resource_managers=bool(gates["PodLevelResourceManagers"]),
        release=release_of(case).name,
    )


def machine_state_out(ms: NUMANodeMap) -> dict[str, Any]:
    """The README §3.5 machine-state form."""
    return {
        str(n): {
            "memory_map": {
                r: {
                    "allocatable": t.allocatable,
                    "free": t.free,
                    "reserved": t.reserved,
                    "system_reserved": t.system_reserved,
                    "total": t.total_mem_size,
                }
                for r, t in s.memory_map.items()
            },
            "cells": list(s.cells),
            "number_of_assignments": s.number_of_assignments,
        }
        for n, s in sorted(ms.items())
    }


def _block_key(b: Block) -> tuple[str, tuple[int, ...], int]:
    return (b.type, tuple(b.numa_affinity), b.size)


def _assignments_out(state: MemoryManagerState) -> dict[str, dict[str, list[Any]]]:
    return {
        pod: {c: sorted(_block_key(b) for b in blocks) for c, blocks in cs.items()}
        for pod, cs in state.assignments.items()
    }


def _expected_assignments(raw: Mapping[str, Any]) -> dict[str, dict[str, list[Any]]]:
    return {
        pod: {c: sorted(_block_key(b) for b in blocks) for c, blocks in cs.items()}
        for pod, cs in assignments_from_dict(raw).items()
    }


def _hint(raw: Any) -> TopologyHint:
    return TopologyHint(None, False) if raw is None else topology_hint(raw)


def _normalise_machine_state(raw: Mapping[str, Any]) -> dict[str, Any]:
    return machine_state_out(machine_state_from_dict(raw))


def mm_allocate(case: Case) -> list[str]:
    inputs = case.inputs
    state = MemoryManagerState(
        machine_state_from_dict(inputs.get("machine_state") or {}),
        dict(assignments_from_dict(inputs.get("assignments") or {})),
    )
    before = machine_state_out(state.machine_state)
    pod = pod_from_conformance(inputs["pod"])
    container = pod.find_container(inputs["container"])
    if container is None:
        raise ConformanceInputError(f"pod has no container {inputs['container']!r}")
    error = ""
    try:
        policy = _policy(case)
        policy.allocate(state, pod, container, _hint(inputs.get("topology_hint")))
    except MemoryManagerError as exc:
        error = exc.message
    problems: list[str] = []
    expected = case.expected
    expect_equal(problems, "error", expected.get("error", ""), error)
    if "assignments" in expected:
        expect_equal(
            problems,
            "assignments",
            _expected_assignments(expected["assignments"]),
            _assignments_out(state),
        )
    if "machine_state" in expected:
        expect_equal(
            problems,
            "machine_state",
            _normalise_machine_state(expected["machine_state"]),
            machine_state_out(state.machine_state),
        )
    if expected.get("machine_state_unchanged"):
        expect_equal(
            problems, "machine_state (unchanged)", before, machine_state_out(state.machine_state)
        )
    return problems


def _machine_nodes(raw: Mapping[str, Any]) -> tuple[NUMANodeInfo, ...]:
    nodes = []
    for node in raw.get("nodes") or ():
        pages = tuple(
            (int(h["page_size_kb"]) * 1024, int(h["num_pages"]))
            for h in node.get("hugepages") or ()
        )
        nodes.append(NUMANodeInfo(int(node["id"]), int(node["memory"]), pages))
    return tuple(nodes)


def _state_with_pod_entries(inputs: Mapping[str, Any]) -> MemoryManagerState:
    """The memory manager state a case starts from, pod-level entries included."""
    return MemoryManagerState(
        machine_state_from_dict(inputs.get("machine_state") or {}),
        dict(assignments_from_dict(inputs.get("assignments") or {})),
        {
            pod: tuple(block_from_dict(b) for b in blocks)
            for pod, blocks in (inputs.get("pod_entries") or {}).items()
        },
    )


def mm_start(case: Case) -> list[str]:
    inputs = case.inputs
    state = _state_with_pod_entries(inputs)
    error = ""
    try:
        policy = _policy(case, _machine_nodes(inputs.get("machine_info") or {}))
        policy.start(state)
    except MemoryManagerError as exc:
        error = exc.message
    problems: list[str] = []
    expected = case.expected
    expect_equal(problems, "error", expected.get("error", ""), error)
    if "machine_state" in expected and not error:
        expect_equal(
            problems,
            "machine_state",
            _normalise_machine_state(expected["machine_state"]),
            machine_state_out(state.machine_state),
        )
    return problems


def mm_pod_topology_hints(case: Case) -> list[str]:
    inputs = case.inputs
    state = _state_with_pod_entries(inputs)
    pod = pod_from_conformance(inputs["pod"])
    hints = _policy(case).get_pod_topology_hints(state, pod)
    actual = (
        None
        if hints is None
        else {r: [h.to_dict() for h in lst] for r, lst in sorted(hints.items())}
    )
    problems: list[str] = []
    expect_equal(problems, "hints", case.expected["hints"], actual)
    return problems


HANDLERS = {
    "mm_allocate": mm_allocate,
    "mm_start": mm_start,
    "mm_pod_topology_hints": mm_pod_topology_hints,
}

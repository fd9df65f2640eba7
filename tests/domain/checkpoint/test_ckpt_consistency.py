"""Consistency checks of a pair of state files against each other and a topology."""

from __future__ import annotations

import pytest

from app.domain.checkpoint import (
    CPUCheckpointState,
    MemoryCheckpointState,
    check_consistency,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUInfo, CPUTopology

# 2 NUMA nodes x 4 CPUs: NUMA 0 = 0-3, NUMA 1 = 4-7.
TOPOLOGY = CPUTopology([CPUInfo(c, c, c // 4, c // 4, c // 4) for c in range(8)])


def cpu(entries: dict, default: str = "0-1", pods: dict | None = None) -> CPUCheckpointState:
    d: dict = {"policyName": "static", "defaultCpuSet": default, "entries": entries}
    if pods is not None:
        d["podEntries"] = pods
    return CPUCheckpointState.from_dict(d)


def codes(issues: list) -> list[str]:
    return sorted(i.code for i in issues)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (cpu({"a": {"c": "2-3"}, "b": {"c": "4-7"}}), []),
        (cpu({"a": {"c": "2-4"}, "b": {"c": "4-7"}}), ["overlapping-exclusive"]),
        (cpu({"a": {"init": "2-3", "app": "2-3"}, "b": {"c": "4-7"}}), []),
        (
            cpu({"a": {"c": "1-3"}, "b": {"c": "4-7"}}),
            ["container-overlaps-default", "default-set-mismatch"],
        ),
        (
            cpu({"a": {"c": "2-3"}, "b": {"c": "4-9"}}),
            ["cpu-outside-topology", "cpus-mismatch"],
        ),
        (cpu({"a": {"c": "2-3"}}), ["cpus-mismatch", "default-set-mismatch"]),
        (cpu({"a": {"c": "2-3"}}, default=""), ["empty-default-set"]),
        (cpu({"a": {"gu": "2"}, "b": {"c": "4-7"}}, pods={"a": "2-3"}), []),
        (
            cpu({"a": {"gu": "2"}, "b": {"c": "4-7"}}, pods={"a": "2-3", "z": ""}),
            ["pod-entry-without-containers"],
        ),
        (
            cpu({"a": {"gu": "2", "x": "4"}, "b": {"c": "5-7"}}, pods={"a": "2-3"}),
            ["container-outside-pod-entry"],
        ),
    ],
    ids=[
        "clean",
        "overlap",
        "init-reuse",
        "overlaps-default",
        "outside-topology",
        "missing-cpus",
        "empty-default",
        "pod-bubble",
        "pod-entry-without-containers",
        "outside-bubble",
    ],
)
def test_cpu_checks(state: CPUCheckpointState, expected: list[str]) -> None:
    assert codes(check_consistency(cpu=state, topology=TOPOLOGY)) == expected


def test_reserved_cpus_non_strict_and_strict() -> None:
    state = cpu({"a": {"c": "2-7"}})
    assert codes(check_consistency(state, topology=TOPOLOGY, reserved_cpus=CPUSet([0]))) == []
    assert codes(check_consistency(state, topology=TOPOLOGY, reserved_cpus=CPUSet([2]))) == [
        "reserved-not-in-default"
    ]
    strict = check_consistency(
        cpu({"a": {"c": "2-7"}}, default="1"),
        topology=TOPOLOGY,
        reserved_cpus=CPUSet([0]),
        strict_reservation=True,
    )
    assert codes(strict) == []
    strict_bad = check_consistency(
        state, topology=TOPOLOGY, reserved_cpus=CPUSet([0]), strict_reservation=True
    )
    assert "reserved-in-default" in codes(strict_bad)


def _table(total: int, reserved: int, free: int | None = None) -> dict:
    alloc = total
    return {
        "total": total,
        "systemReserved": 0,
        "allocatable": alloc,
        "reserved": reserved,
        "free": alloc - reserved if free is None else free,
    }


def mem(nodes: dict, entries: dict, pods: dict | None = None) -> MemoryCheckpointState:
    d: dict = {"policyName": "Static", "machineState": nodes, "entries": entries}
    if pods is not None:
        d["podEntries"] = pods
    return MemoryCheckpointState.from_dict(d)


def block(size: int, *numa: int, kind: str = "memory") -> dict:
    return {"numaAffinity": list(numa), "type": kind, "size": size}


def node(count: int, reserved: int, cells: list[int], free: int | None = None) -> dict:
    return {
        "numberOfAssignments": count,
        "memoryMap": {"memory": _table(1000, reserved, free)},
        "cells": cells,
    }


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (mem({"0": node(1, 100, [0]), "1": node(0, 0, [1])}, {"p": {"c": [block(100, 0)]}}), []),
        (
            mem({"0": node(1, 100, [0], free=800)}, {"p": {"c": [block(100, 0)]}}),
            ["machine-state-free-reserved"],
        ),
        (mem({"0": node(2, 100, [0])}, {"p": {"c": [block(100, 0)]}}), ["number-of-assignments"]),
        (mem({"0": node(1, 150, [0])}, {"p": {"c": [block(100, 0)]}}), ["assignments-vs-reserved"]),
        (
            mem(
                {"0": node(1, 100, [0])},
                {"p": {"c": [block(100, 0), block(1, 0, kind="hugepages-1Gi")]}},
            ),
            ["assignments-vs-reserved", "number-of-assignments", "unknown-resource"],
        ),
        (
            mem({"0": node(1, 100, [0])}, {"p": {"c": [block(100, 3)]}}),
            ["assignments-vs-reserved", "number-of-assignments", "unknown-numa-node"],
        ),
        (
            mem(
                {"0": node(1, 600, [0, 1]), "1": node(1, 400, [0, 1])},
                {"p": {"c": [block(1000, 0, 1)]}},
            ),
            [],
        ),
        (
            mem(
                {"0": node(1, 600, [0]), "1": node(1, 400, [1])},
                {"p": {"c": [block(1000, 0, 1)]}},
            ),
            ["cells-mismatch", "cells-mismatch"],
        ),
        (
            mem(
                {"0": node(1, 300, [0])},
                {"p": {"init": [block(300, 0)], "app": [block(200, 0)]}},
                pods={"p": [block(300, 0)]},
            ),
            [],
        ),
        (
            mem({"0": node(1, 300, [0])}, {}, pods={"p": [block(300, 0)]}),
            ["pod-entry-without-containers"],
        ),
    ],
    ids=[
        "clean",
        "free-reserved",
        "count",
        "reserved",
        "unknown-resource",
        "unknown-numa",
        "group",
        "cells",
        "pod-blocks-counted-once",
        "pod-entry-without-containers",
    ],
)
def test_memory_checks(state: MemoryCheckpointState, expected: list[str]) -> None:
    assert codes(check_consistency(memory=state)) == expected


def test_pair_checks_with_topology() -> None:
    cpu_state = cpu({"p": {"c": "2-3"}, "q": {"c": "4-7"}}, pods={"p": "2-3"})
    mem_state = mem({"0": node(0, 0, [0]), "1": node(1, 100, [1])}, {"p": {"c": [block(100, 1)]}})
    issues = check_consistency(cpu_state, mem_state, TOPOLOGY)
    assert codes(issues) == ["numa-misaligned", "pod-entry-in-one-file"]


def test_files_are_read_and_checked_and_stale_pods_flagged() -> None:
    text = write_cpu_checkpoint(cpu({"a": {"c": "2-7"}}), "V4")
    assert check_consistency(text, topology=TOPOLOGY, live_pod_uids={"a"}) == []
    stale = check_consistency(text, live_pod_uids=set())
    assert codes(stale) == ["stale-entry"]
    broken = check_consistency(
        "{", write_memory_checkpoint(mem({}, {}), "V2").replace('"checksum":', '"checksum":1')
    )
    assert codes(broken) == ["checksum-invalid", "unreadable-file"]

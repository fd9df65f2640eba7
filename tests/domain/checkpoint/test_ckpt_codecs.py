"""Writers (byte-exact) and write-then-read round trips for every format version."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint import (
    Block,
    CheckpointInputError,
    CheckpointStateError,
    CPUCheckpointState,
    MemoryCheckpointState,
    MemoryTable,
    NUMANodeState,
    Reader,
    compute_checksum,
    load_cpu_checkpoint,
    load_memory_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint.checksum import string_checksum
from app.domain.cpuset import CPUSet

EXAMPLE_CPU = CPUCheckpointState.from_dict(
    {
        "policyName": "static",
        "defaultCpuSet": "0-1,6-7",
        "entries": {"pod-a": {"c1": "2-3"}},
        "podEntries": {"pod-a": "2-5"},
    }
)

EXAMPLE_MEM = MemoryCheckpointState.from_dict(
    {
        "policyName": "Static",
        "machineState": {
            "0": {
                "numberOfAssignments": 2,
                "memoryMap": {
                    "hugepages-2Mi": {
                        "total": 0,
                        "systemReserved": 0,
                        "allocatable": 0,
                        "reserved": 0,
                        "free": 0,
                    },
                    "memory": {
                        "total": 8589934592,
                        "systemReserved": 1073741824,
                        "allocatable": 7516192768,
                        "reserved": 1073741824,
                        "free": 6442450944,
                    },
                },
                "cells": [0],
            }
        },
        "entries": {"pod-a": {"c1": [{"numaAffinity": [0], "type": "memory", "size": 1073741824}]}},
        "podEntries": {"pod-a": [{"numaAffinity": [0], "type": "memory", "size": 1073741824}]},
    }
)


def test_cpu_v4_worked_example_is_byte_exact() -> None:
    assert write_cpu_checkpoint(EXAMPLE_CPU, "V4") == (
        '{"policyName":"static","defaultCpuSet":"0-1,6-7","entries":{"pod-a":{"c1":"2-3"}},'
        '"checksum":549890001,"data":"{\\"policyName\\":\\"static\\",\\"defaultCpuSet\\":'
        '\\"0-1,6-7\\",\\"entries\\":{\\"pod-a\\":{\\"c1\\":\\"2-3\\"}},\\"podEntries\\":'
        '{\\"pod-a\\":{\\"cpuSet\\":\\"2-5\\"}}}","dataChecksum":2714227012}'
    )


@pytest.mark.parametrize(
    ("version", "checksum"),
    [("V2", 941340455), ("V3", 3279530564)],
)
def test_cpu_worked_examples(version: str, checksum: int) -> None:
    state = EXAMPLE_CPU
    if version == "V2":
        state = CPUCheckpointState.from_dict(
            {
                "policyName": "static",
                "defaultCpuSet": "0-1,4-7",
                "entries": {"pod-a": {"c1": "2-3"}},
            }
        )
    assert json.loads(write_cpu_checkpoint(state, version))["checksum"] == checksum


def test_memory_worked_examples() -> None:
    v1 = json.loads(write_memory_checkpoint(EXAMPLE_MEM, "V1"))
    v2 = json.loads(write_memory_checkpoint(EXAMPLE_MEM, "V2"))
    v3 = json.loads(write_memory_checkpoint(EXAMPLE_MEM, "V3"))
    assert v1["checksum"] == 963151520 and "podEntries" not in v1
    assert v2["checksum"] == 3650101396
    assert v3["checksum"] == 963151520 and v3["dataChecksum"] == 383846345
    assert list(v3) == ["policyName", "machineState", "entries", "checksum", "data", "dataChecksum"]
    assert v3["dataChecksum"] == string_checksum(v3["data"])


def test_versions_are_normalised_and_unknown_ones_refused() -> None:
    assert write_cpu_checkpoint(EXAMPLE_CPU, 4) == write_cpu_checkpoint(EXAMPLE_CPU, "v4")
    with pytest.raises(CheckpointInputError, match="unknown version"):
        write_cpu_checkpoint(EXAMPLE_CPU, "V5")
    with pytest.raises(CheckpointInputError, match="unknown version"):
        write_memory_checkpoint(EXAMPLE_MEM, "V4")


def test_v1_needs_container_id_entries() -> None:
    with pytest.raises(CheckpointStateError, match="container ID"):
        write_cpu_checkpoint(EXAMPLE_CPU, "V1")
    v1 = CPUCheckpointState.from_dict(
        {"policyName": "none", "defaultCpuSet": "1-3", "entries": {"cid1": "4-6"}}
    )
    assert write_cpu_checkpoint(v1, "V1") == (
        '{"policyName":"none","defaultCpuSet":"1-3","entries":{"cid1":"4-6"},"checksum":'
        f"{compute_checksum(write_cpu_checkpoint(v1, 'V1'), 'cpu_v1')}}}"
    )
    with pytest.raises(CheckpointStateError, match="container-ID"):
        write_cpu_checkpoint(v1, "V2")


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"policyName": 3}, "policyName must be a string"),
        ({"policyName": "x", "defaultCpuSet": "1-x"}, "defaultCpuSet: invalid cpuset"),
        ({"policyName": "x", "entries": {"p": 3}}, r"entries\['p'\] must be"),
        ({"policyName": "x", "entries": {"a": "1", "b": {"c": "2"}}}, "mixes V1"),
        ({"policyName": "x", "podEntries": {"p": 5}}, r"podEntries\['p'\]"),
    ],
    ids=["policy", "default", "entry-kind", "mixed", "pod-entry"],
)
def test_cpu_from_dict_names_the_bad_field(state: dict[str, object], message: str) -> None:
    with pytest.raises(CheckpointStateError, match=message):
        CPUCheckpointState.from_dict(state)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"machineState": {"x": {}}}, "not a NUMA node id"),
        ({"machineState": {"0": {"memoryMap": {"memory": {"total": -1}}}}}, "total must be"),
        ({"entries": {"p": {"c": [{"size": "1Gi"}]}}}, r"size must be an integer"),
        ({"entries": {"p": {"c": 5}}}, "must be a list of blocks"),
    ],
    ids=["numa-key", "negative", "size", "blocks"],
)
def test_memory_from_dict_names_the_bad_field(state: dict[str, object], message: str) -> None:
    with pytest.raises(CheckpointStateError, match=message):
        MemoryCheckpointState.from_dict({"policyName": "Static", **state})


def test_to_dict_from_dict_round_trip() -> None:
    assert CPUCheckpointState.from_dict(EXAMPLE_CPU.to_dict()) == EXAMPLE_CPU
    assert MemoryCheckpointState.from_dict(EXAMPLE_MEM.to_dict()) == EXAMPLE_MEM


# -- properties ----------------------------------------------------------------------------------

# Names that need JSON escapes, HTML escapes, U+2028/2029, non-ASCII, controls.
names = st.text(
    alphabet=st.sampled_from(list('ab-_.<>&"\\/\n\t\x01\x7fé容😀\u2028\u2029 ')),
    min_size=0,
    max_size=6,
)
cpusets = st.frozensets(st.integers(0, 300), max_size=12).map(CPUSet)
policies = st.sampled_from(["none", "static", "Static"]) | names


@st.composite
def cpu_states(draw: st.DrawFn, pod_entries: bool) -> CPUCheckpointState:
    entries = draw(st.dictionaries(names, st.dictionaries(names, cpusets, max_size=3), max_size=4))
    pods = draw(st.dictionaries(names, cpusets, max_size=3)) if pod_entries else None
    return CPUCheckpointState(draw(policies), draw(cpusets), entries, pods)


uint64 = st.integers(0, (1 << 64) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
tables = st.builds(MemoryTable, uint64, uint64, uint64, uint64, uint64)
numa_ids = st.integers(-2, 40)
node_states = st.builds(
    NUMANodeState,
    int64,
    st.dictionaries(names, tables, max_size=3),
    st.lists(numa_ids, max_size=3).map(tuple),
)
blocks = st.lists(
    st.builds(Block, st.lists(numa_ids, max_size=3).map(tuple), names, uint64), max_size=3
).map(tuple)


@st.composite
def memory_states(draw: st.DrawFn, pod_entries: bool) -> MemoryCheckpointState:
    machine = draw(st.dictionaries(numa_ids, node_states, max_size=3))
    entries = draw(st.dictionaries(names, st.dictionaries(names, blocks, max_size=2), max_size=3))
    pods = draw(st.dictionaries(names, blocks, max_size=2)) if pod_entries else None
    return MemoryCheckpointState(draw(policies), machine, entries, pods)


def _without_pods(state: CPUCheckpointState) -> CPUCheckpointState:
    return CPUCheckpointState(state.policy_name, state.default_cpu_set, state.entries, None)


@settings(max_examples=60, deadline=None)
@given(cpu_states(pod_entries=True))
def test_cpu_round_trip_every_version(state: CPUCheckpointState) -> None:
    pods = state.pod_entries or {}
    v2 = write_cpu_checkpoint(state, "V2")
    assert load_cpu_checkpoint(v2, Reader("1.35")).state == _without_pods(state)
    assert compute_checksum(v2, "cpu_v2_legacy") == json.loads(v2)["checksum"]

    v3 = write_cpu_checkpoint(state, "V3")
    r3 = load_cpu_checkpoint(v3, Reader("1.36", True))
    assert r3.accepted and r3.loaded_as == "V3"
    assert r3.state == CPUCheckpointState(
        state.policy_name, state.default_cpu_set, state.entries, pods
    )
    assert compute_checksum(v3, "cpu_v3_legacy") == json.loads(v3)["checksum"]

    v4 = write_cpu_checkpoint(state, "V4")
    r4 = load_cpu_checkpoint(v4, Reader("1.37", True))
    assert r4.loaded_as == "V4" and r4.state == r3.state
    # Older releases read the inline V2 part: the same content without pod entries.
    assert load_cpu_checkpoint(v4, Reader("1.35")).state == _without_pods(state)
    doc = json.loads(v4)
    assert doc["checksum"] == compute_checksum(v4, "cpu_v2_legacy")
    assert doc["dataChecksum"] == compute_checksum(v4, "data_string")


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(names, cpusets, max_size=4), cpusets, policies)
def test_cpu_v1_round_trip(containers: dict[str, CPUSet], default: CPUSet, policy: str) -> None:
    state = CPUCheckpointState(policy, default, {}, None, containers)
    v1 = write_cpu_checkpoint(state, "V1")
    assert compute_checksum(v1, "cpu_v1") == json.loads(v1)["checksum"]
    assert load_cpu_checkpoint(v1, Reader("1.17")).state == state
    refs = {cid: (f"pod-{i % 2}", cid) for i, cid in enumerate(sorted(containers))}
    migrated = load_cpu_checkpoint(v1, Reader("1.35"), refs)
    assert migrated.accepted
    assert migrated.state is not None
    assert {
        (pod, name): c for pod, cs in migrated.state.entries.items() for name, c in cs.items()
    } == {refs[cid]: c for cid, c in containers.items()}


@settings(max_examples=50, deadline=None)
@given(memory_states(pod_entries=True))
def test_memory_round_trip_every_version(state: MemoryCheckpointState) -> None:
    plain = MemoryCheckpointState(state.policy_name, state.machine_state, state.entries, None)
    with_pods = MemoryCheckpointState(
        state.policy_name, state.machine_state, state.entries, state.pod_entries or {}
    )
    v1 = write_memory_checkpoint(state, "V1")
    assert load_memory_checkpoint(v1, Reader("1.35")).state == plain
    assert compute_checksum(v1, "mem_v1") == json.loads(v1)["checksum"]

    v2 = write_memory_checkpoint(state, "V2")
    r2 = load_memory_checkpoint(v2, Reader("1.36", True))
    assert r2.loaded_as == "V2" and r2.state == with_pods
    assert compute_checksum(v2, "mem_v2_legacy") == json.loads(v2)["checksum"]

    v3 = write_memory_checkpoint(state, "V3")
    r3 = load_memory_checkpoint(v3, Reader("1.37", True))
    assert r3.loaded_as == "V3" and r3.state == with_pods
    assert load_memory_checkpoint(v3, Reader("1.35")).state == plain
    doc = json.loads(v3)
    assert doc["checksum"] == compute_checksum(v3, "mem_v1")
    assert doc["dataChecksum"] == compute_checksum(v3, "data_string")


_GO_ONLY_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


@settings(max_examples=40, deadline=None)
@given(cpu_states(pod_entries=True))
def test_written_files_are_compact_go_json(state: CPUCheckpointState) -> None:
    # Python's compact encoder escapes like Go except for Go's HTML and line-separator escapes.
    for version in ("V2", "V3", "V4"):
        text = write_cpu_checkpoint(state, version)
        python = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
        assert python.translate(_GO_ONLY_ESCAPES) == text

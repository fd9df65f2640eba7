"""What each kubelet release does with each format version (spec checkpoints.md §7, §8)."""

from __future__ import annotations

import json

import pytest

from app.domain.checkpoint import (
    TARGETS,
    CheckpointInputError,
    CPUCheckpointState,
    MemoryCheckpointState,
    Reader,
    compute_checksum,
    load_checkpoint,
    load_cpu_checkpoint,
    load_memory_checkpoint,
    parse_reader,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint.checksum import text_checksum
from app.domain.checkpoint.cpu import CPU_V3_T, V3_HEADER, decode_cpu
from app.domain.checkpoint.gojson_scan import parse
from app.domain.checkpoint.gospew import sdump_for_hash
from tests.domain.checkpoint.ckpt_samples import CPU_STATE

CPU_V1_STATE = CPUCheckpointState.from_dict(
    {"policyName": "static", "defaultCpuSet": "0-1", "entries": {"cid-1": "2-3"}}
)
INITIAL = {"cid-1": ["pod-1", "app"]}

MEM_STATE = MemoryCheckpointState.from_dict(
    {
        "policyName": "Static",
        "machineState": {
            "0": {
                "numberOfAssignments": 1,
                "memoryMap": {
                    "memory": {
                        "total": 4096,
                        "systemReserved": 1024,
                        "allocatable": 3072,
                        "reserved": 1024,
                        "free": 2048,
                    }
                },
                "cells": [0],
            }
        },
        "entries": {"plr": {"app": [{"numaAffinity": [0], "type": "memory", "size": 1024}]}},
        "podEntries": {"plr": [{"numaAffinity": [0], "type": "memory", "size": 1024}]},
    }
)


def _v3name_file() -> str:
    text = write_cpu_checkpoint(CPU_STATE, "V3")
    obj, _ = decode_cpu(parse(text), "V3")
    obj["Checksum"] = 0
    doc = json.loads(text)
    doc["checksum"] = text_checksum(sdump_for_hash(obj, CPU_V3_T, V3_HEADER))
    return json.dumps(doc)


def _reverted_file() -> str:
    data = json.loads(write_cpu_checkpoint(CPU_STATE, "V4"))["data"]
    return json.dumps(
        {"data": data, "checksum": compute_checksum(json.dumps({"data": data}), "data_string")}
    )


CPU_FILES = {
    "V1": lambda: write_cpu_checkpoint(CPU_V1_STATE, "V1"),
    "V2": lambda: write_cpu_checkpoint(CPU_STATE, "V2"),
    "V3": lambda: write_cpu_checkpoint(CPU_STATE, "V3"),
    "V3-v3name": _v3name_file,
    "V4": lambda: write_cpu_checkpoint(CPU_STATE, "V4"),
    "V4-reverted": _reverted_file,
}

# (accepted?, pod entries kept?) per target: <=1.17, 1.18-1.35, 1.36 off, 1.36 on, 1.37 off/on
OK, OK_PODS, FAIL = "ok", "ok+pods", "fail"
CPU_MATRIX = {
    "V1": (OK, OK, OK, OK, FAIL, FAIL),
    "V2": (FAIL, OK, OK, OK, OK, OK),
    "V3": (FAIL, FAIL, FAIL, OK_PODS, OK, OK_PODS),
    "V3-v3name": (FAIL, FAIL, FAIL, FAIL, OK, OK_PODS),
    "V4": (FAIL, OK, OK, OK, OK, OK_PODS),
    "V4-reverted": (FAIL, FAIL, FAIL, FAIL, FAIL, FAIL),
}


@pytest.mark.parametrize(
    ("version", "target"),
    [(v, t) for v in CPU_MATRIX for t in range(6)],
    ids=[f"{v}-{TARGETS[t].key}" for v in CPU_MATRIX for t in range(6)],
)
def test_cpu_compatibility_matrix(version: str, target: int) -> None:
    reader = TARGETS[target]
    result = load_cpu_checkpoint(CPU_FILES[version](), reader, INITIAL)
    want = CPU_MATRIX[version][target]
    assert result.accepted == (want != FAIL), result.error
    if want == FAIL:
        assert result.message is not None and result.error in result.message
        return
    assert result.state is not None
    if reader.release == "1.17":
        assert result.state.container_entries == CPU_V1_STATE.container_entries
        return
    if version == "V1":
        assert result.state.entries == {"pod-1": {"app": CPU_V1_STATE.container_entries["cid-1"]}}
        return
    assert result.state.entries == CPU_STATE.entries
    assert result.state.default_cpu_set == CPU_STATE.default_cpu_set
    pods = result.state.pod_entries
    if want == OK_PODS:
        assert pods == CPU_STATE.pod_entries
    else:
        assert not pods
    assert (pods is not None) == reader.gate


MEM_FILES = {
    "V1": lambda: write_memory_checkpoint(MEM_STATE, "V1"),
    "V2": lambda: write_memory_checkpoint(MEM_STATE, "V2"),
    "V3": lambda: write_memory_checkpoint(MEM_STATE, "V3"),
}
MEM_MATRIX = {
    "V1": (OK, OK, OK, OK, OK, OK),
    "V2": (OK, FAIL, FAIL, OK_PODS, OK, OK_PODS),
    "V3": (OK, OK, OK, OK, OK, OK_PODS),
}


@pytest.mark.parametrize(
    ("version", "target"),
    [(v, t) for v in MEM_MATRIX for t in range(6)],
    ids=[f"{v}-{TARGETS[t].key}" for v in MEM_MATRIX for t in range(6)],
)
def test_memory_compatibility_matrix(version: str, target: int) -> None:
    reader = TARGETS[target]
    result = load_memory_checkpoint(MEM_FILES[version](), reader)
    want = MEM_MATRIX[version][target]
    assert result.accepted == (want != FAIL), result.error
    if reader.release == "1.17":
        assert result.ignored and result.state is None
        return
    if want == FAIL:
        assert result.error == "checkpoint is corrupted"
        return
    assert result.state is not None
    assert result.state.machine_state == MEM_STATE.machine_state
    assert result.state.entries == MEM_STATE.entries
    if want == OK_PODS:
        assert result.state.pod_entries == MEM_STATE.pod_entries
    else:
        assert not result.state.pod_entries


def test_v3_in_136_gate_off_fails_with_the_v1_attempts_error() -> None:
    result = load_cpu_checkpoint(CPU_FILES["V3"](), Reader("1.36", False))
    assert (
        result.error is not None
        and "json: cannot unmarshal object into Go struct field" in result.error
    )
    assert [a.version for a in result.attempts] == ["V2", "V1"]


def test_136_gate_on_keeps_pod_entries_of_the_failed_v3_attempt() -> None:
    # A V3-shaped file whose checksum is the V2 hash: V3 fails, V2 succeeds, and the pod
    # entries the V3 attempt decoded survive in the object the result is copied into.
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V3"))
    doc["checksum"] = json.loads(write_cpu_checkpoint(CPU_STATE, "V2"))["checksum"]
    text = json.dumps(doc)
    on = load_cpu_checkpoint(text, Reader("1.36", True))
    assert [(a.version, a.ok) for a in on.attempts] == [("V3", False), ("V2", True)]
    assert on.state is not None and on.state.pod_entries == CPU_STATE.pod_entries
    # 1.37 resets the V3 object before migrating: no stale pod entries.
    later = load_cpu_checkpoint(text, Reader("1.37", True))
    assert later.loaded_as == "V2" and later.state is not None and later.state.pod_entries == {}


def test_136_memory_gate_on_keeps_stale_pod_entries_1_37_does_not() -> None:
    doc = json.loads(write_memory_checkpoint(MEM_STATE, "V2"))
    doc["checksum"] = json.loads(write_memory_checkpoint(MEM_STATE, "V1"))["checksum"]
    text = json.dumps(doc)
    on = load_memory_checkpoint(text, Reader("1.36", True))
    assert on.loaded_as == "V1" and on.state is not None
    assert on.state.pod_entries == MEM_STATE.pod_entries
    later = load_memory_checkpoint(text, Reader("1.37", True))
    assert later.loaded_as == "V1" and later.state is not None and later.state.pod_entries == {}


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (
            lambda d: d.update(dataChecksum=1),
            "could not load v4 checkpoint: checkpoint is corrupted",
        ),
        (
            lambda d: d.update(data="{"),
            "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: "
            "unexpected end of JSON input",
        ),
        (
            lambda d: d.pop("data"),
            "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: "
            "unexpected end of JSON input",
        ),
        (
            lambda d: d.update(dataChecksum="x"),
            "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint: json: "
            "cannot unmarshal string into Go struct field CPUManagerCheckpoint.dataChecksum of "
            "type checksum.Checksum",
        ),
    ],
    ids=["bad-datachecksum", "bad-data-json", "no-data", "datachecksum-type"],
)
def test_137_does_not_fall_back_once_data_is_present(mutate: object, error: str) -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V4"))
    mutate(doc)  # type: ignore[operator]
    result = load_cpu_checkpoint(json.dumps(doc), Reader("1.37", True))
    assert result.error == error
    # The inline V2 part is intact: older releases still read the file.
    assert load_cpu_checkpoint(json.dumps(doc), Reader("1.35")).accepted


@pytest.mark.parametrize(
    ("manager", "version", "target", "accepted"),
    [
        ("cpu", "V1", "1.35", True),
        ("cpu", "V2", "1.35", True),
        ("cpu", "V2", "1.36-gate-on", True),
        ("memory", "V1", "1.35", False),
        ("memory", "V1", "1.36-gate-off", False),
        ("memory", "V1", "1.37-gate-off", True),
        ("memory", "V2", "1.37-gate-on", True),
        ("memory", "V2", "1.36-gate-on", False),
    ],
    ids=lambda v: str(v),
)
def test_zero_checksum_rule(manager: str, version: str, target: str, accepted: bool) -> None:
    if manager == "cpu":
        state = CPU_V1_STATE if version == "V1" else CPU_STATE
        doc = json.loads(write_cpu_checkpoint(state, version))
    else:
        doc = json.loads(write_memory_checkpoint(MEM_STATE, version))
    doc["checksum"] = 0
    result = load_checkpoint(json.dumps(doc), manager, parse_reader(target), INITIAL)
    assert result.accepted == accepted, result.error
    if accepted and result.attempts[-1].ok:
        assert result.attempts[-1].matched == "zero"


def test_v3_verifier_has_no_zero_rule_but_the_v2_fallback_does() -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V3"))
    doc["checksum"] = 0
    text = json.dumps(doc)
    on = load_cpu_checkpoint(text, Reader("1.36", True))
    assert [(a.version, a.ok, a.matched) for a in on.attempts] == [
        ("V3", False, None),
        ("V2", True, "zero"),
    ]
    assert on.state is not None and on.state.pod_entries == CPU_STATE.pod_entries  # survived
    later = load_cpu_checkpoint(text, Reader("1.37", True))
    assert later.loaded_as == "V2" and later.state is not None and later.state.pod_entries == {}


def test_policy_mismatch_is_flagged_with_the_kubelet_text() -> None:
    result = load_cpu_checkpoint(CPU_FILES["V2"](), Reader("1.35", policy="none"))
    assert result.policy_mismatch
    assert result.error == 'configured policy "none" differs from state checkpoint policy "static"'
    assert result.message == (
        'could not restore state from checkpoint: configured policy "none" differs from state '
        'checkpoint policy "static", please drain this node and delete the CPU manager '
        'checkpoint file "/var/lib/kubelet/cpu_manager_state" before restarting Kubelet'
    )
    mem = load_memory_checkpoint(MEM_FILES["V1"](), Reader("1.35", policy="None"), "/tmp/k")
    assert mem.error == (
        '[memorymanager] configured policy "None" differs from state checkpoint policy "Static"'
    )
    assert mem.message is not None and '"/tmp/k/memory_manager_state"' in mem.message


@pytest.mark.parametrize(
    ("reader", "error"),
    [
        (
            Reader("1.35"),
            "error migrating v1 checkpoint state to v2 checkpoint state: containerID 'cid-1' not "
            "found in initial containers list",
        ),
        (
            Reader("1.36", True),
            "failed to migrate checkpoint from v1 to v2: containerID 'cid-1' not found in initial "
            "containers list",
        ),
    ],
    ids=["1.35", "1.36"],
)
def test_v1_migration_needs_the_container_list(reader: Reader, error: str) -> None:
    result = load_cpu_checkpoint(CPU_FILES["V1"](), reader, {})
    assert result.error == error


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        (
            "defaultCpuSet",
            "1.3",
            'could not parse default cpu set "1.3": strconv.Atoi: parsing "1.3": invalid syntax',
        ),
        (
            "defaultCpuSet",
            "5-2",
            'could not parse default cpu set "5-2": invalid range "5-2" (5 > 2)',
        ),
        (
            "entries",
            {"pod": {"c": "x"}},
            'could not parse cpuset "x" for container "c" in pod "pod": strconv.Atoi: parsing '
            '"x": invalid syntax',
        ),
    ],
    ids=["default-syntax", "default-range", "entry"],
)
def test_cpuset_parse_errors(field: str, value: object, error: str) -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V2"))
    doc[field] = value
    doc["checksum"] = 0
    for reader in (Reader("1.35"), Reader("1.36", True), Reader("1.37", False)):
        assert load_cpu_checkpoint(json.dumps(doc), reader).error == error


def test_v4_pod_entry_cpuset_error() -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V4"))
    data = json.loads(doc["data"])
    data["podEntries"] = {"p": {"cpuSet": "1-x"}}
    doc["data"] = json.dumps(data)
    doc["dataChecksum"] = compute_checksum(json.dumps({"data": doc["data"]}), "data_string")
    result = load_cpu_checkpoint(json.dumps(doc), Reader("1.37", True))
    assert result.error == (
        "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: "
        'failed to parse cpuset: strconv.Atoi: parsing "x": invalid syntax'
    )


def test_bytes_with_invalid_utf8_are_read_like_go() -> None:
    text = write_cpu_checkpoint(
        CPUCheckpointState.from_dict({"policyName": "\ufffd", "defaultCpuSet": "0"}), "V2"
    )
    raw = text.encode().replace("\ufffd".encode(), b"\xff")
    result = load_cpu_checkpoint(raw, Reader("1.35", policy="\ufffd"))
    assert result.accepted


@pytest.mark.parametrize(
    ("text", "key", "label"),
    [
        ("1.36-gate-on", "1.36-gate-on", "1.36 gate on"),
        ("1.37 gate off", "1.37-gate-off", "1.37 gate off"),
        ("1.29", "1.35", "1.18–1.35"),
        ("<=1.17", "1.17", "≤1.17"),
        ("1.18-1.35", "1.35", "1.18–1.35"),
        ("1.35-gate-on", "1.35", "1.18–1.35"),
    ],
    ids=lambda v: str(v),
)
def test_reader_parsing(text: str, key: str, label: str) -> None:
    reader = parse_reader(text)
    assert reader.key == key and reader.label == label


@pytest.mark.parametrize("text", ["2.0", "1.39", "latest", "1"])
def test_unknown_releases_are_refused(text: str) -> None:
    with pytest.raises(CheckpointInputError, match="release"):
        Reader(text)


def test_unknown_manager_is_refused() -> None:
    with pytest.raises(CheckpointInputError, match="unknown manager"):
        load_checkpoint("{}", "gpu", Reader("1.35"))


def test_load_result_to_dict_is_json_ready() -> None:
    for target in TARGETS:
        for text in (CPU_FILES["V4"](), "{"):
            json.dumps(load_cpu_checkpoint(text, target, INITIAL).to_dict())
        json.dumps(load_memory_checkpoint(MEM_FILES["V3"](), target).to_dict())
    assert [t.label for t in TARGETS] == [
        "≤1.17",
        "1.18–1.35",
        "1.36 gate off",
        "1.36 gate on",
        "1.37 gate off",
        "1.37 gate on",
        "1.38 gate off",
        "1.38 gate on",
    ]


def test_v1_file_with_only_data_reads_as_empty_policy_on_old_releases() -> None:
    # The reverted layout without a checksum decodes as a V1 file with checksum 0.
    text = '{"data": "{\\"policyName\\":\\"none\\",\\"defaultCPUSet\\":\\"4-6\\"}"}'
    old = load_cpu_checkpoint(text, Reader("1.35", policy="none"))
    assert old.error == 'configured policy "none" differs from state checkpoint policy ""'
    new = load_cpu_checkpoint(text, Reader("1.37", True, "none"))
    assert new.error == "could not load v4 checkpoint: checkpoint is corrupted"


@pytest.mark.parametrize("gate", [False, True])
def test_release_138_reads_every_file_as_137(gate: bool) -> None:
    """1.38 (upstream master) did not change state_checkpoint.go: same outcome as 1.37."""
    for make in (*CPU_FILES.values(),):
        text = make()
        a = load_cpu_checkpoint(text, Reader("1.38", gate), INITIAL)
        b = load_cpu_checkpoint(text, Reader("1.37", gate), INITIAL)
        assert (a.accepted, a.error, a.loaded_as, a.state) == (
            b.accepted,
            b.error,
            b.loaded_as,
            b.state,
        )
    for make in MEM_FILES.values():
        text = make()
        a = load_memory_checkpoint(text, Reader("1.38", gate))
        b = load_memory_checkpoint(text, Reader("1.37", gate))
        assert (a.accepted, a.error, a.loaded_as, a.state) == (
            b.accepted,
            b.error,
            b.loaded_as,
            b.state,
        )
    assert Reader("1.38", gate).key == f"1.38-gate-{'on' if gate else 'off'}"


def test_a_reader_unpickled_in_another_process_is_a_key_there() -> None:
    """A reader keeps its hash (kept answers are keyed by it); pickled, it is made again
    where it is unpickled, whose string hashes differ (another hash seed)."""
    import os
    import pickle
    import subprocess
    import sys

    reader = Reader("1.37", True, "static")
    code = (
        "import pickle, sys\n"
        "from app.domain.checkpoint import Reader\n"
        "r = pickle.loads(sys.stdin.buffer.read())\n"
        "print({Reader('1.37', True, 'static'): 'found'}.get(r), r.key)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], input=pickle.dumps(reader), capture_output=True, env=env
    )
    assert out.stdout.decode().split() == ["found", "1.37-gate-on"], out.stderr.decode()

"""Checkpoint readers audit: partly decoded objects of failed attempts (follows
pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
pkg/kubelet/cm/memorymanager/state/state_checkpoint.go of v1.36 and v1.37, and Go's
encoding/json decode.go).

* 1.36 memory ``migrateV1CheckpointToV2Checkpoint`` copies into the V2 object whose attempt
  failed, and only a non-empty policy name, a non-nil machine state and non-empty entries;
* a V2 attempt that failed on a type error in ``podEntries`` still stored the other pod
  entries (Go records the error and goes on): a 1.36 gate-on kubelet keeps them, a 1.37 one
  starts from a fresh V2 object;
* a V3 CPU attempt stopped by ``PodEntry.UnmarshalJSON`` keeps the pod entries decoded before
  the bad one; 1.36 gate on copies the V2 result into that object.
"""

from __future__ import annotations

import json

from app.domain.checkpoint import Reader, compute_checksum, load_checkpoint
from app.domain.checkpoint.read_memory import _migrate_v1_into_failed_v2

TABLE = '{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}'
MACHINE = '{"0":{"numberOfAssignments":1,"memoryMap":{"memory":' + TABLE + '},"cells":[0]}}'
BLOCK = '{"numaAffinity":[0],"type":"memory","size":512}'


def test_136_memory_migration_copies_only_set_fields() -> None:
    dst = {
        "PolicyName": "from-v2",
        "MachineState": {0: None},
        "Entries": {"p": {"c": []}},
        "PodEntries": {"p": {"MemoryBlocks": None}},
        "Checksum": 9,
    }
    _migrate_v1_into_failed_v2(
        {"PolicyName": "", "MachineState": None, "Entries": {}, "Checksum": 0}, dst
    )
    assert dst["PolicyName"] == "from-v2"
    assert dst["MachineState"] == {0: None}
    assert dst["Entries"] == {"p": {"c": []}}
    src = {"PolicyName": "Static", "MachineState": {}, "Entries": {"q": {}}, "Checksum": 1}
    _migrate_v1_into_failed_v2(src, dst)
    assert (dst["PolicyName"], dst["MachineState"], dst["Entries"]) == ("Static", {}, {"q": {}})
    assert dst["PodEntries"] == {"p": {"MemoryBlocks": None}}


def _with_checksum(template: str, algorithm: str) -> str:
    content = template.replace("CHECKSUM", "0")
    return template.replace("CHECKSUM", str(compute_checksum(content, algorithm)))


def test_memory_v2_type_error_in_pod_entries_leaves_stale_entries_on_136_only() -> None:
    content = _with_checksum(
        '{"policyName":"Static","machineState":'
        + MACHINE
        + ',"entries":{"p":{"c":['
        + BLOCK
        + ']}},"podEntries":{"a":{"memoryBlocks":['
        + BLOCK
        + ']},"b":"bad"},"checksum":CHECKSUM}',
        "mem_v1",
    )
    r136 = load_checkpoint(content, "memory", Reader("1.36", True, "Static"))
    assert r136.accepted and r136.loaded_as == "V1"
    assert r136.state is not None
    assert r136.state.to_dict()["podEntries"] == {"a": [json.loads(BLOCK)], "b": []}
    r137 = load_checkpoint(content, "memory", Reader("1.37", True, "Static"))
    assert r137.accepted and r137.state is not None
    assert r137.state.to_dict()["podEntries"] == {}
    # The V2 attempt's error is Go's type error, recorded while decoding went on.
    assert r136.attempts[0].error == (
        "json: cannot unmarshal string into Go struct field MemoryManagerCheckpoint.podEntries "
        "of type state.PodEntry"
    )


def test_cpu_v3_attempt_stopped_by_a_bad_pod_cpuset_keeps_earlier_pod_entries() -> None:
    content = (
        '{"policyName":"static","defaultCpuSet":"0-3","podEntries":{"a":{"cpuSet":"1"},'
        '"b":{"cpuSet":"x"},"c":{"cpuSet":"2"}},"checksum":0}'
    )
    r = load_checkpoint(content, "cpu", Reader("1.36", True, "static"))
    assert r.accepted and r.loaded_as == "V2"
    assert r.state is not None and r.state.to_dict()["podEntries"] == {"a": "1"}
    assert (
        r.attempts[0].error == 'failed to parse cpuset: strconv.Atoi: parsing "x": invalid syntax'
    )
    # 1.37 migrates into a fresh object: no pod entries survive.
    r137 = load_checkpoint(content, "cpu", Reader("1.37", True, "static"))
    assert r137.accepted and r137.state is not None
    assert r137.state.to_dict()["podEntries"] == {}

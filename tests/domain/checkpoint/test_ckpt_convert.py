"""Conversions between versions and the report of what they lose."""

from __future__ import annotations

import json

import pytest

from app.domain.checkpoint import (
    ConversionError,
    CPUCheckpointState,
    MemoryCheckpointState,
    Reader,
    convert,
    detect_version,
    load_checkpoint,
    version_for,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from tests.domain.checkpoint.ckpt_samples import CPU_STATE

MEM_STATE = MemoryCheckpointState.from_dict(
    {
        "policyName": "Static",
        "machineState": {
            "0": {
                "numberOfAssignments": 1,
                "memoryMap": {
                    "memory": {
                        "total": 4096,
                        "systemReserved": 0,
                        "allocatable": 4096,
                        "reserved": 2048,
                        "free": 2048,
                    }
                },
                "cells": [0],
            }
        },
        "entries": {"plr": {"app": [{"numaAffinity": [0], "type": "memory", "size": 1024}]}},
        "podEntries": {"plr": [{"numaAffinity": [0], "type": "memory", "size": 2048}]},
    }
)


@pytest.mark.parametrize(
    ("source", "target", "lost"),
    [
        ("V4", "V2", ["podEntries[plr] (cpuSet 3-7)"]),
        ("V4", "V3", []),
        ("V3", "V4", []),
        ("V2", "V4", []),
        ("V3", "V2", ["podEntries[plr] (cpuSet 3-7)"]),
    ],
    ids=lambda v: str(v),
)
def test_cpu_conversions(source: str, target: str, lost: list[str]) -> None:
    state = CPU_STATE
    if source == "V2":
        state = CPUCheckpointState(state.policy_name, state.default_cpu_set, state.entries)
    result = convert(write_cpu_checkpoint(state, source), target)
    assert list(result.lost) == lost
    assert result.source.version == source and result.to_version == target
    assert detect_version(result.content).version == target
    expected = (
        state
        if target in ("V3", "V4")
        else CPUCheckpointState(state.policy_name, state.default_cpu_set, state.entries)
    )
    assert result.content == write_cpu_checkpoint(expected, target)


@pytest.mark.parametrize(
    ("target", "version"),
    [
        ("1.37-gate-on", "V4"),
        ("1.37-gate-off", "V4"),
        ("1.36-gate-on", "V3"),
        ("1.36-gate-off", "V2"),
        ("1.29", "V2"),
    ],
    ids=lambda v: str(v),
)
def test_target_release_picks_the_version(target: str, version: str) -> None:
    result = convert(write_cpu_checkpoint(CPU_STATE, "V4"), target_release=target)
    assert result.to_version == version
    assert result.verdict is not None and result.verdict.verdict in (
        "compatible",
        "compatible-with-loss",
    )
    assert load_checkpoint(result.content, "cpu", result.target).accepted  # type: ignore[arg-type]


def test_memory_v3_to_v1_lists_pod_entries_and_warns_about_validation() -> None:
    result = convert(write_memory_checkpoint(MEM_STATE, "V3"), target_release="1.35")
    assert result.to_version == "V1"
    assert result.lost[0] == "podEntries[plr] (memory 2048 bytes on NUMA 0)"
    assert any("start-up validation (validateState) refuses the file" in n for n in result.notes)
    assert result.verdict is not None and result.verdict.verdict == "will-fail"
    assert version_for("memory", Reader("1.36", True)) == "V2"


def test_memory_needs_a_release_with_a_memory_manager() -> None:
    with pytest.raises(ConversionError, match="no memory manager"):
        convert(write_memory_checkpoint(MEM_STATE, "V1"), target_release="1.17")


def test_bad_source_checksum_is_refused_unless_forced() -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V3"))
    doc["checksum"] = 42
    text = json.dumps(doc)
    with pytest.raises(ConversionError, match="refusing to convert: source checksum 42"):
        convert(text, "V4")
    forced = convert(text, "V4", force=True)
    assert forced.notes[0].startswith("forced:")
    assert load_checkpoint(forced.content, "cpu", Reader("1.37", True)).accepted


def test_v4_is_guarded_by_its_data_checksum_not_the_inline_one() -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V4"))
    doc["checksum"] = 7
    result = convert(json.dumps(doc), "V3")
    assert any("inline checksum is invalid" in n for n in result.notes)
    doc["dataChecksum"] = 7
    with pytest.raises(ConversionError, match="dataChecksum 7"):
        convert(json.dumps(doc), "V3")


def test_v1_conversions_need_the_container_list() -> None:
    v1 = '{"policyName":"none","defaultCpuSet":"0-1","entries":{"cid":"2-3"},"checksum":0}'
    with pytest.raises(ConversionError, match="initial_containers"):
        convert(v1, "V2")
    up = convert(v1, "V2", initial_containers={"cid": ("pod", "app")})
    assert json.loads(up.content)["entries"] == {"pod": {"app": "2-3"}}
    down = convert(up.content, "V1", initial_containers={"cid": ("pod", "app")})
    assert json.loads(down.content)["entries"] == {"cid": "2-3"}
    with pytest.raises(ConversionError, match="no container ID"):
        convert(up.content, "V1", initial_containers={})


def test_target_that_cannot_read_the_version_is_refused() -> None:
    with pytest.raises(ConversionError, match=r"not readable by a 1\.18–1\.35 kubelet"):
        convert(write_cpu_checkpoint(CPU_STATE, "V4"), "V3", target_release="1.35")


@pytest.mark.parametrize(
    ("content", "message"),
    [("{", "not valid JSON"), ('{"a":1}', "cannot tell"), ("[]", "JSON object")],
    ids=["truncated", "unknown", "array"],
)
def test_unreadable_sources(content: str, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(content, "V2")


def test_unparsable_content_needs_force() -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V2"))
    doc["entries"]["plr"]["gu"] = "x"
    doc["checksum"] = 0
    with pytest.raises(ConversionError, match="could not parse cpuset"):
        convert(json.dumps(doc), "V4")
    forced = convert(json.dumps(doc), "V4", force=True)
    assert any("unparsable value dropped" in x for x in forced.lost)


def test_missing_version_and_target() -> None:
    with pytest.raises(ConversionError, match="give the version"):
        convert(write_cpu_checkpoint(CPU_STATE, "V2"))
    with pytest.raises(ConversionError, match="unknown version"):
        convert(write_cpu_checkpoint(CPU_STATE, "V2"), "V9")

"""Inspection reports, version detection and hostile inputs."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint import (
    TARGETS,
    CheckpointFormatError,
    ConversionError,
    CPUCheckpointState,
    MemoryCheckpointState,
    check_consistency,
    compute_checksum,
    convert,
    detect_version,
    inspect,
    load_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint.gojson_scan import forget
from app.domain.golang.strconv import go_quote
from tests.domain.checkpoint.ckpt_samples import CPU_STATE

MEM_STATE = MemoryCheckpointState.from_dict(
    {
        "policyName": "Static",
        "machineState": {"0": {"numberOfAssignments": 1, "memoryMap": {}, "cells": [0]}},
        "podEntries": {"plr": [{"numaAffinity": [0], "type": "memory", "size": 1024}]},
    }
)


@pytest.mark.parametrize(
    ("content", "manager", "version", "label"),
    [
        (write_cpu_checkpoint(CPU_STATE, "V2"), "cpu", "V2", "CPU V2 (1.18–1.35; 1.36 gate off)"),
        (write_cpu_checkpoint(CPU_STATE, "V3"), "cpu", "V3", "CPU V3 (1.36 pod-level)"),
        (
            write_cpu_checkpoint(CPUCheckpointState("static"), "V3"),
            "cpu",
            "V3",
            "CPU V3 (1.36 pod-level)",
        ),
        (write_cpu_checkpoint(CPU_STATE, "V4"), "cpu", "V4", "CPU V4 (1.37)"),
        (
            '{"data":"{\\"policyName\\":\\"none\\",\\"defaultCPUSet\\":\\"4-6\\"}","checksum":1}',
            "cpu",
            "V4-reverted",
            "CPU V4-reverted (unreleased, kubernetes#137820)",
        ),
        (
            '{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}',
            "cpu",
            "V1",
            "CPU V1 (≤1.17)",
        ),
        (
            '{"policyName":"none","defaultCpuSet":"1-3","entries":{"c":"1"},"checksum":0}',
            "cpu",
            "V1",
            "CPU V1 (≤1.17)",
        ),
        (
            write_memory_checkpoint(MEM_STATE, "V1"),
            "memory",
            "V1",
            "memory V1 (1.21–1.35; 1.36 gate off)",
        ),
        (write_memory_checkpoint(MEM_STATE, "V2"), "memory", "V2", "memory V2 (1.36 pod-level)"),
        (
            write_memory_checkpoint(MemoryCheckpointState("Static"), "V2"),
            "memory",
            "V2",
            "memory V2 (1.36 pod-level)",
        ),
        (write_memory_checkpoint(MEM_STATE, "V3"), "memory", "V3", "memory V3 (1.37)"),
    ],
    ids=[
        "cpu-v2",
        "cpu-v3",
        "cpu-v3-no-pod-entries",
        "cpu-v4",
        "cpu-v4-reverted",
        "cpu-v1-no-entries",
        "cpu-v1-entries",
        "mem-v1",
        "mem-v2",
        "mem-v2-no-pod-entries",
        "mem-v3",
    ],
)
def test_detect_version(content: str, manager: str, version: str, label: str) -> None:
    info = detect_version(content)
    assert (info.manager, info.version, info.label) == (manager, version, label)
    assert info.display.startswith(info.file_name + " " + version + " (")


def test_v3_header_name_is_reported() -> None:
    content = (
        '{"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6",'
        '"container2":"1-3"}},"checksum":1942532442}'
    )
    info = detect_version(content)
    assert (info.version, info.header) == ("V3", "v3name")
    report = inspect(content)
    assert [i.code for i in report.issues] == ["v3-type-name"]
    verdicts = {v.target: v.verdict for v in report.verdicts}
    assert verdicts["1.36-gate-on"] == "will-fail"
    assert verdicts["1.37-gate-on"] == "compatible"


@pytest.mark.parametrize(
    "content",
    ["", "{", "[]", '"x"', "null", '{"a":1}', "[" * 20000, b"\xff\xfe", "{" * 3000],
    ids=["empty", "truncated", "array", "string", "null", "unknown", "deep", "binary", "deep-obj"],
)
def test_detect_refuses_non_checkpoints_clearly(content: str | bytes) -> None:
    with pytest.raises(CheckpointFormatError):
        detect_version(content)


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{",
        '{"policyName": "static", "defaultCpuSet": ',
        "not json at all",
        '{"policyName": 5, "defaultCpuSet": [], "entries": "x", "checksum": -1}',
        '{"defaultCpuSet": "0-3", "podEntries": {"p": {"cpuSet": "zz"}}, "checksum": 1}',
        '{"defaultCpuSet": "0-99999999999"}',
        '{"machineState": {"0": 5, "x": null}, "entries": [], "checksum": 1.5}',
        '{"machineState": {}, "data": 7, "dataChecksum": "x"}',
        "[" * 9000 + "]" * 9000,
        '{"defaultCpuSet": "0", "entries": ' + "[" * 5000 + "]" * 5000 + "}",
        b"\x00\x01\x02",
        "\ud800",
    ],
    ids=[
        "empty",
        "truncated",
        "cut",
        "text",
        "wrong-types",
        "bad-pod-cpuset",
        "huge-cpuset",
        "memory-wrong-types",
        "data-wrong-types",
        "deep-array",
        "deep-value",
        "binary",
        "surrogate",
    ],
)
def test_inspect_never_raises_on_bad_input(content: str | bytes) -> None:
    for manager in (None, "cpu", "memory_manager_state"):
        report = inspect(content, manager)
        json.dumps(report.to_dict())  # JSON-ready
        for v in report.verdicts:
            assert v.verdict in (
                "compatible",
                "compatible-with-loss",
                "will-fail",
                "policy-mismatch",
            )


def test_inspect_too_large_gives_a_verdict_object() -> None:
    report = inspect(b" " * (16 * 1024 * 1024 + 1), "cpu")
    assert not report.readable
    assert report.error is not None and "16 MiB" in report.error


def test_truncated_file_fails_every_release_with_the_go_text() -> None:
    report = inspect('{"policyName":"static"', "cpu")
    assert not report.readable
    assert {v.verdict for v in report.verdicts} == {"will-fail"}
    assert all(v.error == "unexpected end of JSON input" for v in report.verdicts)


def test_inspect_v4_report() -> None:
    report = inspect(write_cpu_checkpoint(CPU_STATE, "V4"), configured_policy="static")
    d = report.to_dict()
    assert d["version"] == "V4" and d["family"] == "1.37" and d["file"] == "cpu_manager_state"
    assert d["policyName"] == "static"
    assert [(c["field"], c["status"]) for c in d["checksums"]] == [
        ("checksum", "valid"),
        ("dataChecksum", "valid"),
    ]
    assert d["state"]["podEntries"] == {"plr": "3-7"}
    verdicts = {v["target"]: v for v in d["verdicts"]}
    assert verdicts["1.17"]["verdict"] == "will-fail"
    assert verdicts["1.35"]["verdict"] == "compatible"
    assert verdicts["1.36-gate-on"]["verdict"] == "compatible-with-loss"
    assert verdicts["1.36-gate-on"]["lost"] == ["podEntries[plr] (cpuSet 3-7)"]
    assert verdicts["1.37-gate-on"]["verdict"] == "compatible"
    assert verdicts["1.37-gate-off"]["verdict"] == "compatible"
    assert any("ignored" in n for n in verdicts["1.37-gate-off"]["notes"])


def test_gate_off_reader_with_uncovered_pod_cpus_will_fail() -> None:
    """Read, but ``validateState`` refuses it: CPUs 3-5 are in no entry the reader keeps
    (behaviour changed from ``compatible-with-loss``: the start-up model now runs ``Start``)."""
    state = CPUCheckpointState.from_dict(
        {
            "policyName": "static",
            "defaultCpuSet": "0-1",
            "entries": {"plr": {"gu": "2"}},
            "podEntries": {"plr": "2-5"},
        }
    )
    report = inspect(write_cpu_checkpoint(state, "V4"))
    v = report.verdict_for("1.35")
    assert v is not None and v.verdict == "will-fail"
    assert v.error == (
        'start cpu manager error: current set of available CPUs "0-5" doesn\'t match with CPUs '
        'in state "0-2"'
    )
    assert any("CPUs 3-5 of pod plr" in n for n in v.notes)
    assert any("safely restores" in n for n in v.notes)


def test_policy_mismatch_verdict() -> None:
    report = inspect(write_cpu_checkpoint(CPU_STATE, "V2"), configured_policy="none")
    v = report.verdict_for("1.35")
    assert v is not None and v.verdict == "policy-mismatch"
    assert v.error == 'configured policy "none" differs from state checkpoint policy "static"'


def test_checksum_statuses() -> None:
    doc = json.loads(write_cpu_checkpoint(CPU_STATE, "V2"))
    doc["checksum"] = 0
    zero = inspect(json.dumps(doc)).checksums[0]
    assert (zero.status, zero.stored) == ("unverified", 0)
    doc["checksum"] = 123
    bad = inspect(json.dumps(doc))
    assert bad.checksums[0].status == "invalid"
    assert bad.checksums[0].computed == compute_checksum(
        write_cpu_checkpoint(CPU_STATE, "V2"), "cpu_v2_legacy"
    )
    assert "checksum-invalid" in [i.code for i in bad.issues]


def test_upstream_v3_memory_file_with_wrong_inline_part() -> None:
    data = json.loads(write_memory_checkpoint(MEM_STATE, "V3"))
    data["policyName"] = "other"
    data["checksum"] = 1234
    report = inspect(json.dumps(data))
    assert [(c.field, c.status) for c in report.checksums] == [
        ("checksum", "invalid"),
        ("dataChecksum", "valid"),
    ]
    assert {i.code for i in report.issues} >= {"checksum-invalid", "inline-differs"}
    # 1.37 reads ``data`` (the inline part does not matter to it) and then refuses to start:
    # MEM_STATE books an assignment that no container entry accounts for.
    v = report.verdict_for("1.37-gate-on")
    assert v is not None and v.verdict == "will-fail"
    assert v.error == (
        "start memory manager error: [memorymanager] the expected machine state is different "
        "from the real one"
    )
    assert report.verdict_for("1.35").verdict == "will-fail"  # type: ignore[union-attr]


def test_memory_file_is_ignored_before_1_21() -> None:
    report = inspect(write_memory_checkpoint(MEM_STATE, "V1"))
    v = report.verdict_for("1.17")
    assert v is not None and v.verdict == "compatible"
    assert "not read" in v.notes[0]


def test_v1_file_verdicts_note_the_container_list_and_uncertainty() -> None:
    report = inspect(
        '{"policyName":"none","defaultCpuSet":"0-1","entries":{"c1":"2"},"checksum":0}'
    )
    by = {v.target: v for v in report.verdicts}
    assert by["1.17"].verdict == "compatible"
    assert by["1.35"].verdict == "compatible"
    assert any("container list" in n for n in by["1.35"].notes)
    assert by["1.37-gate-on"].verdict == "will-fail"
    assert any("uncertain" in n for n in by["1.37-gate-on"].notes)


def test_inspect_runs_the_consistency_checks() -> None:
    text = write_cpu_checkpoint(CPU_STATE, "V4")
    assert inspect(text).issues == ()
    codes = [i.code for i in inspect(text, live_pod_uids={"plr"}).issues]
    assert codes == ["stale-entry"]  # pod "classic" is not running
    overlapping = CPUCheckpointState.from_dict(
        {"policyName": "static", "defaultCpuSet": "0-3", "entries": {"a": {"c": "3-4"}}}
    )
    text = write_cpu_checkpoint(overlapping, "V2")
    assert inspect(text).issues == ()  # the checks are opt-in
    found = [i.code for i in inspect(text, consistency=True).issues]
    assert found == ["container-overlaps-default"]


_SEEDS = [
    write_cpu_checkpoint(CPU_STATE, "V2"),
    write_cpu_checkpoint(CPU_STATE, "V3"),
    write_cpu_checkpoint(CPU_STATE, "V4"),
    write_memory_checkpoint(MEM_STATE, "V2"),
    write_memory_checkpoint(MEM_STATE, "V3"),
]


@st.composite
def mutated_files(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "replace"]))
        ch = draw(st.sampled_from([*list('{}[]":,0129-aZ\\ \u2028\x00'), "null", "1e9", '"x"']))
        if op == "delete":
            text = text[:pos] + text[pos + 1 :]
        elif op == "insert":
            text = text[:pos] + ch + text[pos:]
        else:
            text = text[:pos] + ch + text[pos + 1 :]
    return text


@settings(max_examples=120, deadline=None)
@given(mutated_files())
def test_mutated_files_never_raise(text: str) -> None:
    report = inspect(text, configured_policy="static")
    json.dumps(report.to_dict())
    for manager in ("cpu", "memory"):
        for target in TARGETS:
            result = load_checkpoint(text, manager, target)
            assert result.accepted or result.error or result.ignored
    with contextlib.suppress(ConversionError):
        convert(text, target_release="1.37", force=True)
    check_consistency(cpu=text)
    check_consistency(memory=text)


MEMORY_FILE = (
    '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{}}},'
    '"checksum":1}'
)


def test_a_forced_manager_the_content_contradicts_is_reported() -> None:
    report = inspect(MEMORY_FILE.encode(), "cpu")
    assert report.manager == "cpu"
    (issue,) = [i for i in report.issues if i.code == "manager-mismatch"]
    assert issue.severity == "error"
    assert "memory_manager_state" in issue.message
    # named as what it is, no such issue
    assert not [
        i for i in inspect(MEMORY_FILE.encode(), "memory").issues if i.code == "manager-mismatch"
    ]
    assert not [i for i in inspect(MEMORY_FILE.encode()).issues if i.code == "manager-mismatch"]


@pytest.mark.parametrize(
    ("policy", "manager_key", "flagged"),
    [
        pytest.param("static", '"defaultCpuSet":"0-3"', False, id="cpu-static"),
        pytest.param("none", '"defaultCpuSet":"0-3"', False, id="cpu-none"),
        pytest.param("Static", '"defaultCpuSet":"0-3"', True, id="cpu-wrong-case"),
        pytest.param("<b>x\u0007", '"defaultCpuSet":"0-3"', True, id="cpu-hostile"),
        pytest.param("Static", '"machineState":{}', False, id="memory-static"),
        pytest.param("static", '"machineState":{}', True, id="memory-wrong-case"),
    ],
)
def test_a_policy_name_no_kubelet_has_is_an_error_quoted_not_echoed(
    policy: str, manager_key: str, flagged: bool
) -> None:
    text = '{"policyName":' + json.dumps(policy) + "," + manager_key + ',"checksum":1}'
    found = [i for i in inspect(text.encode()).issues if i.code == "unknown-policy"]
    assert bool(found) is flagged
    if flagged:
        assert found[0].severity == "error"
        assert go_quote(policy) in found[0].message
        assert "\u0007" not in found[0].message


_LEAN_FILES = [
    (write_cpu_checkpoint(CPU_STATE, "V2"), "cpu"),
    (write_cpu_checkpoint(CPU_STATE, "V4"), "cpu"),
    (write_memory_checkpoint(MEM_STATE, "V1"), "memory"),
    (write_memory_checkpoint(MEM_STATE, "V3"), "memory"),
    ('{"policyName":"none","defaultCpuSet":"0-3","checksum":12345}', "cpu"),  # invalid
    ('{"policyName":"bogus","defaultCpuSet":"0-3","checksum":0}', "cpu"),  # unknown policy
    ('{"policyName":"none","defaultCpuSet":"0-3"', "cpu"),  # truncated
]


@pytest.mark.parametrize(("content", "manager"), _LEAN_FILES)
@pytest.mark.parametrize("lean_first", [True, False])
def test_a_report_without_findings_is_the_full_report_without_them(
    content: str, manager: str, lean_first: bool
) -> None:
    """``findings=False`` leaves the checksums and issues of a readable file out, nothing
    else; kept reports answer for each other in either order as a cold inspection would."""
    targets = TARGETS[-2:]
    forget()
    cold = inspect(content, manager, targets=targets)
    forget()
    first = inspect(content, manager, targets=targets, findings=not lean_first)
    second = inspect(content, manager, targets=targets, findings=lean_first)
    full, lean = (second, first) if lean_first else (first, second)
    assert full == cold
    if not full.readable:
        assert lean == full  # an unreadable file's issue is what its verdicts stand on
    elif lean_first:
        assert full.checksums  # every readable file has its checksum reported
        assert lean == replace(full, checksums=(), issues=())
    else:
        assert lean is full  # the kept full report answers

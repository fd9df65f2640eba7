"""``numascope checkpoint inspect|convert|check``: output, JSON, exit codes (0 ok, 1 problem,
2 usage), hostile files, and the fixtures being what the domain writers produce."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from app.cli import main
from app.domain.checkpoint import CPUCheckpointState, inspect, write_cpu_checkpoint
from app.domain.cpuset import CPUSet
from tests.fixtures.checkpoints.generate import HERE, POD_B, fixtures, write_huge

F = HERE


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["checkpoint", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def usage_exit(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["checkpoint", *argv])
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("rel", sorted(fixtures()), ids=str)
def test_fixture_files_are_what_the_generator_builds(rel: str) -> None:
    assert (F / rel).read_text(encoding="utf-8") == fixtures()[rel], (
        "run: .venv/bin/python -m tests.fixtures.checkpoints.generate"
    )


# -- inspect -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "heading"),
    [
        (
            "kubelet-1.35/cpu_manager_state",
            "cpu_manager_state V2 (1.18–1.35; 1.36 gate off family)",
        ),
        ("kubelet-1.35/memory_manager_state", "memory_manager_state V1 (1.21–1.35; 1.36 gate off"),
        ("kubelet-1.36-gate-on/cpu_manager_state", "cpu_manager_state V3 (1.36 pod-level family)"),
        ("kubelet-1.36-gate-on/memory_manager_state", "memory_manager_state V2 (1.36 pod-level"),
        ("kubelet-1.37/cpu_manager_state", "cpu_manager_state V4 (1.37 family)  ·  CPU V4 (1.37)"),
        ("kubelet-1.37/memory_manager_state", "memory_manager_state V3 (1.37 family)"),
    ],
    ids=["1.35-cpu", "1.35-memory", "1.36-cpu", "1.36-memory", "1.37-cpu", "1.37-memory"],
)
def test_inspect_valid_files(capsys: pytest.CaptureFixture[str], rel: str, heading: str) -> None:
    code, out, err = run(capsys, "inspect", str(F / rel))
    assert code == 0, out
    assert err == ""
    assert out.startswith(heading)
    for section in ("Checksums", "Compatibility", "Entries", "Result: OK"):
        assert section in out
    assert " valid " in out


def test_inspect_v3_shows_pod_entries_verdicts_and_kubelet_texts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "inspect", str(F / "kubelet-1.36-gate-on" / "cpu_manager_state"))
    assert code == 0
    assert "Pod entries (pod-level CPU budget)" in out
    assert f"{POD_B}  4-7" in out
    lines = {
        line.split("  ")[1].strip(): line for line in out.splitlines() if line.startswith("  1.")
    }
    assert "will-fail [FAIL]" in lines["1.18–1.35"]
    assert "kubelet error: checkpoint is corrupted" in lines["1.18–1.35"]
    assert "compatible [ok]" in lines["1.36 gate on"]
    # read without the pod entries, CPUs 6-7 are in no entry: validateState refuses to start
    assert "will-fail [FAIL]" in lines["1.37 gate off"]
    assert "1.35 cannot read `podEntries`, so its checksum check of this V3 file fails" in out
    assert f"lost: podEntries[{POD_B}] (cpuSet 4-7)" in out
    assert "could not restore state from checkpoint: checkpoint is corrupted, please drain" in out


def test_inspect_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "inspect", str(F / "kubelet-1.37" / "memory_manager_state"), "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert (doc["version"], doc["family"], doc["manager"]) == ("V3", "1.37", "memory")
    assert doc["display"] == "memory_manager_state V3 (1.37 family)"
    assert [c["field"] for c in doc["checksums"]] == ["checksum", "dataChecksum"]
    assert {c["status"] for c in doc["checksums"]} == {"valid"}
    assert all(c["stored"] == c["computed"] for c in doc["checksums"])
    assert [v["target"] for v in doc["verdicts"]][-1] == "1.38-gate-on"
    assert doc["ok"] is True and doc["problems"] == []
    assert doc["state"]["podEntries"][POD_B][0]["size"] == 2 * 1024**3


def test_inspect_target_subset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "inspect",
        str(F / "kubelet-1.37" / "cpu_manager_state"),
        "--target",
        "1.36",
        "--json",
    )
    assert code == 0
    assert [v["target"] for v in json.loads(out)["verdicts"]] == ["1.36-gate-off", "1.36-gate-on"]


@pytest.mark.parametrize(
    ("rel", "extra", "needle"),
    [
        ("corrupt/cpu_manager_state", (), "checksum invalid: stored"),
        ("truncated/cpu_manager_state", (), "unreadable: not valid JSON: unexpected end of JSON"),
        ("policy-mismatch/cpu_manager_state", ("--policy", "static"), "policy mismatch"),
    ],
    ids=["corrupt", "truncated", "policy-mismatch"],
)
def test_inspect_problem_files_exit_1(
    capsys: pytest.CaptureFixture[str], rel: str, extra: tuple[str, ...], needle: str
) -> None:
    code, out, _ = run(capsys, "inspect", str(F / rel), *extra)
    assert code == 1
    assert "Result: PROBLEM" in out and needle in out


def test_inspect_truncated_file_still_has_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", str(F / "truncated" / "cpu_manager_state"), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["readable"] is False
    assert {v["error"] for v in doc["verdicts"]} == {"unexpected end of JSON input"}


def test_inspect_policy_mismatch_shows_the_kubelet_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "inspect", str(F / "policy-mismatch" / "cpu_manager_state"), "--policy", "static"
    )
    assert code == 1
    assert 'configured policy "static" differs from state checkpoint policy "none"' in out
    assert "policy-mismatch [POLICY]" in out


def test_inspect_a_17_mib_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_huge(tmp_path / "cpu_manager_state")
    code, out, _ = run(capsys, "inspect", str(path))
    assert code == 1
    assert f"({path.stat().st_size} bytes)" in out
    assert "files larger than 16777216 bytes (16 MiB) are refused" in out


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00\xff\xfe garbage", b"[" * 20000, b'{"a":' * 5000, b'"just a string"', b"{}"],
    ids=["empty", "binary", "deep-array", "deep-object", "string", "empty-object"],
)
def test_inspect_hostile_files_give_a_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "state"
    path.write_bytes(content)
    code, out, _ = run(capsys, "inspect", str(path))
    assert code == 1
    assert "Result: PROBLEM" in out


def test_inspect_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "inspect", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, "inspect", str(tmp_path))
    assert code == 2 and "is a directory" in err
    code, _, err = run(
        capsys, "inspect", str(F / "kubelet-1.35" / "cpu_manager_state"), "--target", "2.1"
    )
    assert code == 2 and "not modelled" in err
    assert "invalid choice: 'gpu'" in usage_exit(capsys, "inspect", "x", "--manager", "gpu")
    assert "the following arguments are required: FILE" in usage_exit(capsys, "inspect")


def test_no_action_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoint"]) == 2
    assert "inspect" in capsys.readouterr().err


# -- convert -----------------------------------------------------------------------------------------


def test_convert_writes_and_reports_what_is_lost(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "cpu_manager_state"
    code, text, _ = run(
        capsys,
        "convert",
        str(F / "kubelet-1.36-gate-on" / "cpu_manager_state"),
        "--release",
        "1.35",
        "--out",
        str(out),
    )
    assert code == 0
    assert "to V2 for a 1.18–1.35 kubelet" in text
    assert f"  - podEntries[{POD_B}] (cpuSet 4-7)" in text
    assert "only while the kubelet is stopped" in text
    assert inspect(out.read_bytes()).version.version == "V2"  # type: ignore[union-attr]
    assert os.listdir(tmp_path) == ["cpu_manager_state"]


def test_convert_in_place_keeps_a_backup(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "memory_manager_state"
    shutil.copy(F / "kubelet-1.37" / "memory_manager_state", path)
    original = path.read_bytes()
    code, out, _ = run(capsys, "convert", str(path), "--to", "V2", "--out", str(path), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["sameFile"] is True and doc["toVersion"] == "V2"
    backup = Path(doc["backup"])
    assert backup.parent == tmp_path
    assert backup.name.startswith("memory_manager_state.") and backup.name.endswith("Z.bak")
    assert backup.read_bytes() == original
    assert inspect(path.read_bytes()).version.version == "V2"  # type: ignore[union-attr]


def test_convert_refuses_a_corrupt_source_unless_forced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "cpu_manager_state"
    src = str(F / "corrupt" / "cpu_manager_state")
    code, stdout, err = run(capsys, "convert", src, "--to", "V4", "--out", str(out))
    assert code == 1 and stdout == ""
    assert "refusing to convert" in err and "use --force" in err
    assert not out.exists()
    code, stdout, _ = run(capsys, "convert", src, "--to", "V4", "--out", str(out), "--force")
    assert code == 0 and "forced:" in stdout
    assert out.exists()


def test_convert_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = str(F / "kubelet-1.35" / "memory_manager_state")
    out = str(tmp_path / "o")
    code, _, err = run(capsys, "convert", src, "--out", out)
    assert code == 2 and "give --to VERSION or --release" in err
    code, _, err = run(capsys, "convert", src, "--to", "V4", "--out", out)
    assert code == 2 and "memory_manager_state has no version 'V4'" in err
    code, _, err = run(capsys, "convert", str(tmp_path / "none"), "--to", "V2", "--out", out)
    assert code == 2 and "does not exist" in err
    assert "--out" in usage_exit(capsys, "convert", src, "--to", "V2")
    assert os.listdir(tmp_path) == []


# -- check -------------------------------------------------------------------------------------------


def test_check_same_release_is_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(F / "kubelet-1.35"), "--target", "1.35")
    assert code == 0
    assert "cpu_manager_state: compatible [ok]" in out
    assert "memory_manager_state: compatible [ok]" in out
    assert (
        "Kubelet config:   " in out and "config.yaml (policies cpu: static, memory: Static)" in out
    )
    assert "Result: OK" in out
    assert "Pods dir:         none (stale entries are not checked)" in out


def test_check_reports_stale_entries(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "kubelet"
    shutil.copytree(F / "kubelet-1.35", root)
    (root / "pods").mkdir()
    code, out, _ = run(capsys, "check", str(root), "--target", "1.35")
    assert code == 0
    assert "Pods dir:         0 pods (stale entries are checked)" in out
    assert "warning  stale-entry" in out


def test_check_a_downgrade_says_no_conversion_rescues_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1.36 files (gate on) -> 1.35: checkpoint is corrupted, and converting to V2 does not help
    either: the pod's CPUs 6-7 are in no container entry, so 1.35's validateState refuses the
    converted file (it used to be offered as a rescue)."""
    root = F / "kubelet-1.36-gate-on"
    code, out, _ = run(capsys, "check", str(root), "--target", "1.35")
    assert code == 1
    assert "cpu_manager_state: will-fail [FAIL]" in out
    assert "kubelet error: checkpoint is corrupted" in out
    assert f'checkpoint file "{root}/cpu_manager_state" before restarting Kubelet' in out
    assert "rescue:" not in out
    assert "no conversion keeps this kubelet starting" in out
    assert "Result: PROBLEM — cpu_manager_state will-fail, memory_manager_state will-fail" in out


def test_check_gate_sources(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(F / "kubelet-1.37"), "--target", "1.37")
    assert code == 1
    assert "PodLevelResourceManagers off (the release default; pass --gate on" in out
    assert "will-fail [FAIL]" in out and "validateState" in out
    code, out, _ = run(capsys, "check", str(F / "kubelet-1.37"), "--target", "1.37", "--gate", "on")
    assert code == 0
    assert "PodLevelResourceManagers on (from --gate)" in out


def test_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "check", str(F / "kubelet-1.37"), "--target", "1.36-gate-on", "--json"
    )
    assert code == 1
    doc = json.loads(out)
    assert doc["target"]["key"] == "1.36-gate-on" and doc["gateSource"] == "target"
    # read without the pod entries, the start-up validation refuses both files; converting to
    # 1.36's own versions keeps the pod entries, so the node starts
    assert [f["status"] for f in doc["files"]] == ["will-fail"] * 2
    assert [f["rescues"][0]["toVersion"] for f in doc["files"]] == ["V3", "V2"]
    assert [f["rescues"][0]["verdict"] for f in doc["files"]] == ["compatible"] * 2
    assert doc["files"][0]["verdict"]["lost"] == [f"podEntries[{POD_B}] (cpuSet 4-7)"]


def test_check_policy_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(F / "policy-mismatch"), "--target", "1.37")
    assert code == 1
    assert "cpu_manager_state: policy-mismatch [POLICY]" in out
    assert "memory_manager_state: missing" in out


def test_check_a_corrupt_file_recommends_the_recovery(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(F / "corrupt"), "--target", "1.35")
    assert code == 1
    assert "checksum invalid: stored" in out
    assert "no conversion keeps this kubelet starting: drain the node" in out
    assert "cpu_manager_state and " in out and "/memory_manager_state" in out


def test_check_a_17_mib_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write_huge(tmp_path / "memory_manager_state")
    code, out, _ = run(capsys, "check", str(tmp_path), "--target", "1.37")
    assert code == 1
    assert "memory_manager_state: will-fail [FAIL]" in out
    assert "16 MiB" in out


def test_check_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "none"), "--target", "1.35")
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, "check", str(tmp_path), "--target", "1.35", "--gate", "on")
    assert code == 2 and "does not exist in 1.18–1.35" in err
    code, _, err = run(capsys, "check", str(tmp_path), "--target", "banana")
    assert code == 2 and "unknown kubelet release" in err
    assert "--target" in usage_exit(capsys, "check", str(tmp_path))
    assert "invalid choice: 'maybe'" in usage_exit(
        capsys, "check", str(tmp_path), "--target", "1.37", "--gate", "maybe"
    )


def test_check_never_writes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "kubelet"
    shutil.copytree(F / "kubelet-1.36-gate-on", root)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.iterdir()}
    run(capsys, "check", str(root), "--target", "1.35")
    run(capsys, "inspect", str(root / "cpu_manager_state"))
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.iterdir()} == before


def test_inspect_two_thousand_entries_on_cpu_0_prints_one_capped_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 13: this file used to print one line per pair of pods (1,999,000 of them).
    entries = {str(uuid.UUID(int=i)): {"app": CPUSet.parse("0")} for i in range(2000)}
    state = CPUCheckpointState("static", CPUSet.parse("1-3"), entries)
    f = tmp_path / "cpu_manager_state"
    f.write_text(write_cpu_checkpoint(state, "v2"))
    code, out, _ = run(capsys, "inspect", str(f), "--json")
    assert code == 1
    report = json.loads(out)
    found = [i for i in report["issues"] if i["code"] == "overlapping-exclusive"]
    assert [i["message"].split(":")[0] for i in found] == ["2000 pods all hold CPUs 0"]
    code, out, _ = run(capsys, "inspect", str(f))
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("  error    overlapping-")]
    assert len(lines) == 1 and lines[0].endswith(" and 1990 more")
    assert len(out.splitlines()) < 2000 + 100  # the entries table, one line per entry

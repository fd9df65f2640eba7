"""Checkpoint use cases: inspection views, conversions with backups, kubelet root dir checks."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from app.cli import main
from app.domain.checkpoint import (
    TARGETS,
    CPUCheckpointState,
    Reader,
    inspect,
    write_cpu_checkpoint,
)
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.services.checkpoints import (
    CheckpointFileError,
    CheckpointUsageError,
    ConversionRefusedError,
    backup_name,
    check_root_dir,
    convert_file,
    inspect_content,
    inspect_kubelet_file,
    inspect_path,
    kubelet_files,
    parse_manager,
    parse_policy,
    parse_targets,
    resolve_target,
)
from app.services.demo import bubble_pod
from tests.fixtures.checkpoints.generate import POD_A, POD_B, write_huge

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
KUBELET = Path(__file__).resolve().parents[1] / "fixtures" / "kubelet"
ALL = (
    "1.17",
    "1.35",
    "1.36-gate-off",
    "1.36-gate-on",
    "1.37-gate-off",
    "1.37-gate-on",
    "1.38-gate-off",
    "1.38-gate-on",
)
OK, LOSS, FAIL = "compatible", "compatible-with-loss", "will-fail"


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


# -- arguments ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("auto", None),
        ("cpu", "cpu"),
        ("CPU", "cpu"),
        ("memory", "memory"),
        ("mem", "memory"),
        ("cpu_manager_state", "cpu"),
        ("memory_manager_state", "memory"),
    ],
    ids=["none", "empty", "auto", "cpu", "upper", "memory", "mem", "cpu-file", "memory-file"],
)
def test_parse_manager(value: str | None, expected: str | None) -> None:
    assert parse_manager(value) == expected


def test_parse_manager_rejects_unknown_names() -> None:
    with pytest.raises(CheckpointUsageError, match="unknown manager 'gpu'") as err:
        parse_manager("gpu")
    assert err.value.field == "manager"


@pytest.mark.parametrize(
    ("value", "keys"),
    [
        (None, ALL),
        ("all", ALL),
        ("1.35", ("1.35",)),
        ("1.29", ("1.35",)),
        ("<=1.17", ("1.17",)),
        ("1.36", ("1.36-gate-off", "1.36-gate-on")),
        ("1.37-gate-on", ("1.37-gate-on",)),
        ("1.37 gate off, 1.35", ("1.37-gate-off", "1.35")),
        ("1.36-on,1.36-gate-on", ("1.36-gate-on",)),
    ],
    ids=["default", "all", "1.35", "family", "le-1.17", "both-gates", "gate-on", "list", "dedup"],
)
def test_parse_targets(value: str | None, keys: tuple[str, ...]) -> None:
    assert tuple(t.key for t in parse_targets(value)) == keys


@pytest.mark.parametrize(
    "value", ["2.0", "1.40", "latest", ","], ids=["2.0", "1.40", "word", "empty"]
)
def test_parse_targets_rejects_unknown_releases(value: str) -> None:
    with pytest.raises(CheckpointUsageError) as err:
        parse_targets(value)
    assert err.value.field == "target"


def test_parse_policy_keeps_the_spelling() -> None:
    assert parse_policy(" Static ") == "Static"
    assert parse_policy("") is None
    assert parse_policy(None) is None


@pytest.mark.parametrize(
    ("target", "gate", "config_gate", "key", "source"),
    [
        ("1.35", None, None, "1.35", "n/a"),
        ("1.36", None, None, "1.36-gate-off", "default"),
        ("1.36", True, None, "1.36-gate-on", "flag"),
        ("1.37", None, True, "1.37-gate-on", "config"),
        ("1.37", False, True, "1.37-gate-off", "flag"),
        ("1.36-gate-on", None, False, "1.36-gate-on", "target"),
        ("1.36-gate-on", True, None, "1.36-gate-on", "target"),
    ],
    ids=["1.35", "default-off", "flag", "config", "flag-beats-config", "spelt", "spelt-and-flag"],
)
def test_resolve_target(
    target: str, gate: bool | None, config_gate: bool | None, key: str, source: str
) -> None:
    config = None
    if config_gate is not None:
        config = KubeletConfig(
            release="1.37",
            feature_gates={"PodLevelResources": True, "PodLevelResourceManagers": config_gate},
        )
    reader, found = resolve_target(target, gate, config)
    assert (reader.key, found) == (key, source)


@pytest.mark.parametrize(
    ("target", "gate", "match"),
    [
        ("1.35", True, "does not exist in 1.18–1.35"),
        ("1.17-gate-on", None, "does not exist"),
        ("1.36-gate-on", False, "disagree"),
        ("9.9", None, "not modelled"),
    ],
    ids=["gate-on-1.35", "gate-on-1.17", "conflict", "unknown"],
)
def test_resolve_target_errors(target: str, gate: bool | None, match: str) -> None:
    with pytest.raises(CheckpointUsageError, match=match):
        resolve_target(target, gate)


# -- inspection --------------------------------------------------------------------------------------

# The pod-level pod of the fixtures (POD_B: budget CPUs 4-7 and 2 GiB, one container ``app``
# with CPUs 4-5 and 1 GiB, no shared-pool container) is a shape whose files a release reads
# without the pod entries and then refuses at Start (validateState): the LOSS verdicts of
# the gate-off and 1.36-on-1.37 readers became FAIL with the start-up model.
VERDICTS = {
    ("kubelet-1.35", "cpu_manager_state"): ("V2", (FAIL, OK, OK, OK, OK, OK, OK, OK)),
    ("kubelet-1.35", "memory_manager_state"): ("V1", (OK, OK, OK, OK, OK, OK, OK, OK)),
    ("kubelet-1.36-gate-on", "cpu_manager_state"): (
        "V3",
        (FAIL, FAIL, FAIL, OK, FAIL, OK, FAIL, OK),
    ),
    ("kubelet-1.36-gate-on", "memory_manager_state"): (
        "V2",
        (OK, FAIL, FAIL, OK, FAIL, OK, FAIL, OK),
    ),
    ("kubelet-1.37", "cpu_manager_state"): ("V4", (FAIL, FAIL, FAIL, FAIL, FAIL, OK, FAIL, OK)),
    ("kubelet-1.37", "memory_manager_state"): ("V3", (OK, FAIL, FAIL, FAIL, FAIL, OK, FAIL, OK)),
}


@pytest.mark.parametrize(
    ("where", "expected"), list(VERDICTS.items()), ids=[f"{d}/{m}" for d, m in VERDICTS]
)
def test_inspect_path_verdicts_per_release(
    where: tuple[str, str], expected: tuple[str, tuple[str, ...]]
) -> None:
    view = inspect_path(FIXTURES / where[0] / where[1])
    version, verdicts = expected
    assert view.report.version is not None and view.report.version.version == version
    assert tuple(v.target for v in view.report.verdicts) == ALL
    assert tuple(v.verdict for v in view.report.verdicts) == verdicts
    assert view.ok and view.problems == []
    d = view.to_dict()
    assert d["source"].endswith(where[1])
    assert d["family"] == view.report.version.family
    assert d["display"].startswith(where[1])


def test_inspect_shows_family_with_the_version_and_the_content_tables() -> None:
    view = inspect_path(FIXTURES / "kubelet-1.36-gate-on" / "memory_manager_state")
    assert view.report.version is not None
    assert view.report.version.display == "memory_manager_state V2 (1.36 pod-level family)"
    tables = {t.key: t for t in view.tables}
    assert list(tables) == ["machineState", "entries", "podEntries"]
    assert tables["podEntries"].rows == ((POD_B, "memory 2 GiB on NUMA 1"),)
    assert tables["machineState"].rows[1][:2] == ("1", "memory")
    cpu = inspect_path(FIXTURES / "kubelet-1.37" / "cpu_manager_state")
    assert {t.key: t.rows for t in cpu.tables}["podEntries"] == ((POD_B, "4-7", "4"),)


def test_corrupt_file_is_a_problem_with_an_invalid_checksum() -> None:
    view = inspect_path(FIXTURES / "corrupt" / "cpu_manager_state")
    (c,) = view.report.checksums
    assert c.status == "invalid" and c.stored != c.computed
    assert not view.ok
    assert view.problems[0].startswith("checksum invalid")
    assert {v.verdict for v in view.report.verdicts} == {FAIL}
    for key in ("1.35", "1.37-gate-on"):
        verdict = view.report.verdict_for(key)
        assert verdict is not None and verdict.error == "checkpoint is corrupted"


def test_truncated_file_gets_verdicts_through_its_name() -> None:
    view = inspect_path(FIXTURES / "truncated" / "cpu_manager_state")
    assert not view.report.readable
    assert view.report.manager == "cpu"
    assert len(view.report.verdicts) == len(TARGETS)
    assert {v.error for v in view.report.verdicts} == {"unexpected end of JSON input"}
    anonymous = inspect_content(
        (FIXTURES / "truncated" / "cpu_manager_state").read_bytes(), source="upload"
    )
    assert anonymous.report.verdicts == ()
    assert not anonymous.ok


def test_policy_mismatch_is_a_problem_only_when_a_policy_is_configured() -> None:
    path = FIXTURES / "policy-mismatch" / "cpu_manager_state"
    assert inspect_path(path).ok
    view = inspect_path(path, policy="static")
    assert not view.ok
    assert "policy mismatch" in view.problems[0]
    verdict = view.report.verdict_for("1.35")
    assert verdict is not None and verdict.verdict == "policy-mismatch"
    assert verdict.error == 'configured policy "static" differs from state checkpoint policy "none"'


def test_a_huge_file_is_a_verdict_not_an_exception(tmp_path: Path) -> None:
    path = write_huge(tmp_path / "cpu_manager_state")
    view = inspect_path(path)
    assert not view.report.readable
    assert view.report.size == path.stat().st_size
    assert "16 MiB" in (view.report.error or "")
    assert [i.code for i in view.issues] == ["too-large"]


def test_inspect_path_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(CheckpointFileError, match="does not exist"):
        inspect_path(tmp_path / "nope")
    with pytest.raises(CheckpointFileError, match="is a directory"):
        inspect_path(tmp_path)


def test_consistency_findings_are_merged_into_issues() -> None:
    state = CPUCheckpointState(
        "static",
        CPUSet.parse("0-3"),
        {"pod-a": {"c1": CPUSet.parse("2-3")}, "pod-b": {"c2": CPUSet.parse("3-4")}},
    )
    view = inspect_content(write_cpu_checkpoint(state, "V2"), source="x")
    codes = [i.code for i in view.issues]
    assert view.consistency, "the overlaps are consistency findings"
    assert set(codes) >= {i.code for i in view.consistency}
    assert all(i.code not in ("checksum-invalid", "content-error") for i in view.consistency)
    assert [i["code"] for i in view.to_dict()["issues"]] == codes
    severities = [i.severity for i in view.issues]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)


def test_inspect_content_with_a_target_subset_and_a_state_dir() -> None:
    data = (FIXTURES / "kubelet-1.36-gate-on" / "cpu_manager_state").read_bytes()
    view = inspect_content(
        data, source="s", targets=parse_targets("1.35"), state_dir="/srv/kubelet"
    )
    (v,) = view.report.verdicts
    assert v.message is not None and '"/srv/kubelet/cpu_manager_state"' in v.message
    assert view.to_dict()["targets"] == ["1.35"]


# -- the server's kubelet root dir ---------------------------------------------------------------------


def test_kubelet_files_lists_state_files_and_copies(tmp_path: Path) -> None:
    root = _copy(tmp_path, "kubelet-1.35")
    (root / "cpu_manager_state.bak").write_bytes((root / "cpu_manager_state").read_bytes())
    view = kubelet_files(root)
    assert view.available
    assert [f.name for f in view.state_files] == [
        "cpu_manager_state",
        "memory_manager_state",
        "cpu_manager_state.bak",
    ]
    assert [f["name"] for f in view.to_dict()["files"]] == [f.name for f in view.state_files]
    report = inspect_kubelet_file(root, "cpu_manager_state.bak")
    assert report.report.manager == "cpu"


def test_kubelet_files_of_a_missing_dir_says_why(tmp_path: Path) -> None:
    view = kubelet_files(tmp_path / "none")
    assert not view.available
    assert "does not exist" in (view.problem or "")


@pytest.mark.parametrize("name", ["../x", "pods", "config.yaml", ".123"], ids=str)
def test_inspect_kubelet_file_reads_only_state_files(tmp_path: Path, name: str) -> None:
    root = _copy(tmp_path, "kubelet-1.35")
    with pytest.raises(CheckpointFileError):
        inspect_kubelet_file(root, name)


# -- conversion --------------------------------------------------------------------------------------


def _clock() -> str:
    return "20250102T030405Z"


def _listing(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def test_convert_to_a_new_file_for_a_release(tmp_path: Path) -> None:
    out = tmp_path / "out" / "cpu_manager_state"
    outcome = convert_file(
        FIXTURES / "kubelet-1.36-gate-on" / "cpu_manager_state", out, release="1.35"
    )
    assert outcome.result.to_version == "V2"
    assert outcome.backup is None and not outcome.same_file
    assert outcome.result.lost == (f"podEntries[{POD_B}] (cpuSet 4-7)",)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert _listing(out.parent) == ["cpu_manager_state"]
    report = inspect(out.read_bytes())
    verdict = report.verdict_for("1.35")
    assert verdict is not None and verdict.verdict == OK
    assert outcome.to_dict()["toVersion"] == "V2"


def test_convert_keeps_a_backup_of_an_existing_out(tmp_path: Path) -> None:
    out = tmp_path / "cpu_manager_state"
    out.write_text("previous content")
    outcome = convert_file(
        FIXTURES / "kubelet-1.37" / "cpu_manager_state", out, to_version="V3", clock=_clock
    )
    assert outcome.backup == tmp_path / "cpu_manager_state.20250102T030405Z.bak"
    assert outcome.backup.read_text() == "previous content"
    assert stat.S_IMODE(outcome.backup.stat().st_mode) == 0o600
    assert inspect(out.read_bytes()).version.version == "V3"  # type: ignore[union-attr]
    # A second conversion in the same second does not overwrite the first backup.
    second = convert_file(
        FIXTURES / "kubelet-1.35" / "cpu_manager_state", out, to_version="V2", clock=_clock
    )
    assert second.backup == tmp_path / "cpu_manager_state.20250102T030405Z-2.bak"
    assert outcome.backup.read_text() == "previous content"
    assert inspect(second.backup.read_bytes()).version.version == "V3"  # type: ignore[union-attr]
    assert all(not n.startswith(".") for n in _listing(tmp_path))


def test_convert_in_place_keeps_the_original_as_backup(tmp_path: Path) -> None:
    root = _copy(tmp_path, "kubelet-1.36-gate-on")
    path = root / "memory_manager_state"
    original = path.read_bytes()
    outcome = convert_file(path, path, release="1.36-gate-off", clock=_clock)
    assert outcome.same_file
    assert outcome.backup is not None and outcome.backup.read_bytes() == original
    assert inspect(path.read_bytes()).version.version == "V1"  # type: ignore[union-attr]
    # read as V1, POD_B's memory is in no entry 1.36 gate off keeps: Start refuses it
    check = check_root_dir(root, "1.36", gate=False)
    assert {f.name: f.status for f in check.files}["memory_manager_state"] == FAIL


def test_convert_leaves_an_identical_out_alone(tmp_path: Path) -> None:
    root = _copy(tmp_path, "kubelet-1.35")
    path = root / "cpu_manager_state"
    before = path.stat().st_mtime_ns
    outcome = convert_file(path, path, to_version="V2")
    assert outcome.unchanged and outcome.backup is None
    assert path.stat().st_mtime_ns == before
    assert _listing(root) == ["config.yaml", "cpu_manager_state", "memory_manager_state"]


def test_convert_refuses_a_corrupt_source_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "cpu_manager_state"
    out.write_text("keep me")
    src = FIXTURES / "corrupt" / "cpu_manager_state"
    with pytest.raises(ConversionRefusedError, match=r"does not match.*use --force"):
        convert_file(src, out, to_version="V4")
    assert _listing(tmp_path) == ["cpu_manager_state"]
    assert out.read_text() == "keep me"
    forced = convert_file(src, out, to_version="V4", force=True, clock=_clock)
    assert any(n.startswith("forced:") for n in forced.result.notes)
    assert forced.backup is not None and forced.backup.read_text() == "keep me"
    checks = inspect(out.read_bytes()).checksums
    assert [c.status for c in checks] == ["valid", "valid"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, CheckpointUsageError, "give --to VERSION or --release"),
        ({"to_version": "V9"}, CheckpointUsageError, "no version 'V9'"),
        ({"release": "3.0"}, CheckpointUsageError, "not modelled"),
        ({"to_version": "V2", "manager": "memory"}, ConversionRefusedError, "cannot convert"),
    ],
    ids=["no-version", "bad-version", "bad-release", "wrong-manager"],
)
def test_convert_argument_errors(
    tmp_path: Path, kwargs: dict[str, str], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        convert_file(FIXTURES / "kubelet-1.35" / "cpu_manager_state", tmp_path / "o", **kwargs)  # type: ignore[arg-type]
    assert _listing(tmp_path) == []


def test_convert_memory_versions_are_numbered_separately(tmp_path: Path) -> None:
    with pytest.raises(CheckpointUsageError, match="memory_manager_state has no version 'V4'"):
        convert_file(
            FIXTURES / "kubelet-1.35" / "memory_manager_state", tmp_path / "o", to_version="V4"
        )


@pytest.mark.parametrize("out", [".hidden", "dir"], ids=["dot-name", "directory"])
def test_convert_refuses_unusable_out_paths(tmp_path: Path, out: str) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(CheckpointUsageError, match="--out"):
        convert_file(
            FIXTURES / "kubelet-1.35" / "cpu_manager_state", tmp_path / out, to_version="V4"
        )


def test_backup_name_skips_taken_names(tmp_path: Path) -> None:
    out = tmp_path / "f"
    assert backup_name(out, "S") == "f.S.bak"
    (tmp_path / "f.S.bak").write_text("")
    (tmp_path / "f.S-2.bak").write_text("")
    assert backup_name(out, "S") == "f.S-3.bak"


# -- checking a root dir -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "target", "gate", "statuses", "ok"),
    [
        ("kubelet-1.35", "1.35", None, (OK, OK), True),
        ("kubelet-1.35", "1.37", True, (OK, OK), True),
        ("kubelet-1.36-gate-on", "1.35", None, (FAIL, FAIL), False),
        ("kubelet-1.36-gate-on", "1.36", True, (OK, OK), True),
        ("kubelet-1.36-gate-on", "1.36", False, (FAIL, FAIL), False),
        ("kubelet-1.36-gate-on", "1.37", True, (OK, OK), True),
        ("kubelet-1.37", "1.36", True, (FAIL, FAIL), False),
        ("kubelet-1.37", "1.37", True, (OK, OK), True),
        ("kubelet-1.37", "1.17", None, (FAIL, OK), False),
        ("corrupt", "1.35", None, (FAIL, "missing"), False),
        ("truncated", "1.37", True, (FAIL, "missing"), False),
    ],
    ids=[
        "1.35-same",
        "1.35-upgrade",
        "1.36-downgrade-to-1.35",
        "1.36-same",
        "1.36-gate-turned-off",
        "1.36-upgrade",
        "1.37-downgrade",
        "1.37-same",
        "1.37-to-1.17",
        "corrupt",
        "truncated",
    ],
)
def test_check_root_dir_verdicts(
    fixture: str, target: str, gate: bool | None, statuses: tuple[str, str], ok: bool
) -> None:
    check = check_root_dir(FIXTURES / fixture, target, gate=gate)
    assert tuple(f.status for f in check.files) == statuses
    assert check.ok is ok
    d = check.to_dict()
    assert d["ok"] is ok and [f["status"] for f in d["files"]] == list(statuses)


def _simulated_root(tmp_path: Path, release: str, manifest: str) -> Path:
    """A kubelet root dir written by ``numascope simulate`` (the engine's own files)."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(manifest)
    root = tmp_path / "root"
    code = main(["simulate", "--topology", "topoDualSocketHT", "--kubelet-config",
                 str(KUBELET / "pod-scope-single-numa.yaml"), "--release", release,
                 "--state-dir", str(root), str(pod)])  # fmt: skip
    assert code == 0
    return root


def test_check_suggests_the_conversions_that_rescue_a_downgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod-level pod whose one container holds the whole budget: its container entries cover
    the pod's CPUs and memory, so 1.35 starts on the files converted to V2/V1."""
    root = _simulated_root(tmp_path, "1.36", bubble_pod("solo", "prod", 2, {"main": 2}, ()))
    capsys.readouterr()
    check = check_root_dir(root, "1.35")
    cpu, memory = check.files
    assert [r.to_version for r in cpu.rescues] == ["V2", "V4"]
    assert [r.to_version for r in memory.rescues] == ["V1", "V3"]
    assert cpu.rescues[0].lost[0].startswith("podEntries[")
    assert cpu.verdict is not None and cpu.verdict.error == "checkpoint is corrupted"
    assert cpu.verdict.why == (
        "1.35 cannot read `podEntries`, so its checksum check of this V3 file fails"
    )
    assert f'"{root}/cpu_manager_state"' in (cpu.verdict.message or "")
    # Following the first suggestion for each file makes the directory start.
    for f in check.files:
        rescue = f.rescues[0]
        assert rescue.command.startswith("numascope checkpoint convert ")
        convert_file(f.path, f.path, to_version=rescue.to_version, release="1.35")
    again = check_root_dir(root, "1.35")
    assert [f.status for f in again.files] == [OK, OK]
    backups = sorted(n for n in os.listdir(root) if n.endswith(".bak"))
    assert len(backups) == 2


def test_check_a_downgrade_no_conversion_rescues(tmp_path: Path) -> None:
    """The fixtures' POD_B (no shared-pool container, exclusive CPUs below the budget): V2
    drops the pod entries and 1.35's validateState then finds CPUs 6-7 in no entry."""
    root = _copy(tmp_path, "kubelet-1.36-gate-on")
    check = check_root_dir(root, "1.35")
    assert [f.rescues for f in check.files] == [(), ()]
    assert all(any("remove " in a for a in f.advice) for f in check.files)


def test_check_a_1_37_downgrade_to_1_36_gate_on_is_rescued_by_v3() -> None:
    check = check_root_dir(FIXTURES / "kubelet-1.37", "1.36-gate-on")
    assert [[r.to_version for r in f.rescues] for f in check.files] == [["V3"], ["V2"]]
    assert all(r.verdict == OK and r.lost == () for f in check.files for r in f.rescues)


def test_check_without_the_gate_advises_it() -> None:
    check = check_root_dir(FIXTURES / "kubelet-1.37", "1.37")
    assert check.gate_source == "default"
    assert all(f.status == FAIL for f in check.files)
    assert any("enabling the gate" in a for f in check.files for a in f.advice)


def test_check_uses_the_kubelet_config_of_the_root_dir() -> None:
    check = check_root_dir(FIXTURES / "policy-mismatch", "1.36")
    assert check.config_path is not None and check.config_path.endswith("config.yaml")
    assert check.policies == {"cpu": "static", "memory": "Static"}
    cpu = check.files[0]
    assert cpu.status == "policy-mismatch"
    assert cpu.verdict is not None
    assert (
        cpu.verdict.error
        == 'configured policy "static" differs from state checkpoint policy "none"'
    )
    assert not check.ok


def test_check_with_an_explicit_config_that_enables_the_gate(tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "cpuManagerPolicy: static\nmemoryManagerPolicy: Static\n"
        "featureGates:\n  PodLevelResourceManagers: true\n"
    )
    check = check_root_dir(FIXTURES / "kubelet-1.37", "1.37", config_file=config)
    assert check.target == Reader("1.37", True)
    assert check.gate_source == "config"
    assert check.ok


def test_check_reports_an_unusable_config_yaml_as_a_warning(tmp_path: Path) -> None:
    root = _copy(tmp_path, "kubelet-1.35")
    (root / "config.yaml").write_text("cpuManagerPolicy: [not, a, string]\n")
    check = check_root_dir(root, "1.35")
    assert check.config_problem is not None
    assert [i.code for i in check.issues] == ["kubelet-config-unreadable"]
    assert check.policies == {"cpu": None, "memory": None}


def test_check_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointFileError, match="does not exist"):
        check_root_dir(tmp_path / "none", "1.35")
    (tmp_path / "file").write_text("")
    with pytest.raises(CheckpointFileError, match="not a directory"):
        check_root_dir(tmp_path / "file", "1.35")
    with pytest.raises(CheckpointFileError, match="does not exist"):
        check_root_dir(FIXTURES / "kubelet-1.35", "1.35", config_file=tmp_path / "missing.yaml")
    with pytest.raises(CheckpointUsageError, match="does not exist in"):
        check_root_dir(FIXTURES / "kubelet-1.35", "1.35", gate=True)


def test_check_an_empty_dir_is_fine(tmp_path: Path) -> None:
    check = check_root_dir(tmp_path, "1.37")
    assert [f.status for f in check.files] == ["missing", "missing"]
    assert check.ok and check.issues == ()


def test_check_a_huge_state_file(tmp_path: Path) -> None:
    write_huge(tmp_path / "cpu_manager_state")
    check = check_root_dir(tmp_path, "1.37")
    cpu = check.files[0]
    assert cpu.status == FAIL and cpu.rescues == ()
    assert cpu.view is not None and "16 MiB" in (cpu.view.report.error or "")
    assert not check.ok


def test_stale_entries_from_the_pods_dir(tmp_path: Path) -> None:
    root = _copy(tmp_path, "kubelet-1.37")
    assert check_root_dir(root, "1.37", gate=True).pod_uids is None
    (root / "pods" / POD_A).mkdir(parents=True)
    check = check_root_dir(root, "1.37", gate=True)
    assert check.pod_uids == (POD_A,)
    stale = [i for i in check.issues if i.code == "stale-entry"]
    assert [i.message.split(":")[0] for i in stale] == [
        "cpu_manager_state",
        "memory_manager_state",
    ]
    assert all(POD_B in i.message and i.severity == "warning" for i in stale)
    assert check.ok  # a warning: the kubelet drops stale entries itself
    view = inspect_kubelet_file(root, "cpu_manager_state")
    assert [i.code for i in view.issues] == ["stale-entry"]
    assert check.to_dict()["podUids"] == [POD_A]


def test_a_file_with_too_many_members_gets_a_report_not_a_decoding() -> None:
    from app.domain.checkpoint import CPUCheckpointState, write_cpu_checkpoint
    from app.domain.cpuset import CPUSet
    from app.services.checkpoints import MAX_INSPECT_MEMBERS, TOO_MANY_MEMBERS

    entries = {f"pod-{i}": {"c": CPUSet([i % 8])} for i in range(MAX_INSPECT_MEMBERS // 2 + 1)}
    text = write_cpu_checkpoint(CPUCheckpointState("static", CPUSet(), entries), "v2")
    view = inspect_content(text, source="cpu_manager_state")
    assert not view.report.readable and view.report.manager == "cpu"
    assert [i.code for i in view.report.issues] == [TOO_MANY_MEMBERS]
    assert (
        view.report.error is not None and "the inspector reads at most 25000" in view.report.error
    )
    assert not view.ok and [i.code for i in view.issues] == [TOO_MANY_MEMBERS]
    assert view.tables == ()
    # One member fewer than the limit is inspected in full.
    fewer = dict(list(entries.items())[:-3])
    text = write_cpu_checkpoint(CPUCheckpointState("static", CPUSet(), fewer), "v2")
    assert inspect_content(text, source="cpu_manager_state").report.readable

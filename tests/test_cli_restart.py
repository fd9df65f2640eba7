"""``numascope restart``: a kubelet of another release on a simulated node's state directory
(outcomes per pod, start-up failures with recovery, lost entries, exit codes, nothing written
on bad input or a dry run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.domain.checkpoint import detect_version

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KUBELET = FIXTURES / "kubelet"
PODS = FIXTURES / "pods"
POD_SCOPE = str(KUBELET / "pod-scope-single-numa.yaml")
CLASSIC = str(KUBELET / "classic-static.yaml")
TOPO = "topoDualSocketHT"


def simulate(d: Path, release: str, config: str, *pods: str) -> None:
    main(["simulate", "--topology", TOPO, "--kubelet-config", config, "--release", release,
          "--state-dir", str(d), *(str(PODS / p) for p in pods)])  # fmt: skip


def restart(capsys: pytest.CaptureFixture[str], d: Path, *args: str) -> tuple[int, str, str]:
    code = main(["restart", "--state-dir", str(d), *args])
    out, err = capsys.readouterr()
    return code, out, err


def restart_json(
    capsys: pytest.CaptureFixture[str], d: Path, *args: str
) -> tuple[int, dict[str, Any]]:
    code, out, err = restart(capsys, d, "--json", *args)
    assert err == ""
    return code, json.loads(out)


def files(d: Path) -> dict[str, bytes]:
    return {n: (d / n).read_bytes() for n in sorted(os.listdir(d))}


@pytest.fixture
def pod_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    d = tmp_path / "node"
    simulate(d, "1.37", POD_SCOPE, "pod-level.yaml")
    capsys.readouterr()
    return d


@pytest.fixture
def classic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    d = tmp_path / "classic"
    simulate(d, "1.36", CLASSIC, "sidecar.yaml", "burstable.yaml")
    capsys.readouterr()
    return d


def by_pod(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["pod"]: p for p in doc["pods"]}


# -- outcomes ---------------------------------------------------------------------------------


def test_same_release_keeps_container_assignments_and_rewrites_the_same_bytes(
    classic: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = files(classic)
    code, doc = restart_json(capsys, classic, "--release", "1.36")
    assert code == 0
    assert doc["started"] is True and doc["error"] is None and doc["lost"] == []
    assert doc["previousRelease"] == "1.36" and doc["release"] == "1.36"
    pods = by_pod(doc)
    assert [p["outcome"] for p in doc["pods"]] == ["kept", "kept"]
    app = {c["name"]: c for c in pods["default/with-sidecar"]["containers"]}["app"]
    assert app["before"] == app["after"] and app["after"]
    assert doc["wrote"] is True
    assert files(classic) == before  # nothing moved: the kubelet writes what it read


def test_upgrade_writes_the_new_release_formats(
    classic: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = restart_json(capsys, classic, "--release", "1.37")
    assert code == 0 and doc["stateFiles"]["cpu"] == "V4"
    assert detect_version((classic / "cpu_manager_state").read_text(), "cpu").version == "V4"
    assert detect_version((classic / "memory_manager_state").read_text(), "memory").version == "V3"
    record = json.loads((classic / "pods.json").read_text())
    assert record["release"] == "1.37"
    assert [p["manifest"]["metadata"]["name"] for p in record["pods"]] == ["with-sidecar", "web"]


def test_138_restores_pod_level_allocations(
    pod_level: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = restart_json(capsys, pod_level, "--release", "1.38", "--dry-run")
    assert code == 0
    assert {p["outcome"] for p in doc["pods"]} == {"restored"}
    bubble = by_pod(doc)["ml/bubble"]
    assert bubble["podBudget"]["before"] == bubble["podBudget"]["after"] == "2,4,8,10"
    assert bubble["podMemory"]["before"] == bubble["podMemory"]["after"]
    assert bubble["podMemory"]["after"][0]["size"] == 8 * 1024**3


def test_137_rejects_its_own_pod_level_pods_and_gives_their_cpus_back(
    pod_level: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = restart_json(capsys, pod_level, "--release", "1.37")
    assert code == 1
    bubble = by_pod(doc)["ml/bubble"]
    assert bubble["outcome"] == "rejected"
    assert bubble["reason"] == "TopologyAffinityError"
    assert bubble["podBudget"] == {"before": "2,4,8,10", "after": None}
    assert {c["name"]: c["after"] for c in bubble["containers"]} == {
        "trainer": None,
        "logger": None,
    }
    record = json.loads((pod_level / "pods.json").read_text())
    assert record["pods"] == []  # a rejected pod does not run
    cpu = (pod_level / "cpu_manager_state").read_text()
    assert '"defaultCpuSet":"0-11"' in cpu and '"entries"' not in cpu


def test_a_kubelet_that_does_not_start_writes_nothing_and_says_how_to_recover(
    pod_level: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = files(pod_level)
    code, doc = restart_json(
        capsys, pod_level, "--release", "1.36", "--feature-gates", "PodLevelResourceManagers=true"
    )
    assert code == 1
    assert doc["started"] is False and doc["pods"] == [] and doc["wrote"] is False
    assert doc["error"].startswith("start memory manager error: ")
    assert any("drain" in s for s in doc["recovery"])
    assert any("cpu_manager_state" in s and "memory_manager_state" in s for s in doc["recovery"])
    assert (
        sorted(t.split(": ")[0] for t in doc["lost"])
        == ["cpu_manager_state"] * 2 + ["memory_manager_state"] * 2
    )
    # pods named, memory humanised (issue 21 point 2; the entries used to be named by UID)
    assert all("podEntries of " in t for t in doc["lost"])
    assert any(" GiB on NUMA " in t for t in doc["lost"])
    assert doc["lostPods"] and all("/" in p for p in doc["lostPods"])
    assert any("safely restores" in n and "validateState" in n for n in doc["notes"])
    assert files(pod_level) == before


def test_changed_policy_is_the_kubelets_refusal(
    classic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "none.yaml"
    config.write_text("kind: KubeletConfiguration\ncpuManagerPolicy: none\n")
    code, doc = restart_json(capsys, classic, "--release", "1.36", "--kubelet-config", str(config))
    assert code == 1 and not doc["started"]
    assert "configured policy" in doc["error"] and "cpu_manager_state" in doc["error"]


def test_missing_state_files_are_a_fresh_start(
    classic: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (classic / "cpu_manager_state").unlink()
    (classic / "memory_manager_state").unlink()
    code, doc = restart_json(capsys, classic, "--release", "1.37", "--dry-run")
    assert code == 1
    outcomes = {p["pod"]: p["outcome"] for p in doc["pods"]}
    assert outcomes == {"default/with-sidecar": "reallocated", "default/web": "kept"}


def test_text_report(pod_level: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = restart(capsys, pod_level, "--release", "1.38", "--dry-run")
    assert code == 0 and err == ""
    assert "kubelet 1.37 -> 1.38, PodLevelResourceManagers on" in out
    assert "not written (dry run)" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["ml/bubble", "restored", "(pod", "budget)", "2,4,8,10"] in rows
    assert "CPUs per NUMA node after the restart" in out
    assert ["all", "0-11", "0", "3,5-6,9,11", "1,4,7,10", "2,8"] in rows
    code, out, _ = restart(capsys, pod_level, "--release", "1.36", "--dry-run")
    assert "The kubelet does not start" in out and "Recovery" in out
    assert "Lost by the reader" in out


# -- bad input ------------------------------------------------------------------------------------


def test_unknown_release_is_a_usage_error(
    pod_level: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["restart", "--state-dir", str(pod_level), "--release", "1.34"])
    assert raised.value.code == 2
    assert "invalid choice: '1.34'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--release", "1.38", "--feature-gates", "PodLevelResourceManagers"],
         "--feature-gates: missing bool value for PodLevelResourceManagers"),
        (["--release", "1.38", "--feature-gates", "PodLevelResourceManagers=yes"],
         "invalid value of PodLevelResourceManagers=yes"),
        (["--release", "1.37", "--feature-gates", "NoSuchGate=true"],
         "unrecognized feature gate: NoSuchGate"),
        (["--release", "1.38", "--kubelet-config", "/nonexistent.yaml"],
         "/nonexistent.yaml: no such file"),
    ],
    ids=["gate-no-value", "gate-bad-bool", "gate-unknown-name", "config"],
)  # fmt: skip
def test_usage_errors_exit_2_and_change_nothing(
    pod_level: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    before = files(pod_level)
    code, out, err = restart(capsys, pod_level, *args)
    assert code == 2 and out == ""
    assert needle in err
    assert files(pod_level) == before


@pytest.mark.parametrize(
    "args",
    [
        ["--release", "1.35"],
        ["--release", "1.35", "--feature-gates", "PodLevelResourceManagers=true"],
    ],
    ids=["recorded-gate", "gate-unknown-in-release"],
)
def test_a_gate_the_release_refuses_is_an_answer_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """1.36 files with the gate on -> 1.35 (issue 19 point 4; exit 2 before this change): the
    kubelet refuses the gate; once it is removed, 1.35 refuses the files ("checkpoint is
    corrupted"): drain, remove both files, restart."""
    d = tmp_path / "node"
    simulate(d, "1.36", POD_SCOPE, "pod-level.yaml")
    capsys.readouterr()
    before = files(d)
    code, doc = restart_json(capsys, d, *args)
    assert code == 1 and doc["started"] is False
    gate_error = (
        "failed to set feature gates from initial flags-based config: unrecognized feature "
        "gate: PodLevelResourceManagers"
    )
    assert doc["error"] == gate_error
    assert doc["featureGatesRefused"] == [
        {
            "gate": "PodLevelResourceManagers",
            "error": gate_error,
            "change": "remove PodLevelResourceManagers from featureGates (kubelet 1.35 does not "
            "know it)",
        }
    ]
    once = doc["onceChanged"]
    assert once["started"] is False
    assert "could not restore state from checkpoint: checkpoint is corrupted" in once["error"]
    remove = f"remove {d}/cpu_manager_state and {d}/memory_manager_state"
    assert remove in once["recovery"] and remove in doc["recovery"]
    assert doc["recovery"][0].startswith("change the kubelet configuration: remove")
    assert files(d) == before
    code, out, err = restart(capsys, d, *args)
    assert code == 1 and err == ""
    assert "Once the configuration is changed" in out and "checkpoint is corrupted" in out


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        ("no-record", "no pods.json"),
        ("bad-json", "pods.json: not valid JSON at line 1"),
        ("no-topology", "pods.json: topology: the machine is not recorded"),
        ("bad-topology", "pods.json: topology.cpus"),
        ("unknown-pod", "not among the recorded pods"),
        ("not-utf8", "pods.json: is not UTF-8 text"),
    ],
)
def test_bad_state_dirs_exit_2_and_change_nothing(
    pod_level: Path, capsys: pytest.CaptureFixture[str], damage: str, needle: str
) -> None:
    record = pod_level / "pods.json"
    doc = json.loads(record.read_text())
    if damage == "no-record":
        record.unlink()
    elif damage == "bad-json":
        record.write_text("{")
    elif damage == "no-topology":
        del doc["topology"]
        record.write_text(json.dumps(doc))
    elif damage == "bad-topology":
        doc["topology"]["cpus"] = {"0": [0, 0]}
        record.write_text(json.dumps(doc))
    elif damage == "unknown-pod":
        doc["pods"] = doc["pods"][:1]
        record.write_text(json.dumps(doc))
    elif damage == "not-utf8":
        record.write_bytes(b"\xff\xfe")
    before = files(pod_level)
    code, out, err = restart(capsys, pod_level, "--release", "1.38")
    assert code == 2 and out == ""
    assert err.startswith("numascope restart: error: ") and needle in err
    assert files(pod_level) == before


def test_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = restart(capsys, tmp_path / "absent", "--release", "1.38")
    assert code == 2 and "absent: no such directory" in err


def test_unreadable_state_file(pod_level: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (pod_level / "cpu_manager_state").unlink()
    (pod_level / "cpu_manager_state").mkdir()  # unreadable as a file, even for root
    code, _, err = restart(capsys, pod_level, "--release", "1.38")
    assert code == 2 and "cpu_manager_state" in err

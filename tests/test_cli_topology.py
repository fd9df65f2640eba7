"""``numascope topology`` (app/commands/topology.py) through the real CLI dispatcher."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.fixtures` under bare pytest

from app.adapters import sysfs as sysfs_mod
from app.cli import main
from app.domain.presets import PRESETS
from tests.fixtures.sysfs import FakeCPU, FakeSysfs


@pytest.fixture(autouse=True)
def _no_cpuinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> tuple[str, tuple[str, ...]]:
        raise AssertionError("py-cpuinfo must not run in these tests")

    monkeypatch.setattr(sysfs_mod, "host_cpu_model_and_flags", boom)
    monkeypatch.delenv("NUMASCOPE_SYSFS_ROOT", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["topology", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    cpus = [FakeCPU(i, i % 4, i // 4, i // 4, l3_id=i // 4, online=i != 5) for i in range(8)]
    return FakeSysfs(cpus).write(tmp_path)


def test_preset_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--preset", "topoDualSocketHT")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == (
        "Machine 'topoDualSocketHT' (64 GiB total): 12 CPUs, 6 cores, 2 sockets, "
        "2 NUMA nodes, 1 uncore cache, 2 threads per core"
    )
    assert "  Package P#1 (CPUs 1,3,5,7,9,11)" in out
    assert "          PU P#11" in out


def test_preset_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--preset", "server-2s-4numa-128t", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["source"] == "preset"
    assert data["name"] == "server-2s-4numa-128t"
    assert (data["numCpus"], data["numNumaNodes"], data["numUncoreCaches"]) == (128, 4, 8)
    assert data["numaNodes"][2]["cpuSet"] == "32-47,96-111"
    assert data["numaNodes"][0]["hugepages"]["hugepages-2Mi"]["pages"] == 4096
    assert len(data["cpus"]) == 128


def test_spec_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--spec", "sockets=2,cores_per_numa=2,threads_per_core=1", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["source"] == "spec"
    assert data["allCpus"] == {"cpuSet": "0-3", "cpuIds": [0, 1, 2, 3]}


@pytest.mark.parametrize("flag", ["--sysfs", "--sysfs-root"])
def test_sysfs_text(capsys: pytest.CaptureFixture[str], fake_root: Path, flag: str) -> None:
    code, out, _ = run(capsys, flag, str(fake_root))
    assert code == 0
    assert out.startswith(f"Machine 'sysfs:{fake_root}'")
    assert "Offline CPUs: 5" in out
    assert "    NUMANode P#1 (32 GiB; CPUs 4,6-7)" in out


def test_sysfs_json_has_provenance(capsys: pytest.CaptureFixture[str], fake_root: Path) -> None:
    code, out, _ = run(capsys, "--sysfs", str(fake_root), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["source"] == "sysfs" and data["sysfsRoot"] == str(fake_root)
    assert data["observedAt"].endswith("Z")
    assert data["offlineCpus"] == {"cpuSet": "5", "cpuIds": [5]}


def test_default_is_the_host_from_settings(
    capsys: pytest.CaptureFixture[str], fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMASCOPE_SYSFS_ROOT", str(fake_root))
    code, out, _ = run(capsys, "--json")
    assert code == 0
    assert json.loads(out)["sysfsRoot"] == str(fake_root)


def test_list_presets_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--list-presets")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "CPUS", "SOCKETS"]
    assert [line.split()[0] for line in lines[1:]] == list(PRESETS)
    assert "server-2s-8numa-512t" in out and "1.5 TiB" in out


def test_list_presets_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--list-presets", "--json")
    assert code == 0
    data = json.loads(out)
    assert [p["name"] for p in data] == list(PRESETS)
    assert data[0]["numCpus"] == 8 and data[0]["kind"] == "fixture"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--preset", "nope"], "unknown topology preset 'nope'; valid presets: topoSingleSocketHT"),
        (["--spec", "sockets=two,cores_per_numa=2"], "sockets='two' is not a non-negative"),
        (["--spec", "cpus=4"], "unknown topology spec key 'cpus'"),
        (["--sysfs", "/nonexistent-numascope"], "is not a directory"),
    ],
    ids=["unknown-preset", "bad-spec-value", "bad-spec-key", "bad-sysfs"],
)
def test_errors_go_to_stderr_with_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("numascope topology: error: ")
    assert message in err


def test_sources_are_mutually_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["topology", "--preset", "laptop-1s", "--spec", "cores_per_numa=2"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err

"""The demo's pods and configurations are package data (``app/data``), read and checked by
``app.services.demo``: every file is one the kubelet takes, ``demo.yaml`` names only files and
presets that exist, and the wheel carries them."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain import releases
from app.services import demo
from app.services.nodes import demo_fleet
from tests.test_packaging import ROOT, glob_match

DATA = ROOT / "app" / "data"


@pytest.mark.parametrize("path", sorted(DATA.glob("pods/*.yaml")), ids=lambda p: p.stem)
def test_every_pod_file_is_a_pod_manifest(path: Path) -> None:
    (pod,) = parse_pod_manifests(demo.pod_manifest(path.stem))
    assert pod.name and pod.containers


@pytest.mark.parametrize("path", sorted(DATA.glob("configs/*.yaml")), ids=lambda p: p.stem)
def test_every_configuration_file_is_one_the_kubelet_takes(path: Path) -> None:
    text = demo.config_text(path.stem)
    config = parse_kubelet_config_text(text, releases.DEFAULT_RELEASE)
    assert config.cpu_manager_policy in ("static", "none")


def test_the_demo_nodes_and_the_fleet_come_from_demo_yaml() -> None:
    names = [n.name for n in demo.DEMO_NODES]
    assert names == ["demo-pod-scope", "demo-container-scope", "demo-512"]
    assert demo.DEMO_NODES[0].pods[0] == demo.DATABASE_POD
    assert len(demo.DEMO_NODES[2].pods) == 12 and demo.DEMO_NODES[2].pods[-1] == demo.BURSTABLE_POD
    assert demo_fleet.KINDS.count("pod-scope") == 2 and demo_fleet.SEED == 20260501
    # A release without the gate runs the fleet's pod-scope nodes as restricted ones.
    oldest = releases.OLDEST
    assert demo_fleet._config("pod-scope", oldest) == demo.config_text("fleet-restricted")


def test_an_unknown_file_or_a_misspelt_entry_is_refused_by_name() -> None:
    with pytest.raises(LookupError, match="'no-such-pod'"):
        demo.pod_manifest("no-such-pod")
    entry = {"name": "n", "topology": "laptop-1s", "config": "sample", "pods": [{"bubbel": {}}]}
    with pytest.raises(ValidationError, match="bubbel"):
        demo._NodeEntry.model_validate(entry)


def test_the_data_files_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = config["package-data"]["app"]
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "app/data"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(tracked) >= 18
    for path in tracked:
        inside = path.removeprefix("app/")
        assert any(glob_match(inside, g) for g in globs), f"{path} is not in the wheel"

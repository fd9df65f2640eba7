"""The start-up model of a state file (``checkpoint/startup.py``): which pod-level pod shapes a
kubelet that reads the files without their pod entries (1.36 on 1.37 files, any gate-off
reader) refuses at ``Start``, per manager, as ``validateState`` decides (issue 19 point 4)."""

from __future__ import annotations

import pytest

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.checkpoint import inspect
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.presets import get_preset
from app.services.demo import bubble_pod
from tests.helpers import POD_SCOPE, SMALL

CPU_FAIL = "start cpu manager error: current set of available CPUs"
MEMORY_FAIL = "start memory manager error: [memorymanager] the expected machine state"


def files_of(manifest: str) -> dict[str, str]:
    node = Node("n", get_preset(SMALL), parse_kubelet_config_text(POD_SCOPE, "1.37"))
    for pod in parse_pod_manifests(manifest):
        assert node.admit(pod).admitted
    return render_state_files(node)


@pytest.mark.parametrize(
    ("manifest", "cpu", "memory"),
    [
        # one exclusive container below the budget, no shared container: CPUs 2 of 4 uncovered
        (bubble_pod("partial", "prod", 4, {"main": 2}, ()), CPU_FAIL, MEMORY_FAIL),
        # exclusive containers fill the budget: CPUs covered; two containers: memory refused
        (bubble_pod("pair", "prod", 4, {"left": 2, "right": 2}, ()), None, MEMORY_FAIL),
        # a shared sidecar holds the pod shared pool: CPUs covered; two containers: memory
        (bubble_pod("db", "prod", 4, {"main": 2}, ("side",)), None, MEMORY_FAIL),
        # one container holding the whole pod: both managers start
        (bubble_pod("solo", "prod", 2, {"main": 2}, ()), None, None),
    ],
    ids=["partial", "pair", "shared-sidecar", "solo"],
)
@pytest.mark.parametrize("target", ["1.36-gate-on", "1.37-gate-off"])
def test_which_pod_shapes_start_without_their_pod_entries(
    manifest: str, cpu: str | None, memory: str | None, target: str
) -> None:
    files = files_of(manifest)
    for name, expected in (("cpu_manager_state", cpu), ("memory_manager_state", memory)):
        report = inspect(files[name])
        own = report.verdict_for("1.37-gate-on")
        assert own is not None and own.verdict == "compatible"  # its own kubelet starts
        v = report.verdict_for(target)
        assert v is not None
        if expected is None:
            assert v.verdict in ("compatible", "compatible-with-loss"), (name, v.error)
        else:
            assert v.verdict == "will-fail" and (v.error or "").startswith(expected), name
            assert v.why is not None and "without its pod entries" in v.why
            assert any("safely restores" in n for n in v.notes)

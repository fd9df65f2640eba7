"""A fake host for the node agent (``serve --observe``): the sysfs tree of a preset machine, a
kubelet root with the state files of pods the engine admitted, and the environment the
DaemonSet gives the agent. Used by the memory test and ``bench/bench_agent_memory.py``."""

from __future__ import annotations

import os
from pathlib import Path

from app.adapters import statefiles
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.presets import get_preset
from app.services import demo
from tests.fixtures.sysfs import fake_sysfs_from_topology

NODE = "worker-1"
#: The DaemonSet's arguments (deploy/daemonset.yaml) without ``--publish-nrt`` (no API server
#: here) and the listening address.
AGENT_ARGS = ["--no-demo", "--observe", "--no-simulated"]


def build_host(
    base: Path, pods: int, preset: str = "server-2s-8numa-512t"
) -> tuple[Node, Path, Path]:
    config = parse_kubelet_config_text(demo.SERVER_CONFIG, "1.37")
    node = Node("sim", get_preset(preset), config, clock=lambda: 100.0)
    for i in range(pods):
        text = demo.bubble_pod(f"app-{i}", f"team-{i % 10}", 2, {"main": 2}, (), gib_per_cpu=1)
        for pod in parse_pod_manifests(text):
            if not node.admit(pod).admitted:
                raise ValueError(f"pod {i} does not fit {preset}; use fewer pods")
    root = base / "kubelet"
    root.mkdir()
    statefiles.write_files(root, render_state_files(node))
    (root / "config.yaml").write_text(demo.SERVER_CONFIG)
    for p in node.snapshot().pods:
        (root / "pods" / p.uid).mkdir(parents=True)
    sysfs = fake_sysfs_from_topology(node.topology).write(base / "sys")
    return node, root, sysfs


def agent_env(root: Path, sysfs: Path, socket: Path, data: Path) -> dict[str, str]:
    """The DaemonSet's environment, pointed at the fake host (``data``: the emptyDir)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMASCOPE_")}
    env.update(
        NODE_NAME=NODE,
        NUMASCOPE_KUBELET_ROOT=str(root),
        NUMASCOPE_SYSFS_ROOT=str(sysfs),
        NUMASCOPE_PODRESOURCES_SOCKET=f"unix://{socket}",
        NUMASCOPE_DATABASE_URL=f"sqlite:///{data / 'numascope.db'}",
        NUMASCOPE_STATE_DIR=str(data / "nodes"),
        NUMASCOPE_LOG_LEVEL="warning",
    )
    return env


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory (or ``VmHWM``, its peak) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")

"""Restart of a 512-thread node with 250 pods (issue 9: at most 100 ms).

Run: .venv/bin/python bench/bench_restart.py [--pods 250] [--runs 15]
Builds ``server-2s-8numa-512t`` with the demo-512 configuration under release 1.37, admits
``--pods`` pods (``_web_node.pod_manifests``: pod-level bubbles, classic Guaranteed, Burstable),
writes its state directory as ``numascope simulate --state-dir`` does, then times
``numascope restart``'s use case (``app.services.restart.restart``, dry run: read and parse the
three files, R's readers and Start validation, inspector's losses, re-admission of every pod)
for each target release, and the engine part alone (``restart_node`` on files in memory).
Prints wall-clock and process CPU time (the latter is what the machine's other load does not
inflate) and the load average. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import Timing, cpu_time_calls, time_calls
from _web_node import TOPOLOGY, pod_manifests

from app.adapters import statefiles
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.node.model import Node
from app.domain.presets import get_preset
from app.domain.restart import restart_node
from app.services.demo import SERVER_CONFIG
from app.services.restart import restart
from app.services.simulation import state_files_of


def build_dir(directory: Path, pods: int) -> Node:
    config = parse_kubelet_config_text(SERVER_CONFIG, "1.37")
    node = Node("bench-restart", get_preset(TOPOLOGY), config)
    for text in pod_manifests(pods):
        for pod in parse_pod_manifests(text):
            result = node.admit(pod)
            if not result.admitted:
                raise SystemExit(f"{pod.key} rejected: {result.message}")
    statefiles.write_files(directory, state_files_of(node))
    return node


def line(label: str, wall: Timing, cpu: Timing, extra: str = "") -> str:
    return (
        f"  {label:<34} wall median {wall.median_ms:7.2f} ms  min {wall.best_ms:7.2f} ms  |  "
        f"CPU median {cpu.median_ms:7.2f} ms  min {cpu.best_ms:7.2f} ms{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"bench_restart: {TOPOLOGY} (512 threads), demo-512 configuration, {args.pods} pods")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        node = build_dir(directory, args.pods)
        files = {n: statefiles.read_file(directory, n) for n in state_files_of(node)}
        pods = [(p, node.admitted_at[uid]) for uid, p in node.pods.items()]
        for release in ("1.37", "1.38"):
            outcome = restart(directory, release, dry_run=True)
            counts = ", ".join(f"{n} {k}" for k, n in outcome.result.counts().items() if n)

            def cli(r: str = release) -> object:
                return restart(directory, r, dry_run=True)

            print(
                line(
                    f"1.37 -> {release} (CLI use case)",
                    time_calls(cli, args.runs),
                    cpu_time_calls(cli, args.runs),
                    f"  ({counts})",
                )
            )
            config = parse_kubelet_config_text(SERVER_CONFIG, release)

            def engine(c: object = config) -> object:
                return restart_node(node.topology, c, files, pods, state_dir=tmp)  # type: ignore[arg-type]

            print(
                line(
                    f"1.37 -> {release} (engine only)",
                    time_calls(engine, args.runs),
                    cpu_time_calls(engine, args.runs),
                )
            )
        print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

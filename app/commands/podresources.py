"""``numascope podresources list|serve``: read a PodResources socket, or serve a simulated node.

* ``list --socket PATH [--json]`` calls ``List`` on a kubelet (or numascope) socket and prints
  a table (pod, container, CPUs, memory, which pool the container runs in) or, with
  ``--json``, the canonical proto3 JSON of the answer.
* ``serve --socket PATH --topology PRESET|SPEC --kubelet-config FILE [--pods PODS.yaml]``
  builds a simulated node, admits the pods of the manifest file in order (rejections are
  reported and skipped, as a kubelet rejects a pod and carries on), and serves its
  PodResources v1 answers on a unix socket until SIGTERM or SIGINT, then removes the socket.

Exit codes: 0 ok, 1 the call or the server failed, 2 bad arguments or input files.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from app.adapters.grpc.client import DEFAULT_SOCKET, PodResourcesClient, PodResourcesClientError
from app.adapters.grpc.server import PodResourcesServer, PodResourcesServerError
from app.adapters.podresources_json import message_to_dict
from app.commands import add_actions
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import RELEASES, KubeletConfig, KubeletConfigError
from app.domain.podresources import (
    ContainerMemory,
    ContainerResources,
    ListPodResourcesResponse,
    PodResources,
)
from app.domain.snapshot import NodeSnapshot
from app.domain.units import binary_quantity

if TYPE_CHECKING:
    from app.domain.node.model import Node
    from app.domain.pod.model import Pod

ENV_SOCKET = "NUMASCOPE_PODRESOURCES_SOCKET"


class PodResourcesCommandError(Exception):
    """Bad input for ``podresources serve`` (topology, configuration, manifests, engine)."""


# -- list ----------------------------------------------------------------------------------


def _memory_text(blocks: tuple[ContainerMemory, ...]) -> str:
    parts = []
    for b in blocks:
        nodes = ",".join(str(n.id) for n in b.topology.nodes) if b.topology else ""
        where = f"@{nodes}" if nodes else ""
        parts.append(f"{b.memory_type} {binary_quantity(b.size, largest='Ti')}{where}")
    return "; ".join(parts)


def _cpus_text(ids: tuple[int, ...]) -> str:
    return str(CPUSet(ids)) if ids else ""


def _rows(pod: PodResources) -> list[list[str]]:
    """The table rows of one pod: its pod-level resources (when it has any), then each
    container."""
    rows = []
    if pod.cpu_ids or pod.memory:
        rows.append(_row(pod, "(pod)", pod.cpu_ids, pod.memory, _pod_note(pod)))
    for c in pod.containers:
        rows.append(_row(pod, c.name, c.cpu_ids, c.memory, _container_note(pod, c)))
    return rows


def _row(
    pod: PodResources,
    container: str,
    cpu_ids: tuple[int, ...],
    memory: tuple[ContainerMemory, ...],
    note: str,
) -> list[str]:
    return [pod.namespace, pod.name, container, _cpus_text(cpu_ids), _memory_text(memory), note]


def _pod_note(pod: PodResources) -> str:
    """A pod-level budget, and the pod's shared pool: its CPUs no container holds."""
    note = "pod-level budget"
    if pod.cpu_ids:
        container_cpus = {cpu for c in pod.containers for cpu in c.cpu_ids}
        shared = tuple(sorted(set(pod.cpu_ids) - container_cpus))
        note += f"; pod shared pool {_cpus_text(shared) or '(empty)'}"
    return note


def _container_note(pod: PodResources, c: ContainerResources) -> str:
    """Which pool the container runs in, and the devices and DRA claims it holds."""
    if c.cpu_ids:
        note = "exclusive CPUs"
    elif pod.cpu_ids:
        note = "pod shared pool"
    else:
        note = "node shared pool"
    if c.devices:
        counts: dict[str, set[str]] = {}
        for d in c.devices:
            counts.setdefault(d.resource_name, set()).update(d.device_ids)
        note += "; devices " + ", ".join(f"{k}×{len(v)}" for k, v in sorted(counts.items()))
    if c.dynamic_resources:
        note += f"; {len(c.dynamic_resources)} DRA claim(s)"
    return note


def format_table(response: ListPodResourcesResponse) -> str:
    """The ``List`` answer as a plain-text table, pods sorted by namespace and name."""
    header = ["NAMESPACE", "POD", "CONTAINER", "CPUS", "MEMORY", "NOTES"]
    rows: list[list[str]] = []
    for pod in sorted(response.pod_resources, key=lambda p: (p.namespace, p.name)):
        rows.extend(_rows(pod))
    if not rows:
        return "no pods"
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    try:
        with PodResourcesClient(args.socket, timeout=args.timeout) as client:
            response = client.list()
    except PodResourcesClientError as exc:
        print(f"numascope podresources list: {exc}", file=sys.stderr)
        return 2 if exc.input_error else 1
    if args.json:
        out.write(json.dumps(message_to_dict(response), indent=2) + "\n")
    else:
        out.write(format_table(response) + "\n")
    return 0


# -- serve ---------------------------------------------------------------------------------


def _resolve_topology(value: str) -> Any:
    from app.domain.presets import resolve_topology
    from app.domain.topology.model import TopologyError

    try:
        if "=" in value:
            return resolve_topology(None, value)
        return resolve_topology(value, None)
    except TopologyError as exc:
        raise PodResourcesCommandError(f"--topology: {exc}") from None


def build_snapshot(
    topology: str,
    kubelet_config: str,
    pods: str | None,
    release: str,
    warn: TextIO,
    name: str = "simulated",
) -> NodeSnapshot:
    """A simulated node from the command's inputs, with the manifest's pods admitted."""
    from app.adapters.kubelet_files import load_kubelet_config
    from app.domain.node.model import Node

    topo = _resolve_topology(topology)
    try:
        config = load_kubelet_config(kubelet_config, release)
        manifests = _read_pods(pods, config) if pods is not None else []
        node = Node(name, topo, config)
    except KubeletConfigError as exc:
        raise PodResourcesCommandError(f"--kubelet-config: {exc}") from None
    _admit_all(node, manifests, warn)
    snapshot: NodeSnapshot = node.snapshot()
    return snapshot


def _read_pods(path: str, config: KubeletConfig) -> list[Pod]:
    """The pods of the ``--pods`` manifest file, in order."""
    from app.adapters.manifests import parse_pod_manifests
    from app.domain.pod.model import PodManifestError

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise PodResourcesCommandError(f"--pods: {path}: {exc.strerror}") from None
    try:
        return parse_pod_manifests(
            text, pod_level_resources_enabled=config.gate("PodLevelResources")
        )
    except PodManifestError as exc:
        raise PodResourcesCommandError(f"--pods: {exc}") from None


def _admit_all(node: Node, pods: list[Pod], warn: TextIO) -> None:
    """Admit ``pods`` in order; a rejected or refused pod is reported on ``warn`` and skipped,
    as a kubelet rejects a pod and carries on."""
    from app.domain.node.model import NodeError

    for pod in pods:
        try:
            result = node.admit(pod)
        except NodeError as exc:
            print(f"pod {pod.namespace}/{pod.name} skipped: {exc}", file=warn)
            continue
        if not result.admitted:
            print(
                f"pod {pod.namespace}/{pod.name} rejected: {result.reason}: {result.message}",
                file=warn,
            )


def serve(
    provider: Callable[[], NodeSnapshot],
    socket: str,
    stop: threading.Event,
    out: TextIO,
) -> int:
    """Serve until ``stop`` is set; the socket is removed on the way out."""
    try:
        server = PodResourcesServer(provider, socket).start()
    except PodResourcesServerError as exc:
        print(f"numascope podresources serve: {exc}", file=sys.stderr)
        return 1
    print(f"serving PodResources v1 on {server.address}", file=out, flush=True)
    try:
        # Wake up now and then: a process-directed signal may land on one of gRPC's threads,
        # and Python runs its handler only once the main thread executes bytecode again.
        while not stop.wait(0.25):
            pass
    finally:
        server.stop(grace=1.0)
    print("stopped; socket removed", file=out, flush=True)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        snapshot = build_snapshot(
            args.topology, args.kubelet_config, args.pods, args.release, sys.stderr
        )
    except PodResourcesCommandError as exc:
        print(f"numascope podresources serve: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return serve(lambda: snapshot, args.socket, stop, sys.stdout)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


# -- registration --------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    actions = add_actions(
        subparsers,
        "podresources",
        help="read a PodResources socket, or serve a simulated node's PodResources",
        description="PodResources v1 (the kubelet's node-local gRPC API).",
    )
    _register_list(actions)
    _register_serve(actions)


def _register_list(actions: Any) -> None:
    lister = actions.add_parser(
        "list",
        help="call List on a PodResources socket",
        description="Call List on a PodResources socket and print what each container holds.",
    )
    lister.add_argument(
        "--socket",
        "--podresources-socket",
        dest="socket",
        default=os.environ.get(ENV_SOCKET, DEFAULT_SOCKET),
        help=f"socket path, with or without unix:// (default {DEFAULT_SOCKET}; env {ENV_SOCKET})",
    )
    lister.add_argument("--json", action="store_true", help="print canonical proto3 JSON")
    lister.add_argument(
        "--timeout", type=float, default=10.0, help="connection and call timeout in seconds"
    )
    lister.set_defaults(func=cmd_list)


def _register_serve(actions: Any) -> None:
    server = actions.add_parser(
        "serve",
        help="serve a simulated node's PodResources on a unix socket",
        description="Serve PodResources v1 for a simulated node until SIGTERM/SIGINT.",
    )
    server.add_argument("--socket", required=True, help="unix socket path to listen on")
    server.add_argument(
        "--topology",
        required=True,
        help="preset name, or a spec such as sockets=2,cores_per_numa=8",
    )
    server.add_argument("--kubelet-config", required=True, help="KubeletConfiguration file")
    server.add_argument("--pods", help="pod manifests (YAML or JSON) to admit in order")
    server.add_argument(
        "--release", choices=RELEASES, default=RELEASES[-1], help="kubelet release to simulate"
    )
    server.set_defaults(func=cmd_serve)

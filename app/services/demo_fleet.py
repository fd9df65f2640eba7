"""``--demo-fleet N``: N simulated nodes of the hub's own, so a demo shows a cluster without
agents. They are generated from a fixed seed (the same N gives the same fleet every time) with
varied presets, kubelet configurations (static CPU manager with pod or container scope, the
pod-level resource managers on where the release has them, the memory manager on or off, plain
``none`` nodes), releases (every one of ``kubelet_config.RELEASES``) and workloads (classic
Guaranteed pods, Burstable pods and pod-level "bubble" pods, admitted one by one by the node's
engine, so some are rejected exactly as that kubelet would).

Each node is a ``Node`` engine held in memory (no database, no state files: they are the hub's
demo, not anyone's nodes) with the same summary, dry run and upgrade check as an agent's node:
``app.services.hub`` treats them as nodes of a built-in agent.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from app.contracts.summary import NodeSummaryV1
from app.domain import releases
from app.domain.kubelet_config import RELEASES, KubeletConfig
from app.domain.node import Node
from app.domain.node_state_files import render_state_files
from app.domain.pod import Pod
from app.domain.presets import get_preset
from app.services.agent_summary import SummaryCache, build_summary
from app.services.demo import bubble_pod, classic_pod
from app.services.node_views import NodeViews, node_topology_view
from app.services.nodes import (
    AdmissionBatch,
    NodeInputError,
    NodeServiceError,
    PodConflictError,
    build_engine_node,
    parse_config,
    parse_manifests,
)
from app.services.upgrade import NodeFiles, check_files

SEED = 20260501
PRESETS = (
    "topoDualSocketHT",
    "topoDualSocketMultiNumaPerSocketHT",
    "fakeTopoMultiSocketDualSocketPerNumaHT",
    "topoUncoreSingleSocketMultiNuma",
    "topoTripleSocketHT",
    "laptop-1s",
    "server-2s-4numa-128t",
    "topoSingleSocketHT",
)
_MEMORY = """\
kubeReserved:
  cpu: "1"
  memory: 1Gi
systemReserved:
  memory: 1Gi
"""
_RESERVED_MEMORY = """\
reservedMemory:
  - numaNode: 0
    limits:
      memory: 2148Mi
"""


def _config(kind: str, release: str) -> str:
    head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
    pod_level = releases.get(release).knows_pod_level_gate
    if kind == "pod-scope" and pod_level:
        return (
            head + "cpuManagerPolicy: static\nmemoryManagerPolicy: Static\n"
            "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n"
            + _MEMORY
            + _RESERVED_MEMORY
            + "featureGates:\n  PodLevelResources: true\n  PodLevelResourceManagers: true\n"
        )
    if kind in ("pod-scope", "restricted"):
        return (
            head + "cpuManagerPolicy: static\nmemoryManagerPolicy: Static\n"
            "topologyManagerPolicy: restricted\ntopologyManagerScope: container\n"
            + _MEMORY
            + _RESERVED_MEMORY
        )
    if kind == "best-effort":
        return (
            head + "cpuManagerPolicy: static\ncpuManagerPolicyOptions:\n"
            '  full-pcpus-only: "true"\nmemoryManagerPolicy: None\n'
            "topologyManagerPolicy: best-effort\ntopologyManagerScope: container\n" + _MEMORY
        )
    return head + "cpuManagerPolicy: none\nmemoryManagerPolicy: None\n"


KINDS = ("pod-scope", "pod-scope", "restricted", "best-effort", "none")


class SimulatedNode:
    """One node of the demo fleet: its engine, definition and cached summary."""

    def __init__(
        self, name: str, preset: str, config_text: str, release: str, engine: Node, rejected: int
    ) -> None:
        self.name = name
        self.preset = preset
        self.config_text = config_text
        self.release = release
        self.engine = engine
        self.rejected = rejected
        self.created_at = datetime.now(UTC)
        self.lock = threading.Lock()
        self._upgrades: dict[tuple[str, bool | None], dict[str, Any]] = {}
        self.views = NodeViews(
            engine.snapshot(),
            node=name,
            topology=node_topology_view(engine.topology, preset, "preset"),
            created_at=self.created_at,
            kubelet_config_text=config_text,
            demo=True,
            pod_memory_requests={},
        )

    def summary(self, cache: SummaryCache) -> NodeSummaryV1:
        summary = self.views.summary(rejected=self.rejected, load_error=None)
        return cache.versioned(build_summary(summary, self.views))

    def dry_run(self, manifest: str, pods: Sequence[Pod] | None = None) -> dict[str, Any]:
        """What an agent's ``POST /api/v1/nodes/{node}/pods?dryRun=true`` answers (``pods``:
        the manifest already parsed under this node's PodLevelResources gate)."""
        if pods is None:
            pods = parse_manifests(manifest, self.engine.config)
        with self.lock:
            for p in pods:
                if p.uid in self.engine.pods or self.engine.find_pod(p.key) is not None:
                    raise PodConflictError(
                        f"pod {p.key} is already on node {self.name}", "metadata.name"
                    )
            if len(pods) == 1:
                results = [self.engine.dry_run(pods[0])]
            else:  # several pods: in order, on a scratch copy
                scratch = build_engine_node(
                    self.name, self.engine.topology, self.engine.config, time.time
                )
                for p in self.engine.pods.values():
                    scratch.admit(p)
                results = [scratch.admit(p) for p in pods]
        return AdmissionBatch(self.name, str(uuid.uuid4()), True, tuple(results), ()).to_dict()

    def node_files(self) -> NodeFiles:
        """What its kubelet's start-up is judged on (the upgrade verdict, as for any node)."""
        return NodeFiles(
            self.name,
            self.engine.topology,
            self.release,
            self.config_text,
            render_state_files(self.engine),
            {uid: p.key for uid, p in self.engine.pods.items()},
        )

    def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        key = (release, gate)
        with self.lock:
            cached = self._upgrades.get(key)
            if cached is None:
                cached = check_files(self.node_files(), release, gate)
                self._upgrades[key] = cached
        return cached


def _workload(rng: random.Random, pod_level: bool, cpus: int) -> list[str]:
    pods = []
    for i in range(rng.randint(0, 6)):
        shape = rng.random()
        if pod_level and shape < 0.35:
            budget = rng.choice((2, 4, 6, 8))
            pods.append(
                bubble_pod(f"bubble-{i}", "apps", budget, {"app": max(1, budget - 2)}, ("sidecar",))
            )
        elif shape < 0.8:
            n = rng.choice((1, 2, 2, 4, 4, 6, 8, 12, 16))
            n = min(n, max(1, cpus // 2))
            pods.append(classic_pod(f"guaranteed-{i}", "apps", str(n), f"{n * 2}Gi"))
        else:
            pods.append(
                "apiVersion: v1\nkind: Pod\nmetadata:\n"
                f"  name: burstable-{i}\n  namespace: batch\n"
                "spec:\n  containers:\n  - name: main\n    image: busybox\n    resources:\n"
                '      requests: {cpu: "500m", memory: 512Mi}\n'
            )
    return pods


# The fleet repeats a few configurations and pod shapes: each is parsed once (YAML parsing is
# most of the cost of building a node; configurations and pods are immutable values).
_CONFIGS: dict[tuple[str, str], KubeletConfig] = {}
_PODS: dict[tuple[str, bool], Sequence[Pod]] = {}


def _config_of(text: str, release: str) -> KubeletConfig:
    key = (text, release)
    if key not in _CONFIGS:
        _CONFIGS[key] = parse_config(text, release)
    return _CONFIGS[key]


def _pods_of(manifest: str, config: KubeletConfig) -> Sequence[Pod]:
    key = (manifest, config.gate("PodLevelResources"))
    if key not in _PODS:
        _PODS[key] = parse_manifests(manifest, config)
    return _PODS[key]


def node_name(index: int) -> str:
    return f"sim-{index:04d}"


def build_node(rng: random.Random, index: int) -> SimulatedNode:
    preset = rng.choice(PRESETS)
    release = rng.choice(RELEASES)
    kind = rng.choice(KINDS)
    name = node_name(index)
    topology = get_preset(preset)
    try:
        text = _config(kind, release)
        config = _config_of(text, release)
        engine = build_engine_node(name, topology, config, time.time)
    except NodeServiceError:  # a configuration this machine cannot take: a plain node
        kind = "none"
        text = _config(kind, release)
        config = _config_of(text, release)
        engine = build_engine_node(name, topology, config, time.time)
    rejected = 0
    pod_level = config.pod_level_resource_managers
    for manifest in _workload(rng, pod_level, topology.all_cpus.size()):
        for pod in _pods_of(manifest, config):
            if not engine.admit(pod).admitted:
                rejected += 1
    return SimulatedNode(name, preset, text, release, engine, rejected)


class DemoFleet:
    """The hub's simulated nodes, built in the background (``start``) in seed order."""

    def __init__(self, count: int, seed: int = SEED) -> None:
        self.count = count
        self.seed = seed
        self.nodes: dict[str, SimulatedNode] = {}
        self.ready = threading.Event()
        self._thread: threading.Thread | None = None
        if count == 0:
            self.ready.set()

    def build(self) -> None:
        rng = random.Random(self.seed)
        for i in range(self.count):
            node = build_node(rng, i)
            self.nodes[node.name] = node  # a dict assignment: readers see whole nodes only
        self.ready.set()

    def start(self) -> None:
        if self.count and self._thread is None:
            self._thread = threading.Thread(target=self.build, name="demo-fleet", daemon=True)
            self._thread.start()

    def claims(self, name: str) -> bool:
        """Whether ``name`` is (or, while the fleet is built, will be) one of its nodes."""
        head, _, number = name.partition("-")
        if head != "sim" or not number.isdigit() or not number.isascii():
            return False
        index = int(number)
        return index < self.count and node_name(index) == name

    def list(self) -> Sequence[SimulatedNode]:
        return list(self.nodes.values())

    def dry_run_all(self, manifest: str) -> Sequence[tuple[str, dict[str, Any]]]:
        """Every node's dry-run answer (or its error as an agent's error document). The
        manifest is parsed once per value of the PodLevelResources gate, the only setting
        parsing depends on (pods are immutable values, shared by the dry runs)."""
        parsed: dict[bool, Sequence[Pod] | NodeServiceError] = {}
        out: builtins.list[tuple[str, dict[str, Any]]] = []
        for node in self.list():
            config = node.engine.config
            gate = config.gate("PodLevelResources")
            if gate not in parsed:
                try:
                    parsed[gate] = parse_manifests(manifest, config)
                except NodeServiceError as exc:
                    parsed[gate] = exc
            pods = parsed[gate]
            try:
                if isinstance(pods, NodeServiceError):
                    raise pods
                doc = node.dry_run(manifest, pods)
            except NodeServiceError as exc:
                doc = {"error": {"reason": error_reason(exc), "message": exc.message}}
            out.append((node.name, doc))
        return out


def error_reason(exc: NodeServiceError) -> str:
    """The reason an agent's error answer would carry (``app.web.errors.ERROR_STATUS``)."""
    if isinstance(exc, PodConflictError):
        return "AlreadyExists"
    if isinstance(exc, NodeInputError):
        return "Invalid"
    return exc.__class__.__name__

"""``--demo-fleet N``: N simulated nodes of the hub's own, so a demo shows a cluster without
agents. They are generated from a fixed seed (the same N gives the same fleet every time) with
varied presets, kubelet configurations (static CPU manager with pod or container scope, the
pod-level resource managers on where the release has them, the memory manager on or off, plain
``none`` nodes), releases (every one of ``kubelet_config.RELEASES``) and workloads (classic
Guaranteed pods, Burstable pods and pod-level "bubble" pods, admitted one by one by the node's
engine, so some are rejected exactly as that kubelet would).

Each node is a ``Node`` engine held in memory (no database, no state files: they are the hub's
demo, not anyone's nodes) and a ``NodeSource`` like any other node (``app.services.nodes.source``):
its page, JSON, pods, PodResources, dry run (the one judge), upgrade verdict and restart
rehearsal are served through the catalog; ``app.services.fleet.hub`` treats them as nodes of a
built-in agent.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.adapters.podresources_cache import get_pod_json, list_response_json
from app.adapters.podresources_json import allocatable_json
from app.contracts.summary import NodeSummaryV1
from app.domain import releases
from app.domain.kubelet_config import RELEASES, KubeletConfig, KubeletConfigError
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.pod.model import Pod
from app.domain.podresources import PodNotFoundError
from app.domain.presets import get_preset
from app.domain.restart import restart_for
from app.services import node_views
from app.services.demo import bubble_pod, classic_pod, config_text, fleet_data
from app.services.encoded_json import EncodedJSON
from app.services.fleet.agent_summary import SummaryCache, build_summary
from app.services.node_views import node_topology_view
from app.services.nodes.errors import (
    NodeInputError,
    NodeServiceError,
    PodConflictError,
    UnknownPodError,
)
from app.services.nodes.inputs import (
    AdmissionBatch,
    build_engine_node,
    parse_config,
    parse_manifests,
    pod_memory_requests,
)
from app.services.nodes.judge import judge
from app.services.nodes.target_config import restart_config
from app.services.simulation import state_files_of
from app.services.upgrade import NodeFiles, UpgradeInputError, check_files
from app.services.watch import SOURCE_FLEET, LastDigest

if TYPE_CHECKING:  # the restart use case and NRT publishing load the database and httpx: a
    # fleet worker, which only dry-runs and checks upgrades, never needs them
    from app.services.nodes.restart import Rehearsal

_FLEET = fleet_data()
SEED = _FLEET.seed
PRESETS = _FLEET.presets
KINDS = _FLEET.kinds


def _config(kind: str, release: str) -> str:
    """The configuration of ``kind`` for ``release``: a release without the
    PodLevelResourceManagers gate runs ``pod-scope`` nodes as ``restricted`` ones."""
    if kind == "pod-scope" and not releases.get(release).knows_pod_level_gate:
        kind = "restricted"
    return config_text(_FLEET.configs[kind])


@dataclass(eq=False)
class SimulatedNode:
    """One node of the demo fleet as a ``NodeSource`` (read-only): its engine, definition and
    views, built once (the fleet never changes); dry runs go through the one judge, the upgrade
    verdict is the inspector's on the state files its engine writes (cached per release and
    gate), the rehearsal restarts a copy of it."""

    name: str
    preset: str
    config_text: str
    release: str
    engine: Node
    rejected: int
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC), init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _upgrades: dict[tuple[str, bool | None], dict[str, Any]] = field(
        default_factory=dict, init=False, repr=False
    )
    # Built when first asked for (a node's page): a fleet of thousands keeps only the
    # engines and their summaries (the views were 85 of every 95 MiB per 1,000 nodes).
    _views: node_views.NodeViews | None = field(default=None, init=False, repr=False)
    _digest: LastDigest = field(default_factory=LastDigest, init=False, repr=False)

    def _views_of(self, engine: Node, config_text: str) -> node_views.NodeViews:
        return node_views.NodeViews(
            engine.snapshot(),
            node=self.name,
            topology=node_topology_view(engine.topology, self.preset, "preset"),
            created_at=self.created_at,
            kubelet_config_text=config_text,
            demo=True,
            pod_memory_requests={uid: pod_memory_requests(p) for uid, p in engine.pods.items()},
        )

    # -- views ---------------------------------------------------------------------------------
    def views(self) -> node_views.NodeViews:
        views = self._views
        if views is None:
            with self.lock:
                views = self._views
                if views is None:
                    views = self._views = self._views_of(self.engine, self.config_text)
        return views

    def summary(self) -> node_views.NodeSummary:
        return self.views().summary(rejected=self.rejected, load_error=None)

    def agent_summary(self, cache: SummaryCache) -> NodeSummaryV1:
        """The node's summary as its agent would publish it (``numascope.summary/v1``)."""
        views = self._views
        if views is None:  # drawn for the summary only, not kept
            with self.lock:
                views = self._views_of(self.engine, self.config_text)
        summary = views.summary(rejected=self.rejected, load_error=None)
        return cache.versioned(build_summary(summary, views))

    def node_view(self, *, batch: str | None = None) -> node_views.NodeView:
        return self.views().node_view(self.summary())

    def node_view_json(self, *, batch: str | None = None) -> EncodedJSON:
        return self.views().encoded.get(("node",), self.node_view)

    def node_detail(self) -> node_views.NodeDetail:
        return node_views.NodeDetail.of(self.node_view())

    def node_detail_json(self) -> EncodedJSON:
        return self.views().encoded.get(("detail",), self.node_detail)

    def pod_view(self, namespace: str, name: str) -> node_views.PodView:
        row = self.views().pod_row(namespace, name)
        if row is None:
            raise UnknownPodError(self.name, namespace, name)
        podresources = get_pod_json(self.views().snapshot, namespace, name)
        return self.views().pod_view(self.summary(), row, podresources)

    def pod_view_json(self, namespace: str, name: str) -> EncodedJSON:
        return self.views().encoded.get(
            ("pod", namespace, name), lambda: self.pod_view(namespace, name)
        )

    def admissions(
        self, *, limit: int = 100, batch: str | None = None
    ) -> list[node_views.AdmissionLogEntry]:
        return []  # built in memory: the fleet keeps no log

    def state_files(self) -> dict[str, str]:
        with self.lock:
            return state_files_of(self.engine)

    def watch_token(self) -> tuple[str, str]:
        return SOURCE_FLEET, f"f-{self._digest.of(self.views(), self.node_view)}"

    # -- PodResources ------------------------------------------------------------------------
    def podresources_list_json(self) -> EncodedJSON:
        snapshot = self.views().snapshot
        return self.views().encoded.get(("podresources",), lambda: list_response_json(snapshot))

    def podresources_get_json(self, namespace: str, name: str) -> EncodedJSON:
        snapshot = self.views().snapshot
        try:
            return self.views().encoded.get(
                ("podresources", namespace, name),
                lambda: get_pod_json(snapshot, namespace, name),
            )
        except PodNotFoundError:
            raise UnknownPodError(self.name, namespace, name) from None

    def allocatable_json(self) -> EncodedJSON:
        snapshot = self.views().snapshot
        return self.views().encoded.get(("allocatable",), lambda: allocatable_json(snapshot))

    # -- questions -------------------------------------------------------------------------------
    def dry_run(self, manifest: str, pods: Sequence[Pod] | None = None) -> AdmissionBatch:
        """Judge the pods of ``manifest`` (``pods``: already parsed under this node's
        PodLevelResources gate) on this node, keeping nothing."""
        if pods is None:
            pods = parse_manifests(manifest, self.engine.config)
        with self.lock:
            results = judge(self.engine, pods)
        return AdmissionBatch(self.name, str(uuid.uuid4()), True, tuple(results))

    def node_files(self, files: Mapping[str, str] | None = None) -> NodeFiles:
        """What its kubelet's start-up is judged on (the upgrade verdict, as for any node);
        ``files``: its state files as ``render_state_files`` gave them, when already known."""
        return NodeFiles(
            self.name,
            self.engine.topology,
            self.release,
            self.config_text,
            render_state_files(self.engine) if files is None else files,
            {uid: p.key for uid, p in self.engine.pods.items()},
        )

    def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        key = (release, gate)
        with self.lock:
            cached = self._upgrades.get(key)
            if cached is None:
                try:
                    cached = check_files(self.node_files(), release, gate)
                except UpgradeInputError as exc:
                    raise NodeInputError(exc.message, exc.field) from None
                self._upgrades[key] = cached
        return cached

    def nrt(self, fingerprint_method: str) -> dict[str, Any]:
        from app.services.nrt import build_nrt

        return build_nrt(self.views(), fingerprint_method)

    def rehearse(self, release: str, gate: bool | None) -> Rehearsal:
        """A kubelet of ``release`` restarting on this node's state files and pods (a copy:
        the node keeps its release)."""
        from app.services.nodes.restart import Rehearsal

        target, text = restart_config(self.config_text, self.release, release, gate)
        with self.lock:
            files = render_state_files(self.engine)
            pods = [(p, self.engine.admitted_at.get(u, 0.0)) for u, p in self.engine.pods.items()]
        try:
            result = restart_for(
                target,
                self.engine.topology,
                files,
                pods,
                name=self.name,
                previous_release=self.release,
                clock=self.engine.clock,
            )
        except KubeletConfigError as err:
            raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None
        after = None if result.node is None else self._views_of(result.node, text).map
        return Rehearsal(self.name, result, True, False, self.views().map, after)


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


@dataclass(frozen=True, slots=True)
class NodePlan:
    """What the seed decides about one node (everything but its engine): replaying the
    seed's draws is cheap, so a worker process can build only its share of the fleet and
    still get exactly the nodes the hub has (``app.services.fleet.workers``)."""

    index: int
    preset: str
    release: str
    config_text: str
    manifests: tuple[str, ...]


_USABLE: dict[tuple[str, str, str], str] = {}


def _usable_config(preset: str, kind: str, release: str) -> str:
    """The configuration text of ``kind`` for ``release``, or a plain node's when this
    machine cannot take it (decided once per preset, kind and release)."""
    key = (preset, kind, release)
    if key not in _USABLE:
        text = _config(kind, release)
        try:
            build_engine_node("probe", get_preset(preset), _config_of(text, release), time.time)
        except NodeServiceError:
            text = _config("none", release)
        _USABLE[key] = text
    return _USABLE[key]


def plan_node(rng: random.Random, index: int) -> NodePlan:
    """The next node the seed's ``rng`` draws (the draws of ``build_node``, in its order)."""
    preset = rng.choice(PRESETS)
    release = rng.choice(RELEASES)
    text = _usable_config(preset, rng.choice(KINDS), release)
    pod_level = _config_of(text, release).pod_level_resource_managers
    cpus = get_preset(preset).all_cpus.size()
    return NodePlan(index, preset, release, text, tuple(_workload(rng, pod_level, cpus)))


def build_planned(plan: NodePlan) -> SimulatedNode:
    """The node of ``plan``: its engine, with the workload admitted one pod at a time."""
    name = node_name(plan.index)
    config = _config_of(plan.config_text, plan.release)
    engine = build_engine_node(name, get_preset(plan.preset), config, time.time)
    rejected = 0
    for manifest in plan.manifests:
        for pod in _pods_of(manifest, config):
            if not engine.admit(pod).admitted:
                rejected += 1
    return SimulatedNode(name, plan.preset, plan.config_text, plan.release, engine, rejected)


def build_node(rng: random.Random, index: int) -> SimulatedNode:
    return build_planned(plan_node(rng, index))


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

    def build(self, shard: int = 0, shards: int = 1, owner: Sequence[int] | None = None) -> None:
        """Build the nodes (``shards`` > 1: only those of ``shard``, by default the nodes whose
        index is ``shard`` modulo ``shards``, else those ``owner[index]`` gives it; the
        others' draws are replayed, not built)."""
        rng = random.Random(self.seed)
        for i in range(self.count):
            plan = plan_node(rng, i)
            if (i % shards if owner is None else owner[i]) == shard:
                node = build_planned(plan)
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

    def dry_run_all(
        self, manifest: str, nodes: Sequence[SimulatedNode] | None = None
    ) -> Sequence[tuple[str, dict[str, Any]]]:
        """Every node's (or each of ``nodes``') dry-run answer (or its error as an agent's
        error document). The manifest is parsed once per value of the PodLevelResources gate,
        the only setting parsing depends on (pods are immutable values, shared by the dry
        runs)."""
        parsed: dict[bool, Sequence[Pod] | NodeServiceError] = {}
        out: builtins.list[tuple[str, dict[str, Any]]] = []
        for node in self.list() if nodes is None else nodes:
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
                doc = node.dry_run(manifest, pods).to_dict()
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

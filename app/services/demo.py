"""Demo simulated nodes: what a fresh dashboard shows (``Settings.demo``, on by default).

Three nodes, each with pods admitted by the engine exactly as a 1.37 kubelet would:

* ``demo-pod-scope`` — ``server-2s-4numa-128t``; static CPU manager with ``full-pcpus-only``,
  Static memory manager with ``reservedMemory``, topology manager ``single-numa-node`` with
  scope ``pod`` and the pod-level resource managers on (KEP-5526's pod bubble). Pods: the
  blog's tightly-coupled database (budget 8 CPUs, ``database`` 6 exclusive, two shared
  sidecars), an ML training pod with an exclusive data-loader sidecar and shared helpers, a
  classic Guaranteed pod, a Burstable pod in the node shared pool, and the tutorial's
  empty-shared-pool pod, which the kubelet rejects (``TopologyAffinityError``).
* ``demo-container-scope`` — ``topoDualSocketHT`` (the upstream test box); scope
  ``container``, memory manager ``None``: the documentation's mixed model (budget 4 CPUs, ``infrastructure-sidecar``
  2 exclusive CPUs from the node, workers in the node shared pool), a classic Guaranteed pod,
  and a pod too big for one NUMA node (rejected: ``TopologyAffinityError``).
* ``demo-512`` — ``server-2s-8numa-512t`` with topology manager ``restricted`` and scope
  ``pod``: a dozen pods of several shapes spread over its eight NUMA nodes.

The nodes, their configurations and their pods are package data (``app/data``:
``demo.yaml`` lists the nodes and the hub's demo fleet, ``pods/`` and ``configs/`` hold the
manifests and KubeletConfigurations), read once and checked here; the demo, the forms' samples,
the demo fleet and the tests all take them from there. The manifests follow the examples of the
Kubernetes documentation and blog on pod-level resource managers (see
``tests/fixtures/pods/scenarios``).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.domain import releases
from app.domain.presets import get_preset
from app.services.nodes.errors import NodeExistsError

if TYPE_CHECKING:
    from app.services.nodes.service import NodeService

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DemoNode:
    name: str
    topology: str
    kubelet_config: str
    pods: tuple[str, ...]  # manifests, admitted one after the other
    release: str = releases.DEFAULT_RELEASE


# -- the data files ------------------------------------------------------------------------

_DATA = resources.files("app") / "data"


@functools.cache
def pod_manifest(name: str) -> str:
    """The manifest ``app/data/pods/<name>.yaml`` (a demo pod, the forms' sample)."""
    return _text("pods", name)


@functools.cache
def config_text(name: str) -> str:
    """The KubeletConfiguration ``app/data/configs/<name>.yaml``."""
    return _text("configs", name)


def _text(folder: str, name: str) -> str:
    path = _DATA / folder / f"{name}.yaml"
    if not path.is_file():
        raise LookupError(f"no {folder} file {name!r} in the package data")
    return path.read_text(encoding="utf-8")


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel)


class _Bubble(_Shape):
    name: str
    namespace: str
    budget: int = Field(gt=0)
    exclusive: dict[str, int]
    shared: tuple[str, ...] = ("sidecar",)
    gib_per_cpu: int = Field(default=2, gt=0)


class _Classic(_Shape):
    name: str
    namespace: str
    cpus: str
    memory: str


class _BubbleEntry(_Shape):
    bubble: _Bubble


class _ClassicEntry(_Shape):
    classic: _Classic


class _NodeEntry(_Shape):
    name: str
    topology: str
    config: str
    pods: list[str | _BubbleEntry | _ClassicEntry]


class FleetData(_Shape):
    """The demo fleet's draw: its seed, presets, configuration kinds and their files."""

    seed: int
    presets: tuple[str, ...] = Field(min_length=1)
    kinds: tuple[str, ...] = Field(min_length=1)
    configs: dict[str, str]


class _DemoFile(_Shape):
    nodes: list[_NodeEntry]
    fleet: FleetData


@functools.cache
def _demo_file() -> _DemoFile:
    """``app/data/demo.yaml``, checked: its shape, and every file and preset it names."""
    doc = _DemoFile.model_validate(yaml.safe_load((_DATA / "demo.yaml").read_text("utf-8")))
    for node in doc.nodes:
        get_preset(node.topology)
        config_text(node.config)
        for pod in node.pods:
            if isinstance(pod, str):
                pod_manifest(pod)
    for preset in doc.fleet.presets:
        get_preset(preset)
    for kind in doc.fleet.kinds:
        config_text(doc.fleet.configs[kind])
    return doc


def _pod_text(entry: str | _BubbleEntry | _ClassicEntry) -> str:
    if isinstance(entry, str):
        return pod_manifest(entry)
    if isinstance(entry, _BubbleEntry):
        b = entry.bubble
        return bubble_pod(
            b.name, b.namespace, b.budget, b.exclusive, b.shared, gib_per_cpu=b.gib_per_cpu
        )
    c = entry.classic
    return classic_pod(c.name, c.namespace, c.cpus, c.memory)


def demo_nodes() -> tuple[DemoNode, ...]:
    """The demo nodes of ``app/data/demo.yaml``, in its order."""
    return tuple(
        DemoNode(n.name, n.topology, config_text(n.config), tuple(_pod_text(p) for p in n.pods))
        for n in _demo_file().nodes
    )


def fleet_data() -> FleetData:
    """The demo fleet's part of ``app/data/demo.yaml``."""
    return _demo_file().fleet


def bubble_pod(
    name: str,
    namespace: str,
    budget: int,
    exclusive: dict[str, int],
    shared: tuple[str, ...] = ("sidecar",),
    *,
    gib_per_cpu: int = 2,
) -> str:
    """A pod-level pod: a budget of ``budget`` CPUs, exclusive app containers, shared sidecars."""
    lines = [
        "apiVersion: v1",
        "kind: Pod",
        "metadata:",
        f"  name: {name}",
        f"  namespace: {namespace}",
        "spec:",
        "  resources:",
        f'    requests: {{cpu: "{budget}", memory: {budget * gib_per_cpu}Gi}}',
        f'    limits: {{cpu: "{budget}", memory: {budget * gib_per_cpu}Gi}}',
    ]
    if shared:
        lines.append("  initContainers:")
        for s in shared:
            lines += [f"  - name: {s}", f"    image: {s}:1", "    restartPolicy: Always"]
    lines.append("  containers:")
    for c, cpus in exclusive.items():
        lines += [
            f"  - name: {c}",
            f"    image: {c}:1",
            "    resources:",
            f'      requests: {{cpu: "{cpus}", memory: {cpus * gib_per_cpu}Gi}}',
            f'      limits: {{cpu: "{cpus}", memory: {cpus * gib_per_cpu}Gi}}',
        ]
    return "\n".join(lines) + "\n"


def classic_pod(name: str, namespace: str, cpus: str, memory: str) -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n"
        f"  name: {name}\n  namespace: {namespace}\n"
        "spec:\n  containers:\n"
        f"  - name: main\n    image: {name}:1\n    resources:\n"
        f'      limits: {{cpu: "{cpus}", memory: {memory}}}\n'
    )


DEMO_NODES: tuple[DemoNode, ...] = demo_nodes()

# The demo's pods and configurations by the names the tests and benches use.
POD_SCOPE_CONFIG = config_text("pod-scope")
CONTAINER_SCOPE_CONFIG = config_text("container-scope")
SERVER_CONFIG = config_text("server")
DATABASE_POD = pod_manifest("database")
ML_POD = pod_manifest("ml-training")
CLASSIC_POD = pod_manifest("classic")
BURSTABLE_POD = pod_manifest("burstable")
EMPTY_SHARED_POOL_POD = pod_manifest("empty-shared-pool")
CONTAINER_SCOPE_MIXED_POD = pod_manifest("container-scope-mixed")
GUARANTEED_TWO_POD = pod_manifest("guaranteed-two")
TOO_BIG_POD = pod_manifest("too-big")


def create_demo_nodes(service: NodeService, nodes: tuple[DemoNode, ...] = DEMO_NODES) -> None:
    """Create the demo nodes that do not exist yet and admit their pods."""
    existing = set(service.registry.simulated_names())
    for demo in nodes:
        if demo.name in existing:
            continue
        try:
            service.create(demo.name, demo.topology, demo.kubelet_config, demo.release, demo=True)
        except NodeExistsError:  # created meanwhile by another process on the same database
            continue
        for manifest in demo.pods:
            batch = service.admit(demo.name, manifest)
            for r in batch.results:
                if not r.admitted:
                    log.info(
                        "demo node %s: %s/%s rejected: %s: %s",
                        demo.name,
                        r.namespace,
                        r.name,
                        r.reason,
                        r.message,
                    )

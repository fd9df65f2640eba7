"""Inputs and values of the simulated-node service: checks of node names, topologies, kubelet
configurations and pod manifests (each error names its field), the node definition and what
one submission did (``AdmissionBatch``, the API's answer).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.contracts.admission import AdmissionAnswer
from app.contracts.base import checked
from app.domain import k8s_names, releases
from app.domain.kubelet_config import DEFAULT_RELEASE, KubeletConfig, KubeletConfigError
from app.domain.node.model import AdmissionResult, Node
from app.domain.pod.model import Pod, PodManifestError, is_hugepage_resource_name
from app.domain.presets import get_preset
from app.domain.topology.model import CPUTopology, TopologyError
from app.domain.topology.spec import parse_topology_spec
from app.services.node_views import pod_url
from app.services.nodes.errors import NodeInputError

if TYPE_CHECKING:  # the database's rows: a fleet worker parses pods without loading SQLModel
    from app.adapters.db.tables import NodeRecord

MAX_MANIFEST_BYTES = 1024 * 1024
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class NodeDefinition:
    name: str
    topology: str
    topology_kind: str  # "preset" | "spec"
    kubelet_config: str
    release: str = DEFAULT_RELEASE
    demo: bool = False
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass(frozen=True, slots=True)
class AdmissionBatch:
    """What one submission did: a verdict per pod, in manifest order."""

    node: str
    batch: str
    dry_run: bool
    results: tuple[AdmissionResult, ...]

    @property
    def admitted(self) -> int:
        return sum(1 for r in self.results if r.admitted)

    @property
    def rejected(self) -> int:
        return len(self.results) - self.admitted

    @property
    def all_admitted(self) -> bool:
        return self.rejected == 0

    def to_dict(self) -> dict[str, Any]:
        """The API answer: ``admitted``/``reason``/``message`` of the first rejection at the
        top (a single pod reads like one verdict), every pod under ``results``."""
        results = []
        for r in self.results:
            d = r.to_dict()
            if r.admitted and r.allocation is not None:
                d["url"] = pod_url(self.node, r.namespace, r.name)
                d["allocation"] = _allocation_dict(r)
            results.append(d)
        out: dict[str, Any] = {
            "node": self.node,
            "batch": self.batch,
            "dryRun": self.dry_run,
            "admitted": self.all_admitted,
        }
        first = next((r for r in self.results if not r.admitted), None)
        if first is not None:
            out["reason"] = first.reason
            out["message"] = first.message
        out["summary"] = {"admitted": self.admitted, "rejected": self.rejected}
        out["results"] = results
        return checked(AdmissionAnswer, out)


def _allocation_dict(r: AdmissionResult) -> dict[str, Any]:
    a = r.allocation
    assert a is not None
    return {
        "qosClass": a.qos_class,
        "podCpuset": None if a.pod_cpuset is None else str(a.pod_cpuset),
        "podSharedCpuset": str(a.shared_pool()),
        "podMemory": [b.to_dict() for b in a.pod_memory],
        "containers": [
            {
                "name": c.name,
                "kind": c.kind,
                "isolation": c.isolation,
                "cpuset": str(c.cpuset),
                "memory": [b.to_dict() for b in c.memory],
            }
            for c in a.containers
        ],
    }


def check_node_name(name: str) -> str:
    if not isinstance(name, str):
        raise NodeInputError("name: Required value", "name")
    try:
        k8s_names.check_subdomain(name, "name")
    except k8s_names.InvalidNameError as err:
        raise NodeInputError(str(err), "name") from None
    if name.endswith(".json"):
        raise NodeInputError(
            f"name: Invalid value: {name!r}: must not end in '.json' (the pages' JSON twins "
            "use that suffix)",
            "name",
        )
    return name


def resolve_topology(text: str) -> tuple[str, CPUTopology]:
    """``("spec", topology)`` for text containing ``=``, else ``("preset", topology)``."""
    if not isinstance(text, str) or not text.strip():
        raise NodeInputError("topology: Required value (a preset name or a spec)", "topology")
    text = text.strip()
    try:
        if "=" in text:
            return "spec", parse_topology_spec(text)
        return "preset", get_preset(text)
    except TopologyError as err:
        raise NodeInputError(f"topology: {err}", "topology") from None


def parse_config(text: str, release: str) -> KubeletConfig:
    problem = releases.complaint(release)
    if problem is not None:
        raise NodeInputError(f"release: {problem}", "release")
    if len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
        raise NodeInputError("kubeletConfig: is larger than 1 MiB", "kubeletConfig")
    try:
        return parse_kubelet_config_text(text, release)
    except KubeletConfigError as err:
        raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None


def build_engine_node(
    name: str, topology: CPUTopology, config: KubeletConfig, clock: Callable[[], float]
) -> Node:
    try:
        return Node(name, topology, config, clock=clock)
    except KubeletConfigError as err:
        raise NodeInputError(f"kubeletConfig.{err.field}: {err.message}", err.field) from None


def parse_manifests(text: str, config: KubeletConfig) -> list[Pod]:
    if not isinstance(text, str) or not text.strip():
        raise NodeInputError("manifest: Required value (a Pod manifest, YAML or JSON)", "manifest")
    if len(text.encode("utf-8")) > MAX_MANIFEST_BYTES:
        raise NodeInputError("manifest: is larger than 1 MiB", "manifest")
    try:
        pods = parse_pod_manifests(
            text, pod_level_resources_enabled=config.gate("PodLevelResources")
        )
    except PodManifestError as err:
        raise NodeInputError(str(err), err.field or "manifest") from None
    if not pods:
        raise NodeInputError("manifest: no Pod in the manifest", "manifest")
    return pods


def pod_memory_requests(pod: Pod) -> dict[str, int]:
    """Pod-level memory and hugepage requests in bytes (the pod's memory budget)."""
    if pod.resources is None:
        return {}
    return {
        name: q.value()
        for name, q in pod.resources.requests.items()
        if name == "memory" or is_hugepage_resource_name(name)
    }


def micro_clock() -> float:
    """Wall-clock seconds rounded to microseconds, so that admission times survive the
    database's timestamps exactly."""
    return round(time.time(), 6)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


#: The fields a definition and its database row share (besides ``created_at``).
_DEFINED = ("name", "topology", "topology_kind", "kubelet_config", "release", "demo")


def definition_of(r: NodeRecord) -> NodeDefinition:
    from app.adapters.db.tables import as_utc

    return NodeDefinition(**{f: getattr(r, f) for f in _DEFINED}, created_at=as_utc(r.created_at))


def record_of(d: NodeDefinition) -> NodeRecord:
    """The database row of a new node's definition (``definition_of`` read back)."""
    from app.adapters.db.tables import NodeRecord

    return NodeRecord(**{f: getattr(d, f) for f in _DEFINED}, created_at=d.created_at)

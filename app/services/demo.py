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

The manifests follow the examples of the Kubernetes documentation and blog on pod-level
resource managers (see ``tests/fixtures/pods/scenarios``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.domain import releases
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


POD_SCOPE_CONFIG = """\
# Pod-level resource managers with topology manager scope pod (KEP-5526's pod bubble).
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
reservedSystemCPUs: "0,64"
kubeReserved:
  memory: 1Gi
systemReserved:
  memory: 1Gi
reservedMemory:
  - numaNode: 0
    limits:
      memory: 2148Mi
featureGates:
  PodLevelResources: true
  PodLevelResourceManagers: true
"""

DATABASE_POD = """\
# Kubernetes blog "Pod-Level Resource Managers", use case 1: a tightly-coupled database.
apiVersion: v1
kind: Pod
metadata:
  name: tightly-coupled-database
  namespace: databases
spec:
  resources:
    requests: {cpu: "8", memory: 16Gi}
    limits: {cpu: "8", memory: 16Gi}
  initContainers:
  - name: metrics-exporter
    image: metrics-exporter:v1
    restartPolicy: Always
  - name: backup-agent
    image: backup-agent:v1
    restartPolicy: Always
  containers:
  - name: database
    image: database:v1
    resources:
      requests: {cpu: "6", memory: 12Gi}
      limits: {cpu: "6", memory: 12Gi}
"""

ML_POD = """\
# An ML training pod: an exclusive data-loader sidecar, the trainer, shared helpers.
apiVersion: v1
kind: Pod
metadata:
  name: training
  namespace: ml
spec:
  resources:
    requests: {cpu: "12", memory: 48Gi}
    limits: {cpu: "12", memory: 48Gi}
  initContainers:
  - name: data-loader
    image: data-loader:v2
    restartPolicy: Always
    resources:
      requests: {cpu: "2", memory: 8Gi}
      limits: {cpu: "2", memory: 8Gi}
  - name: log-shipper
    image: fluent-bit:3
    restartPolicy: Always
  containers:
  - name: trainer
    image: trainer:v5
    resources:
      requests: {cpu: "8", memory: 32Gi}
      limits: {cpu: "8", memory: 32Gi}
  - name: tensorboard
    image: tensorboard:2
"""

CLASSIC_POD = """\
# A classic Guaranteed pod (no pod-level resources): exclusive CPUs from the node.
apiVersion: v1
kind: Pod
metadata:
  name: packet-processor
  namespace: telco
spec:
  containers:
  - name: dpdk
    image: dpdk-app:23.11
    resources:
      limits: {cpu: "4", memory: 4Gi}
"""

BURSTABLE_POD = """\
# A Burstable pod: it runs in the node shared pool and holds no NUMA resources.
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: frontend
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    resources:
      requests: {cpu: 500m, memory: 256Mi}
      limits: {cpu: "2", memory: 1Gi}
"""

EMPTY_SHARED_POOL_POD = """\
# Tutorial "Use pod-level resource managers": the exclusive containers take the whole budget,
# so logging-sidecar has no CPUs left; single-numa-node rejects it at hint time.
apiVersion: v1
kind: Pod
metadata:
  name: empty-shared-pool
  namespace: ml
spec:
  resources:
    requests: {cpu: "4", memory: 4Gi}
    limits: {cpu: "4", memory: 4Gi}
  initContainers:
  - name: metrics-sidecar
    image: registry.k8s.io/pause:3.9
    restartPolicy: Always
    resources:
      requests: {cpu: "1", memory: 1Gi}
      limits: {cpu: "1", memory: 1Gi}
  - name: logging-sidecar
    image: registry.k8s.io/pause:3.9
    restartPolicy: Always
  containers:
  - name: main-app
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {cpu: "3", memory: 3Gi}
      limits: {cpu: "3", memory: 3Gi}
"""

CONTAINER_SCOPE_CONFIG = """\
# Pod-level resources with topology manager scope container (the docs' mixed model). The
# memory manager stays None: with Static, the kubelet's code rejects the docs' shared workers
# (their empty memory request finds no default NUMA hint).
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: None
topologyManagerPolicy: single-numa-node
topologyManagerScope: container
kubeReserved:
  cpu: "1"
  memory: 1Gi
systemReserved:
  memory: 1Gi
featureGates:
  PodLevelResources: true
  PodLevelResourceManagers: true
"""

CONTAINER_SCOPE_MIXED_POD = """\
# Tutorial "Use pod-level resource managers": container-scope mixed model.
apiVersion: v1
kind: Pod
metadata:
  name: container-scope-mixed
spec:
  resources:
    requests: {cpu: "4", memory: 4Gi}
    limits: {cpu: "4", memory: 4Gi}
  initContainers:
  - name: infrastructure-sidecar
    image: registry.k8s.io/pause:3.9
    restartPolicy: Always
    resources:
      requests: {cpu: "2", memory: 2Gi}
      limits: {cpu: "2", memory: 2Gi}
  containers:
  - name: worker-1
    image: registry.k8s.io/pause:3.9
  - name: worker-2
    image: registry.k8s.io/pause:3.9
"""

GUARANTEED_TWO_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: guaranteed-two
  namespace: batch
spec:
  containers:
  - name: app
    image: batch-app:1
    resources:
      limits: {cpu: "2", memory: 1Gi}
"""

TOO_BIG_POD = """\
# Eight exclusive CPUs do not fit one NUMA node of this box (6 CPUs each, one reserved).
apiVersion: v1
kind: Pod
metadata:
  name: too-big
  namespace: batch
spec:
  containers:
  - name: app
    image: batch-app:1
    resources:
      limits: {cpu: "8", memory: 2Gi}
"""

SERVER_CONFIG = """\
# server-2s-8numa-512t: two reserved cores, restricted topology manager, pod scope.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
memoryManagerPolicy: Static
topologyManagerPolicy: restricted
topologyManagerScope: pod
reservedSystemCPUs: "0-1,256-257"
kubeReserved:
  memory: 1Gi
systemReserved:
  memory: 1Gi
reservedMemory:
  - numaNode: 0
    limits:
      memory: 2148Mi
featureGates:
  PodLevelResources: true
  PodLevelResourceManagers: true
"""


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


def _server_pods() -> tuple[str, ...]:
    pods = [
        bubble_pod("inference-0", "ai", 16, {"model-server": 12}, ("tokenizer", "metrics")),
        bubble_pod("inference-1", "ai", 16, {"model-server": 12}, ("tokenizer", "metrics")),
        bubble_pod("vector-db", "ai", 24, {"shard-0": 10, "shard-1": 10}, ("compactor",)),
        bubble_pod("upf-0", "telco", 8, {"dataplane": 6}, ("control",)),
        bubble_pod("upf-1", "telco", 8, {"dataplane": 6}, ("control",)),
        classic_pod("ptp-daemon", "telco", "2", "1Gi"),
        classic_pod("dpdk-testpmd", "telco", "6", "8Gi"),
        bubble_pod("hpc-solver", "hpc", 60, {"rank-0": 28, "rank-1": 28}, ("monitor",)),
        classic_pod("etl-worker", "batch", "10", "20Gi"),
        bubble_pod("kafka-0", "streaming", 12, {"broker": 8}, ("exporter",), gib_per_cpu=4),
        bubble_pod("kafka-1", "streaming", 12, {"broker": 8}, ("exporter",), gib_per_cpu=4),
        BURSTABLE_POD,
    ]
    return tuple(pods)


DEMO_NODES: tuple[DemoNode, ...] = (
    DemoNode(
        name="demo-pod-scope",
        topology="server-2s-4numa-128t",
        kubelet_config=POD_SCOPE_CONFIG,
        pods=(DATABASE_POD, ML_POD, CLASSIC_POD, BURSTABLE_POD, EMPTY_SHARED_POOL_POD),
    ),
    DemoNode(
        name="demo-container-scope",
        topology="topoDualSocketHT",
        kubelet_config=CONTAINER_SCOPE_CONFIG,
        pods=(CONTAINER_SCOPE_MIXED_POD, GUARANTEED_TWO_POD, TOO_BIG_POD),
    ),
    DemoNode(
        name="demo-512",
        topology="server-2s-8numa-512t",
        kubelet_config=SERVER_CONFIG,
        pods=_server_pods(),
    ),
)


def create_demo_nodes(service: NodeService, nodes: tuple[DemoNode, ...] = DEMO_NODES) -> None:
    """Create the demo nodes that do not exist yet and admit their pods."""
    existing = set(service.simulated_names())
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

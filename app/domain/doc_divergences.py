"""Known places where the Kubernetes documentation and the kubelet's code disagree about an
admission verdict, matched against a rejection so its explanation can say so.

Numascope follows the code (allocation.md §6). When a pod is rejected where the documentation
shows it admitted, or with another reason than the documentation shows, an SRE holding the
tutorial is left puzzled; ``divergences_for`` names the difference, the upstream file that
decides and the documentation page, for the rejection page and its JSON twin.

Entries (allocation.md §6 rows and the tutorial "Use pod-level resources with kubelet resource
managers"):

* ``container-scope-memory-default-hint`` (1.36 only): the tutorial's ``container-scope-mixed``
  pod (pod-level resources, scope ``container``, memory manager ``Static``, containers without
  requests) is described as admitted; a 1.36 memory manager's ``Allocate``
  (pkg/kubelet/cm/memorymanager/policy_static.go, content id 4195507488) still runs for a
  container that requests no memory and fails on its default hint or on the single/cross-NUMA
  rule. From 1.37 kubernetes#138770 skips such a container (content id 68686888954): the code
  admits the pod as the v1.37 tutorial shows it, and no difference is left to explain;
* ``empty-shared-pool-best-effort``: the tutorial shows the empty-shared-pool pod rejected with
  ``TopologyAffinityError``; that holds for ``restricted``/``single-numa-node`` (budget check at
  hint time), while ``best-effort`` admits the hint and ``AllocatePod``
  (pkg/kubelet/cm/cpumanager/policy_static.go, memorymanager/policy_static.go) rejects with
  ``EmptyPodSharedPoolError``.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain import releases
from app.domain.kubelet_config import KubeletConfig
from app.domain.pod.model import Pod
from app.domain.pod.qos import is_container_equivalent_qos_guaranteed, is_pod_level_resources_set

TUTORIAL_URL = (
    "https://kubernetes.io/docs/tutorials/cluster-management/use-pod-level-resource-managers/"
)
TUTORIAL_TITLE = "Use pod-level resources with kubelet resource managers"
MEMORY_POLICY = "pkg/kubelet/cm/memorymanager/policy_static.go"
CPU_POLICY = "pkg/kubelet/cm/cpumanager/policy_static.go"

_DEFAULT_HINT = "[memorymanager] failed to get the default NUMA affinity"
_VIOLATION = "[memorymanager] preferred hint violates NUMA node allocation"


@dataclass(frozen=True, slots=True)
class Divergence:
    key: str
    title: str
    docs_say: str
    code_does: str
    upstream_file: str
    upstream_url: str  # the file at the node's release (master for 1.38)
    docs_url: str
    docs_title: str = TUTORIAL_TITLE


def upstream_url(path: str, release: str) -> str:
    """The file on GitHub at the release branch the node simulates (1.38 = master)."""
    return releases.get(release).upstream_url(path)


def _memory_default_hint_rejection(
    config: KubeletConfig, pod: Pod, reason: str, message: str
) -> list[str]:
    """The containers without requests whose memory ``Allocate`` under scope container
    rejected the pod-level pod (empty: the rejection is not that one)."""
    if reason != "UnexpectedAdmissionError":
        return []
    if _DEFAULT_HINT not in message and _VIOLATION not in message:
        return []
    if config.memory_manager_policy != "Static" or config.topology_manager_scope != "container":
        return []
    if not (config.pod_level_resource_managers and is_pod_level_resources_set(pod)):
        return []
    if releases.has(config.release, releases.MEMORY_SKIP_NO_REQUEST):
        return []  # kubernetes#138770: code and documentation agree from 1.37
    return [c.name for c in pod.all_containers() if not is_container_equivalent_qos_guaranteed(c)]


def _container_scope_default_hint(
    config: KubeletConfig, pod: Pod, reason: str, message: str
) -> Divergence | None:
    bare = _memory_default_hint_rejection(config, pod, reason, message)
    if not bare:
        return None
    which = "the default hint is not found" if _DEFAULT_HINT in message else "the hint collides"
    return Divergence(
        key="container-scope-memory-default-hint",
        title="The documentation shows this kind of pod admitted; the kubelet's code rejects it",
        docs_say=(
            "The tutorial's container-scope-mixed pod (pod-level resources, topology manager "
            "scope container, memory manager Static, containers without requests) is admitted: "
            "the exclusive container gets its slice and the other containers run in the node's "
            "shared pool."
        ),
        code_does=(
            f"Under scope container a {config.release} memory manager's Allocate runs for every "
            "container of a Guaranteed pod, also for a container that requests no memory "
            f"({', '.join(bare)}). Such a container has no hint of its own, so Allocate looks "
            "for a default hint for an empty request: under single-numa-node none is found, "
            "under restricted and best-effort the any-NUMA hint meets the single-NUMA block of "
            f"the exclusive container. Here {which}. Numascope follows the code; scope pod "
            "(one allocation for the whole pod) or memory manager policy None admit such a pod, "
            f"and so does a {releases.INTRODUCED[releases.MEMORY_SKIP_NO_REQUEST]} or newer "
            "kubelet, which skips containers that request no memory "
            f"({releases.PULL_REQUEST[releases.MEMORY_SKIP_NO_REQUEST]})."
        ),
        upstream_file=MEMORY_POLICY,
        upstream_url=upstream_url(MEMORY_POLICY, config.release),
        docs_url=TUTORIAL_URL,
    )


def _empty_pool_best_effort(
    config: KubeletConfig, pod: Pod, reason: str, message: str
) -> Divergence | None:
    if reason != "EmptyPodSharedPoolError" or config.topology_manager_policy != "best-effort":
        return None
    return Divergence(
        key="empty-shared-pool-best-effort",
        title="The documentation shows another reason for this rejection",
        docs_say=(
            "The tutorial's empty-shared-pool pod is rejected with TopologyAffinityError: the "
            "exclusive containers take the whole pod budget."
        ),
        code_does=(
            "TopologyAffinityError is the verdict of restricted and single-numa-node, where "
            "the budget check runs at hint time and leaves no hint. Under best-effort the "
            "topology manager accepts any hint, the same check runs again when the pod is "
            "allocated (AllocatePod) and the kubelet reports EmptyPodSharedPoolError with the "
            "budget text. Same cause, another reason."
        ),
        upstream_file=CPU_POLICY,
        upstream_url=upstream_url(CPU_POLICY, config.release),
        docs_url=TUTORIAL_URL,
    )


_MATCHERS = (_container_scope_default_hint, _empty_pool_best_effort)


def divergences_for(
    config: KubeletConfig, pod: Pod, reason: str, message: str
) -> tuple[Divergence, ...]:
    """The known documentation/code differences this rejection falls under (often none)."""
    found = (match(config, pod, reason, message) for match in _MATCHERS)
    return tuple(d for d in found if d is not None)

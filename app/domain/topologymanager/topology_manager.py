"""The topology manager (follows pkg/kubelet/cm/topologymanager/topology_manager.go, v1.37).

``TopologyManagerConfig`` is the kubelet's ``topologyManagerPolicy`` / ``topologyManagerScope`` /
``topologyManagerPolicyOptions`` triple; ``new_manager`` builds the manager the way
``NewManager`` does:

1. policy ``none``: a ``NoneScope``, whatever the scope and options say (they are not even
   parsed);
2. parse the options (``policy_options``);
3. build ``NUMAInfo`` (``cannot discover NUMA topology: ...`` when prefer-closest lacks
   distances);
4. refuse machines with more NUMA nodes than ``max-allowable-numa-nodes``
   (``unsupported on machines with more than <n> NUMA Nodes``);
5. the policy (``unknown policy: "<name>"``) and the scope (``unknown scope: "<name>"``).

Errors are ``TopologyManagerConfigError`` with the kubelet's text and the configuration
field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.domain.errors import FieldError
from app.domain.golang.strconv import go_quote
from app.domain.pod.model import Pod
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.hint import TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo, NUMAInfoError
from app.domain.topologymanager.policy import (
    POLICY_BEST_EFFORT,
    POLICY_NAMES,
    POLICY_NONE,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    Policy,
)
from app.domain.topologymanager.policy_best_effort import BestEffortPolicy
from app.domain.topologymanager.policy_none import NonePolicy
from app.domain.topologymanager.policy_options import (
    PolicyOptions,
    TopologyManagerOptionError,
    new_policy_options,
)
from app.domain.topologymanager.policy_restricted import RestrictedPolicy
from app.domain.topologymanager.policy_single_numa_node import SingleNumaNodePolicy
from app.domain.topologymanager.scope import (
    CONTAINER_TOPOLOGY_SCOPE,
    POD_TOPOLOGY_SCOPE,
    SCOPE_NAMES,
    ContainerScope,
    HintProvider,
    NoneScope,
    PodScope,
    Scope,
)


class TopologyManagerConfigError(FieldError):
    """The topology manager cannot be built; ``field`` names the configuration key."""

    field: str  # always named


@dataclass(frozen=True, slots=True)
class TopologyManagerConfig:
    """``topologyManagerPolicy``, ``topologyManagerScope``, ``topologyManagerPolicyOptions``."""

    policy: str = POLICY_NONE
    scope: str = CONTAINER_TOPOLOGY_SCOPE
    options: Mapping[str, str] = field(default_factory=dict)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)

    def policy_options(self) -> PolicyOptions:
        """The parsed options (defaults for policy ``none``, which never reads them)."""
        if self.policy == POLICY_NONE:
            return PolicyOptions()
        try:
            return new_policy_options(self.options, self.feature_gates)
        except TopologyManagerOptionError as exc:
            raise TopologyManagerConfigError(
                exc.message, field=f"topologyManagerPolicyOptions.{exc.field}"
            ) from None

    def validate(self, numa_info: NUMAInfo | None = None) -> None:
        """Every check of ``NewManager``; the NUMA checks only when ``numa_info`` is given."""
        opts = self.policy_options()
        if self.policy == POLICY_NONE:
            return
        if numa_info is not None and len(numa_info.nodes) > opts.max_allowable_numa_nodes:
            raise TopologyManagerConfigError(
                f"unsupported on machines with more than {opts.max_allowable_numa_nodes} "
                "NUMA Nodes",
                field="topologyManagerPolicyOptions.max-allowable-numa-nodes",
            )
        if self.policy not in POLICY_NAMES:
            raise TopologyManagerConfigError(
                f"unknown policy: {go_quote(self.policy)}", field="topologyManagerPolicy"
            )
        if self.scope not in SCOPE_NAMES:
            raise TopologyManagerConfigError(
                f"unknown scope: {go_quote(self.scope)}", field="topologyManagerScope"
            )


class TopologyManager:
    """``manager``: a scope (which holds the policy and the stored hints)."""

    def __init__(self, scope: Scope, numa_info: NUMAInfo, options: PolicyOptions) -> None:
        self.scope = scope
        self.numa_info = numa_info
        self.options = options

    @property
    def policy(self) -> Policy:
        return self.scope.policy

    @property
    def policy_name(self) -> str:
        return self.scope.policy.name

    @property
    def scope_name(self) -> str:
        return self.scope.name

    def add_hint_provider(self, provider: HintProvider) -> None:
        self.scope.add_hint_provider(provider)

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return self.scope.get_affinity(pod_uid, container_name)

    def admit(self, pod: Pod) -> dict[str, TopologyHint]:
        """Admit a pod: the stored hints per container, or an ``AdmissionError``."""
        return self.scope.admit(pod)

    def remove_container(self, pod_uid: str, container_name: str) -> None:
        self.scope.remove_container(pod_uid, container_name)

    def remove_pod(self, pod_uid: str) -> None:
        self.scope.remove_pod(pod_uid)


def _numa_info(topology: CPUTopology | NUMAInfo, prefer_closest: bool) -> NUMAInfo:
    try:
        if isinstance(topology, NUMAInfo):
            if prefer_closest:
                return NUMAInfo.new(topology.nodes, topology.distances, prefer_closest_numa=True)
            return topology
        return NUMAInfo.from_topology(topology, prefer_closest_numa=prefer_closest)
    except NUMAInfoError as exc:
        raise TopologyManagerConfigError(
            f"cannot discover NUMA topology: {exc}", field="topology"
        ) from None


def new_policy(name: str, numa_info: NUMAInfo, opts: PolicyOptions) -> Policy:
    """The policy object for a policy name."""
    if name == POLICY_NONE:
        return NonePolicy()
    if name == POLICY_BEST_EFFORT:
        return BestEffortPolicy(numa_info, opts)
    if name == POLICY_RESTRICTED:
        return RestrictedPolicy(numa_info, opts)
    if name == POLICY_SINGLE_NUMA_NODE:
        return SingleNumaNodePolicy(numa_info, opts)
    raise TopologyManagerConfigError(
        f"unknown policy: {go_quote(name)}", field="topologyManagerPolicy"
    )


def new_manager(
    topology: CPUTopology | NUMAInfo,
    config: TopologyManagerConfig | None = None,
    *,
    pod_level_resource_managers: bool = False,
) -> TopologyManager:
    """``NewManager``: validate the configuration against the machine and build the manager."""
    config = config or TopologyManagerConfig()
    if config.policy == POLICY_NONE:
        plain = topology if isinstance(topology, NUMAInfo) else _numa_info(topology, False)
        return TopologyManager(
            NoneScope(NonePolicy(), pod_level_resource_managers=pod_level_resource_managers),
            plain,
            PolicyOptions(),
        )
    opts = config.policy_options()
    numa_info = _numa_info(topology, opts.prefer_closest_numa)
    config.validate(numa_info)
    policy = new_policy(config.policy, numa_info, opts)
    scope: Scope
    if config.scope == CONTAINER_TOPOLOGY_SCOPE:
        scope = ContainerScope(policy, pod_level_resource_managers=pod_level_resource_managers)
    elif config.scope == POD_TOPOLOGY_SCOPE:
        scope = PodScope(policy, pod_level_resource_managers=pod_level_resource_managers)
    else:  # validate() has rejected it already
        raise TopologyManagerConfigError(
            f"unknown scope: {go_quote(config.scope)}", field="topologyManagerScope"
        )
    return TopologyManager(scope, numa_info, opts)

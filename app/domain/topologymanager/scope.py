"""Topology manager scopes (follows pkg/kubelet/cm/topologymanager/scope.go, scope_container.go,
scope_pod.go and scope_none.go, v1.37).

A scope orchestrates admission over the registered hint providers (CPU manager, memory
manager, ...): it gathers their hints, lets the policy merge them, stores the merged hint per
container (the ``Store`` the providers read with ``get_affinity``) and asks every provider to
allocate.

* ``ContainerScope``: per container (init containers first, then app containers), gather
  ``get_topology_hints``, merge, reject the pod on the first container that is not admitted,
  else store the hint and call every provider's ``allocate`` right away.
* ``PodScope``: one merge of ``get_pod_topology_hints`` for the whole pod; the same hint is
  stored for every container, then ``allocate`` runs per container. With the
  ``PodLevelResourceManagers`` gate on and pod-level resources set, a rejected merge gives
  ``Pod Scope pod with pod-level resources failed admission under pod-scope topology manager``
  and every provider's ``allocate_pod`` runs once instead of the per-container calls (KEP-5526).
* ``NoneScope`` (policy ``none``): no hints; every provider's ``allocate`` runs per container.

``admit`` returns the stored hints per container, or raises an ``AdmissionError``. Allocation
errors keep their type when they are ``AdmissionError``s; any other error becomes
``UnexpectedAdmissionError`` (``Allocate failed due to <err>, which is unexpected``), as
``admission.GetPodAdmitResult`` does.

Like the kubelet, a rejected pod may leave hints (and provider allocations) of the containers
handled before the failure; callers that need all-or-nothing admission drop them with
``remove_pod`` and restore the providers' state (the node does both).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from app.domain.admission import AdmissionError, TopologyAffinityError, UnexpectedAdmissionError
from app.domain.deadline import DeadlineExceededError
from app.domain.pod.model import Container, Pod, drop_container_entry
from app.domain.pod.qos import is_pod_level_resources_set
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.policy import Policy

CONTAINER_TOPOLOGY_SCOPE = "container"
POD_TOPOLOGY_SCOPE = "pod"
NONE_TOPOLOGY_SCOPE = "none"
SCOPE_NAMES = (CONTAINER_TOPOLOGY_SCOPE, POD_TOPOLOGY_SCOPE)

POD_LEVEL_ADMISSION_MESSAGE = (
    "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
)

# Errors that are bugs in this program, never allocation outcomes: they are not wrapped. Nor is
# a time budget running out (the work was stopped, not judged).
_PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, AssertionError, DeadlineExceededError)


@runtime_checkable
class HintProvider(Protocol):
    """``HintProvider``: what the topology manager asks of the CPU and memory managers."""

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints | None: ...

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints | None: ...

    def allocate(self, pod: Pod, container: Container) -> None: ...

    def allocate_pod(self, pod: Pod) -> None: ...


class Store(Protocol):
    """``Store``: where providers read the merged hint of a container."""

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint: ...


ZERO_HINT = TopologyHint(None, False)


def admission_error_from(err: Exception) -> AdmissionError:
    """``admission.GetPodAdmitResult``: typed errors keep their type, others are unexpected."""
    if isinstance(err, AdmissionError):
        return err
    return UnexpectedAdmissionError.wrap(err)


def all_containers(pod: Pod) -> tuple[Container, ...]:
    """Init containers in order, then app containers in order."""
    return tuple(pod.init_containers) + tuple(pod.containers)


class Scope:
    """Shared part of every scope: stored hints and registered providers."""

    name = ""

    def __init__(self, policy: Policy, *, pod_level_resource_managers: bool = False) -> None:
        self.policy = policy
        self.pod_level_resource_managers = pod_level_resource_managers
        self.hint_providers: list[HintProvider] = []
        self.pod_topology_hints: dict[str, dict[str, TopologyHint]] = {}

    # -- Store ------------------------------------------------------------------------
    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        """The stored hint; the zero hint (nil mask, not preferred) when there is none."""
        return self.pod_topology_hints.get(pod_uid, {}).get(container_name, ZERO_HINT)

    def set_topology_hints(self, pod_uid: str, container_name: str, hint: TopologyHint) -> None:
        self.pod_topology_hints.setdefault(pod_uid, {})[container_name] = hint

    def get_policy(self) -> Policy:
        return self.policy

    def add_hint_provider(self, provider: HintProvider) -> None:
        self.hint_providers.append(provider)

    def remove_container(self, pod_uid: str, container_name: str) -> None:
        """Forget a container's hint (and the pod's entry once it has none left)."""
        drop_container_entry(self.pod_topology_hints, pod_uid, container_name)

    def remove_pod(self, pod_uid: str) -> None:
        self.pod_topology_hints.pop(pod_uid, None)

    def hints_of(self, pod: Pod) -> dict[str, TopologyHint]:
        return {c.name: self.get_affinity(pod.uid, c.name) for c in all_containers(pod)}

    # -- admission ----------------------------------------------------------------------
    def admit(self, pod: Pod) -> dict[str, TopologyHint]:
        raise NotImplementedError

    def allocate_aligned_resources(self, pod: Pod, container: Container) -> None:
        """Every provider's ``allocate`` for one container; the first error rejects the pod."""
        for provider in self.hint_providers:
            try:
                provider.allocate(pod, container)
            except _PROGRAMMING_ERRORS:
                raise
            except Exception as err:
                raise admission_error_from(err) from err

    def allocate_pod_aligned_resources(self, pod: Pod) -> None:
        """Every provider's ``allocate_pod``; the first error rejects the pod."""
        for provider in self.hint_providers:
            try:
                provider.allocate_pod(pod)
            except _PROGRAMMING_ERRORS:
                raise
            except Exception as err:
                raise admission_error_from(err) from err


class NoneScope(Scope):
    """``noneScope``: the policy is ``none``; providers allocate without hints."""

    name = NONE_TOPOLOGY_SCOPE

    def admit(self, pod: Pod) -> dict[str, TopologyHint]:
        for container in all_containers(pod):
            self.allocate_aligned_resources(pod, container)
        return self.hints_of(pod)


class ContainerScope(Scope):
    """``containerScope``."""

    name = CONTAINER_TOPOLOGY_SCOPE

    def accumulate_providers_hints(
        self, pod: Pod, container: Container
    ) -> list[ProviderHints | None]:
        return [p.get_topology_hints(pod, container) for p in self.hint_providers]

    def calculate_affinity(self, pod: Pod, container: Container) -> tuple[TopologyHint, bool]:
        return self.policy.merge(self.accumulate_providers_hints(pod, container))

    def admit(self, pod: Pod) -> dict[str, TopologyHint]:
        for container in all_containers(pod):
            best, admit = self.calculate_affinity(pod, container)
            if not admit:
                raise TopologyAffinityError()
            self.set_topology_hints(pod.uid, container.name, best)
            self.allocate_aligned_resources(pod, container)
        return self.hints_of(pod)


class PodScope(Scope):
    """``podScope``."""

    name = POD_TOPOLOGY_SCOPE

    def accumulate_providers_hints(self, pod: Pod) -> list[ProviderHints | None]:
        return [p.get_pod_topology_hints(pod) for p in self.hint_providers]

    def calculate_affinity(self, pod: Pod) -> tuple[TopologyHint, bool]:
        return self.policy.merge(self.accumulate_providers_hints(pod))

    def admit(self, pod: Pod) -> dict[str, TopologyHint]:
        if self.pod_level_resource_managers and is_pod_level_resources_set(pod):
            return self.admit_using_pod_resources(pod)
        return self.admit_using_container_resources(pod)

    def admit_using_container_resources(self, pod: Pod) -> dict[str, TopologyHint]:
        best, admit = self.calculate_affinity(pod)
        if not admit:
            raise TopologyAffinityError()
        for container in all_containers(pod):
            self.set_topology_hints(pod.uid, container.name, best)
            self.allocate_aligned_resources(pod, container)
        return self.hints_of(pod)

    def admit_using_pod_resources(self, pod: Pod) -> dict[str, TopologyHint]:
        best, admit = self.calculate_affinity(pod)
        if not admit:
            raise TopologyAffinityError(POD_LEVEL_ADMISSION_MESSAGE)
        for container in all_containers(pod):
            self.set_topology_hints(pod.uid, container.name, best)
        self.allocate_pod_aligned_resources(pod)
        return self.hints_of(pod)

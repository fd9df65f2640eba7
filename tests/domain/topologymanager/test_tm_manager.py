"""Topology manager options, NUMAInfo, NewManager checks, and the scopes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.domain.admission import (
    AdmissionError,
    EmptyPodSharedPoolError,
    SMTAlignmentError,
    TopologyAffinityError,
    UnexpectedAdmissionError,
)
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.topology.model import CPUInfo, CPUTopology, NUMANodeMemory
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo, NUMAInfoError
from app.domain.topologymanager.policy_best_effort import BestEffortPolicy
from app.domain.topologymanager.policy_options import (
    PolicyOptions,
    TopologyManagerOptionError,
    new_policy_options,
)
from app.domain.topologymanager.policy_restricted import RestrictedPolicy
from app.domain.topologymanager.scope import (
    POD_LEVEL_ADMISSION_MESSAGE,
    ContainerScope,
    HintProvider,
    NoneScope,
    PodScope,
)
from app.domain.topologymanager.topology_manager import (
    TopologyManagerConfig,
    TopologyManagerConfigError,
    new_manager,
)


def h(ids: list[int] | None, preferred: bool = True) -> TopologyHint:
    return TopologyHint(None if ids is None else mask_of(ids), preferred)


# -- options -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param({}, PolicyOptions(False, 8), id="defaults"),
        pytest.param({"prefer-closest-numa-nodes": "true"}, PolicyOptions(True, 8), id="closest"),
        pytest.param({"prefer-closest-numa-nodes": "F"}, PolicyOptions(False, 8), id="go-bool"),
        pytest.param({"max-allowable-numa-nodes": "16"}, PolicyOptions(False, 16), id="max-16"),
        pytest.param({"max-allowable-numa-nodes": "+8"}, PolicyOptions(False, 8), id="signed"),
    ],
)
def test_new_policy_options(options: dict[str, str], expected: PolicyOptions) -> None:
    assert new_policy_options(options) == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {"bogus": "1"}, 'unknown Topology Manager Policy option: "bogus"', id="unknown"
        ),
        pytest.param(
            {"prefer-closest-numa-nodes": "yes"},
            'bad value for option "prefer-closest-numa-nodes": '
            'strconv.ParseBool: parsing "yes": invalid syntax',
            id="bad-bool",
        ),
        pytest.param(
            {"max-allowable-numa-nodes": "eight"},
            'unable to convert policy option to integer "max-allowable-numa-nodes": '
            'strconv.Atoi: parsing "eight": invalid syntax',
            id="bad-int",
        ),
        pytest.param(
            {"max-allowable-numa-nodes": "4"},
            'the minimum value of "max-allowable-numa-nodes" should not be less than 8',
            id="below-minimum",
        ),
        pytest.param(
            {"max-allowable-numa-nodes": "99999999999999999999"},
            'unable to convert policy option to integer "max-allowable-numa-nodes": '
            'strconv.Atoi: parsing "99999999999999999999": value out of range',
            id="out-of-range",
        ),
        pytest.param(
            {"zzz": "1", "max-allowable-numa-nodes": "1"},
            'the minimum value of "max-allowable-numa-nodes" should not be less than 8',
            id="first-bad-option-in-name-order",
        ),
    ],
)
def test_new_policy_options_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(TopologyManagerOptionError) as exc:
        new_policy_options(options)
    assert exc.value.message == message


# -- NUMAInfo ------------------------------------------------------------------------------


def _topology(numa_nodes: int, *, distances: bool = True) -> CPUTopology:
    infos = [CPUInfo(n, n, 0, n, 0) for n in range(numa_nodes)]
    memory = [
        NUMANodeMemory(
            n,
            4 << 30,
            {},
            tuple(10 if n == m else 20 for m in range(numa_nodes)) if distances else (),
        )
        for n in range(numa_nodes)
    ]
    return CPUTopology(infos, memory=memory)


def test_numa_info_from_topology() -> None:
    info = NUMAInfo.from_topology(_topology(2), prefer_closest_numa=True)
    assert info.nodes == (0, 1)
    assert info.distances == {0: (10, 20), 1: (20, 10)}
    assert info.default_affinity_mask() == 0b11


def test_numa_info_needs_distances_for_prefer_closest() -> None:
    with pytest.raises(NUMAInfoError, match="error getting NUMA distances from cadvisor"):
        NUMAInfo.from_topology(_topology(2, distances=False), prefer_closest_numa=True)
    assert NUMAInfo.from_topology(_topology(2, distances=False)).nodes == (0, 1)


# -- NewManager ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "numa_nodes", "field", "message"),
    [
        pytest.param(
            TopologyManagerConfig("bogus"),
            2,
            "topologyManagerPolicy",
            'unknown policy: "bogus"',
            id="unknown-policy",
        ),
        pytest.param(
            TopologyManagerConfig("restricted", "node"),
            2,
            "topologyManagerScope",
            'unknown scope: "node"',
            id="unknown-scope",
        ),
        pytest.param(
            TopologyManagerConfig("best-effort"),
            9,
            "topologyManagerPolicyOptions.max-allowable-numa-nodes",
            "unsupported on machines with more than 8 NUMA Nodes",
            id="more-than-8-numa",
        ),
        pytest.param(
            TopologyManagerConfig("best-effort", options={"max-allowable-numa-nodes": "10"}),
            11,
            "topologyManagerPolicyOptions.max-allowable-numa-nodes",
            "unsupported on machines with more than 10 NUMA Nodes",
            id="more-than-raised-max",
        ),
        pytest.param(
            TopologyManagerConfig("best-effort", options={"prefer-closest-numa-nodes": "true"}),
            0,
            "topology",
            "cannot discover NUMA topology: error getting NUMA distances from cadvisor",
            id="no-distances",
        ),
        pytest.param(
            TopologyManagerConfig("single-numa-node", options={"x": "1"}),
            2,
            "topologyManagerPolicyOptions.x",
            'unknown Topology Manager Policy option: "x"',
            id="bad-option",
        ),
    ],
)
def test_new_manager_errors(
    config: TopologyManagerConfig, numa_nodes: int, field: str, message: str
) -> None:
    topology = _topology(numa_nodes) if numa_nodes else _topology(2, distances=False)
    with pytest.raises(TopologyManagerConfigError) as exc:
        new_manager(topology, config)
    assert (exc.value.field, exc.value.message) == (field, message)


def test_policy_none_ignores_scope_options_and_size() -> None:
    config = TopologyManagerConfig("none", "bogus", {"bogus": "x"})
    manager = new_manager(_topology(9), config)
    assert (manager.policy_name, manager.scope_name) == ("none", "none")


@pytest.mark.parametrize(
    ("config", "numa_nodes", "policy", "scope"),
    [
        pytest.param(TopologyManagerConfig("best-effort"), 2, "best-effort", "container", id="be"),
        pytest.param(TopologyManagerConfig("restricted", "pod"), 8, "restricted", "pod", id="re"),
        pytest.param(
            TopologyManagerConfig("single-numa-node", options={"max-allowable-numa-nodes": "9"}),
            9,
            "single-numa-node",
            "container",
            id="snn-9-numa",
        ),
    ],
)
def test_new_manager(
    config: TopologyManagerConfig, numa_nodes: int, policy: str, scope: str
) -> None:
    manager = new_manager(_topology(numa_nodes), config)
    assert (manager.policy_name, manager.scope_name) == (policy, scope)


# -- scopes --------------------------------------------------------------------------------


def _c(name: str, cpu: str | None = "1", restart: str | None = None) -> Container:
    if cpu is None:
        return Container(name, ResourceRequirements(), restart)
    res = {"cpu": cpu, "memory": "1Gi"}
    return Container(name, ResourceRequirements(res, res), restart)


def _pod(*containers: Container, inits: tuple[Container, ...] = (), pod_level: bool = False) -> Pod:
    resources = None
    if pod_level:
        budget = {"cpu": "4", "memory": "4Gi"}
        resources = ResourceRequirements(budget, budget)
    return Pod("uid-1", "p", "default", tuple(containers), inits, resources)


@dataclass
class FakeProvider:
    """Answers fixed hints and records calls; ``fail`` raises from allocate/allocate_pod."""

    container_hints: dict[str, ProviderHints | None] = field(default_factory=dict)
    pod_hints: ProviderHints | None = None
    fail: Exception | None = None
    calls: list[str] = field(default_factory=list)

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints | None:
        self.calls.append(f"hints {container.name}")
        return self.container_hints.get(container.name)

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints | None:
        self.calls.append("pod hints")
        return self.pod_hints

    def allocate(self, pod: Pod, container: Container) -> None:
        self.calls.append(f"allocate {container.name}")
        if self.fail is not None:
            raise self.fail

    def allocate_pod(self, pod: Pod) -> None:
        self.calls.append("allocate pod")
        if self.fail is not None:
            raise self.fail


TWO = NUMAInfo.new([0, 1])


def test_fake_provider_is_a_hint_provider() -> None:
    assert isinstance(FakeProvider(), HintProvider)


def test_container_scope_stores_hints_and_allocates_in_order() -> None:
    cpu = FakeProvider({"init": {"cpu": [h([1])]}, "app": {"cpu": [h([0]), h([1])]}})
    mem = FakeProvider({"app": {"memory": [h([1])]}})
    scope = ContainerScope(RestrictedPolicy(TWO))
    scope.add_hint_provider(cpu)
    scope.add_hint_provider(mem)
    pod = _pod(_c("app"), inits=(_c("init"),))
    assert scope.admit(pod) == {"init": h([1]), "app": h([1])}
    assert cpu.calls == ["hints init", "allocate init", "hints app", "allocate app"]
    assert mem.calls == cpu.calls
    assert scope.get_affinity("uid-1", "app") == h([1])
    assert scope.get_affinity("uid-1", "nope") == TopologyHint(None, False)


def test_container_scope_rejects_at_first_unaligned_container() -> None:
    cpu = FakeProvider({"a": {"cpu": [h([0])]}, "b": {"cpu": []}})
    scope = ContainerScope(RestrictedPolicy(TWO))
    scope.add_hint_provider(cpu)
    with pytest.raises(TopologyAffinityError) as exc:
        scope.admit(_pod(_c("a"), _c("b")))
    assert exc.value.message == "Resources cannot be allocated with Topology locality"
    assert exc.value.reason == "TopologyAffinityError"
    assert cpu.calls == ["hints a", "allocate a", "hints b"]
    scope.remove_pod("uid-1")
    assert scope.pod_topology_hints == {}


def test_pod_scope_merges_once_for_the_whole_pod() -> None:
    cpu = FakeProvider(pod_hints={"cpu": [h([0]), h([1])]})
    scope = PodScope(BestEffortPolicy(TWO))
    scope.add_hint_provider(cpu)
    pod = _pod(_c("a"), _c("b"), inits=(_c("i"),))
    assert scope.admit(pod) == {"i": h([0]), "a": h([0]), "b": h([0])}
    assert cpu.calls == ["pod hints", "allocate i", "allocate a", "allocate b"]


def test_pod_scope_classic_rejection_message() -> None:
    scope = PodScope(RestrictedPolicy(TWO), pod_level_resource_managers=True)
    scope.add_hint_provider(FakeProvider(pod_hints={"cpu": []}))
    with pytest.raises(TopologyAffinityError) as exc:
        scope.admit(_pod(_c("a")))
    assert exc.value.message == "Resources cannot be allocated with Topology locality"


def test_pod_scope_pod_level_rejection_message() -> None:
    scope = PodScope(RestrictedPolicy(TWO), pod_level_resource_managers=True)
    provider = FakeProvider(pod_hints={"cpu": []})
    scope.add_hint_provider(provider)
    with pytest.raises(TopologyAffinityError) as exc:
        scope.admit(_pod(_c("a"), pod_level=True))
    assert exc.value.message == POD_LEVEL_ADMISSION_MESSAGE
    assert exc.value.message == (
        "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
    )
    assert provider.calls == ["pod hints"]


def test_pod_scope_pod_level_calls_allocate_pod_once() -> None:
    cpu = FakeProvider(pod_hints={"cpu": [h([1])]})
    mem = FakeProvider(pod_hints={"memory": [h([1])]})
    scope = PodScope(RestrictedPolicy(TWO), pod_level_resource_managers=True)
    scope.add_hint_provider(cpu)
    scope.add_hint_provider(mem)
    pod = _pod(_c("a"), _c("b", cpu=None), pod_level=True)
    assert scope.admit(pod) == {"a": h([1]), "b": h([1])}
    assert cpu.calls == ["pod hints", "allocate pod"]
    assert mem.calls == ["pod hints", "allocate pod"]


def test_pod_scope_pod_level_needs_the_gate() -> None:
    cpu = FakeProvider(pod_hints={"cpu": [h([1])]})
    scope = PodScope(RestrictedPolicy(TWO), pod_level_resource_managers=False)
    scope.add_hint_provider(cpu)
    scope.admit(_pod(_c("a"), pod_level=True))
    assert cpu.calls == ["pod hints", "allocate a"]


@pytest.mark.parametrize(
    ("error", "expected_type", "message"),
    [
        pytest.param(
            SMTAlignmentError(3, 2),
            SMTAlignmentError,
            "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2",
            id="typed-smt",
        ),
        pytest.param(
            EmptyPodSharedPoolError("pod rejected, x"),
            EmptyPodSharedPoolError,
            "pod rejected, x",
            id="typed-empty-pool",
        ),
        pytest.param(
            ValueError("not enough cpus available to satisfy request: requested=8, available=7"),
            UnexpectedAdmissionError,
            "Allocate failed due to not enough cpus available to satisfy request: "
            "requested=8, available=7, which is unexpected",
            id="untyped-wrapped",
        ),
    ],
)
@pytest.mark.parametrize("pod_level", [False, True], ids=["allocate", "allocate-pod"])
def test_allocation_errors_become_admission_errors(
    error: Exception, expected_type: type[AdmissionError], message: str, pod_level: bool
) -> None:
    scope = PodScope(BestEffortPolicy(TWO), pod_level_resource_managers=True)
    scope.add_hint_provider(FakeProvider(pod_hints={"cpu": [h([0])]}, fail=error))
    with pytest.raises(AdmissionError) as exc:
        scope.admit(_pod(_c("a"), pod_level=pod_level))
    assert type(exc.value) is expected_type
    assert exc.value.message == message


def test_programming_errors_are_not_wrapped() -> None:
    scope = ContainerScope(BestEffortPolicy(TWO))
    scope.add_hint_provider(FakeProvider(fail=TypeError("bug")))
    with pytest.raises(TypeError):
        scope.admit(_pod(_c("a")))


def test_none_scope_allocates_without_hints() -> None:
    provider = FakeProvider({"a": {"cpu": []}})
    manager = new_manager(_topology(2), TopologyManagerConfig("none", "pod"))
    manager.add_hint_provider(provider)
    assert isinstance(manager.scope, NoneScope)
    assert manager.admit(_pod(_c("a"))) == {"a": TopologyHint(None, False)}
    assert provider.calls == ["allocate a"]


def test_manager_remove_container() -> None:
    manager = new_manager(_topology(2), TopologyManagerConfig("best-effort"))
    manager.add_hint_provider(FakeProvider({"a": {"cpu": [h([1])]}}))
    manager.admit(_pod(_c("a"), _c("b")))
    manager.remove_container("uid-1", "a")
    assert manager.get_affinity("uid-1", "a") == TopologyHint(None, False)
    assert manager.get_affinity("uid-1", "b") == h([0, 1])
    manager.remove_container("uid-1", "b")
    assert manager.scope.pod_topology_hints == {}

"""The resource-manager part of a ``KubeletConfiguration`` (kubelet.config.k8s.io/v1beta1).

Follows pkg/kubelet/apis/config/validation/validation.go (policy/scope checks, reserved CPU
parsing) and validation_reserved_memory.go. The machine-dependent check that the per-NUMA
reservations add up to the node-allocatable reservation belongs to the memory manager
(``memorymanager.memory_manager.get_system_reserved_memory``). Error texts are the kubelet's; each error also names the configuration field.

Only the fields that shape CPU and memory placement are read; everything else in the file is
ignored, as a kubelet ignores fields it does not need for a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from app.domain.cpuset import CPUSet, CPUSetError
from app.domain.feature_gates import check_feature_gates
from app.domain.quantity import Quantity, QuantityError
from app.domain.releases import DEFAULT_RELEASE, RELEASES
from app.domain.releases import complaint as release_complaint
from app.domain.releases import get as release_row

CPU_POLICIES = ("none", "static")
MEMORY_POLICIES = ("None", "Static")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_SCOPES = ("container", "pod")

DEFAULT_EVICTION_HARD_MEMORY = "100Mi"

# cpuManagerPolicy static needs CPUs set aside for the system (cpumanager NewManager reads the
# node-allocatable cpu reservation; --reserved-cpus fills it in, cmd/kubelet server.go).
# Configs copied from the pod-level resource managers tutorial often lack one.
NO_CPU_RESERVATION_HINT = (
    ". The static CPU manager policy needs CPUs reserved for the system: add kubeReserved.cpu "
    'or systemReserved.cpu (e.g. kubeReserved: {cpu: "1"}), or reservedSystemCPUs '
    '(e.g. reservedSystemCPUs: "0")'
)
ZERO_CPU_RESERVATION_HINT = (
    ". Raise kubeReserved.cpu or systemReserved.cpu above 0 (e.g. kubeReserved: "
    '{cpu: "1"}), or name the CPUs in reservedSystemCPUs (e.g. reservedSystemCPUs: "0")'
)


class KubeletConfigError(ValueError):
    """An invalid configuration; ``field`` is the configuration key at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class MemoryReservation:
    """One ``reservedMemory`` entry: bytes per resource on one NUMA node."""

    numa_node: int
    limits: Mapping[str, int]


def _freeze(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    release: str = DEFAULT_RELEASE
    cpu_manager_policy: str = "none"
    cpu_manager_policy_options: Mapping[str, str] = field(default_factory=dict)
    reserved_system_cpus: CPUSet | None = None
    kube_reserved: Mapping[str, Quantity] = field(default_factory=dict)
    system_reserved: Mapping[str, Quantity] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    memory_manager_policy: str = "None"
    reserved_memory: tuple[MemoryReservation, ...] = ()
    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    topology_manager_policy_options: Mapping[str, str] = field(default_factory=dict)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)

    def gate(self, name: str) -> bool:
        """Whether a feature gate is on: explicit setting, else the release default."""
        if name in self.feature_gates:
            return bool(self.feature_gates[name])
        return release_row(self.release).gate_defaults.get(name, False)

    def gates(self) -> dict[str, bool]:
        out = dict(release_row(self.release).gate_defaults)
        out.update(self.feature_gates)
        return out

    @property
    def pod_level_resource_managers(self) -> bool:
        return self.gate("PodLevelResources") and self.gate("PodLevelResourceManagers")

    def reserved_cpu_milli(self) -> int | None:
        """kube-reserved + system-reserved cpu in millicores; None when neither names cpu."""
        parts = [q for m in (self.kube_reserved, self.system_reserved) if (q := m.get("cpu"))]
        if not parts:
            return None
        return sum(q.milli_value() for q in parts)

    def num_reserved_cpus(self) -> int:
        """``ceil(kubeReserved.cpu + systemReserved.cpu)`` as the static policy computes it."""
        milli = self.reserved_cpu_milli()
        # The kubelet's text first (it refuses to start with it), then what to add.
        if milli is None:
            raise KubeletConfigError(
                "kubeReserved",
                "[cpumanager] unable to determine reserved CPU resources for static policy"
                + NO_CPU_RESERVATION_HINT,
            )
        if milli == 0:
            raise KubeletConfigError(
                "kubeReserved",
                "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu "
                "to be greater than zero" + ZERO_CPU_RESERVATION_HINT,
            )
        return -(-milli // 1000)

    def node_allocatable_memory_reservation(self) -> dict[str, int]:
        """kube-reserved + system-reserved (+ hard eviction for memory), bytes per resource."""
        out: dict[str, int] = {}
        for source in (self.kube_reserved, self.system_reserved):
            for name, q in source.items():
                if name == "memory" or name.startswith("hugepages-"):
                    out[name] = out.get(name, 0) + q.value()
        eviction = self.eviction_hard.get("memory.available", DEFAULT_EVICTION_HARD_MEMORY)
        if eviction and not eviction.endswith("%"):
            out["memory"] = out.get("memory", 0) + Quantity.parse(eviction).value()
        return out

    def reserved_memory_by_numa(self) -> dict[int, dict[str, int]]:
        out: dict[int, dict[str, int]] = {}
        for r in self.reserved_memory:
            out.setdefault(r.numa_node, {}).update(r.limits)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The configuration in KubeletConfiguration spelling (for pages and JSON)."""
        d: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cpuManagerPolicy": self.cpu_manager_policy,
            "memoryManagerPolicy": self.memory_manager_policy,
            "topologyManagerPolicy": self.topology_manager_policy,
            "topologyManagerScope": self.topology_manager_scope,
        }
        if self.cpu_manager_policy_options:
            d["cpuManagerPolicyOptions"] = dict(self.cpu_manager_policy_options)
        if self.reserved_system_cpus is not None:
            d["reservedSystemCPUs"] = str(self.reserved_system_cpus)
        if self.kube_reserved:
            d["kubeReserved"] = {k: str(v) for k, v in self.kube_reserved.items()}
        if self.system_reserved:
            d["systemReserved"] = {k: str(v) for k, v in self.system_reserved.items()}
        if self.eviction_hard:
            d["evictionHard"] = dict(self.eviction_hard)
        if self.reserved_memory:
            d["reservedMemory"] = [
                {"numaNode": r.numa_node, "limits": {k: str(v) for k, v in r.limits.items()}}
                for r in self.reserved_memory
            ]
        if self.topology_manager_policy_options:
            d["topologyManagerPolicyOptions"] = dict(self.topology_manager_policy_options)
        if self.feature_gates:
            d["featureGates"] = dict(self.feature_gates)
        return d


# -- parsing --------------------------------------------------------------------------


def _mapping(obj: Any, path: str) -> Mapping[str, Any]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise KubeletConfigError(path, f"must be a mapping, got {type(obj).__name__}")
    return obj


def _string(obj: Any, path: str, default: str) -> str:
    if obj is None:
        return default
    if not isinstance(obj, str):
        raise KubeletConfigError(path, f"must be a string, got {obj!r}")
    return obj


def _string_map(obj: Any, path: str) -> dict[str, str]:
    out = {}
    for k, v in _mapping(obj, path).items():
        if isinstance(v, bool):  # YAML turns `true` into a bool; the kubelet wants strings
            v = "true" if v else "false"
        if not isinstance(v, str | int):
            raise KubeletConfigError(f"{path}.{k}", f"must be a string, got {v!r}")
        out[str(k)] = str(v)
    return out


def _quantity_map(obj: Any, path: str) -> dict[str, Quantity]:
    out = {}
    for k, v in _mapping(obj, path).items():
        try:
            out[str(k)] = Quantity.parse(v if isinstance(v, str) else str(v))
        except QuantityError as exc:
            raise KubeletConfigError(f"{path}.{k}", str(exc)) from None
    return out


def _reserved_memory(obj: Any) -> tuple[MemoryReservation, ...]:
    if obj is None:
        return ()
    if not isinstance(obj, list):
        raise KubeletConfigError("reservedMemory", "must be a list")
    seen: dict[int, set[str]] = {}
    out = []
    for i, entry in enumerate(obj):
        path = f"reservedMemory[{i}]"
        entry = _mapping(entry, path)
        numa = entry.get("numaNode")
        if isinstance(numa, bool) or not isinstance(numa, int) or numa < 0:
            raise KubeletConfigError(f"{path}.numaNode", f"must be a NUMA node id, got {numa!r}")
        limits: dict[str, int] = {}
        for name, q in _quantity_map(entry.get("limits"), f"{path}.limits").items():
            if not (name == "memory" or name.startswith("hugepages-")):
                raise KubeletConfigError(
                    f"{path}.limits.{name}",
                    f'invalid configuration: the limit type "{name}" for NUMA node {numa} is '
                    "not supported, only [memory hugepages-<HugePageSize>] is accepted",
                )
            if q.is_zero():
                raise KubeletConfigError(
                    f"{path}.limits.{name}",
                    f"invalid configuration: reserved memory may not be zero for NUMA node "
                    f'{numa} and resource "{name}"',
                )
            if name in seen.setdefault(numa, set()):
                raise KubeletConfigError(
                    f"{path}.limits.{name}",
                    "invalid configuration: the reserved memory has a duplicate value for NUMA "
                    f'node {numa} and resource "{name}"',
                )
            seen[numa].add(name)
            limits[name] = q.value()
        out.append(MemoryReservation(numa, _freeze(limits)))
    return tuple(out)


def _feature_gates(obj: Any, release: str, check: bool = True) -> dict[str, bool]:
    gates = {}
    for k, v in _mapping(obj, "featureGates").items():
        if not isinstance(v, bool):
            raise KubeletConfigError(f"featureGates.{k}", f"must be true or false, got {v!r}")
        gates[str(k)] = v
    # The kubelet refuses unknown, removed and wrongly set locked gates at start-up.
    problem = check_feature_gates(
        gates, release, release_row(release).gate_defaults if release in RELEASES else {}
    )
    if problem is not None and check:
        raise KubeletConfigError(f"featureGates.{problem.gate}", problem.message)
    return gates


def _choice(value: str, allowed: tuple[str, ...], field: str, message: str) -> str:
    if value not in allowed:
        raise KubeletConfigError(field, message)
    return value


def _configuration(obj: Mapping[str, Any] | None, release: str) -> Mapping[str, Any]:
    """``obj`` as a KubeletConfiguration mapping for a supported ``release``."""
    problem = release_complaint(release)
    if problem is not None:
        raise KubeletConfigError("release", problem)
    obj = _mapping(obj, "KubeletConfiguration")
    kind = obj.get("kind")
    if kind is not None and kind != "KubeletConfiguration":
        raise KubeletConfigError("kind", f'expected "KubeletConfiguration", got {kind!r}')
    return obj


def _policies(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """The CPU, memory and topology manager policies and the topology manager scope, each
    refused with the kubelet's message when unknown."""
    cpu_policy = _string(obj.get("cpuManagerPolicy"), "cpuManagerPolicy", "none")
    _choice(
        cpu_policy,
        CPU_POLICIES,
        "cpuManagerPolicy",
        f'unknown policy: "{cpu_policy}" (use "none" or "static")',
    )
    mem_policy = _string(obj.get("memoryManagerPolicy"), "memoryManagerPolicy", "None")
    _choice(
        mem_policy,
        MEMORY_POLICIES,
        "memoryManagerPolicy",
        f'unknown policy: "{mem_policy}" (use "None" or "Static")',
    )
    tm_policy = _string(obj.get("topologyManagerPolicy"), "topologyManagerPolicy", "none")
    _choice(
        tm_policy,
        TOPOLOGY_POLICIES,
        "topologyManagerPolicy",
        f'invalid configuration: topologyManagerPolicy (--topology-manager-policy) "{tm_policy}" '
        'must be one of: ["none" "best-effort" "restricted" "single-numa-node"]',
    )
    tm_scope = _string(obj.get("topologyManagerScope"), "topologyManagerScope", "container")
    _choice(
        tm_scope,
        TOPOLOGY_SCOPES,
        "topologyManagerScope",
        f'invalid configuration: topologyManagerScope (--topology-manager-scope) "{tm_scope}" '
        'must be one of: "container", or "pod"',
    )
    return cpu_policy, mem_policy, tm_policy, tm_scope


def _reserved_cpus(obj: Mapping[str, Any]) -> CPUSet | None:
    reserved_text = _string(obj.get("reservedSystemCPUs"), "reservedSystemCPUs", "")
    reserved: CPUSet | None = None
    if reserved_text != "":
        try:
            reserved = CPUSet.parse(reserved_text)
        except CPUSetError as exc:
            raise KubeletConfigError(
                "reservedSystemCPUs",
                "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) "
                f"{reserved_text}, error: {exc.detail}",
            ) from None
    return reserved


def _check_config(config: KubeletConfig) -> None:
    """The checks across fields: the gate dependency and the memory eviction threshold."""
    if config.gate("PodLevelResourceManagers") and not config.gate("PodLevelResources"):
        raise KubeletConfigError(
            "featureGates.PodLevelResourceManagers",
            "feature gate PodLevelResourceManagers requires PodLevelResources to be enabled",
        )
    eviction = config.eviction_hard.get("memory.available", "")
    if eviction and not eviction.endswith("%"):
        try:
            Quantity.parse(eviction)
        except QuantityError as exc:
            raise KubeletConfigError("evictionHard.memory.available", str(exc)) from None


def kubelet_config_from_dict(
    obj: Mapping[str, Any] | None, release: str = DEFAULT_RELEASE, *, check_gates: bool = True
) -> KubeletConfig:
    """Parse a decoded KubeletConfiguration; raises KubeletConfigError naming the field.

    ``check_gates=False`` skips the start-up check of the gate names and locks (not their
    types): for the configuration of a kubelet that is running, which proves it passed.
    """
    obj = _configuration(obj, release)
    cpu_policy, mem_policy, tm_policy, tm_scope = _policies(obj)
    reserved = _reserved_cpus(obj)
    gates = _feature_gates(obj.get("featureGates"), release, check_gates)
    config = KubeletConfig(
        release=release,
        cpu_manager_policy=cpu_policy,
        cpu_manager_policy_options=_freeze(
            _string_map(obj.get("cpuManagerPolicyOptions"), "cpuManagerPolicyOptions")
        ),
        reserved_system_cpus=reserved,
        kube_reserved=_freeze(_quantity_map(obj.get("kubeReserved"), "kubeReserved")),
        system_reserved=_freeze(_quantity_map(obj.get("systemReserved"), "systemReserved")),
        eviction_hard=_freeze(_string_map(obj.get("evictionHard"), "evictionHard")),
        memory_manager_policy=mem_policy,
        reserved_memory=_reserved_memory(obj.get("reservedMemory")),
        topology_manager_policy=tm_policy,
        topology_manager_scope=tm_scope,
        topology_manager_policy_options=_freeze(
            _string_map(obj.get("topologyManagerPolicyOptions"), "topologyManagerPolicyOptions")
        ),
        feature_gates=_freeze(gates),
    )
    _check_config(config)
    return config

"""Static CPU manager policy options (follows pkg/kubelet/cm/cpumanager/policy_options.go, v1.37).

``new_static_policy_options`` parses the kubelet's ``cpuManagerPolicyOptions`` map into a
``StaticPolicyOptions`` value and ``validate_static_policy_options`` checks it against the
hardware and the Topology Manager policy. Error texts are the kubelet's.

Go ranges over the option map in random order, so with several bad options the kubelet may
report any of them; we check options in name order (the spec's canonical rule) and report
the first bad one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.golang.strconv import go_quote, parse_go_bool
from app.domain.topology.model import CPUTopology

FULL_PCPUS_ONLY_OPTION = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET_OPTION = "align-by-socket"
DISTRIBUTE_CPUS_ACROSS_CORES_OPTION = "distribute-cpus-across-cores"
STRICT_CPU_RESERVATION_OPTION = "strict-cpu-reservation"
PREFER_ALIGN_BY_UNCORE_CACHE_OPTION = "prefer-align-cpus-by-uncorecache"

ALPHA_OPTIONS = frozenset({ALIGN_BY_SOCKET_OPTION, DISTRIBUTE_CPUS_ACROSS_CORES_OPTION})
BETA_OPTIONS = frozenset(
    {
        STRICT_CPU_RESERVATION_OPTION,
        DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION,
        PREFER_ALIGN_BY_UNCORE_CACHE_OPTION,
    }
)
STABLE_OPTIONS = frozenset({FULL_PCPUS_ONLY_OPTION})
ALL_OPTIONS = ALPHA_OPTIONS | BETA_OPTIONS | STABLE_OPTIONS

# Feature gates read by the CPU manager, with their kubelet 1.37 defaults.
GATE_ALPHA_OPTIONS = "CPUManagerPolicyAlphaOptions"
GATE_BETA_OPTIONS = "CPUManagerPolicyBetaOptions"
GATE_POD_LEVEL_RESOURCES = "PodLevelResources"
GATE_POD_LEVEL_RESOURCE_MANAGERS = "PodLevelResourceManagers"
DEFAULT_FEATURE_GATES: Mapping[str, bool] = {
    GATE_ALPHA_OPTIONS: False,
    GATE_BETA_OPTIONS: True,
    GATE_POD_LEVEL_RESOURCES: True,
    GATE_POD_LEVEL_RESOURCE_MANAGERS: False,
}

TOPOLOGY_POLICY_SINGLE_NUMA_NODE = "single-numa-node"


class CPUManagerPolicyError(ValueError):
    """The static policy cannot be built: bad option, option/hardware mismatch, reservation."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def gate_enabled(feature_gates: Mapping[str, bool] | None, name: str) -> bool:
    """Whether ``name`` is on: an explicit setting wins, else the 1.37 default."""
    if feature_gates is not None and name in feature_gates:
        return bool(feature_gates[name])
    return DEFAULT_FEATURE_GATES.get(name, False)


@dataclass(frozen=True, slots=True)
class StaticPolicyOptions:
    """``StaticPolicyOptions``: the parsed option flags."""

    full_physical_cpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    distribute_cpus_across_cores: bool = False
    strict_cpu_reservation: bool = False
    prefer_align_by_uncore_cache: bool = False

    def to_option_map(self) -> dict[str, str]:
        """The options that are on, as a kubelet option map."""
        flags = {
            FULL_PCPUS_ONLY_OPTION: self.full_physical_cpus_only,
            DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION: self.distribute_cpus_across_numa,
            ALIGN_BY_SOCKET_OPTION: self.align_by_socket,
            DISTRIBUTE_CPUS_ACROSS_CORES_OPTION: self.distribute_cpus_across_cores,
            STRICT_CPU_RESERVATION_OPTION: self.strict_cpu_reservation,
            PREFER_ALIGN_BY_UNCORE_CACHE_OPTION: self.prefer_align_by_uncore_cache,
        }
        return {name: "true" for name, on in flags.items() if on}


_FIELD = {
    FULL_PCPUS_ONLY_OPTION: "full_physical_cpus_only",
    DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION: "distribute_cpus_across_numa",
    ALIGN_BY_SOCKET_OPTION: "align_by_socket",
    DISTRIBUTE_CPUS_ACROSS_CORES_OPTION: "distribute_cpus_across_cores",
    STRICT_CPU_RESERVATION_OPTION: "strict_cpu_reservation",
    PREFER_ALIGN_BY_UNCORE_CACHE_OPTION: "prefer_align_by_uncore_cache",
}

# Incompatible pairs, checked in this order after parsing (first one wins).
_INCOMPATIBLE = (
    ("full_physical_cpus_only", "distribute_cpus_across_cores"),
    ("distribute_cpus_across_numa", "distribute_cpus_across_cores"),
    ("prefer_align_by_uncore_cache", "distribute_cpus_across_cores"),
    ("prefer_align_by_uncore_cache", "distribute_cpus_across_numa"),
)
_OPTION_OF_FIELD = {v: k for k, v in _FIELD.items()}


def check_policy_option_available(
    option: str, feature_gates: Mapping[str, bool] | None = None
) -> None:
    """``CheckPolicyOptionAvailable``: known option whose maturity gate is on."""
    if option not in ALL_OPTIONS:
        raise CPUManagerPolicyError(f"unknown CPU Manager Policy option: {go_quote(option)}")
    if option in ALPHA_OPTIONS and not gate_enabled(feature_gates, GATE_ALPHA_OPTIONS):
        raise CPUManagerPolicyError(
            "CPU Manager Policy Alpha-level Options not enabled, "
            f"but option {go_quote(option)} provided"
        )
    if option in BETA_OPTIONS and not gate_enabled(feature_gates, GATE_BETA_OPTIONS):
        raise CPUManagerPolicyError(
            "CPU Manager Policy Beta-level Options not enabled, "
            f"but option {go_quote(option)} provided"
        )


def new_static_policy_options(
    policy_options: Mapping[str, str] | None, feature_gates: Mapping[str, bool] | None = None
) -> StaticPolicyOptions:
    """``NewStaticPolicyOptions``: parse the option map (names checked in sorted order)."""
    values: dict[str, bool] = {}
    for name in sorted(policy_options or {}):
        if not isinstance(name, str):
            raise CPUManagerPolicyError(f"unknown CPU Manager Policy option: {name!r}")
        check_policy_option_available(name, feature_gates)
        raw = (policy_options or {})[name]
        if isinstance(raw, bool):  # a decoded YAML/JSON boolean; the kubelet sees its text
            raw = "true" if raw else "false"
        try:
            values[_FIELD[name]] = parse_go_bool(str(raw))
        except ValueError as exc:
            raise CPUManagerPolicyError(f"bad value for option {go_quote(name)}: {exc}") from None
    opts = StaticPolicyOptions(**values)
    for a, b in _INCOMPATIBLE:
        if getattr(opts, a) and getattr(opts, b):
            raise CPUManagerPolicyError(
                f"static policy options {_OPTION_OF_FIELD[a]} and {_OPTION_OF_FIELD[b]} "
                "can not be used at the same time"
            )
    return opts


def validate_static_policy_options(
    opts: StaticPolicyOptions, topology: CPUTopology, topology_manager_policy: str = "none"
) -> None:
    """``ValidateStaticPolicyOptions``: options against hardware and the TM policy."""
    if opts.align_by_socket:
        if topology_manager_policy == TOPOLOGY_POLICY_SINGLE_NUMA_NODE:
            # "Topolgy" is upstream's spelling.
            raise CPUManagerPolicyError(
                f"Topolgy manager {TOPOLOGY_POLICY_SINGLE_NUMA_NODE} policy is incompatible "
                f"with CPUManager {ALIGN_BY_SOCKET_OPTION} policy option"
            )
        if topology.num_sockets > topology.num_numa_nodes:
            raise CPUManagerPolicyError(
                "Align by socket is not compatible with hardware where number of sockets are "
                "more than number of NUMA"
            )

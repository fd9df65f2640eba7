"""Topology manager policy options (follows pkg/kubelet/cm/topologymanager/policy_options.go, v1.37).

Two options exist in 1.37, both stable (no feature gate needed):

* ``prefer-closest-numa-nodes`` (Go boolean): among equally wide NUMA masks prefer the one
  with the lowest average distance;
* ``max-allowable-numa-nodes`` (integer, default and minimum 8): machines with more NUMA
  nodes are refused at start unless this is raised.

Go ranges over the option map in random order; we check options in name order and report the
first bad one (the spec's canonical rule). Error texts are the kubelet's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from app.domain.errors import FieldError
from app.domain.golang.strconv import go_atoi, go_quote, parse_go_bool

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"

DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8

ALPHA_OPTIONS: frozenset[str] = frozenset()
BETA_OPTIONS: frozenset[str] = frozenset()
STABLE_OPTIONS = frozenset({PREFER_CLOSEST_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES})

GATE_ALPHA_OPTIONS = "TopologyManagerPolicyAlphaOptions"
GATE_BETA_OPTIONS = "TopologyManagerPolicyBetaOptions"

_Value = TypeVar("_Value")


class TopologyManagerOptionError(FieldError):
    """A bad ``topologyManagerPolicyOptions`` entry; ``field`` is the option's name."""


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    """``PolicyOptions``."""

    prefer_closest_numa: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES


def check_policy_option_available(
    option: str, feature_gates: Mapping[str, bool] | None = None
) -> None:
    """``CheckPolicyOptionAvailable``."""
    gates = feature_gates or {}
    if option not in ALPHA_OPTIONS | BETA_OPTIONS | STABLE_OPTIONS:
        raise TopologyManagerOptionError(
            f"unknown Topology Manager Policy option: {go_quote(option)}", field=option
        )
    for level, options, gate, default in (
        ("Alpha", ALPHA_OPTIONS, GATE_ALPHA_OPTIONS, False),
        ("Beta", BETA_OPTIONS, GATE_BETA_OPTIONS, True),
    ):
        if option in options and not gates.get(gate, default):
            raise TopologyManagerOptionError(
                f"Topology Manager Policy {level}-level Options not enabled, but option "
                f"{go_quote(option)} provided",
                field=option,
            )


def new_policy_options(
    policy_options: Mapping[str, str] | None, feature_gates: Mapping[str, bool] | None = None
) -> PolicyOptions:
    """``NewPolicyOptions``: parse the kubelet's option map."""
    prefer_closest = False
    max_nodes = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    for name in sorted(policy_options or {}):
        value = (policy_options or {})[name]
        check_policy_option_available(name, feature_gates)
        if not isinstance(value, str):
            value = str(value)
        if name == PREFER_CLOSEST_NUMA_NODES:
            prefer_closest = _parse(name, value, parse_go_bool, "bad value for option")
        elif name == MAX_ALLOWABLE_NUMA_NODES:
            n = _parse(name, value, go_atoi, "unable to convert policy option to integer")
            if n < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                raise TopologyManagerOptionError(
                    f"the minimum value of {go_quote(name)} should not be less than "
                    f"{DEFAULT_MAX_ALLOWABLE_NUMA_NODES}",
                    field=name,
                )
            max_nodes = n
    return PolicyOptions(prefer_closest_numa=prefer_closest, max_allowable_numa_nodes=max_nodes)


def _parse(name: str, value: str, parse: Callable[[str], _Value], failure: str) -> _Value:
    """One option's value as Go parses it; a failure names the option."""
    try:
        return parse(value)
    except ValueError as exc:
        raise TopologyManagerOptionError(f"{failure} {go_quote(name)}: {exc}", field=name) from None

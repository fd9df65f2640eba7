"""Helpers shared by the conformance handlers: the case, its release, its topology fixture,
feature gates, topology hints, CPU sets and comparisons.

``inputs.release`` (conformance README §2.6): every allocation kind runs as the kubelet of that
release (``app.domain.releases``); absent, as the default release (1.37). ``release_of``
checks it once for every kind (``app.conformance.run_case``) and hands the kinds the table row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.domain import releases
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import TopologyHint


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    kind: str
    inputs: dict[str, Any]
    expected: dict[str, Any]
    fixtures: dict[str, Any] = field(default_factory=dict)


class ConformanceInputError(ValueError):
    """A case's inputs do not have the documented shape, or name a fixture the file lacks."""


def release_of(case: Case) -> releases.Release:
    """The release a case runs as: ``inputs.release``, else the default release."""
    value = case.inputs.get("release", releases.DEFAULT_RELEASE)
    if not isinstance(value, str):
        raise ConformanceInputError(f"inputs.release must be a string, got {value!r}")
    try:
        return releases.get(value)
    except ValueError as exc:
        raise ConformanceInputError(f"inputs.release: {exc}") from None


# Feature gates the kubelet's pod-level resource managers need; on unless a case says otherwise.
POD_LEVEL_GATES = {"PodLevelResources": True, "PodLevelResourceManagers": True}

# fixture name -> (the fixture object, its topology): a file's cases share their fixtures.
_topologies: dict[str, tuple[Mapping[str, Any], CPUTopology]] = {}


def topology_of(case: Case) -> CPUTopology:
    """The CPU topology fixture named by ``inputs.topology`` (built once per fixture object)."""
    name = case.inputs.get("topology")
    if not isinstance(name, str):
        raise ConformanceInputError(f"case {case.id}: inputs.topology must name a fixture")
    fixture = case.fixtures.get(name)
    if fixture is None:
        raise ConformanceInputError(f"case {case.id}: unknown topology fixture {name!r}")
    cached = _topologies.get(name)
    if cached is not None and cached[0] is fixture:
        return cached[1]
    topo = CPUTopology.from_fixture(name, fixture)
    _topologies[name] = (fixture, topo)
    return topo


def feature_gates(
    inputs: Mapping[str, Any], defaults: Mapping[str, bool], release: releases.Release
) -> dict[str, bool]:
    """``defaults`` overridden by the case's ``feature_gates``. A release without the
    ``PodLevelResourceManagers`` gate (1.35) has no pod-level code path: the gate is off."""
    gates = dict(defaults)
    gates.update(inputs.get("feature_gates") or {})
    if not release.knows_pod_level_gate:
        gates["PodLevelResourceManagers"] = False
    return gates


def topology_hint(value: Any, what: str = "topology_hint") -> TopologyHint:
    """A README hint ``{numa: [ids] | null, preferred: bool}`` (``preferred`` false if absent)."""
    if not isinstance(value, Mapping):
        raise ConformanceInputError(f"{what} must be a map {{numa, preferred}}, got {value!r}")
    numa = value.get("numa")
    return TopologyHint(None if numa is None else mask_of(numa), bool(value.get("preferred")))


def cpuset_of(value: Any) -> CPUSet:
    """A CPU set given as list text, a list of ids, or null (empty)."""
    if value is None:
        return CPUSet()
    if isinstance(value, str):
        return CPUSet.parse(value)
    return CPUSet(value)


def expect_equal(problems: list[str], what: str, expected: Any, actual: Any) -> None:
    if expected != actual:
        problems.append(f"{what}: expected {expected!r}, got {actual!r}")


def expect_cpuset(problems: list[str], what: str, expected: Any, actual: CPUSet | None) -> None:
    """Compare CPU sets as sets; ``None`` expected means "no set"."""
    if expected is None:
        if actual is not None:
            problems.append(f"{what}: expected null, got {str(actual)!r}")
        return
    if actual is None:
        problems.append(f"{what}: expected {expected!r}, got null")
        return
    if cpuset_of(expected) != actual:
        problems.append(f"{what}: expected {expected!r}, got {str(actual)!r}")


def expect_fields(
    problems: list[str],
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    required: tuple[str, ...] = (),
    cpusets: bool = False,
) -> None:
    """Compare each field of ``actual`` that ``expected`` names; a ``required`` field it does
    not name is a problem. With ``cpusets`` the values are CPU sets compared as sets."""
    for key, value in actual.items():
        if key not in expected:
            if key in required:
                problems.append(f"{key}: the case expects nothing")
        elif cpusets:
            expect_cpuset(problems, key, expected[key], value)
        else:
            expect_equal(problems, key, expected[key], value)

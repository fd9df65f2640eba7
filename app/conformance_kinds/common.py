"""Helpers shared by the conformance handlers: fixtures, cpusets, comparisons."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.domain.cpuset import CPUSet


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    kind: str
    inputs: dict[str, Any]
    expected: dict[str, Any]
    fixtures: dict[str, Any] = field(default_factory=dict)


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

"""Conformance kind ``cpuset_format``."""

from __future__ import annotations

from app.conformance_kinds.common import Case, expect_equal
from app.domain.cpuset import CPUSet


def cpuset_format(case: Case) -> list[str]:
    problems: list[str] = []
    expect_equal(problems, "string", case.expected["string"], str(CPUSet(case.inputs["cpus"])))
    return problems


HANDLERS = {"cpuset_format": cpuset_format}

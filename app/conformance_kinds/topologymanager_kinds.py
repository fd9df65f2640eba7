"""Conformance kinds ``tm_merge`` and ``tm_max_of_min_affinity_counts`` (README §3.4)."""

from __future__ import annotations

from typing import Any

from app.conformance_kinds.common import Case, ConformanceInputError, expect_equal, topology_hint
from app.domain.topologymanager.bitmask import mask_of
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.numa_info import NUMAInfo
from app.domain.topologymanager.policy import max_of_min_affinity_counts
from app.domain.topologymanager.policy_options import new_policy_options
from app.domain.topologymanager.topology_manager import new_policy


def hint_from(d: Any) -> TopologyHint:
    """A provider's hint: both fields are required here."""
    if not isinstance(d, dict) or "preferred" not in d:
        raise ConformanceInputError(f"a hint must be {{numa, preferred}}, got {d!r}")
    return topology_hint(d, "a hint")


def providers_from(raw: Any) -> list[ProviderHints | None]:
    """The README §3.4 providers encoding: null, {}, {res: null}, {res: []}, {res: [hints]}."""
    if not isinstance(raw, list):
        raise ConformanceInputError(f"providers must be a list, got {raw!r}")
    out: list[ProviderHints | None] = []
    for provider in raw:
        if provider is None:
            out.append(None)
            continue
        if not isinstance(provider, dict):
            raise ConformanceInputError(f"a provider must be null or a map, got {provider!r}")
        hints: ProviderHints = {}
        for resource, lst in provider.items():
            hints[resource] = None if lst is None else [hint_from(h) for h in lst]
        out.append(hints)
    return out


def tm_merge(case: Case) -> list[str]:
    inputs = case.inputs
    opts = new_policy_options(inputs.get("options") or {})
    numa_info = NUMAInfo.new(inputs["numa_nodes"])
    policy = new_policy(inputs["policy"], numa_info, opts)
    hint, admit = policy.merge(providers_from(inputs["providers"]))
    problems: list[str] = []
    expect_equal(problems, "hint", case.expected["hint"], hint.to_dict())
    expect_equal(problems, "admit", case.expected["admit"], admit)
    return problems


def tm_max_of_min_affinity_counts(case: Case) -> list[str]:
    lists = [
        [TopologyHint(mask_of(ids), True) for ids in hints]
        for hints in case.inputs["hints_per_resource"]
    ]
    problems: list[str] = []
    expect_equal(problems, "value", case.expected["value"], max_of_min_affinity_counts(lists))
    return problems


HANDLERS = {
    "tm_merge": tm_merge,
    "tm_max_of_min_affinity_counts": tm_max_of_min_affinity_counts,
}

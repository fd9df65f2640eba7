"""CPUs held by several pods: grouped per CPU by their holders, capped, linear in the file."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint import CPUCheckpointState, check_consistency, write_cpu_checkpoint
from app.domain.checkpoint.findings import Issue
from app.domain.checkpoint.overlaps import (
    MAX_LISTED_PODS,
    MAX_OVERLAP_FINDINGS,
    MAX_REPEATED_FINDINGS,
    cap_repeated,
    overlap_message,
    shared_cpu_groups,
)
from app.domain.cpuset import MAX_CPU_ID, CPUSet
from tests.strategies import run_cpusets


def _naive(by_pod: dict[str, CPUSet]) -> dict[int, tuple[str, ...]]:
    """CPU -> its holders, for every CPU held by two pods or more (a walk over every CPU)."""
    holders: dict[int, list[str]] = {}
    for pod in sorted(by_pod):
        for cpu in by_pod[pod]:
            holders.setdefault(cpu, []).append(pod)
    return {cpu: tuple(h) for cpu, h in holders.items() if len(h) >= 2}


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text("abcdef", min_size=1, max_size=3), run_cpusets(max_id=200), max_size=8)
)
def test_groups_equal_the_per_cpu_walk(by_pod: dict[str, CPUSet]) -> None:
    groups, left_out = shared_cpu_groups(by_pod)
    assert left_out == 0  # at most 201 CPUs, 8 pods: far fewer groups than the cap here
    seen: dict[int, tuple[str, ...]] = {}
    for cpus, holders in groups:
        for cpu in cpus:
            assert cpu not in seen  # a CPU is in one group
            seen[cpu] = tuple(holders)
    assert seen == _naive(by_pod)
    # One group per set of holders, lowest CPU first.
    assert len({tuple(h) for _, h in groups}) == len(groups)
    assert [c.min() for c, _ in groups] == sorted(c.min() for c, _ in groups)


def test_two_thousand_pods_on_cpu_0_give_one_capped_finding() -> None:
    entries = {str(uuid.UUID(int=i)): {"app": CPUSet.parse("0")} for i in range(2000)}
    text = write_cpu_checkpoint(CPUCheckpointState("static", CPUSet.parse("1-3"), entries), "v2")
    found = [i for i in check_consistency(cpu=text) if i.code == "overlapping-exclusive"]
    assert len(found) == 1
    first = sorted(entries)[:MAX_LISTED_PODS]
    assert found[0].message == (
        f"2000 pods all hold CPUs 0: {', '.join(first)} and {2000 - MAX_LISTED_PODS} more"
    )


def test_wide_runs_are_not_walked_cpu_by_cpu() -> None:
    # 1,000 pods each holding every CPU id the parser allows: one group, its CPUs as one run.
    everything = CPUSet.range(0, MAX_CPU_ID)
    groups, left_out = shared_cpu_groups({f"pod-{i:04d}": everything for i in range(1000)})
    assert left_out == 0
    assert [(str(c), len(h)) for c, h in groups] == [(f"0-{MAX_CPU_ID}", 1000)]


def test_groups_beyond_the_cap_are_counted() -> None:
    # Pod i holds CPUs i and i+1: CPU i (1 <= i) is shared by pods i-1 and i, each its own group.
    pods = 2 * MAX_OVERLAP_FINDINGS
    by_pod = {f"p{i:04d}": CPUSet([i, i + 1]) for i in range(pods)}
    groups, left_out = shared_cpu_groups(by_pod)
    assert len(groups) == MAX_OVERLAP_FINDINGS
    assert left_out == (pods - 1) - MAX_OVERLAP_FINDINGS
    assert (str(groups[0][0]), groups[0][1]) == ("1", ["p0000", "p0001"])
    state = CPUCheckpointState(
        "static", CPUSet([pods + 5]), {p: {"c": c} for p, c in by_pod.items()}
    )
    found = [i.message for i in check_consistency(cpu=state) if i.code == "overlapping-exclusive"]
    assert len(found) == MAX_OVERLAP_FINDINGS + 1
    assert found[-1] == (
        f"{left_out} more groups of CPUs are held by more than one pod (only the first "
        f"{MAX_OVERLAP_FINDINGS} groups are listed)"
    )


def test_messages() -> None:
    two = overlap_message(CPUSet.parse("4-5"), ["a", "b"])
    assert two == "pods a and b both hold CPUs 4-5"
    three = overlap_message(CPUSet.parse("0,2"), ["a", "b", "c"])
    assert three == "pods a, b and c all hold CPUs 0,2"
    names = [f"p{i}" for i in range(MAX_LISTED_PODS + 3)]
    many = overlap_message(CPUSet.parse("7"), names)
    assert (
        many
        == f"{len(names)} pods all hold CPUs 7: {', '.join(names[:MAX_LISTED_PODS])} and 3 more"
    )


def test_containers_of_one_pod_may_share() -> None:
    state = CPUCheckpointState(
        "static",
        CPUSet.parse("0"),
        {"a": {"init": CPUSet.parse("1-2"), "app": CPUSet.parse("1-2")}},
    )
    assert shared_cpu_groups({"a": CPUSet.parse("1-2")}) == ([], 0)
    assert not [i for i in check_consistency(cpu=state) if i.code == "overlapping-exclusive"]


def test_findings_quoting_the_default_cpuset_are_capped_with_a_count() -> None:
    # Every other CPU id in the default set: a 190 KB text each finding would quote.
    default = CPUSet(range(0, MAX_CPU_ID + 1, 2))
    entries = {f"pod-{i:05d}": {"c": CPUSet([2 * (i % 100)])} for i in range(3000)}
    issues = check_consistency(cpu=CPUCheckpointState("static", default, entries))
    found = [i for i in issues if i.code == "container-overlaps-default"]
    assert len(found) == MAX_REPEATED_FINDINGS + 1
    assert found[0].message.startswith('pod: pod-00000, container: c cpuset: "0" overlaps with')
    assert found[-1].message == (
        f"{3000 - MAX_REPEATED_FINDINGS} more container-overlaps-default findings (only the "
        f"first {MAX_REPEATED_FINDINGS} are listed)"
    )
    assert sum(len(i.message) for i in issues) < 30_000_000  # was 3,000 x 190 KB = 570 MB


def test_cap_keeps_other_codes_and_order() -> None:
    issues = [Issue("stale-entry", "warning", f"s{i}") for i in range(MAX_REPEATED_FINDINGS + 5)]
    issues += [
        Issue("cells-mismatch", "warning", f"c{i}") for i in range(MAX_REPEATED_FINDINGS + 2)
    ]
    issues.append(Issue("empty-default-set", "error", "e"))
    capped = cap_repeated(issues)
    assert [i.message for i in capped if i.code == "stale-entry"] == [
        f"s{i}" for i in range(MAX_REPEATED_FINDINGS + 5)
    ]
    cells = [i.message for i in capped if i.code == "cells-mismatch"]
    assert cells[:-1] == [f"c{i}" for i in range(MAX_REPEATED_FINDINGS)]
    assert cells[-1].startswith("2 more cells-mismatch findings")
    assert capped[-1].code == "empty-default-set" and capped[-2].code == "cells-mismatch"
    assert cap_repeated(capped[:10]) == capped[:10]

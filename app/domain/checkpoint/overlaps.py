"""CPUs that more than one pod holds in a ``cpu_manager_state``, found in time linear in the
file (issue 13: a 98 KB file whose 2,000 entries all hold CPU 0 used to give one finding per
pair of pods, 1,999,000 of them).

The kubelet itself has no such check (``validateState`` of
pkg/kubelet/cm/cpumanager/policy_static.go only compares the assignments with the default
set); the inspector adds it. The CPUs are grouped by the pods holding them: one finding per
group, ``pods A and B both hold CPUs 4-5`` for two pods, ``pods A, B and C all hold CPUs 0``
up to ``MAX_LISTED_PODS`` pods, ``2000 pods all hold CPUs 0: A, B, ... and 1990 more`` beyond.
At most ``MAX_OVERLAP_FINDINGS`` groups are reported (lowest CPUs first); one more finding
then counts the groups left out.

Findings repeated once per entry whose text quotes a set that may be long (the default cpuset
in ``container-overlaps-default``, a NUMA group in ``cells-mismatch``) are capped the same way
(``cap_repeated``): at most ``MAX_REPEATED_FINDINGS`` of a code, then one finding that counts
the rest, so the answer stays linear in the file (12,000 containers quoting a 190 KB default
cpuset would otherwise make 2 GB of text).

How: a sweep over the runs of every pod's CPU set (sorted run boundaries; the number of runs
is bounded by the file's text, a run's width is not, so nothing walks CPU by CPU). Between
two boundaries the set of holders is the same; it is identified by the holder count and a
sum of per-pod 64-bit digests kept up to date at each boundary, so grouping costs O(1) per
boundary. Only the groups reported are resolved into pod names (a membership test per pod
at the group's first CPU).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from app.domain.checkpoint.findings import Issue
from app.domain.cpuset import CPUSet

MAX_LISTED_PODS = 10
MAX_OVERLAP_FINDINGS = 100
MAX_REPEATED_FINDINGS = 100
# Codes whose message quotes a set shared by all of them (see the module docstring).
REPEATED_CODES = ("container-overlaps-default", "pod-entry-overlaps-default", "cells-mismatch")
_MOD = 1 << 64


def _digest(pod: str) -> int:
    return int.from_bytes(
        hashlib.blake2b(pod.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    )


def shared_cpu_groups(by_pod: Mapping[str, CPUSet]) -> tuple[list[tuple[CPUSet, list[str]]], int]:
    """``([(cpus, holders sorted), ...], groups left out)``: CPUs held by two or more pods,
    grouped by their holders, ordered by their lowest CPU, at most ``MAX_OVERLAP_FINDINGS``."""
    events: list[tuple[int, int, int]] = []  # (cpu, +1 start / -1 end, digest)
    for pod, cpus in by_pod.items():
        d = _digest(pod)
        for first, last in cpus.runs():
            events.append((first, 1, d))
            events.append((last + 1, -1, d))
    events.sort()
    groups: dict[tuple[int, int], int] = {}  # (count, digest sum) -> mask of its CPUs
    order: list[tuple[int, int]] = []
    count = total = 0
    i, n = 0, len(events)
    while i < n:
        at = events[i][0]
        while i < n and events[i][0] == at:
            _, step, d = events[i]
            count += step
            total = (total + step * d) % _MOD
            i += 1
        if count >= 2 and i < n:
            end = events[i][0]  # the holders stay the same up to the next boundary
            key = (count, total)
            if key not in groups:
                groups[key] = 0
                order.append(key)
            groups[key] |= (1 << end) - (1 << at)
    reported = order[:MAX_OVERLAP_FINDINGS]
    out = []
    pods = sorted(by_pod)
    for key in reported:
        cpus = CPUSet.from_mask(groups[key])
        first = cpus.min()
        out.append((cpus, [p for p in pods if first in by_pod[p]]))
    return out, len(order) - len(reported)


def overlap_message(cpus: CPUSet, holders: list[str]) -> str:
    if len(holders) == 2:
        return f"pods {holders[0]} and {holders[1]} both hold CPUs {cpus}"
    if len(holders) <= MAX_LISTED_PODS:
        return f"pods {', '.join(holders[:-1])} and {holders[-1]} all hold CPUs {cpus}"
    listed = ", ".join(holders[:MAX_LISTED_PODS])
    more = len(holders) - MAX_LISTED_PODS
    return f"{len(holders)} pods all hold CPUs {cpus}: {listed} and {more} more"


def left_out_message(left_out: int) -> str:
    return (
        f"{left_out} more groups of CPUs are held by more than one pod (only the first "
        f"{MAX_OVERLAP_FINDINGS} groups are listed)"
    )


def cap_repeated(issues: list[Issue]) -> list[Issue]:
    """``issues`` with at most ``MAX_REPEATED_FINDINGS`` of each ``REPEATED_CODES`` code, the
    rest counted by one more finding of that code, placed after its last listed one."""
    counts: dict[str, int] = {}
    out: list[Issue] = []
    for issue in issues:
        if issue.code in REPEATED_CODES:
            seen = counts.get(issue.code, 0)
            counts[issue.code] = seen + 1
            if seen >= MAX_REPEATED_FINDINGS:
                continue
        out.append(issue)
    for code, seen in counts.items():
        if seen > MAX_REPEATED_FINDINGS:
            last = max(i for i, issue in enumerate(out) if issue.code == code)
            severity = out[last].severity
            more = seen - MAX_REPEATED_FINDINGS
            text = (
                f"{more} more {code} findings (only the first {MAX_REPEATED_FINDINGS} are listed)"
            )
            out.insert(last + 1, Issue(code, severity, text))
    return out

"""Consistency checks of a ``cpu_manager_state`` against itself, the topology and the reserved
CPUs.

They mirror the static policy's start-up validation (``validateState`` of
pkg/kubelet/cm/cpumanager/policy_static.go, spec ``allocation.md`` §2.3) and go further:
overlaps between pods (grouped per CPU by ``overlaps``), pod entries vs their containers.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.findings import ERROR, WARNING, Issue
from app.domain.checkpoint.overlaps import left_out_message, overlap_message, shared_cpu_groups
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUTopology

_Owner = tuple[str, str, CPUSet]  # (pod, container or "", cpuset)


def check_cpu_state(
    state: CPUCheckpointState,
    topology: CPUTopology | None,
    reserved: CPUSet | None,
    strict: bool,
) -> list[Issue]:
    """Every finding about one ``cpu_manager_state``: between pods, against the default set,
    pod entries against their containers, then ``validateState`` against the topology."""
    default = state.default_cpu_set
    owners = _owners(state)
    pod_entries: Mapping[str, CPUSet] = state.pod_entries or {}
    out = _overlaps_between_pods(owners, pod_entries)
    out += _overlaps_with_default(owners, default)
    out += _pod_entry_issues(state, pod_entries, default)
    if default.is_empty() and (owners or pod_entries):
        out.append(Issue("empty-default-set", ERROR, "default cpuset cannot be empty"))
    if topology is not None:
        assigned = CPUSet().union(*(c for _, _, c in owners), *pod_entries.values())
        out += _topology_issues(default, assigned, topology.all_cpus, reserved, strict)
    return out


def _owners(state: CPUCheckpointState) -> list[_Owner]:
    """Every container's CPUs (V1 files: keyed by container ID), sorted."""
    owners: list[_Owner] = []
    if state.container_entries is not None:
        for cid, cset in sorted(state.container_entries.items()):
            owners.append((f"container {cid}", cid, cset))
    for pod, containers in sorted(state.entries.items()):
        for name, cset in sorted(containers.items()):
            owners.append((pod, name, cset))
    return owners


def _overlaps_between_pods(owners: list[_Owner], pod_entries: Mapping[str, CPUSet]) -> list[Issue]:
    """Containers of different pods must not share CPUs (containers of one pod may: init
    containers hand their CPUs on, shared containers of a pod bubble share its pool)."""
    by_pod: dict[str, CPUSet] = {}
    for pod, _, cset in owners:
        by_pod[pod] = by_pod.get(pod, CPUSet()) | cset
    for pod, cset in pod_entries.items():
        by_pod[pod] = by_pod.get(pod, CPUSet()) | cset
    groups, left_out = shared_cpu_groups(by_pod)
    out = [
        Issue("overlapping-exclusive", ERROR, overlap_message(cpus, holders))
        for cpus, holders in groups
    ]
    if left_out:
        out.append(Issue("overlapping-exclusive", ERROR, left_out_message(left_out)))
    return out


def _overlaps_with_default(owners: list[_Owner], default: CPUSet) -> list[Issue]:
    default_text = str(default)  # once: every overlap quotes it
    return [
        Issue(
            "container-overlaps-default",
            ERROR,
            f'pod: {pod}, container: {name} cpuset: "{cset}" overlaps with default '
            f'cpuset "{default_text}"',
        )
        for pod, name, cset in owners
        if cset & default
    ]


def _pod_entry_issues(
    state: CPUCheckpointState, pod_entries: Mapping[str, CPUSet], default: CPUSet
) -> list[Issue]:
    """A pod entry must stay out of the default set and hold its containers' CPUs."""
    out: list[Issue] = []
    for pod, cset in sorted(pod_entries.items()):
        if cset & default:
            out.append(
                Issue(
                    "pod-entry-overlaps-default",
                    ERROR,
                    f'pod {pod}: pod cpuset "{cset}" overlaps with default cpuset "{default}"',
                )
            )
        pod_containers = state.entries.get(pod)
        if not pod_containers:
            out.append(
                Issue(
                    "pod-entry-without-containers",
                    WARNING,
                    f"pod {pod} has a pod entry ({cset}) but no container entries",
                )
            )
            continue
        for name, ccs in sorted(pod_containers.items()):
            outside = ccs - cset
            if outside:
                out.append(
                    Issue(
                        "container-outside-pod-entry",
                        ERROR,
                        f"pod {pod}, container {name}: CPUs {outside} are outside the pod's "
                        f"cpuset {cset}",
                    )
                )
    return out


def _topology_issues(
    default: CPUSet, assigned: CPUSet, all_cpus: CPUSet, reserved: CPUSet | None, strict: bool
) -> list[Issue]:
    """``validateState``'s checks against the machine: CPUs it has, the reserved CPUs (out of
    the default set with ``strict-cpu-reservation``, in it otherwise), the union of the sets,
    and the default set as what is left."""
    out: list[Issue] = []
    outside = (default | assigned) - all_cpus
    if outside:
        out.append(
            Issue(
                "cpu-outside-topology",
                ERROR,
                f"CPUs {outside} are not in the topology (CPUs {all_cpus})",
            )
        )
    if reserved is not None:
        if strict:
            all_cpus = all_cpus - reserved
        out += _reserved_issues(default, reserved, strict)
    union = default | assigned
    if not default.is_empty() and union != all_cpus:
        out.append(
            Issue(
                "cpus-mismatch",
                ERROR,
                f'current set of available CPUs "{all_cpus}" doesn\'t match with CPUs in state '
                f'"{union}"',
            )
        )
    if reserved is not None or not strict:
        out += _default_set_issues(default, all_cpus - assigned, strict)
    return out


def _reserved_issues(default: CPUSet, reserved: CPUSet, strict: bool) -> list[Issue]:
    if strict:
        inside = reserved & default
        if not inside:
            return []
        return [
            Issue(
                "reserved-in-default",
                ERROR,
                f'some of strictly reserved cpus: "{inside}" are present in '
                f'defaultCpuSet: "{default}"',
            )
        ]
    if reserved.is_subset_of(default):
        return []
    return [
        Issue(
            "reserved-not-in-default",
            ERROR,
            f'not all reserved cpus: "{reserved}" are present in defaultCpuSet: "{default}"',
        )
    ]


def _default_set_issues(default: CPUSet, expected: CPUSet, strict: bool) -> list[Issue]:
    """The default set must be exactly the CPUs nobody is assigned (topology [- reserved])."""
    if default == expected or default.is_empty():
        return []
    missing = expected - default
    extra = default - expected
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if extra:
        parts.append(f"unexpected {extra}")
    return [
        Issue(
            "default-set-mismatch",
            ERROR,
            f"default cpuset {default} is not topology{' - reserved' if strict else ''}"
            f" - assigned = {expected}: {', '.join(parts)}",
        )
    ]

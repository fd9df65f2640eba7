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
from app.domain.topology import CPUTopology


def check_cpu_state(
    state: CPUCheckpointState,
    topology: CPUTopology | None,
    reserved: CPUSet | None,
    strict: bool,
) -> list[Issue]:
    out: list[Issue] = []
    default = state.default_cpu_set
    owners: list[tuple[str, str, CPUSet]] = []  # (pod, container or "", cpuset)
    if state.container_entries is not None:
        for cid, cset in sorted(state.container_entries.items()):
            owners.append((f"container {cid}", cid, cset))
    for pod, containers in sorted(state.entries.items()):
        for name, cset in sorted(containers.items()):
            owners.append((pod, name, cset))
    pod_entries: Mapping[str, CPUSet] = state.pod_entries or {}
    assigned = CPUSet().union(*(c for _, _, c in owners), *pod_entries.values())

    # Containers of different pods must not share CPUs (containers of one pod may: init
    # containers hand their CPUs on, shared containers of a pod bubble share its pool).
    by_pod: dict[str, CPUSet] = {}
    for pod, _, cset in owners:
        by_pod[pod] = by_pod.get(pod, CPUSet()) | cset
    for pod, cset in pod_entries.items():
        by_pod[pod] = by_pod.get(pod, CPUSet()) | cset
    groups, left_out = shared_cpu_groups(by_pod)
    for cpus, holders in groups:
        out.append(Issue("overlapping-exclusive", ERROR, overlap_message(cpus, holders)))
    if left_out:
        out.append(Issue("overlapping-exclusive", ERROR, left_out_message(left_out)))
    default_text = str(default)  # once: every overlap below quotes it
    for pod, name, cset in owners:
        if cset & default:
            out.append(
                Issue(
                    "container-overlaps-default",
                    ERROR,
                    f'pod: {pod}, container: {name} cpuset: "{cset}" overlaps with default '
                    f'cpuset "{default_text}"',
                )
            )
    for pod, cset in sorted(pod_entries.items()):
        if cset & default:
            out.append(
                Issue(
                    "pod-entry-overlaps-default",
                    ERROR,
                    f'pod {pod}: pod cpuset "{cset}" overlaps with default cpuset "{default_text}"',
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
    if default.is_empty() and (owners or pod_entries):
        out.append(Issue("empty-default-set", ERROR, "default cpuset cannot be empty"))
    if topology is None:
        return out
    all_cpus = topology.all_cpus
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
            inside = reserved & default
            if inside:
                out.append(
                    Issue(
                        "reserved-in-default",
                        ERROR,
                        f'some of strictly reserved cpus: "{inside}" are present in '
                        f'defaultCpuSet: "{default}"',
                    )
                )
        elif not reserved.is_subset_of(default):
            out.append(
                Issue(
                    "reserved-not-in-default",
                    ERROR,
                    f'not all reserved cpus: "{reserved}" are present in defaultCpuSet: '
                    f'"{default}"',
                )
            )
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
        expected = all_cpus - assigned
        if default != expected and not default.is_empty():
            missing = expected - default
            extra = default - expected
            parts = []
            if missing:
                parts.append(f"missing {missing}")
            if extra:
                parts.append(f"unexpected {extra}")
            out.append(
                Issue(
                    "default-set-mismatch",
                    ERROR,
                    f"default cpuset {default} is not topology{' - reserved' if strict else ''}"
                    f" - assigned = {expected}: {', '.join(parts)}",
                )
            )
    return out

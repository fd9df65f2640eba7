"""Start-up validation of a restored CPU manager state (``validateState``, §2.3; follows
pkg/kubelet/cm/cpumanager/policy_static.go, v1.37 and master as 1.38).

An empty default set is filled with every CPU (all but the reserved ones under
``strict-cpu-reservation``), unless assignments exist. Otherwise the reserved CPUs must be in
the default set (or, strict, none of them), no assignment may overlap the default set, and the
default set plus every assignment (plus the pod-level sets with the gate
``PodLevelResourceManagers`` on) must be exactly the CPUs the policy manages.
"""

from __future__ import annotations

from app.domain.cpumanager.errors import CPUManagerStateError
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet

__all__ = ["validate_state"]


def validate_state(
    state: CPUManagerState,
    all_cpus: CPUSet,
    reserved_cpus: CPUSet,
    *,
    strict_cpu_reservation: bool,
    pod_level_resource_managers: bool,
) -> None:
    """``validateState`` (§2.3); ``all_cpus`` is the topology's every CPU."""
    default = state.default_cpuset
    if strict_cpu_reservation:
        all_cpus = all_cpus - reserved_cpus

    if default.is_empty():
        if state.assignments:
            raise CPUManagerStateError("default cpuset cannot be empty")
        state.set_default_cpu_set(all_cpus)
        return

    _check_reserved_cpus(default, reserved_cpus, strict_cpu_reservation)
    _check_no_overlap(state, default)
    known = default | state.assigned_cpus()
    if pod_level_resource_managers:
        known = known | state.pod_entry_cpus()
    if known != all_cpus:
        raise CPUManagerStateError(
            f'current set of available CPUs "{all_cpus}" doesn\'t match with CPUs in '
            f'state "{known}"'
        )


def _check_reserved_cpus(default: CPUSet, reserved_cpus: CPUSet, strict: bool) -> None:
    """The reserved CPUs are all in the default set (``strict-cpu-reservation``: none)."""
    if strict:
        overlap = reserved_cpus & default
        if overlap:
            raise CPUManagerStateError(
                f'some of strictly reserved cpus: "{overlap}" are present in '
                f'defaultCpuSet: "{default}"'
            )
    elif (reserved_cpus & default) != reserved_cpus:
        raise CPUManagerStateError(
            f'not all reserved cpus: "{reserved_cpus}" are present in defaultCpuSet: "{default}"'
        )


def _check_no_overlap(state: CPUManagerState, default: CPUSet) -> None:
    """No container's CPUs are also in the default set."""
    # Go ranges over maps in random order; we report the first overlap in sorted order.
    for pod, container, cset in state.iter_assignments():
        if default & cset:
            raise CPUManagerStateError(
                f'pod: {pod}, container: {container} cpuset: "{cset}" overlaps with '
                f'default cpuset "{default}"'
            )

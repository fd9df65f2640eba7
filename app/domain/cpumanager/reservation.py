"""The CPUs the static policy keeps for the system (follows pkg/kubelet/cm/cpumanager/
cpu_manager.go ``NewManager`` and policy_static.go ``NewStaticPolicy``, v1.37 and master as 1.38).

* ``num_reserved_cpus_from_reservation``: how many CPUs, ``ceil(kubeReserved.cpu +
  systemReserved.cpu)`` (§2.1 step 1);
* ``check_reserved_size`` and ``reserved_physical_cpus``: the reserved set must have exactly
  that size, and the *reserved physical* set is every whole core that holds a reserved CPU (the
  pool ``full-pcpus-only`` checks against).
"""

from __future__ import annotations

import math

from app.domain.cpumanager.policy_options import CPUManagerPolicyError
from app.domain.cpuset import CPUSet
from app.domain.quantity import Quantity
from app.domain.topology.model import CPUTopology

__all__ = [
    "check_reserved_size",
    "num_reserved_cpus_from_reservation",
    "reserved_physical_cpus",
]


def num_reserved_cpus_from_reservation(reserved_cpu: Quantity | None) -> int:
    """``ceil(kubeReserved.cpu + systemReserved.cpu)`` as NewManager computes it (§2.1 step 1).

    ``reserved_cpu`` is the node-allocatable CPU reservation, ``None`` when it has no cpu entry.
    """
    if reserved_cpu is None:
        raise CPUManagerPolicyError(
            "[cpumanager] unable to determine reserved CPU resources for static policy"
        )
    if reserved_cpu.is_zero():
        raise CPUManagerPolicyError(
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu "
            "to be greater than zero"
        )
    return math.ceil(reserved_cpu.milli_value() / 1000)


def check_reserved_size(reserved: CPUSet, num_reserved_cpus: int) -> None:
    """The reserved set has exactly the reserved count (else the kubelet's error)."""
    if reserved.size() != num_reserved_cpus:
        raise CPUManagerPolicyError(
            "[cpumanager] unable to reserve the required amount of CPUs "
            f"(size of {reserved} did not equal {num_reserved_cpus})"
        )


def reserved_physical_cpus(topology: CPUTopology, reserved: CPUSet) -> CPUSet:
    """Every CPU of every core that holds a reserved CPU."""
    physical = 0
    for cpu in reserved:
        info = topology.cpu_details.get(cpu)
        if info is None:
            raise CPUManagerPolicyError(
                "[cpumanager] unable to build the reserved physical CPUs from the reserved "
                f"set: unknown CPU ID: {cpu}"
            )
        physical |= topology.cpus_of_core(info.core_id).mask
    return CPUSet.from_mask(physical)

"""Pod admission errors (follows pkg/kubelet/cm/admission/errors.go and the typed errors of
cpumanager/policy_static.go, v1.37).

Every admission failure carries ``reason`` (what the pod status shows) and ``message``.
Allocation errors that are not typed become ``UnexpectedAdmissionError``.
"""

from __future__ import annotations


class AdmissionError(Exception):
    """A pod was rejected; ``reason`` and ``message`` are what the kubelet reports."""

    reason = "UnexpectedAdmissionError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message}


class TopologyAffinityError(AdmissionError):
    reason = "TopologyAffinityError"

    def __init__(
        self, message: str = "Resources cannot be allocated with Topology locality"
    ) -> None:
        super().__init__(message)


class SMTAlignmentError(AdmissionError):
    """The CPU request does not fit full physical cores (``full-pcpus-only``)."""

    reason = "SMTAlignmentError"

    def __init__(
        self,
        requested_cpus: int,
        cpus_per_core: int,
        available_physical_cpus: int = 0,
        caused_by_physical_cpus: bool = False,
    ) -> None:
        self.requested_cpus = requested_cpus
        self.cpus_per_core = cpus_per_core
        self.available_physical_cpus = available_physical_cpus
        self.caused_by_physical_cpus = caused_by_physical_cpus
        if caused_by_physical_cpus:
            text = (
                f"SMT Alignment Error: not enough free physical CPUs: available physical "
                f"CPUs = {available_physical_cpus}, requested CPUs = {requested_cpus}, "
                f"CPUs per core = {cpus_per_core}"
            )
        else:
            text = (
                f"SMT Alignment Error: requested {requested_cpus} cpus not multiple cpus "
                f"per core = {cpus_per_core}"
            )
        super().__init__(text)


class EmptyPodSharedPoolError(AdmissionError):
    """Exclusive containers would leave a pod with shared containers no shared CPUs/memory."""

    reason = "EmptyPodSharedPoolError"


class UnexpectedAdmissionError(AdmissionError):
    """Any other allocation failure, wrapped the way the kubelet wraps it."""

    reason = "UnexpectedAdmissionError"

    @classmethod
    def wrap(cls, err: BaseException | str) -> UnexpectedAdmissionError:
        return cls(f"Allocate failed due to {err}, which is unexpected")

"""The static CPU policy's own errors (follows pkg/kubelet/cm/cpumanager/policy_static.go and
cpu_manager.go, v1.37 and master as 1.38); ``message`` is the kubelet's text.

``CPUAllocationError`` is an untyped allocation failure, which the topology manager/node wraps
as ``UnexpectedAdmissionError``; ``CPUManagerStateError`` is a state that ``Start`` found
inconsistent. Admission errors with the kubelet's reasons live in ``app.domain.admission``,
configuration errors in ``app.domain.cpumanager.policy_options``.
"""

from __future__ import annotations

__all__ = ["CPUAllocationError", "CPUManagerStateError"]


class CPUAllocationError(Exception):
    """An untyped allocation failure; ``message`` is the kubelet's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CPUManagerStateError(Exception):
    """``Start`` found the state inconsistent (``validateState``); the kubelet's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

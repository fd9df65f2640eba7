"""The memory manager's error (follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38): every failure the static policy reports
carries the kubelet's ``[memorymanager] ...`` text.
"""

from __future__ import annotations

__all__ = ["MemoryManagerError"]


class MemoryManagerError(ValueError):
    """A memory manager failure with the kubelet's ``[memorymanager] ...`` text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

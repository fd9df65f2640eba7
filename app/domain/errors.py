"""The base classes of the domain's errors: a text to show, and for bad input the field at
fault, so that every layer can answer a clear 4xx naming it (DESIGN.md §8)."""

from __future__ import annotations


class DomainError(ValueError):
    """An error whose ``message`` is the text to show (the kubelet's own where it has one)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class FieldError(DomainError):
    """Input that cannot be taken; ``field`` names the key at fault (``None``: the input as
    a whole)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

"""Errors of the checkpoint use cases: each carries ``message`` (what was wrong) and ``field``
(the argument, when there is one), which the CLI prints and ``app.web`` maps to 4xx answers.
"""

from __future__ import annotations

from app.adapters.kubelet import (
    MAX_FILE_BYTES,
)

# -- errors ------------------------------------------------------------------------------------------


class CheckpointServiceError(Exception):
    """Base class; ``message`` names what was wrong, ``field`` the argument when there is one."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class CheckpointUsageError(CheckpointServiceError):
    """An argument is not usable (unknown manager, target, version; conflicting flags)."""


class CheckpointFileError(CheckpointServiceError):
    """A file or directory cannot be read at all (missing, permission denied, not a file)."""


class UploadTooLargeError(CheckpointServiceError):
    """An uploaded file is larger than 16 MiB."""

    def __init__(self, size: int | None = None) -> None:
        what = f"{size} bytes" if size is not None else "more than 16 MiB"
        super().__init__(
            f"the uploaded file is {what}; state files larger than {MAX_FILE_BYTES} bytes "
            "(16 MiB) are refused",
            "file",
        )
        self.size = size


class UploadTooManyMembersError(CheckpointServiceError):
    """An uploaded file has more JSON object members than the inspector reads (its report's
    ``too-many-members`` issue, as the upload's error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "file")


class EmptyUploadError(CheckpointServiceError):
    """No file, or an empty one, was uploaded."""

    def __init__(self, message: str = "no file was uploaded, or the file is empty") -> None:
        super().__init__(message, "file")


class ConversionRefusedError(CheckpointServiceError):
    """The conversion was refused (bad source checksum without force, unreadable source...)."""

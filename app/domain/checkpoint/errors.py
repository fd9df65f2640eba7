"""Exceptions of the checkpoint package.

Every exception ends in ``Error`` and carries a message that names what was wrong. Texts the
kubelet itself produces (``checkpoint is corrupted``, Go's JSON errors, ...) are not exceptions
here: readers return them as data (``LoadResult.error``) because a kubelet refusing a file is an
outcome to report, not a failure of this program.
"""

from __future__ import annotations

#: Inputs larger than this are refused before parsing (the kubelet has no limit, the project does).
MAX_CHECKPOINT_BYTES = 16 * 1024 * 1024

#: Go's encoding/json scanner refuses documents nested deeper than this.
MAX_NESTING_DEPTH = 10000


class CheckpointError(Exception):
    """Base class of the checkpoint package's errors."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CheckpointInputError(CheckpointError, ValueError):
    """An argument is not usable: unknown manager, version, release, or a file that is too big."""


class CheckpointTooLargeError(CheckpointInputError):
    """The file is larger than ``MAX_CHECKPOINT_BYTES``."""

    def __init__(self, size: int) -> None:
        super().__init__(
            f"checkpoint file is {size} bytes; files larger than {MAX_CHECKPOINT_BYTES} bytes "
            "(16 MiB) are refused"
        )
        self.size = size


class CheckpointStateError(CheckpointInputError):
    """A normalised state (``from_dict`` or a writer argument) is malformed; names the field."""


class CheckpointFormatError(CheckpointError, ValueError):
    """The text is not a checkpoint this package can place: not JSON, not an object, a JSON
    value that does not decode into the structure asked for, or an unknown manager."""


class ConversionError(CheckpointError):
    """A conversion was refused (bad source checksum without ``force``, missing container map)."""

"""Exceptions of the checkpoint package.

Every exception ends in ``Error`` and carries a message that names what was wrong. Texts the
kubelet itself produces (``checkpoint is corrupted``, Go's JSON errors, ...) are not exceptions
here: readers return them as data (``LoadResult.error``) because a kubelet refusing a file is an
outcome to report, not a failure of this program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

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


# -- checks of a normalised state given by a user (both managers' ``from_dict``) ----------------


def check_text(s: Any, what: str) -> None:
    """``s`` is a string a Go file can hold (valid Unicode), else ``CheckpointStateError``."""
    if not isinstance(s, str):
        raise CheckpointStateError(f"{what} must be a string, got {type(s).__name__}")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise CheckpointStateError(f"{what} {s!r} is not valid Unicode text") from None


def object_field(d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``d[key]``, an object (absent or null: empty)."""
    value = d.get(key) or {}
    if not isinstance(value, Mapping):
        raise CheckpointStateError(f"{key} must be an object")
    return value


_V = TypeVar("_V")


def pod_entries_field(
    d: Mapping[str, Any],
    unwrap: Callable[[Mapping[str, Any]], Any],
    parse: Callable[[Any, str], _V],
) -> dict[str, _V] | None:
    """``podEntries`` (pod UID -> value, ``parse`` d), ``None`` when absent; a value in the
    file's spelling (an object) is ``unwrap`` ped first."""
    raw = d.get("podEntries")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise CheckpointStateError("podEntries must be an object")
    out: dict[str, _V] = {}
    for pod, value in raw.items():
        check_text(pod, "podEntries key")
        if isinstance(value, Mapping):
            value = unwrap(value)
        out[pod] = parse(value, f"podEntries[{pod!r}]")
    return out


class CheckpointFormatError(CheckpointError, ValueError):
    """The text is not a checkpoint this package can place: not JSON, not an object, a JSON
    value that does not decode into the structure asked for, or an unknown manager."""


class ConversionError(CheckpointError):
    """A conversion was refused (bad source checksum without ``force``, missing container map)."""

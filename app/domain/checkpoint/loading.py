"""What a kubelet's start-up read of a state file returns, and the steps every read shares
(follows pkg/kubelet/checkpointmanager/checkpoint_manager.go ``GetCheckpoint`` and the
``restoreState`` error wrapping of pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
pkg/kubelet/cm/memorymanager/state/state_checkpoint.go, v1.37).

The file is parsed once (``ParsedFile``); each ``GetCheckpoint`` attempt of a procedure decodes
that tree and records an ``Attempt``. A procedure stops with ``LoadFailure`` (the error
``restoreState`` returns) and ``rejected`` turns it into the ``LoadResult`` with the start-up
failure the kubelet logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.gojson_scan import GoSyntaxError, parse
from app.domain.checkpoint.gotext import go_text
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.reader import Reader
from app.domain.golang.strconv import go_quote

CORRUPT = "checkpoint is corrupted"
DEFAULT_STATE_DIR = "/var/lib/kubelet"

CPU = "cpu"
MEMORY = "memory"

# -- results -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attempt:
    """One ``GetCheckpoint`` try: version, outcome, error text, and how the checksum passed
    (``matched``: the header name that hashed to the stored value, ``"zero"`` for the zero
    rule, ``"dataChecksum"`` for V4/V3 data)."""

    version: str
    ok: bool
    error: str | None = None
    matched: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "ok": self.ok,
            "error": self.error,
            "matched": self.matched,
        }


State = CPUCheckpointState | MemoryCheckpointState


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What a reader does with a file.

    ``accepted`` with the normalised ``state``, or rejected with ``error`` (the error
    ``restoreState`` returns) and ``message`` (the start-up failure the kubelet logs).
    ``ignored`` is set when the release has no such manager (memory before 1.21).
    """

    manager: str
    reader: Reader
    accepted: bool
    state: State | None = None
    error: str | None = None
    message: str | None = None
    loaded_as: str | None = None
    attempts: tuple[Attempt, ...] = ()
    policy_mismatch: bool = False
    ignored: bool = False
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "reader": self.reader.to_dict(),
            "accepted": self.accepted,
            "state": None if self.state is None else self.state.to_dict(),
            "error": self.error,
            "message": self.message,
            "loadedAs": self.loaded_as,
            "attempts": [a.to_dict() for a in self.attempts],
            "policyMismatch": self.policy_mismatch,
            "ignored": self.ignored,
            "notes": list(self.notes),
        }


class LoadFailure(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def _wrap(manager: str, error: str, state_dir: str) -> str:
    if manager == CPU:
        what, name = "CPU manager", C.CPU_FILE_NAME
    else:
        what, name = "memory manager", M.MEMORY_FILE_NAME
    path = state_dir.rstrip("/") + "/" + name if state_dir else name
    return (
        f"could not restore state from checkpoint: {error}, please drain this node and delete "
        f"the {what} checkpoint file {go_quote(path)} before restarting Kubelet"
    )


class ParsedFile:
    """The file parsed once; each attempt decodes the same tree."""

    def __init__(self, content: str | bytes) -> None:
        self.text = go_text(content)
        self.syntax_error: str | None = None
        self.tree: Any = None
        try:
            self.tree = parse(self.text)
        except GoSyntaxError as err:
            self.syntax_error = err.message
        self.attempts: list[Attempt] = []


def rejected(
    manager: str, reader: Reader, error: str, state_dir: str, attempts: list[Attempt]
) -> LoadResult:
    mismatch = "differs from state checkpoint policy" in error and error.startswith(
        ("configured policy", "[memorymanager] configured policy")
    )
    return LoadResult(
        manager,
        reader,
        False,
        error=error,
        message=_wrap(manager, error, state_dir),
        attempts=tuple(attempts),
        policy_mismatch=mismatch,
    )

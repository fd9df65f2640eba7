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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.checksum import string_checksum
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.data_twin import read_twin
from app.domain.checkpoint.detect import CPU
from app.domain.checkpoint.formats import FormatVersions
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.gojson_scan import GoJSONError, GoSyntaxError, TreeMemo, parse
from app.domain.checkpoint.gotext import go_text
from app.domain.checkpoint.memory_state import MemoryCheckpointState
from app.domain.checkpoint.reader import Reader
from app.domain.golang.strconv import go_quote

CORRUPT = "checkpoint is corrupted"
DEFAULT_STATE_DIR = "/var/lib/kubelet"

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

    def failed(self, version: str, error: str) -> str:
        """Record a failed attempt; its error."""
        self.attempts.append(Attempt(version, False, error))
        return error

    def passed(self, version: str, matched: str) -> None:
        """Record an attempt whose checksum passed by ``matched``."""
        self.attempts.append(Attempt(version, True, None, matched))


# -- checkpoints that carry their state as a JSON string (CPU V4, memory V3) --------------------


def get_checkpoint(
    f: ParsedFile,
    version: str,
    reader: Reader,
    *,
    formats: FormatVersions,
    names: Mapping[str, Mapping[str, str]],
    verify: Callable[[Any, dict[str, Any], str, Reader], str | None],
) -> tuple[dict[str, Any], str | None]:
    """``GetCheckpoint`` of one version as ``reader``'s release does it (the Go struct names
    of its code line, ``names``, appear in type errors); records the attempt. The data version
    is verified by ``dataChecksum``, the others by ``verify`` (the manager's
    ``VerifyChecksum``: how the checksum passed, ``None`` when it did not)."""
    name = names[reader.line].get(version)
    if f.syntax_error is not None:
        err = f.syntax_error
        if version == formats.data_version:
            err = f"failed to deserialize {formats.what} checkpoint: {err}"
        return formats.new(version), f.failed(version, err)
    if version == formats.data_version:
        twin = read_twin(f.tree, f.text, formats, version, name)
        if twin is not None:
            return twin[0], _verify_data_checksum(f, version, twin[0])
    obj, jerr = formats.decode(f.tree, version, name)
    if version == formats.data_version:
        return obj, _verify_data_checkpoint(f, version, obj, jerr, formats)
    if jerr is not None:
        return obj, f.failed(version, str(jerr))
    matched = verify(f.tree, obj, version, reader)
    if matched is None:
        return obj, f.failed(version, CORRUPT)
    f.passed(version, matched)
    return obj, None


def read_or_migrate(
    get: Callable[[str], tuple[dict[str, Any], str | None]],
    version: str,
    older: str,
    new: Callable[[str], dict[str, Any]],
    migrate: Callable[[dict[str, Any], dict[str, Any]], None],
) -> tuple[dict[str, Any], str]:
    """``version`` read by ``get``, else ``older`` (which must read) migrated into a fresh
    ``version`` object; with the version read."""
    obj, err = get(version)
    if err is None:
        return obj, version
    old = required(get(older))
    obj = new(version)
    migrate(old, obj)
    return obj, older


def read_data_or_older(
    get: Callable[[str], tuple[dict[str, Any], str | None]],
    formats: FormatVersions,
    older: tuple[str, str],
    migrate_older: Callable[[dict[str, Any], dict[str, Any]], None],
    as_data: Callable[[dict[str, Any]], dict[str, Any]],
) -> tuple[dict[str, Any], str]:
    """The 1.37 loaders: the data of the data version; a file with neither ``data`` nor
    ``dataChecksum`` falls back to ``older[0]``, else ``older[1]`` migrated into it, made data
    by ``as_data``. With the version read."""
    newest = formats.data_version
    obj, err = get(newest)
    data = loaded_data(obj, err, newest)
    if data is not None:
        return data, newest
    old, loaded_as = read_or_migrate(get, *older, formats.new, migrate_older)
    return as_data(old), loaded_as


def required(attempt: tuple[dict[str, Any], str | None]) -> dict[str, Any]:
    """The object of an attempt that must succeed: its error stops the loader."""
    obj, err = attempt
    if err is not None:
        raise LoadFailure(err)
    return obj


def _verify_data_checkpoint(
    f: ParsedFile,
    version: str,
    obj: dict[str, Any],
    jerr: GoJSONError | None,
    formats: FormatVersions,
) -> str | None:
    """The rest of a ``GetCheckpoint`` of a V4/V3 file decoded into ``obj`` (``jerr``): its
    ``data`` string decoded into a fresh data object (kept as ``obj["CheckpointData"]``), then
    verified against ``dataChecksum``; the attempt's error or ``None``."""
    what = formats.what
    data = formats.new("data")
    if jerr is not None:
        return f.failed(version, f"failed to deserialize {what} checkpoint: {jerr}")
    obj["CheckpointData"] = data
    derr = unmarshal_text(obj["Data"], formats.data_t, data)
    if derr is not None:
        return f.failed(version, f"failed to deserialize {what} checkpoint data: {derr}")
    return _verify_data_checksum(f, version, obj)


def _verify_data_checksum(f: ParsedFile, version: str, obj: dict[str, Any]) -> str | None:
    """``dataChecksum`` against the ``data`` string of a decoded V4/V3 ``obj``."""
    if obj["DataChecksum"] != string_checksum(obj["Data"]):
        return f.failed(version, CORRUPT)
    f.passed(version, "dataChecksum")
    return None


def loaded_data(obj: dict[str, Any], err: str | None, version: str) -> dict[str, Any] | None:
    """The data of a V4/V3 read, ``None`` when the file has neither ``data`` nor
    ``dataChecksum`` (the loader falls back to the older versions); a failed read of a file that
    has one stops the loader."""
    if err is None:
        data: dict[str, Any] = obj["CheckpointData"]
        return data
    if obj["Data"] or obj["DataChecksum"]:
        raise LoadFailure(f"could not load {version.lower()} checkpoint: {err}")
    return None


def pod_entries_of(obj: dict[str, Any]) -> dict[str, Any]:
    """A read's pod entries, a nil map restored as an empty one."""
    pods: dict[str, Any] | None = obj["PodEntries"]
    return pods if pods is not None else {}


def gated_pod_entries(reader: Reader, data: dict[str, Any]) -> dict[str, Any] | None:
    """The pod entries a V4/V3 reader restores: only with the gate on."""
    return pod_entries_of(data) if reader.gate else None


# -- running a procedure -----------------------------------------------------------------------


Procedure = Callable[[ParsedFile], tuple["State", str]]


#: Reads kept per parsed file: one file is read as the same release by the start-up model, the
#: inspector and the upgrade check of a node, and by the nodes that have the same file
#: (``LoadResult`` and its state are immutable; a refusal is kept as its error and attempts,
#: the message naming the caller's state directory).
_loaded = TreeMemo()


def run_procedure(
    manager: str,
    reader: Reader,
    content: str | bytes,
    state_dir: str,
    procedure: Procedure,
    *,
    pure: bool = True,
) -> LoadResult:
    """Parse ``content`` once and run ``procedure`` on it (its state and the version it was
    loaded as, or ``LoadFailure``). ``pure``: the procedure depends only on the file and the
    reader (not on a container list), so its outcome for this parsed file is kept."""
    f = ParsedFile(content)
    keep = pure and f.syntax_error is None
    outcome: LoadResult | tuple[str, tuple[Attempt, ...]]
    known, outcome = _loaded.get(f.tree, manager, reader) if keep else (False, ("", ()))
    if not known:
        try:
            state, loaded_as = procedure(f)
            outcome = LoadResult(
                manager, reader, True, state, loaded_as=loaded_as, attempts=tuple(f.attempts)
            )
        except LoadFailure as fail:
            outcome = (fail.error, tuple(f.attempts))
        if keep:
            _loaded.put(f.tree, outcome, manager, reader)
    if isinstance(outcome, LoadResult):
        return outcome
    error, attempts = outcome
    return rejected(manager, reader, error, state_dir, list(attempts))


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

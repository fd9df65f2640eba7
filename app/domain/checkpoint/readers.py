"""What each kubelet release does with a state file at start-up (follows
pkg/kubelet/cm/cpumanager/state/state_checkpoint.go and
pkg/kubelet/cm/memorymanager/state/state_checkpoint.go of v1.17, v1.35, v1.36 and v1.37, and
pkg/kubelet/checkpointmanager/checkpoint_manager.go).

Each read attempt is ``GetCheckpoint``: unmarshal into a fresh object of that version (a JSON
error stops the attempt before verification, possibly leaving a partly decoded object), then
``VerifyChecksum``. The release procedures (spec ``checkpoints.md`` §7):

========================  =====================================================================
CPU <= 1.17               V1 only
CPU 1.18-1.35             V1, then V2 (the V2 error is returned); a V1 result is migrated
CPU 1.36 gate off         V2, then V1 (the last error is returned)
CPU 1.36 gate on          V3, then as gate off; a V2/V1 result is copied into the V3 object
                          that failed, so pod entries decoded by that attempt survive
CPU 1.37                  V4 (data + dataChecksum); on failure with data or dataChecksum set:
                          ``could not load v4 checkpoint: ...``; else V3 (both names), then V2.
                          Pod entries are restored only with the gate on
memory 1.21-1.35          V1 only, no zero-checksum rule
memory 1.36 gate off      V1 only
memory 1.36 gate on       V2, then V1 copied into the failed V2 object (stale pod entries
                          survive)
memory 1.37               V3; on failure with data/dataChecksum: ``could not load v3
                          checkpoint: ...``; else V2, then V1 (checksum 0 accepted)
========================  =====================================================================

After a successful read the configured policy is compared with the stored one, and (CPU) every
cpuset is parsed. Open points (spec "Uncertain"):

* a 1.37 CPU manager does not fall back to V1: modelled on the 1.37 loader read upstream, whose
  V2 loader is "the oldest supported version";
* a 1.36 memory manager has no zero-checksum rule: the spec's choice (an intermediate upstream
  revision had one);
* a 1.37 memory manager accepts checksum 0 for V2 and V1 (spec §3.5 and the conformance cases;
  an intermediate upstream revision verified V2 without the rule);
* <= 1.17 accepts a V1 checksum of 0 like every later V1 verifier.

Where Go iterates a map, errors are looked for in sorted order so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.detect import normalise_manager
from app.domain.checkpoint.errors import CheckpointInputError
from app.domain.checkpoint.gocpuset import GoCPUSetError
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.gojson_scan import GoSyntaxError, parse
from app.domain.checkpoint.gotext import go_quote, go_text
from app.domain.cpuset import CPUSet

CORRUPT = "checkpoint is corrupted"
DEFAULT_STATE_DIR = "/var/lib/kubelet"

CPU = "cpu"
MEMORY = "memory"

# -- readers ---------------------------------------------------------------------------------------

#: Release families, by the newest release of each.
RELEASE_FAMILIES = ("1.17", "1.35", "1.36", "1.37", "1.38")
_FAMILY_LABEL = {
    "1.17": "≤1.17",
    "1.35": "1.18–1.35",
    "1.36": "1.36",
    "1.37": "1.37",
    "1.38": "1.38",
}
#: 1.38 is upstream master: its state_checkpoint.go files read and write as 1.37's.
_CODE_LINE = {"1.38": "1.37"}


def release_family(release: str | float) -> str:
    """Map a release (``"1.29"``, ``"<=1.17"``, ``"1.18-1.35"``) onto its family key."""
    text = str(release).strip().lower().lstrip("v")
    for prefix in ("≤", "<=", "<"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if "-" in text or "–" in text:
        text = text.replace("–", "-").split("-")[-1]
    parts = text.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise CheckpointInputError(
            f"unknown kubelet release {release!r}; expected e.g. 1.17, 1.35, 1.36, 1.37 or 1.38"
        ) from None
    if major != 1 or minor < 1 or minor > 38:
        raise CheckpointInputError(
            f"kubelet release {release!r} is not modelled; supported: 1.x up to 1.38 "
            "(1.38 = upstream master)"
        )
    if minor <= 17:
        return "1.17"
    if minor <= 35:
        return "1.35"
    return str(f"1.{minor}")


@dataclass(frozen=True, slots=True)
class Reader:
    """A kubelet at start-up: release family, ``PodLevelResourceManagers`` gate, configured
    policy (``None`` skips the policy comparison)."""

    release: str
    gate: bool = False
    policy: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "release", release_family(self.release))
        if self.release in ("1.17", "1.35") and self.gate:
            object.__setattr__(self, "gate", False)  # the gate does not exist there

    @property
    def line(self) -> str:
        """The checkpoint code line this release runs (1.38 reads files as 1.37 does)."""
        return _CODE_LINE.get(self.release, self.release)

    @property
    def label(self) -> str:
        base = _FAMILY_LABEL[self.release]
        if self.line in ("1.36", "1.37"):
            return f"{base} gate {'on' if self.gate else 'off'}"
        return base

    @property
    def key(self) -> str:
        """A stable identifier: ``1.17``, ``1.35``, ``1.36-gate-off``..."""
        if self.line in ("1.36", "1.37"):
            return f"{self.release}-gate-{'on' if self.gate else 'off'}"
        return self.release

    def with_policy(self, policy: str | None) -> Reader:
        return Reader(self.release, self.gate, policy)

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, "gate": self.gate, "label": self.label, "key": self.key}


#: The target list of the inspector (spec ``users.md`` §5.3).
TARGETS: tuple[Reader, ...] = (
    Reader("1.17"),
    Reader("1.35"),
    Reader("1.36", False),
    Reader("1.36", True),
    Reader("1.37", False),
    Reader("1.37", True),
    Reader("1.38", False),
    Reader("1.38", True),
)


def parse_reader(text: str, policy: str | None = None) -> Reader:
    """``"1.36-gate-on"``, ``"1.37 gate off"``, ``"1.35"``, ``"<=1.17"`` -> ``Reader``."""
    t = text.strip().lower().replace("_", "-").replace(" ", "-")
    gate = False
    for suffix, value in (("-gate-on", True), ("-gate-off", False), ("-on", True), ("-off", False)):
        if t.endswith(suffix):
            t, gate = t[: -len(suffix)], value
            break
    return Reader(t, gate, policy)


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


State = C.CPUCheckpointState | M.MemoryCheckpointState


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


class _Fail(Exception):
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


class _File:
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


# -- CPU ---------------------------------------------------------------------------------------------

# Go struct names per release (they appear in JSON type-error texts).
_CPU_NAMES = {
    "1.17": {"V1": "state.CPUManagerCheckpoint"},
    "1.35": {"V1": C.V1_HEADER, "V2": C.LEGACY_HEADER},
    "1.36": {"V1": C.V1_HEADER, "V2": C.V2_HEADER, "V3": C.LEGACY_HEADER},
    "1.37": {"V1": C.V1_HEADER, "V2": C.V2_HEADER, "V3": C.V3_HEADER, "V4": C.LEGACY_HEADER},
}


def _cpu_headers(version: str, reader: Reader) -> tuple[str, ...]:
    """Header names a reader's ``VerifyChecksum`` accepts, in the order it tries them."""
    if version == "V1":
        return (C.LEGACY_HEADER,)
    if version == "V2":
        if reader.line in ("1.36", "1.37") and not reader.gate:
            return (C.V2_HEADER, C.LEGACY_HEADER)
        return (C.LEGACY_HEADER,)
    if version == "V3":
        if reader.line == "1.37":
            return (C.V3_HEADER, C.LEGACY_HEADER)
        return (C.LEGACY_HEADER,)
    raise AssertionError(version)


_CPU_T = {"V1": C.CPU_V1_T, "V2": C.CPU_V2_T, "V3": C.CPU_V3_T}


def _get_cpu(f: _File, version: str, reader: Reader) -> tuple[dict[str, Any], str | None]:
    """``GetCheckpoint`` for a CPU version; records the attempt."""
    name = _CPU_NAMES[reader.line].get(version)
    if f.syntax_error is not None:
        obj = C.new_cpu_checkpoint(version)
        err: str | None = f.syntax_error
        if version == "V4":
            err = f"failed to deserialize cpu manager checkpoint: {err}"
        f.attempts.append(Attempt(version, False, err))
        return obj, err
    obj, jerr = C.decode_cpu(f.tree, version, name)
    if version == "V4":
        if jerr is not None:
            err = f"failed to deserialize cpu manager checkpoint: {jerr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        data = C.new_cpu_checkpoint("data")
        obj["CheckpointData"] = data
        derr = unmarshal_text(obj["Data"], C.CPU_DATA_T, data)
        if derr is not None:
            err = f"failed to deserialize cpu manager checkpoint data: {derr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        if obj["DataChecksum"] != string_checksum(obj["Data"]):
            f.attempts.append(Attempt(version, False, CORRUPT))
            return obj, CORRUPT
        f.attempts.append(Attempt(version, True, None, "dataChecksum"))
        return obj, None
    if jerr is not None:
        f.attempts.append(Attempt(version, False, str(jerr)))
        return obj, str(jerr)
    stored = obj["Checksum"]
    if stored == 0 and version in ("V1", "V2"):
        f.attempts.append(Attempt(version, True, None, "zero"))
        return obj, None
    for header in _cpu_headers(version, reader):
        if struct_checksum(obj, _CPU_T[version], header) == stored:
            f.attempts.append(Attempt(version, True, None, header))
            return obj, None
    f.attempts.append(Attempt(version, False, CORRUPT))
    return obj, CORRUPT


def _migrate_v1_to_v2(
    src: dict[str, Any], dst: dict[str, Any], initial: Mapping[str, Sequence[str]] | None
) -> str | None:
    if src["PolicyName"]:
        dst["PolicyName"] = src["PolicyName"]
    if src["DefaultCPUSet"]:
        dst["DefaultCPUSet"] = src["DefaultCPUSet"]
    for container_id in sorted(src["Entries"] or {}):
        ref = (initial or {}).get(container_id)
        if ref is None:
            return f"containerID '{container_id}' not found in initial containers list"
        pod_uid, name = ref[0], ref[1]
        if dst["Entries"] is None:
            dst["Entries"] = {}
        dst["Entries"].setdefault(pod_uid, {})[name] = src["Entries"][container_id]
    return None


def _migrate_v2_to_v3(src: dict[str, Any], dst: dict[str, Any]) -> None:
    if src["PolicyName"]:
        dst["PolicyName"] = src["PolicyName"]
    if src["DefaultCPUSet"]:
        dst["DefaultCPUSet"] = src["DefaultCPUSet"]
    if src["Entries"]:
        dst["Entries"] = {pod: dict(c or {}) for pod, c in src["Entries"].items()}


def _migrate_v3_to_v4(src: dict[str, Any], data: dict[str, Any]) -> None:
    _migrate_v2_to_v3(src, data)
    if src.get("PodEntries"):
        data["PodEntries"] = {pod: {"CPUSet": e["CPUSet"]} for pod, e in src["PodEntries"].items()}


def _load_cpu_v2_chain(
    f: _File, reader: Reader, initial: Mapping[str, Sequence[str]] | None
) -> tuple[dict[str, Any], str]:
    """``loadAndMigrateCheckpointV2`` (1.36): V2, else V1 migrated; the last error wins."""
    v2, err = _get_cpu(f, "V2", reader)
    if err is None:
        return v2, "V2"
    v1, err = _get_cpu(f, "V1", reader)
    if err is not None:
        raise _Fail(err)
    tmp = C.new_cpu_checkpoint("V2")
    merr = _migrate_v1_to_v2(v1, tmp, initial)
    if merr is not None:
        raise _Fail(f"failed to migrate checkpoint from v1 to v2: {merr}")
    return tmp, "V1"


def _restore_cpu(
    reader: Reader,
    policy: str,
    default_text: str,
    entries: Any,
    pod_entries: Any,
) -> C.CPUCheckpointState:
    if reader.policy is not None and reader.policy != policy:
        raise _Fail(
            f"configured policy {go_quote(reader.policy)} differs from state checkpoint policy "
            f"{go_quote(policy)}"
        )
    try:
        default = C._cpu_set(default_text)
    except GoCPUSetError as exc:
        raise _Fail(f"could not parse default cpu set {go_quote(default_text)}: {exc}") from None
    assignments: dict[str, dict[str, CPUSet]] = {}
    for pod in sorted(entries or {}):
        containers = entries[pod] or {}
        parsed: dict[str, CPUSet] = {}
        for name in sorted(containers):
            text = containers[name]
            try:
                parsed[name] = C._cpu_set(text)
            except GoCPUSetError as exc:
                raise _Fail(
                    f"could not parse cpuset {go_quote(text)} for container {go_quote(name)} "
                    f"in pod {go_quote(pod)}: {exc}"
                ) from None
        assignments[pod] = parsed
    pods: dict[str, CPUSet] | None = None
    if pod_entries is not None:
        pods = {
            pod: (e["CPUSet"] if e["CPUSet"] is not None else CPUSet())
            for pod, e in pod_entries.items()
        }
    return C.CPUCheckpointState(policy, default, assignments, pods)


def _restore_cpu_v1_only(reader: Reader, v1: dict[str, Any]) -> C.CPUCheckpointState:
    # <= 1.17: the state is keyed by container ID.
    policy = v1["PolicyName"]
    if reader.policy is not None and reader.policy != policy:
        raise _Fail(
            f"configured policy {go_quote(reader.policy)} differs from state checkpoint policy "
            f"{go_quote(policy)}"
        )
    try:
        default = C._cpu_set(v1["DefaultCPUSet"])
    except GoCPUSetError as exc:
        raise _Fail(
            f"could not parse default cpu set {go_quote(v1['DefaultCPUSet'])}: {exc}"
        ) from None
    containers: dict[str, CPUSet] = {}
    for cid in sorted(v1["Entries"] or {}):
        text = v1["Entries"][cid]
        try:
            containers[cid] = C._cpu_set(text)
        except GoCPUSetError as exc:
            raise _Fail(
                f"could not parse cpuset {go_quote(text)} for container id {go_quote(cid)}: {exc}"
            ) from None
    return C.CPUCheckpointState(policy, default, {}, None, containers)


def load_cpu_checkpoint(
    content: str | bytes,
    reader: Reader,
    initial_containers: Mapping[str, Sequence[str]] | None = None,
    state_dir: str = DEFAULT_STATE_DIR,
) -> LoadResult:
    """Run ``reader``'s start-up procedure on a ``cpu_manager_state``.

    ``initial_containers`` maps a container ID to ``(pod UID, container name)``: the runtime's
    container list a 1.18+ kubelet uses to migrate V1 entries.
    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """
    f = _File(content)
    loaded_as: str | None = None
    try:
        if reader.line == "1.17":
            v1, err = _get_cpu(f, "V1", reader)
            if err is not None:
                raise _Fail(err)
            loaded_as = "V1"
            state = _restore_cpu_v1_only(reader, v1)
        elif reader.line == "1.35":
            v1, err = _get_cpu(f, "V1", reader)
            if err is not None:
                v1 = {"PolicyName": "", "DefaultCPUSet": "", "Entries": None, "Checksum": 0}
                v2, err = _get_cpu(f, "V2", reader)
                if err is not None:
                    raise _Fail(err)
                loaded_as = "V2"
            else:
                v2 = C.new_cpu_checkpoint("V2")
                loaded_as = "V1"
            merr = _migrate_v1_to_v2(v1, v2, initial_containers)
            if merr is not None:
                raise _Fail(f"error migrating v1 checkpoint state to v2 checkpoint state: {merr}")
            state = _restore_cpu(reader, v2["PolicyName"], v2["DefaultCPUSet"], v2["Entries"], None)
        elif reader.line == "1.36":
            if not reader.gate:
                v2, loaded_as = _load_cpu_v2_chain(f, reader, initial_containers)
                state = _restore_cpu(
                    reader, v2["PolicyName"], v2["DefaultCPUSet"], v2["Entries"], None
                )
            else:
                v3, err = _get_cpu(f, "V3", reader)
                loaded_as = "V3"
                if err is not None:
                    v2, loaded_as = _load_cpu_v2_chain(f, reader, initial_containers)
                    _migrate_v2_to_v3(v2, v3)
                state = _restore_cpu(
                    reader,
                    v3["PolicyName"],
                    v3["DefaultCPUSet"],
                    v3["Entries"],
                    v3["PodEntries"] if v3["PodEntries"] is not None else {},
                )
        else:
            v4, err = _get_cpu(f, "V4", reader)
            loaded_as = "V4"
            if err is None:
                data = v4["CheckpointData"]
            elif v4["Data"] or v4["DataChecksum"]:
                raise _Fail(f"could not load v4 checkpoint: {err}")
            else:
                v3, err = _get_cpu(f, "V3", reader)
                loaded_as = "V3"
                if err is not None:
                    v2, err = _get_cpu(f, "V2", reader)
                    if err is not None:
                        raise _Fail(err)
                    loaded_as = "V2"
                    v3 = C.new_cpu_checkpoint("V3")
                    _migrate_v2_to_v3(v2, v3)
                data = C.new_cpu_checkpoint("data")
                _migrate_v3_to_v4(v3, data)
            pods = None
            if reader.gate:
                pods = data["PodEntries"] if data["PodEntries"] is not None else {}
            state = _restore_cpu(
                reader, data["PolicyName"], data["DefaultCPUSet"], data["Entries"], pods
            )
    except _Fail as fail:
        return _rejected(CPU, reader, fail.error, state_dir, f.attempts)
    return LoadResult(CPU, reader, True, state, loaded_as=loaded_as, attempts=tuple(f.attempts))


def _rejected(
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


# -- memory ------------------------------------------------------------------------------------------

_MEMORY_NAMES = {
    "1.35": {"V1": M.LEGACY_HEADER},
    "1.36": {"V1": M.V1_HEADER, "V2": M.LEGACY_HEADER},
    "1.37": {"V1": M.V1_HEADER, "V2": M.V2_HEADER, "V3": M.LEGACY_HEADER},
}
_MEMORY_T = {"V1": M.MEMORY_V1_T, "V2": M.MEMORY_V2_T}


def _get_memory(f: _File, version: str, reader: Reader) -> tuple[dict[str, Any], str | None]:
    name = _MEMORY_NAMES[reader.line].get(version)
    if f.syntax_error is not None:
        err: str | None = f.syntax_error
        if version == "V3":
            err = f"failed to deserialize memory manager checkpoint: {err}"
        f.attempts.append(Attempt(version, False, err))
        return M.new_memory_checkpoint(version), err
    obj, jerr = M.decode_memory(f.tree, version, name)
    if version == "V3":
        if jerr is not None:
            err = f"failed to deserialize memory manager checkpoint: {jerr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        data = M.new_memory_checkpoint("data")
        obj["CheckpointData"] = data
        derr = unmarshal_text(obj["Data"], M.MEMORY_DATA_T, data)
        if derr is not None:
            err = f"failed to deserialize memory manager checkpoint data: {derr}"
            f.attempts.append(Attempt(version, False, err))
            return obj, err
        if obj["DataChecksum"] != string_checksum(obj["Data"]):
            f.attempts.append(Attempt(version, False, CORRUPT))
            return obj, CORRUPT
        f.attempts.append(Attempt(version, True, None, "dataChecksum"))
        return obj, None
    if jerr is not None:
        f.attempts.append(Attempt(version, False, str(jerr)))
        return obj, str(jerr)
    stored = obj["Checksum"]
    if stored == 0 and reader.line == "1.37":
        f.attempts.append(Attempt(version, True, None, "zero"))
        return obj, None
    if struct_checksum(obj, _MEMORY_T[version], M.LEGACY_HEADER) == stored:
        f.attempts.append(Attempt(version, True, None, M.LEGACY_HEADER))
        return obj, None
    f.attempts.append(Attempt(version, False, CORRUPT))
    return obj, CORRUPT


def _clone_machine_state(ms: Any) -> Any:
    if ms is None:
        return {}
    out: dict[Any, Any] = {}
    for node, s in ms.items():
        if s is None:
            out[node] = None
            continue
        out[node] = {
            "NumberOfAssignments": s["NumberOfAssignments"],
            "MemoryMap": None if s["MemoryMap"] is None else dict(s["MemoryMap"]),
            "Cells": list(s["Cells"] or ()),
        }
    return out


def _copy_v1_to_v2(src: dict[str, Any], dst: dict[str, Any]) -> None:
    """1.37 ``migrateV1CheckpointToV2Checkpoint`` (into a fresh V2): clones of every field."""
    dst["PolicyName"] = src["PolicyName"]
    dst["MachineState"] = _clone_machine_state(src["MachineState"])
    dst["Entries"] = {
        pod: {name: list(b or ()) for name, b in (c or {}).items()}
        for pod, c in (src["Entries"] or {}).items()
    }


def _migrate_v1_into_failed_v2(src: dict[str, Any], dst: dict[str, Any]) -> None:
    """1.36 ``migrateV1CheckpointToV2Checkpoint``: into the V2 object whose attempt failed,
    copying only a non-empty policy name, a non-nil machine state and non-empty entries (the
    rest, pod entries included, is what that attempt decoded)."""
    if src["PolicyName"]:
        dst["PolicyName"] = src["PolicyName"]
    if src["MachineState"] is not None:
        dst["MachineState"] = src["MachineState"]
    if src["Entries"]:
        dst["Entries"] = src["Entries"]


def _restore_memory(
    reader: Reader, policy: str, machine_state: Any, entries: Any, pod_entries: Any
) -> M.MemoryCheckpointState:
    if reader.policy is not None and reader.policy != policy:
        raise _Fail(
            f"[memorymanager] configured policy {go_quote(reader.policy)} differs from state "
            f"checkpoint policy {go_quote(policy)}"
        )
    return M.MemoryCheckpointState(
        policy,
        M.machine_state_from_go(machine_state),
        M.entries_from_go(entries),
        None if pod_entries is None else M.pod_entries_from_go(pod_entries),
    )


def load_memory_checkpoint(
    content: str | bytes, reader: Reader, state_dir: str = DEFAULT_STATE_DIR
) -> LoadResult:
    """Run ``reader``'s start-up procedure on a ``memory_manager_state``.

    Raises ``CheckpointTooLargeError`` above 16 MiB.
    """
    if reader.line == "1.17":
        return LoadResult(
            MEMORY,
            reader,
            True,
            ignored=True,
            notes=("no memory manager before 1.21: the file is not read",),
        )
    f = _File(content)
    loaded_as: str | None = None
    try:
        if reader.line == "1.35" or (reader.line == "1.36" and not reader.gate):
            v1, err = _get_memory(f, "V1", reader)
            if err is not None:
                raise _Fail(err)
            loaded_as = "V1"
            state = _restore_memory(
                reader, v1["PolicyName"], v1["MachineState"], v1["Entries"], None
            )
        elif reader.line == "1.36":
            v2, err = _get_memory(f, "V2", reader)
            loaded_as = "V2"
            if err is not None:
                v1, err = _get_memory(f, "V1", reader)
                if err is not None:
                    raise _Fail(err)
                loaded_as = "V1"
                _migrate_v1_into_failed_v2(v1, v2)
            state = _restore_memory(
                reader,
                v2["PolicyName"],
                v2["MachineState"],
                v2["Entries"],
                v2["PodEntries"] if v2["PodEntries"] is not None else {},
            )
        else:
            v3, err = _get_memory(f, "V3", reader)
            loaded_as = "V3"
            if err is None:
                data = v3["CheckpointData"]
            elif v3["Data"] or v3["DataChecksum"]:
                raise _Fail(f"could not load v3 checkpoint: {err}")
            else:
                v2, err = _get_memory(f, "V2", reader)
                loaded_as = "V2"
                if err is not None:
                    v1, err = _get_memory(f, "V1", reader)
                    if err is not None:
                        raise _Fail(err)
                    loaded_as = "V1"
                    v2 = M.new_memory_checkpoint("V2")
                    _copy_v1_to_v2(v1, v2)
                data = M.new_memory_checkpoint("data")
                data["PolicyName"] = v2["PolicyName"]
                data["MachineState"] = _clone_machine_state(v2["MachineState"])
                data["Entries"] = v2["Entries"]
                data["PodEntries"] = v2["PodEntries"]
            pods = None
            if reader.gate:
                pods = data["PodEntries"] if data["PodEntries"] is not None else {}
            state = _restore_memory(
                reader, data["PolicyName"], data["MachineState"], data["Entries"], pods
            )
    except _Fail as fail:
        return _rejected(MEMORY, reader, fail.error, state_dir, f.attempts)
    return LoadResult(MEMORY, reader, True, state, loaded_as=loaded_as, attempts=tuple(f.attempts))


def load_checkpoint(
    content: str | bytes,
    manager: str,
    reader: Reader,
    initial_containers: Mapping[str, Sequence[str]] | None = None,
    state_dir: str = DEFAULT_STATE_DIR,
) -> LoadResult:
    """``load_cpu_checkpoint`` or ``load_memory_checkpoint`` by ``manager``."""
    if normalise_manager(manager) == CPU:
        return load_cpu_checkpoint(content, reader, initial_containers, state_dir)
    return load_memory_checkpoint(content, reader, state_dir)

"""Findings shared by the inspector and the consistency checks: ``Issue`` and the checksum
report of a state file (every checksum field, what it stores, what its algorithm computes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.domain import releases
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.checksum import string_checksum
from app.domain.checkpoint.detect import CPU, MEMORY, VersionInfo, decoded_data_string
from app.domain.checkpoint.errors import CheckpointFormatError
from app.domain.checkpoint.gojson_decode import unmarshal
from app.domain.checkpoint.gojson_scan import TreeMemo
from app.domain.checkpoint.gotypes import CHECKSUM_T, Field, struct_type

#: Severities of an ``Issue``.
ERROR = "error"
WARNING = "warning"
INFO = "info"


@dataclass(frozen=True, slots=True)
class Issue:
    """A finding: ``code`` (stable, kebab-case), ``severity`` (error|warning|info), text."""

    code: str
    severity: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "message": self.message}


@dataclass(frozen=True, slots=True)
class ChecksumReport:
    """One checksum field: what the file stores, what ``algorithm`` computes, and the status
    (``valid``, ``invalid``, or ``unverified``: zero checksum, or not computable)."""

    field: str
    stored: int | None
    computed: int | None
    status: str
    algorithm: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "stored": self.stored,
            "computed": self.computed,
            "status": self.status,
            "algorithm": self.algorithm,
            "note": self.note,
        }


# -- checksums ---------------------------------------------------------------------------------------


def _status(stored: int, computed: int | None) -> str:
    if computed is None:
        return "unverified"
    if stored == computed:
        return "valid"
    if stored == 0:
        return "unverified"
    return "invalid"


def _joined(*notes: str) -> str:
    return " ".join(x for x in notes if x)


def _struct_report(
    tree: Any, manager: str, version: str, algorithms: Sequence[str], note: str = ""
) -> ChecksumReport:
    """The struct checksum, by the first of ``algorithms`` that matches (else the first)."""
    formats = _FORMATS[manager]
    obj, err = formats.decode(tree, version)
    first = algorithms[0]
    stored = obj.get("Checksum", 0)
    if err is not None:
        return ChecksumReport(
            "checksum", stored, None, "unverified", first, f"the file does not decode: {err}"
        )
    if version == formats.data_version:  # the inline part: hashed without data fields
        obj = {k: v for k, v in obj.items() if k not in ("Data", "DataChecksum")}
        computed = {alg: formats.algorithm_checksum(obj, alg) for alg in algorithms}
    else:  # the file's own version: the hash detection and the readers compute too
        computed = {
            alg: formats.tree_checksum(tree, obj, *formats.algorithms[alg]) for alg in algorithms
        }
    for alg in algorithms:
        if computed[alg] == stored:
            note = _joined(note, _HEADER_NOTES.get(alg, ""))
            return ChecksumReport("checksum", stored, stored, "valid", alg, note)
    status = _status(stored, computed[first])
    if status == "unverified":
        note = _joined(
            note,
            "a zero checksum is accepted without hashing only by readers with the zero rule "
            "(spec §3.5)",
        )
    return ChecksumReport("checksum", stored, computed[first], status, first, note)


# The algorithms of the checksum of the inline part before data and dataChecksum.
_FORMATS = {CPU: C.CPU_FORMATS, MEMORY: M.MEMORY_FORMATS}
_INLINE_ALGORITHMS = {CPU: ("cpu_v2_legacy",), MEMORY: ("mem_v1",)}
# The struct checksums of the other versions: the algorithms to try.
_STRUCT_ALGORITHMS = {
    (CPU, "V1"): ("cpu_v1",),
    (CPU, "V2"): ("cpu_v2_legacy", "cpu_v2_v2name"),
    (CPU, "V3"): ("cpu_v3_legacy", "cpu_v3_v3name"),
    (MEMORY, "V1"): ("mem_v1",),
    (MEMORY, "V2"): ("mem_v2_legacy",),
}


_HEADER_NOTES = {
    "cpu_v2_v2name": "hashed under state.CPUManagerCheckpointV2: only "
    f"{releases.GATE_SINCE}/{releases.NEWEST_CHECKPOINT_LINE} with the gate off accept it",
    "cpu_v3_v3name": "hashed under state.CPUManagerCheckpointV3 (upstream test form): only "
    f"{releases.NEWEST_CHECKPOINT_LINE} accepts it",
}
_INLINE_NOTE = (
    f"inline part: checked by releases before {releases.NEWEST_CHECKPOINT_LINE}, ignored by "
    f"{releases.NEWEST_CHECKPOINT_LINE}"
)


def _data_report(tree: Any, field: str, algorithm: str, stored: int) -> ChecksumReport:
    try:
        data = decoded_data_string(tree)
    except CheckpointFormatError as exc:
        return ChecksumReport(field, stored, None, "unverified", algorithm, exc.message)
    computed = string_checksum(data)
    status = "valid" if computed == stored else "invalid"
    return ChecksumReport(field, stored, computed, status, algorithm)


_PROBES = {
    key: struct_type("state.probe", Field("Checksum", key, CHECKSUM_T))
    for key in ("checksum", "dataChecksum")
}


def _stored(tree: Any, key: str) -> int:
    """The decoded value of a checksum key (0 when absent or not a number)."""
    obj = {"Checksum": 0}
    unmarshal(tree, _PROBES[key], obj)
    return int(obj["Checksum"])


_reports = TreeMemo()


def checksum_reports(tree: Any, info: VersionInfo) -> tuple[ChecksumReport, ...]:
    """Every checksum field of the file: the struct checksum, or (CPU V4 / memory V3) the
    inline part's checksum and ``dataChecksum``; the reverted V4 hashes its data into
    ``checksum``."""
    known, reports = _reports.get(tree, info)
    if not known:
        reports = _reports.put(tree, _checksum_reports(tree, info), info)
    return reports


def _checksum_reports(tree: Any, info: VersionInfo) -> tuple[ChecksumReport, ...]:
    m, v = info.manager, info.version
    algorithms = _STRUCT_ALGORITHMS.get((m, v))
    if algorithms is not None:
        return (_struct_report(tree, m, v, algorithms),)
    if m == CPU and v == "V4-reverted":
        stored = _stored(tree, "checksum")
        return (_data_report(tree, "checksum", "data_string_in_checksum_field", stored),)
    inline = _struct_report(tree, m, _FORMATS[m].data_version, _INLINE_ALGORITHMS[m], _INLINE_NOTE)
    data = _data_report(tree, "dataChecksum", "data_string", _stored(tree, "dataChecksum"))
    return (inline, data)

"""``cpu_manager_state``: Go structs of every format version, decoding, writers (follows
pkg/kubelet/cm/cpumanager/state/checkpoint.go and state.go, v1.17 to v1.37). The normalised
state the Go values map to is ``cpu_state``.

Versions (each manager numbers its own formats, spec ``checkpoints.md`` §1, §5):

* **V1** (<= 1.17): ``policyName``, ``defaultCpuSet``, ``entries`` (container ID -> cpuset),
  ``checksum``;
* **V2** (1.18-1.35; 1.36 gate off): ``entries`` pod UID -> container -> cpuset;
* **V3** (1.36 gate on): V2 + ``podEntries`` (pod UID -> ``{"cpuSet": "<list>"}``);
* **V4** (1.37): the V2 fields inline (with the legacy V2 checksum), then ``data`` (the JSON of
  ``{policyName, defaultCpuSet, entries, podEntries}``) and ``dataChecksum``;
* **V4-reverted** (kubernetes#137820, never released): ``{data, checksum}`` only; read and
  labelled, never written.

The 1.37 struct embeds the V2 struct (kubernetes#139102, the spec's reading); a sibling
revision (#139103) embedded V3 with an inline checksum of 0. Both inline layouts read the same
everywhere: 1.37 ignores the inline part, older releases ignore ``podEntries`` and accept 0.

Struct checksums are hashed under the legacy header ``state.CPUManagerCheckpoint`` when
written; 1.36/1.37 readers also accept the ``...CheckpointV2`` / ``...CheckpointV3`` headers in
some configurations (see ``readers``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.errors import CheckpointInputError, CheckpointStateError
from app.domain.checkpoint.formats import FormatVersions, fixed, struct_factory
from app.domain.checkpoint.gocpuset import GoCPUSetError, parse_cpuset
from app.domain.checkpoint.gojson_decode import abort, unmarshal
from app.domain.checkpoint.gojson_encode import encode_fragment, marshal
from app.domain.checkpoint.gojson_scan import GoJSONError
from app.domain.checkpoint.gotypes import (
    CHECKSUM_FIELD,
    CPUSET_T,
    DATA_FIELDS,
    POLICY_NAME_FIELD,
    STRING_T,
    Field,
    GoType,
    map_type,
    string_type,
    struct_type,
)
from app.domain.cpuset import CPUSet
from app.domain.golang.strconv import go_quote

CPU_FILE_NAME = "cpu_manager_state"

#: Header names in the hashed text (spec §3.4).
LEGACY_HEADER = "state.CPUManagerCheckpoint"
V1_HEADER = "state.CPUManagerCheckpointV1"
V2_HEADER = "state.CPUManagerCheckpointV2"
V3_HEADER = "state.CPUManagerCheckpointV3"

CPU_VERSIONS = ("V1", "V2", "V3", "V4")

# -- Go types ------------------------------------------------------------------------------------

ENTRIES_V1_T = map_type("map[string]string", STRING_T, STRING_T)
ENTRIES_T = map_type(
    "map[string]map[string]string", STRING_T, map_type("map[string]string", STRING_T, STRING_T)
)

_PODENTRY_JSON_T = struct_type(
    "state.podEntryJSON", Field("CPUSet", "cpuSet", string_type(), omitempty=True)
)


def _pod_entry_unmarshal(dec: Any, node: Any, cur: Any) -> Any:
    # PodEntry.UnmarshalJSON: decode into podEntryJSON (its own json.Unmarshal), then
    # cpuset.Parse. Any error stops the outer decoder at once.
    entry = {"CPUSet": ""}
    err = unmarshal(node, _PODENTRY_JSON_T, entry)
    if err is not None:
        raise abort(err)
    try:
        cset = parse_cpuset(entry["CPUSet"])
    except GoCPUSetError as exc:
        raise abort(GoJSONError(f"failed to parse cpuset: {exc}")) from None
    obj = cur if cur is not None else {"CPUSet": None}
    obj["CPUSet"] = cset
    return obj


def _pod_entry_marshal(value: Any) -> str:
    cset = value["CPUSet"]
    text = "" if cset is None else str(cset)
    return '{"cpuSet":"' + text + '"}' if text else "{}"


PODENTRY_T = struct_type(
    "state.PodEntry",
    Field("CPUSet", "cpuSet", CPUSET_T, omitempty=True),
    unmarshal=_pod_entry_unmarshal,
    marshal=_pod_entry_marshal,
)
POD_ENTRIES_T = map_type("state.PodCPUAssignments", STRING_T, PODENTRY_T)


_DEFAULT_CPUSET_FIELD = Field("DefaultCPUSet", "defaultCpuSet", STRING_T)
_V2_FIELDS = (
    POLICY_NAME_FIELD,
    _DEFAULT_CPUSET_FIELD,
    Field("Entries", "entries", ENTRIES_T, omitempty=True),
)
_POD_ENTRIES_FIELD = Field("PodEntries", "podEntries", POD_ENTRIES_T, omitempty=True)


cpu_v1_type = struct_factory(
    V1_HEADER,
    POLICY_NAME_FIELD,
    _DEFAULT_CPUSET_FIELD,
    Field("Entries", "entries", ENTRIES_V1_T, omitempty=True),
    CHECKSUM_FIELD,
)
cpu_v2_type = struct_factory(V2_HEADER, *_V2_FIELDS, CHECKSUM_FIELD)
cpu_v3_type = struct_factory(V3_HEADER, *_V2_FIELDS, _POD_ENTRIES_FIELD, CHECKSUM_FIELD)


@functools.cache
def cpu_v4_type(name: str = LEGACY_HEADER, embedded: str = "V2") -> GoType:
    """The 1.37 struct: the embedded V2 (kubernetes#139102) or V3 (#139103) fields promoted,
    then ``data`` and ``dataChecksum`` (``CheckpointData`` is ``json:"-"``)."""
    inline = cpu_v3_type() if embedded == "V3" else cpu_v2_type()
    return struct_type(name, *inline.fields, *DATA_FIELDS)


CPU_DATA_T = struct_type("state.CPUManagerCheckpointData", *_V2_FIELDS, _POD_ENTRIES_FIELD)

#: The reverted single-checksum layout: ``{data, checksum}``.
CPU_V4_REVERTED_T = struct_type("state.CPUManagerCheckpoint", DATA_FIELDS[0], CHECKSUM_FIELD)

CPU_V1_T = cpu_v1_type()
CPU_V2_T = cpu_v2_type()
CPU_V3_T = cpu_v3_type()
CPU_V4_T = cpu_v4_type()


CPU_FORMATS = FormatVersions(
    CPU_FILE_NAME,
    "cpu manager",
    {
        "V1": cpu_v1_type,
        "V2": cpu_v2_type,
        "V3": cpu_v3_type,
        "V4": cpu_v4_type,
        "V4-reverted": fixed(CPU_V4_REVERTED_T),
        "data": fixed(CPU_DATA_T),
    },
    "V4",
    # the struct checksum algorithms of the conformance cases (``checkpoint_checksum``)
    {
        "cpu_v1": ("V1", LEGACY_HEADER),
        "cpu_v2_legacy": ("V2", LEGACY_HEADER),
        "cpu_v2_v2name": ("V2", V2_HEADER),
        "cpu_v3_legacy": ("V3", LEGACY_HEADER),
        "cpu_v3_v3name": ("V3", V3_HEADER),
    },
)
new_cpu_checkpoint = CPU_FORMATS.new
decode_cpu = CPU_FORMATS.decode
cpu_struct_checksum = CPU_FORMATS.algorithm_checksum


# -- Go values -> normalised state ---------------------------------------------------------------


def _parsed(text: str, on_error: Callable[[str], None], what: str, *names: str) -> CPUSet | None:
    """``cpuset.Parse(text)``; on an error ``on_error`` gets the kubelet's text (``what`` with
    ``names`` quoted into it) and the result is ``None``."""
    try:
        return parse_cpuset(text)
    except GoCPUSetError as exc:
        on_error(_parse_error(exc, what, *names))
        return None


def _parse_error(exc: GoCPUSetError, what: str, *names: str) -> str:
    return f"could not parse {what.format(*map(go_quote, names))}: {exc}"


def cpu_state_from_go(
    data: dict[str, Any], pod_entries: Any, on_error: Callable[[str], None]
) -> CPUCheckpointState:
    """The state of a decoded V2/V3 value or V4 data, every cpuset parsed in sorted order as
    ``restoreState`` does; each error goes to ``on_error`` (which may raise) and its cpuset is
    left out (an empty default set)."""
    default_text, entries = data["DefaultCPUSet"], data["Entries"]
    default = _parsed(default_text, on_error, "default cpu set {}", default_text)
    parsed: dict[str, dict[str, CPUSet]] = {}
    for pod in sorted(entries or {}):
        inner: dict[str, CPUSet] = {}
        for name, text in sorted((entries[pod] or {}).items()):
            try:  # inline: this runs for every container
                inner[name] = parse_cpuset(text)
            except GoCPUSetError as exc:
                on_error(_parse_error(exc, "cpuset {} for container {} in pod {}", text, name, pod))
        parsed[pod] = inner
    pods: dict[str, CPUSet] | None = None
    if pod_entries is not None:
        pods = {
            pod: (e["CPUSet"] if e["CPUSet"] is not None else CPUSet())
            for pod, e in pod_entries.items()
        }
    return CPUCheckpointState(
        data["PolicyName"], default if default is not None else CPUSet(), parsed, pods
    )


def cpu_v1_state_from_go(v1: dict[str, Any], on_error: Callable[[str], None]) -> CPUCheckpointState:
    """The state of a decoded V1 value, keyed by container ID (as ``cpu_state_from_go``)."""
    default_text = v1["DefaultCPUSet"]
    default = _parsed(default_text, on_error, "default cpu set {}", default_text)
    containers: dict[str, CPUSet] = {}
    for cid, text in sorted((v1["Entries"] or {}).items()):
        cset = _parsed(text, on_error, "cpuset {} for container id {}", text, cid)
        if cset is not None:
            containers[cid] = cset
    default_set = default if default is not None else CPUSet()
    return CPUCheckpointState(v1["PolicyName"], default_set, {}, None, containers)


# -- writing ----------------------------------------------------------------------------------------


def normalise_version(version: str | int, versions: tuple[str, ...] = CPU_VERSIONS) -> str:
    text = str(version).strip().upper()
    if not text.startswith("V"):
        text = "V" + text
    if text not in versions:
        raise CheckpointInputError(
            f"unknown version {version!r}; expected one of {', '.join(versions)}"
        )
    return text


def _entries_value(state: CPUCheckpointState) -> dict[str, dict[str, str]]:
    return {
        pod: {name: str(cset) for name, cset in containers.items()}
        for pod, containers in state.entries.items()
    }


def cpu_go_value(state: CPUCheckpointState, version: str) -> dict[str, Any]:
    """The Go value the kubelet marshals for ``state`` (checksums not yet set)."""
    version = normalise_version(version)
    obj = new_cpu_checkpoint(version)
    obj["PolicyName"] = state.policy_name
    obj["DefaultCPUSet"] = str(state.default_cpu_set)
    if version == "V1":
        if state.entries:
            raise CheckpointStateError(
                "a V1 file keys entries by container ID: give container_entries "
                "(or convert with a container map)"
            )
        obj["Entries"] = {cid: str(c) for cid, c in (state.container_entries or {}).items()}
        return obj
    if state.container_entries:
        raise CheckpointStateError(
            f"{version} keys entries by pod UID and container name; the state has V1 "
            "container-ID entries (migrate them with a container map first)"
        )
    obj["Entries"] = _entries_value(state)
    if version == "V3":
        obj["PodEntries"] = {pod: {"CPUSet": c} for pod, c in (state.pod_entries or {}).items()}
    return obj


def cpu_data_value(state: CPUCheckpointState) -> dict[str, Any]:
    """``CPUManagerCheckpointData`` for ``state`` (V4's ``data``)."""
    data = new_cpu_checkpoint("data")
    data["PolicyName"] = state.policy_name
    data["DefaultCPUSet"] = str(state.default_cpu_set)
    data["Entries"] = _entries_value(state)
    data["PodEntries"] = {pod: {"CPUSet": c} for pod, c in (state.pod_entries or {}).items()}
    return data


def write_cpu_checkpoint(state: CPUCheckpointState, version: str | int) -> str:
    """The exact text a kubelet writes for ``state`` in ``version`` (no trailing newline).

    V1 is written from ``state.container_entries``; V1/V2 have no pod entries (they are not
    written); V4 carries them in ``data``.
    """
    version = normalise_version(version)
    if version in ("V1", "V2", "V3"):
        obj = cpu_go_value(state, version)
        t = {"V1": CPU_V1_T, "V2": CPU_V2_T, "V3": CPU_V3_T}[version]
        obj["Checksum"] = struct_checksum(obj, t, LEGACY_HEADER)
        return marshal(obj, t)
    inline = cpu_go_value(state, "V2")
    # ``data`` holds the same entries as the inline part: build and encode them once.
    data_value = {k: inline[k] for k in ("PolicyName", "DefaultCPUSet", "Entries")}
    data_value["PodEntries"] = {pod: {"CPUSet": c} for pod, c in (state.pod_entries or {}).items()}
    fragments = {"Entries": encode_fragment(inline["Entries"], _ENTRIES_FIELD_T)}
    data = marshal(data_value, CPU_DATA_T, fragments=fragments)
    inline["Checksum"] = struct_checksum(inline, CPU_V2_T, LEGACY_HEADER)
    inline["Data"] = data
    inline["DataChecksum"] = string_checksum(data)
    return marshal(inline, CPU_V4_T, fragments=fragments)


# The type of ``Entries`` in V4's data, which the inline part shares.
_ENTRIES_FIELD_T = next(f.type for f in CPU_DATA_T.fields if f.go_name == "Entries")
assert next(f.type for f in CPU_V4_T.fields if f.go_name == "Entries") == _ENTRIES_FIELD_T


__all__ = [
    "CPU_FILE_NAME",
    "CPU_VERSIONS",
    "cpu_go_value",
    "decode_cpu",
    "write_cpu_checkpoint",
]

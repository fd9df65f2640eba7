"""Which manager, format version and release family a state file is, and the checksum each
algorithm computes for it (spec ``checkpoints.md`` §1, §3, §12.1; conformance
``checkpoint_checksum``).

Detection matches keys case-insensitively, as the decoder does:

1. ``data`` or ``dataChecksum`` present: CPU with inline fields -> CPU V4, only ``data`` (and
   ``checksum``) -> the reverted V4 layout (manager read from inside ``data``), memory -> V3;
2. ``podEntries`` present -> CPU V3 / memory V2;
3. CPU: ``entries`` values are strings -> V1, objects -> V2; without entries the checksum
   decides (V1 hash vs V2 hash; 0 -> V2);
4. otherwise memory V1.

Labels always carry both the per-manager version and the release family: the memory manager's
V3 is not the CPU manager's V3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain import releases
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.checksum import string_checksum
from app.domain.checkpoint.errors import CheckpointFormatError, CheckpointInputError
from app.domain.checkpoint.gojson_decode import unmarshal
from app.domain.checkpoint.gojson_scan import GoSyntaxError, JObj, TreeMemo, parse
from app.domain.checkpoint.gotext import go_text
from app.domain.checkpoint.gotypes import STRING_T, Field, fold_name, struct_type

CPU = "cpu"
MEMORY = "memory"

#: (label, release family) per (manager, version).
LABELS: dict[tuple[str, str], tuple[str, str]] = {
    **{
        (manager, version): (f"{'CPU' if manager == CPU else manager} {version} ({who})", who)
        for (manager, version), who in releases.STATE_FILE_WRITERS.items()
    },
    (CPU, "V4-reverted"): (
        "CPU V4-reverted (unreleased, kubernetes#137820)",
        "unreleased, kubernetes#137820",
    ),
}

FILE_NAMES = {CPU: C.CPU_FILE_NAME, MEMORY: M.MEMORY_FILE_NAME}


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """The detected format. ``header`` (CPU V2/V3) says which type name the stored checksum
    was hashed under: ``legacy`` (``state.CPUManagerCheckpoint``), ``v2name``, ``v3name``,
    or ``None`` when none matches (or the checksum is 0)."""

    manager: str
    version: str
    header: str | None = None

    @property
    def label(self) -> str:
        return LABELS[(self.manager, self.version)][0]

    @property
    def family(self) -> str:
        return LABELS[(self.manager, self.version)][1]

    @property
    def file_name(self) -> str:
        return FILE_NAMES[self.manager]

    @property
    def display(self) -> str:
        """``cpu_manager_state V4 (1.37 family)``."""
        return f"{self.file_name} {self.version} ({self.family} family)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "file": self.file_name,
            "version": self.version,
            "label": self.label,
            "family": self.family,
            "display": self.display,
            "header": self.header,
        }


def parse_checkpoint_text(content: str | bytes) -> tuple[str, Any]:
    """Go's view of the text and its parsed tree; ``CheckpointFormatError`` with Go's syntax
    error text when it is not JSON."""
    text = go_text(content)
    try:
        return text, parse(text)
    except GoSyntaxError as err:
        raise CheckpointFormatError(f"not valid JSON: {err.message}") from None


def _top_keys(tree: Any) -> dict[str, Any]:
    """Folded key -> last value (what the decoder would keep for a scalar)."""
    if type(tree) is not JObj:
        kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(tree), "a value")
        if tree is None:
            kind = "null"
        raise CheckpointFormatError(f"a checkpoint is a JSON object, this is {kind}")
    out: dict[str, Any] = {}
    for key, value in tree:
        out[fold_name(key)] = value
    return out


def _has(keys: dict[str, Any], name: str) -> bool:
    return fold_name(name) in keys


def _manager_of(tree: Any, keys: dict[str, Any]) -> str | None:
    if _has(keys, "defaultCpuSet"):
        return CPU
    if _has(keys, "machineState"):
        return MEMORY
    data = keys.get(fold_name("data"))
    if isinstance(data, str) and data:
        try:
            inner = _top_keys(parse(go_text(data)))
        except (GoSyntaxError, CheckpointFormatError):
            inner = {}
        if _has(inner, "defaultCpuSet"):
            return CPU
        if _has(inner, "machineState"):
            return MEMORY
    entries = keys.get(fold_name("entries"))
    if type(entries) is JObj and entries:
        first = entries[0][1]
        if isinstance(first, str):
            return CPU
        if type(first) is JObj and first and type(first[0][1]) is list:
            return MEMORY
        if type(first) is JObj and first and isinstance(first[0][1], str):
            return CPU
    pod_entries = keys.get(fold_name("podEntries"))
    if type(pod_entries) is JObj and pod_entries and type(pod_entries[0][1]) is JObj:
        inner_keys = {fold_name(k) for k, _ in pod_entries[0][1]}
        if fold_name("cpuSet") in inner_keys:
            return CPU
        if fold_name("memoryBlocks") in inner_keys:
            return MEMORY
    return None


def sniff_manager(tree: Any) -> str | None:
    """The manager the content itself names (``None`` when it names neither)."""
    return _manager_of(tree, _top_keys(tree))


def normalise_manager(manager: str) -> str:
    m = manager.strip().lower()
    if m in ("cpu", C.CPU_FILE_NAME, "cpumanager", "cpu_manager"):
        return CPU
    if m in ("memory", "mem", M.MEMORY_FILE_NAME, "memorymanager", "memory_manager"):
        return MEMORY
    raise CheckpointInputError(f"unknown manager {manager!r}; expected 'cpu' or 'memory'")


def detect_version(content: str | bytes, manager: str | None = None) -> VersionInfo:
    """Detect the format of a state file (spec §12.1).

    ``manager`` (``cpu``/``memory`` or a file name) skips manager detection. Raises
    ``CheckpointFormatError`` for text that is not a JSON object or whose manager cannot be
    told, ``CheckpointTooLargeError`` above 16 MiB.
    """
    _, tree = parse_checkpoint_text(content)
    return detect_tree(tree, manager)


_detected = TreeMemo()


def detect_tree(tree: Any, manager: str | None = None) -> VersionInfo:
    """The format version of a parsed file (``manager``: as told, else as detected)."""
    known, info = _detected.get(tree, manager)
    if not known:
        info = _detected.put(tree, _detect_tree(tree, manager), manager)
    return info


def _detect_tree(tree: Any, manager: str | None) -> VersionInfo:
    keys = _top_keys(tree)
    mgr = normalise_manager(manager) if manager else _manager_of(tree, keys)
    if mgr is None:
        raise CheckpointFormatError(
            "cannot tell a cpu_manager_state from a memory_manager_state: the file has neither "
            "defaultCpuSet nor machineState; name the manager"
        )
    has_data = _has(keys, "data") or _has(keys, "dataChecksum")
    if mgr == MEMORY:
        if has_data:
            return VersionInfo(MEMORY, "V3")
        v2 = _memory_header(tree, "V2")
        if _has(keys, "podEntries"):
            return VersionInfo(MEMORY, "V2", v2)
        # A V2 file without pod entries omits the key; its checksum still tells it apart.
        v1 = _memory_header(tree, "V1")
        if v1 is None and v2 is not None:
            return VersionInfo(MEMORY, "V2", v2)
        return VersionInfo(MEMORY, "V1", v1)
    if has_data:
        inline = any(_has(keys, k) for k in ("policyName", "defaultCpuSet", "entries"))
        if _has(keys, "dataChecksum") or inline:
            return VersionInfo(CPU, "V4")
        return VersionInfo(CPU, "V4-reverted")
    if _has(keys, "podEntries"):
        return VersionInfo(CPU, "V3", _cpu_header(tree, "V3"))
    entries = keys.get(fold_name("entries"))
    if type(entries) is JObj and entries and isinstance(entries[-1][1], str):
        return VersionInfo(CPU, "V1", _cpu_header(tree, "V1"))
    # V2, a V3 without pod entries (the key is omitted when empty) or an entry-less V1:
    # the stored checksum decides.
    for version in ("V2", "V3", "V1"):
        header = _cpu_header(tree, version)
        if header is not None:
            return VersionInfo(CPU, version, header)
    return VersionInfo(CPU, "V2")


_HEADER_NAMES = {
    C.LEGACY_HEADER: "legacy",
    C.V2_HEADER: "v2name",
    C.V3_HEADER: "v3name",
    M.LEGACY_HEADER: "legacy",
}


def _cpu_header(tree: Any, version: str) -> str | None:
    """Which header the stored struct checksum matches (``None``: none, or checksum 0)."""
    obj, err = C.decode_cpu(tree, version)
    if err is not None or not obj["Checksum"]:
        return None
    names = {"V1": (C.LEGACY_HEADER,), "V2": (C.LEGACY_HEADER, C.V2_HEADER)}.get(
        version, (C.LEGACY_HEADER, C.V3_HEADER)
    )
    for header in names:
        if C.CPU_FORMATS.tree_checksum(tree, obj, version, header) == obj["Checksum"]:
            return _HEADER_NAMES[header]
    return None


def _memory_header(tree: Any, version: str) -> str | None:
    obj, err = M.decode_memory(tree, version)
    if err is not None or not obj["Checksum"]:
        return None
    if M.MEMORY_FORMATS.tree_checksum(tree, obj, version, M.LEGACY_HEADER) == obj["Checksum"]:
        return "legacy"
    return None


# -- checksum algorithms ---------------------------------------------------------------------------

ALGORITHMS = (
    "cpu_v1",
    "cpu_v2_legacy",
    "cpu_v2_v2name",
    "cpu_v3_legacy",
    "cpu_v3_v3name",
    "mem_v1",
    "mem_v2_legacy",
    "data_string",
    "data_string_in_checksum_field",
)

_DATA_ONLY_T = struct_type("state.checkpointData", Field("Data", "data", STRING_T))


def decoded_data_string(tree: Any) -> str:
    """The decoded value of the file's ``data`` key (``""`` when absent)."""
    obj = {"Data": ""}
    err = unmarshal(tree, _DATA_ONLY_T, obj)
    if err is not None:
        raise CheckpointFormatError(f"the file does not decode: {err}")
    return obj["Data"]


def compute_checksum(content: str | bytes, algorithm: str) -> int:
    """The unsigned integer ``algorithm`` computes for the file (conformance
    ``checkpoint_checksum``). Raises ``CheckpointFormatError`` when the text does not decode
    into the algorithm's structure, ``CheckpointInputError`` for an unknown algorithm."""
    _, tree = parse_checkpoint_text(content)
    return compute_tree_checksum(tree, algorithm)


def compute_tree_checksum(tree: Any, algorithm: str) -> int:
    if algorithm in ("data_string", "data_string_in_checksum_field"):
        return string_checksum(decoded_data_string(tree))
    for formats in (C.CPU_FORMATS, M.MEMORY_FORMATS):
        if algorithm in formats.algorithms:
            obj, err = formats.decode(tree, formats.algorithms[algorithm][0])
            if err is not None:
                raise CheckpointFormatError(f"the file does not decode as {algorithm}: {err}")
            return formats.algorithm_checksum(obj, algorithm)
    raise CheckpointInputError(
        f"unknown checksum algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}"
    )

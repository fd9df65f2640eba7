"""Incremental writing of ``cpu_manager_state`` and ``memory_manager_state``: the bytes of
``write_cpu_checkpoint`` / ``write_memory_checkpoint`` (what the kubelet writes, see ``cpu`` and
``memory``), re-encoding only the pods whose entries changed since the last write.

Every text the kubelet writes or hashes (the file, the V4/V3 ``data`` JSON, the go-spew dump
under the struct checksum) encodes a struct whose ``entries`` and ``podEntries`` maps hold one
item per pod, sorted by pod UID, and the memory manager's ``machineState`` one item per NUMA
node. ``CheckpointWriter`` keeps each item as JSON and as go-spew text. The rest of each text
(policy, default set, checksums: the skeleton) is encoded once per format version and shape
(which maps are there), with a marker item in place of each kept map and markers for the
values that change at every write (checksums, ``data``, the CPU default set), and cut there
into a template (``_Template``). A write fills the templates with the kept items, joined, and
hashes the whole text (FNV-1a in C: a 250-pod dump in about 0.1 ms). The V4/V3 ``data`` is
also kept escaped as the file's JSON string holds it (escaping is per character, so the
escaped items fill its template like the others). CPU V1 (entries keyed by container ID) and
a policy name holding a NUL (the markers' character) are written in full.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from app.domain.checkpoint.checksum import string_checksum, text_checksum
from app.domain.checkpoint.cpu import (
    CPU_DATA_T,
    CPU_V2_T,
    CPU_V3_T,
    CPU_V4_T,
    cpu_data_value,
    cpu_go_value,
    normalise_version,
    write_cpu_checkpoint,
)
from app.domain.checkpoint.cpu import LEGACY_HEADER as CPU_HEADER
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.gojson_encode import encode_fragment, go_escape, marshal
from app.domain.checkpoint.gospew import sdump_for_hash, sdump_item
from app.domain.checkpoint.gotypes import STRING_T, GoType, Kind
from app.domain.checkpoint.memory import LEGACY_HEADER as MEMORY_HEADER
from app.domain.checkpoint.memory import (
    MEMORY_DATA_T,
    MEMORY_V1_T,
    MEMORY_V2_T,
    MEMORY_V3_T,
    MEMORY_VERSIONS,
    machine_state_to_go,
    memory_data_value,
    memory_go_value,
    write_memory_checkpoint,
)
from app.domain.checkpoint.memory_state import MemoryCheckpointState, NUMANodeState
from app.domain.cpuset import CPUSet

# Texts no pod UID, policy name or CPU set holds (a NUL): the keys of the skeleton's marker
# items, and the markers of its scalar values that change at every write.
_ENTRIES = "\x00entries\x00"
_POD_ENTRIES = "\x00podEntries\x00"
_MACHINE_STATE = "\x00machineState\x00"
_DATA = "\x00data\x00"
_CHECKSUM = "\x00checksum\x00"
_DATA_CHECKSUM = "\x00dataChecksum\x00"
_DEFAULT_SET = "\x00defaultCpuSet\x00"


# The texts a kept map's items come in: JSON, JSON inside a JSON string, go-spew.
_JSON, _QUOTED, _SPEW = range(3)

# Up to this many changed keys are put in place in a kept map's order; more, it is sorted again.
_IN_PLACE = 16


def _quoted(json: str) -> str:
    """``json`` escaped as a JSON string holds it (without the quotes)."""
    return marshal(json, STRING_T)[1:-1]


def _json_item(key: str | int, go: Any, elem: GoType) -> str:
    return go_escape(encode_fragment(str(key), STRING_T) + ":" + encode_fragment(go, elem))


def _spew_item(key: str | int, go: Any, elem: GoType) -> str:
    return f"{key}:" + sdump_item(go, elem)


@dataclasses.dataclass(slots=True)
class _Item:
    """One item of a kept map: the state value it encodes and its texts (by ``_JSON``,
    ``_QUOTED``, ``_SPEW``)."""

    value: Any
    texts: tuple[str, str, str]


class _KeptMap:
    """A map of one manager's documents whose items are kept (``Entries`` or ``PodEntries``
    by pod UID, ``MachineState`` by NUMA node): its marker, the Go type of its values and its
    items. Go's JSON sorts integer keys by their text, go-spew by their value."""

    def __init__(self, field: str, marker: str, t: GoType) -> None:
        self.field = field
        self.marker = marker
        assert t.elem is not None and t.key is not None
        self.elem = t.elem
        self.int_keys = t.key.kind != Kind.STRING
        self.items: dict[Any, _Item] = {}
        self._values: dict[Any, Any] = {}  # the entries of the last refresh
        self.order: list[Any] = []  # the keys of ``items``, sorted (go-spew's order)
        # The items' texts by kind, each in its kind's order (JSON's sorts integer keys as
        # text), and joined with their separators when first asked after a change (a write
        # asks for each several times).
        self._texts: tuple[list[str], list[str], list[str]] = ([], [], [])
        self._runs: dict[int, str] = {}
        self._markers: dict[int, str] = {}  # the marker item's text, by kind
        self.generation = 0  # counts the refreshes that changed the items

    def refresh(
        self, entries: Mapping[Any, Any], go_values: Callable[[dict[Any, Any]], Mapping[Any, Any]]
    ) -> None:
        """Make the items those of ``entries``, encoding again only those whose value changed
        (``go_values`` gives the Go values of those, by key)."""
        changed, removed = self._changed(entries)
        if not changed and not removed:
            return
        items = self.items
        for key in removed:
            del items[key]
        for key, go in go_values(changed).items():
            json = _json_item(key, go, self.elem)
            items[key] = _Item(changed[key], (json, _quoted(json), _spew_item(key, go, self.elem)))
        if self.int_keys or len(changed) + len(removed) > _IN_PLACE:
            self._sort()
        else:
            self._place(changed, removed)
        self._runs.clear()
        self.generation += 1

    def _sort(self) -> None:
        """``order`` and the texts made again from the items."""
        items = self.items
        self.order = sorted(items)
        json_order = sorted(items, key=str) if self.int_keys else self.order
        self._texts = (
            [items[key].texts[_JSON] for key in json_order],
            [items[key].texts[_QUOTED] for key in json_order],
            [items[key].texts[_SPEW] for key in self.order],
        )

    def _place(self, changed: Mapping[str, Any], removed: set[str]) -> None:
        """``order`` and the texts after a few string keys changed: removed, replaced or
        inserted where they sort (JSON's order is go-spew's for string keys)."""
        order, texts, items = self.order, self._texts, self.items
        for key in removed:
            at = bisect.bisect_left(order, key)
            del order[at]
            for of_kind in texts:
                del of_kind[at]
        for key in changed:
            at = bisect.bisect_left(order, key)
            new = items[key].texts
            if at < len(order) and order[at] == key:
                for of_kind, text in zip(texts, new, strict=True):
                    of_kind[at] = text
            else:
                order.insert(at, key)
                for of_kind, text in zip(texts, new, strict=True):
                    of_kind.insert(at, text)

    def _changed(self, entries: Mapping[Any, Any]) -> tuple[dict[Any, Any], set[Any]]:
        """The entries whose value is not the kept one, and the keys no longer there. Usually
        a few are added or removed and the others are the same: that is checked with set and
        dict operations (in C, values by identity first), the loop over every entry only runs
        when it is not so."""
        now = dict(entries)
        last, self._values = self._values, now
        added = now.keys() - last.keys()
        # Nothing removed (the usual change, an admission) when ``last`` has no other keys.
        removed = last.keys() - now.keys() if len(now) - len(added) != len(last) else set()
        same, before = now, last
        if added:
            same = dict(now)
            for key in added:
                del same[key]
        if removed:
            before = dict(last)
            for key in removed:
                del before[key]
        if same == before:
            return {key: now[key] for key in added}, removed
        items = self.items
        changed = {
            key: value
            for key, value in now.items()
            if (item := items.get(key)) is None or (item.value is not value and item.value != value)
        }
        return changed, removed

    @property
    def current(self) -> list[_Item]:
        """The items, in go-spew's order."""
        items = self.items
        return [items[key] for key in self.order]

    def run(self, kind: int) -> str:
        """The current items' texts of ``kind``, in order, with their separators."""
        run = self._runs.get(kind)
        if run is None:
            run = self._runs[kind] = (" " if kind == _SPEW else ",").join(self._texts[kind])
        return run

    def marker_text(self, marker_go: Any, kind: int) -> str:
        """The text of this map's marker item (its value ``marker_go``, the same at every
        write) in a text of ``kind``."""
        marker = self._markers.get(kind)
        if marker is None:
            if kind == _SPEW:
                marker = _spew_item(self.marker, marker_go, self.elem)
            else:
                marker = _json_item(self.marker, marker_go, self.elem)
                if kind == _QUOTED:
                    marker = _quoted(marker)
            self._markers[kind] = marker
        return marker


class _Template:
    """A skeleton text cut where its open values go: ``literals`` around the ``names`` of
    those values, in order."""

    __slots__ = ("literals", "names")

    def __init__(self, text: str, slots: Mapping[str, str]) -> None:
        """``slots``: the text that stands for each open value in ``text`` -> its name (each
        is there once at most)."""
        self.literals: list[str] = []
        self.names: list[str] = []
        at = 0
        for pos, marker in sorted((text.find(m), m) for m in slots if m in text):
            assert text.count(marker) == 1, f"{slots[marker]} twice in a skeleton"
            self.literals.append(text[at:pos])
            self.names.append(slots[marker])
            at = pos + len(marker)
        self.literals.append(text[at:])

    def fill(self, value: Callable[[str], str]) -> str:
        """The text with each open value ``value(name)``."""
        out = [self.literals[0]]
        for name, literal in zip(self.names, self.literals[1:], strict=True):
            out.append(value(name))
            out.append(literal)
        return "".join(out)


# The texts standing for the open scalar values in a skeleton, by text kind: checksums are
# written raw, the data string and the CPU default set as strings (escaped for ``_QUOTED``).
_SCALAR_SLOTS = {
    _JSON: {
        _CHECKSUM: "Checksum",
        _DATA_CHECKSUM: "DataChecksum",
        marshal(_DATA, STRING_T): "Data",
        marshal(_DEFAULT_SET, STRING_T): "DefaultCPUSet",
    },
    _QUOTED: {_quoted(marshal(_DEFAULT_SET, STRING_T)): "DefaultCPUSet"},
    _SPEW: {_DEFAULT_SET: "DefaultCPUSet"},
}


def _template(text: str, go: Mapping[str, Any], maps: list[_KeptMap], kind: int) -> _Template:
    """The template of ``text``, a skeleton of ``kind`` encoded from ``go``: open where
    ``go`` holds a map's marker item or a scalar's marker."""
    slots = dict(_SCALAR_SLOTS[kind])
    for m in maps:
        value = go.get(m.field)
        if value and m.marker in value:
            slots[m.marker_text(value[m.marker], kind)] = m.field
    return _Template(text, slots)


@dataclasses.dataclass(frozen=True, slots=True)
class _Format:
    """The templates of one format version for one skeleton: the file, the dump its struct
    checksum hashes, and for the formats with ``data`` that JSON, as such and as the file's
    string holds it."""

    file: _Template
    spew: _Template
    data: _Template | None = None
    quoted: _Template | None = None

    @classmethod
    def single(cls, obj: dict[str, Any], t: GoType, header: str, maps: list[_KeptMap]) -> _Format:
        """A format with one struct checksum (CPU V2/V3, memory V1/V2)."""
        obj["Checksum"] = 0
        spew = _template(sdump_for_hash(obj, t, header), obj, maps, _SPEW)
        obj["Checksum"] = _CHECKSUM
        return cls(_template(marshal(obj, t), obj, maps, _JSON), spew)

    @classmethod
    def with_data(
        cls,
        inline: dict[str, Any],
        data_value: dict[str, Any],
        types: tuple[GoType, GoType, GoType],
        header: str,
        maps: list[_KeptMap],
    ) -> _Format:
        """A format with an inline part (its struct checksum hashed as the older version),
        ``data`` and ``dataChecksum`` (CPU V4, memory V3); ``types``: the hashed, data and
        file types."""
        hashed_t, data_t, file_t = types
        data = marshal(data_value, data_t)
        inline["Checksum"] = 0
        spew = _template(sdump_for_hash(inline, hashed_t, header), inline, maps, _SPEW)
        inline.update(Checksum=_CHECKSUM, DataChecksum=_DATA_CHECKSUM, Data=_DATA)
        return cls(
            _template(marshal(inline, file_t), inline, maps, _JSON),
            spew,
            _template(data, data_value, maps, _JSON),
            _template(_quoted(data), data_value, maps, _QUOTED),
        )

    def write(self, maps: list[_KeptMap], default_set: str = "") -> str:
        """The file, with the maps' current items and ``default_set`` (CPU)."""
        fields = {m.field: m for m in maps}
        default = marshal(default_set, STRING_T)
        scalars: dict[str, str] = {"DefaultCPUSet": default}

        def json(name: str) -> str:
            m = fields.get(name)
            return scalars[name] if m is None else m.run(_JSON)

        def quoted(name: str) -> str:
            m = fields.get(name)
            return _quoted(default) if m is None else m.run(_QUOTED)

        def spew(name: str) -> str:
            m = fields.get(name)
            return default_set if m is None else m.run(_SPEW)

        scalars["Checksum"] = str(text_checksum(self.spew.fill(spew)))
        if self.data is not None and self.quoted is not None:
            data = self.data.fill(json)
            scalars["DataChecksum"] = str(string_checksum(data))
            scalars["Data"] = '"' + self.quoted.fill(quoted) + '"'
        return self.file.fill(json)


def _field_t(t: GoType, name: str) -> GoType:
    return next(f.type for f in t.fields if f.go_name == name)


class CheckpointWriter:
    """Writes one node's ``cpu_manager_state`` and ``memory_manager_state`` again and again,
    keeping the encoded items of its pods and NUMA nodes in between (see the module
    docstring). Not thread-safe."""

    def __init__(self) -> None:
        self._cpu = [
            _KeptMap("Entries", _ENTRIES, _field_t(CPU_V3_T, "Entries")),
            _KeptMap("PodEntries", _POD_ENTRIES, _field_t(CPU_V3_T, "PodEntries")),
        ]
        self._memory = [
            _KeptMap("Entries", _ENTRIES, _field_t(MEMORY_V2_T, "Entries")),
            _KeptMap("PodEntries", _POD_ENTRIES, _field_t(MEMORY_V2_T, "PodEntries")),
        ]
        self._machine = _KeptMap(
            "MachineState", _MACHINE_STATE, _field_t(MEMORY_V2_T, "MachineState")
        )
        # By manager, version, policy and which maps are there (``_presence``).
        self._formats: dict[tuple[Any, ...], _Format] = {}
        self._last: dict[str, tuple[Any, str]] = {}  # by manager: what was written, its text

    def cpu(self, state: CPUCheckpointState, version: str | int) -> str:
        """``write_cpu_checkpoint(state, version)``."""
        version = normalise_version(version)
        if version == "V1" or state.container_entries or "\x00" in state.policy_name:
            return write_cpu_checkpoint(state, version)
        entries, pods = self._cpu
        policy = state.policy_name
        entries.refresh(
            state.entries,
            lambda changed: cpu_go_value(CPUCheckpointState(policy, CPUSet(), changed), "V3")[
                "Entries"
            ],
        )
        pods.refresh(
            state.pod_entries or {},
            lambda changed: cpu_go_value(CPUCheckpointState(policy, CPUSet(), {}, changed), "V3")[
                "PodEntries"
            ],
        )
        key = ("cpu", version, policy, bool(state.entries), _presence(state.pod_entries))
        return self._write(
            key, lambda: self._cpu_format(state, version), str(state.default_cpu_set)
        )

    def _write(
        self, key: tuple[Any, ...], make: Callable[[], _Format], default_set: str = ""
    ) -> str:
        """The file of the format ``key`` (made by ``make`` the first time) with the current
        items of its manager's maps: the last one again when nothing changed since (a pod
        that holds no exclusive CPUs or memory changes neither file)."""
        manager = key[0]
        maps = self._cpu if manager == "cpu" else [*self._memory, self._machine]
        signature = (key, default_set, [m.generation for m in maps])
        last = self._last.get(manager)
        if last is not None and last[0] == signature:
            return last[1]
        fmt = self._formats.get(key)
        if fmt is None:
            fmt = self._formats[key] = make()
        text = fmt.write(maps, default_set)
        self._last[manager] = (signature, text)
        return text

    def _cpu_format(self, state: CPUCheckpointState, version: str) -> _Format:
        skeleton = CPUCheckpointState(
            state.policy_name,
            CPUSet(),
            {_ENTRIES: {}} if state.entries else {},
            {_POD_ENTRIES: CPUSet()} if state.pod_entries else state.pod_entries,
        )
        if version in ("V2", "V3"):
            t = CPU_V2_T if version == "V2" else CPU_V3_T
            return _Format.single(_cpu_go(skeleton, version), t, CPU_HEADER, self._cpu)
        types = (CPU_V2_T, CPU_DATA_T, CPU_V4_T)
        data = cpu_data_value(skeleton)
        data["DefaultCPUSet"] = _DEFAULT_SET
        return _Format.with_data(_cpu_go(skeleton, "V2"), data, types, CPU_HEADER, self._cpu)

    def memory(self, state: MemoryCheckpointState, version: str | int) -> str:
        """``write_memory_checkpoint(state, version)``."""
        version = normalise_version(version, MEMORY_VERSIONS)
        if "\x00" in state.policy_name:
            return write_memory_checkpoint(state, version)
        entries, pods = self._memory
        policy = state.policy_name
        entries.refresh(
            state.entries,
            lambda changed: memory_go_value(MemoryCheckpointState(policy, {}, changed), "V2")[
                "Entries"
            ],
        )
        pods.refresh(
            state.pod_entries or {},
            lambda changed: memory_go_value(MemoryCheckpointState(policy, {}, {}, changed), "V2")[
                "PodEntries"
            ],
        )
        self._machine.refresh(state.machine_state, machine_state_to_go)
        shape = (bool(state.machine_state), bool(state.entries), _presence(state.pod_entries))
        key = ("memory", version, policy, *shape)
        return self._write(key, lambda: self._memory_format(state, version))

    def _memory_format(self, state: MemoryCheckpointState, version: str) -> _Format:
        machine: Mapping[Any, NUMANodeState] = {_MACHINE_STATE: NUMANodeState()}
        skeleton = MemoryCheckpointState(
            state.policy_name,
            machine if state.machine_state else {},
            {_ENTRIES: {}} if state.entries else {},
            {_POD_ENTRIES: ()} if state.pod_entries else state.pod_entries,
        )
        maps = [*self._memory, self._machine]
        if version in ("V1", "V2"):
            t = MEMORY_V1_T if version == "V1" else MEMORY_V2_T
            return _Format.single(memory_go_value(skeleton, version), t, MEMORY_HEADER, maps)
        types = (MEMORY_V1_T, MEMORY_DATA_T, MEMORY_V3_T)
        inline = memory_go_value(skeleton, "V1")
        return _Format.with_data(inline, memory_data_value(skeleton), types, MEMORY_HEADER, maps)


def _presence(entries: Mapping[str, Any] | None) -> int:
    """Whether pod entries are absent (0), empty (1) or there (2): what a skeleton shows."""
    return 0 if entries is None else 1 if not entries else 2


def _cpu_go(skeleton: CPUCheckpointState, version: str) -> dict[str, Any]:
    """The Go value of a CPU skeleton, its default set a marker."""
    go = cpu_go_value(skeleton, version)
    go["DefaultCPUSet"] = _DEFAULT_SET
    return go

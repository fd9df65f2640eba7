"""A state file's format versions (follows pkg/kubelet/cm/cpumanager/state/checkpoint.go and
pkg/kubelet/cm/memorymanager/state/checkpoint.go): the Go struct of each version and of the
1.37 ``data``, the value a kubelet's ``newXxxCheckpointVn`` constructor returns, decoding a
parsed file into such a value, and the struct checksum algorithms the conformance cases name.

``cpu`` and ``memory`` each describe their manager's versions with one ``FormatVersions``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.domain.checkpoint.checksum import struct_checksum
from app.domain.checkpoint.errors import CheckpointInputError
from app.domain.checkpoint.gojson_decode import unmarshal_new
from app.domain.checkpoint.gojson_scan import TreeMemo
from app.domain.checkpoint.gotypes import Field, GoType, constructed, struct_type

#: A version's struct type, given the struct name a release uses in type errors (default: the
#: name the struct has in the newest release).
StructFactory = Callable[..., GoType]


def struct_factory(default_name: str, *fields: Field) -> StructFactory:
    """The factory of a version's struct: one ``GoType`` per struct name."""

    @functools.cache
    def named(name: str) -> GoType:
        return struct_type(name, *fields)

    return lambda name=None: named(name or default_name)


def fixed(t: GoType) -> StructFactory:
    """The factory of a struct whose name no release changes."""
    return lambda name=None: t


#: Struct checksums kept per parsed file: detection, the checksum report and each release's
#: reader hash the same decoded value under the same header name (about four times a file).
_sums = TreeMemo()


@dataclass(frozen=True, slots=True)
class FormatVersions:
    """One manager's format versions: ``structs`` by version (``data`` included),
    ``data_version`` the one that carries ``data`` and ``dataChecksum``, ``algorithms`` the
    struct checksums by conformance name (version, header name); ``what`` names the manager
    in the kubelet's error texts."""

    file_name: str
    what: str
    structs: Mapping[str, StructFactory]
    data_version: str
    algorithms: Mapping[str, tuple[str, str]]

    def struct(self, version: str, name: str | None = None) -> GoType:
        make = self.structs.get(version)
        if make is None:
            raise CheckpointInputError(f"unknown {self.file_name} version {version!r}")
        return make(name) if name else make()

    @property
    def data_t(self) -> GoType:
        return self.struct("data")

    def new(self, version: str) -> dict[str, Any]:
        """The Go value the kubelet's constructor returns (maps start empty, not nil)."""
        return constructed(self.struct(version))

    def decode(
        self, tree: Any, version: str, name: str | None = None
    ) -> tuple[dict[str, Any], Any]:
        """Decode a parsed file into a fresh object of ``version``; ``(object, error or
        None)``. ``name`` is the Go struct name used in type-error texts (it differs between
        releases)."""
        return unmarshal_new(tree, self.struct(version, name), lambda: self.new(version))

    def tree_checksum(self, tree: Any, value: dict[str, Any], version: str, header: str) -> int:
        """The struct checksum under ``header`` of ``value``, which is ``tree`` (a parsed file)
        decoded as ``version`` without an error; kept per kept tree."""
        args = (self.file_name, version, header)
        known, kept = _sums.get(tree, *args)
        if known:
            assert isinstance(kept, int)
            return kept
        computed = struct_checksum(value, self.struct(version), header)
        _sums.put(tree, computed, *args)
        return computed

    def algorithm_checksum(self, value: dict[str, Any], algorithm: str) -> int:
        """The checksum ``algorithm`` computes for a decoded Go value."""
        version, header = self.algorithms[algorithm]
        return struct_checksum(value, self.struct(version), header)

"""Kubelet state files: ``cpu_manager_state`` and ``memory_manager_state`` (spec
``checkpoints.md``).

Byte-exact codecs and checksums for every format version (CPU V1-V4 and the reverted V4
layout, memory V1-V3), models of what each kubelet release does with a file, compatibility
verdicts, conversions and consistency checks. Pure Python, standard library only.

Public API (stable; everything else is internal):

Normalised state (the conformance form; ``to_dict()`` / ``from_dict()`` are the bridge to the
CPU and memory managers' own state classes)::

    CPUCheckpointState(policy_name, default_cpu_set, entries, pod_entries=None,
                       container_entries=None)
    MemoryCheckpointState(policy_name, machine_state, entries, pod_entries=None)
    NUMANodeState, MemoryTable, Block

Writing (byte-exact, what the kubelet writes; no trailing newline)::

    write_cpu_checkpoint(state, "V1" | "V2" | "V3" | "V4") -> str
    write_memory_checkpoint(state, "V1" | "V2" | "V3") -> str

Reading as a given kubelet release would::

    Reader(release, gate=False, policy=None)    # release "1.17", "1.29", "1.36", "1.37"...
    TARGETS                                     # <=1.17, 1.18-1.35, 1.36/1.37 gate off/on
    load_checkpoint(content, manager, reader, initial_containers=None) -> LoadResult
    load_cpu_checkpoint(...), load_memory_checkpoint(...)

    LoadResult.accepted / .state / .error (restoreState's text) / .message (start-up failure)

Analysis::

    detect_version(content, manager=None) -> VersionInfo (manager, version, label, family)
    compute_checksum(content, algorithm) -> int      # ALGORITHMS
    inspect(content, manager=None, configured_policy=None) -> InspectionReport (.to_dict())
    convert(content, to_version=None, target_release=None, force=False) -> ConversionResult
    check_consistency(cpu=None, memory=None, topology=None, reserved_cpus=None) -> [Issue]

Errors: ``CheckpointError`` and subclasses (``CheckpointInputError`` for bad arguments,
``CheckpointTooLargeError`` above 16 MiB, ``CheckpointFormatError`` for text that is not a
checkpoint, ``CheckpointStateError`` for a malformed state, ``ConversionError``). A kubelet
refusing a file is not an exception: it is ``LoadResult.error`` / a ``will-fail`` verdict.
``content`` is always the file's bytes or its text.
"""

from __future__ import annotations

from app.domain.checkpoint.consistency import check_consistency
from app.domain.checkpoint.convert import ConversionResult, convert, version_for
from app.domain.checkpoint.cpu import CPU_FILE_NAME, CPU_VERSIONS, write_cpu_checkpoint
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import ALGORITHMS, VersionInfo, compute_checksum, detect_version
from app.domain.checkpoint.errors import (
    MAX_CHECKPOINT_BYTES,
    CheckpointError,
    CheckpointFormatError,
    CheckpointInputError,
    CheckpointStateError,
    CheckpointTooLargeError,
    ConversionError,
)
from app.domain.checkpoint.findings import ChecksumReport, Issue
from app.domain.checkpoint.loading import Attempt, LoadResult
from app.domain.checkpoint.memory import MEMORY_FILE_NAME, MEMORY_VERSIONS, write_memory_checkpoint
from app.domain.checkpoint.memory_state import (
    Block,
    MemoryCheckpointState,
    MemoryTable,
    NUMANodeState,
)
from app.domain.checkpoint.read_cpu import load_cpu_checkpoint
from app.domain.checkpoint.read_memory import load_memory_checkpoint
from app.domain.checkpoint.reader import TARGETS, Reader, parse_reader
from app.domain.checkpoint.readers import load_checkpoint
from app.domain.checkpoint.target_verdict import (
    COMPATIBLE,
    COMPATIBLE_WITH_LOSS,
    POLICY_MISMATCH,
    VERDICTS,
    WILL_FAIL,
    TargetVerdict,
)
from app.domain.checkpoint.verdict import InspectionReport, inspect

__all__ = [
    "ALGORITHMS",
    "COMPATIBLE",
    "COMPATIBLE_WITH_LOSS",
    "CPU_FILE_NAME",
    "CPU_VERSIONS",
    "MAX_CHECKPOINT_BYTES",
    "MEMORY_FILE_NAME",
    "MEMORY_VERSIONS",
    "POLICY_MISMATCH",
    "TARGETS",
    "VERDICTS",
    "WILL_FAIL",
    "Attempt",
    "Block",
    "CPUCheckpointState",
    "CheckpointError",
    "CheckpointFormatError",
    "CheckpointInputError",
    "CheckpointStateError",
    "CheckpointTooLargeError",
    "ChecksumReport",
    "ConversionError",
    "ConversionResult",
    "InspectionReport",
    "Issue",
    "LoadResult",
    "MemoryCheckpointState",
    "MemoryTable",
    "NUMANodeState",
    "Reader",
    "TargetVerdict",
    "VersionInfo",
    "check_consistency",
    "compute_checksum",
    "convert",
    "detect_version",
    "inspect",
    "load_checkpoint",
    "load_cpu_checkpoint",
    "load_memory_checkpoint",
    "parse_reader",
    "version_for",
    "write_cpu_checkpoint",
    "write_memory_checkpoint",
]

"""Kubelet state files: ``cpu_manager_state`` and ``memory_manager_state``.

Byte-exact codecs and checksums for every format version (CPU V1-V4 and the reverted V4
layout, memory V1-V3), models of what each kubelet release does with a file, compatibility
verdicts, conversions and consistency checks. Pure Python, standard library only.
Spec: ``checkpoints.md``.
"""

from __future__ import annotations

from app.domain.checkpoint.cpu import (
    CPU_FILE_NAME,
    CPU_VERSIONS,
    CPUCheckpointState,
    write_cpu_checkpoint,
)
from app.domain.checkpoint.detect import (
    ALGORITHMS,
    VersionInfo,
    compute_checksum,
    detect_version,
)
from app.domain.checkpoint.errors import (
    MAX_CHECKPOINT_BYTES,
    CheckpointError,
    CheckpointFormatError,
    CheckpointInputError,
    CheckpointStateError,
    CheckpointTooLargeError,
    ConversionError,
)
from app.domain.checkpoint.memory import (
    MEMORY_FILE_NAME,
    MEMORY_VERSIONS,
    Block,
    MemoryCheckpointState,
    MemoryTable,
    NUMANodeState,
    write_memory_checkpoint,
)
from app.domain.checkpoint.readers import (
    TARGETS,
    Attempt,
    LoadResult,
    Reader,
    load_checkpoint,
    load_cpu_checkpoint,
    load_memory_checkpoint,
    parse_reader,
)

__all__ = [
    "ALGORITHMS",
    "CPU_FILE_NAME",
    "CPU_VERSIONS",
    "MAX_CHECKPOINT_BYTES",
    "MEMORY_FILE_NAME",
    "MEMORY_VERSIONS",
    "TARGETS",
    "Attempt",
    "Block",
    "CPUCheckpointState",
    "CheckpointError",
    "CheckpointFormatError",
    "CheckpointInputError",
    "CheckpointStateError",
    "CheckpointTooLargeError",
    "ConversionError",
    "LoadResult",
    "MemoryCheckpointState",
    "MemoryTable",
    "NUMANodeState",
    "Reader",
    "VersionInfo",
    "compute_checksum",
    "detect_version",
    "load_checkpoint",
    "load_cpu_checkpoint",
    "load_memory_checkpoint",
    "parse_reader",
    "write_cpu_checkpoint",
    "write_memory_checkpoint",
]

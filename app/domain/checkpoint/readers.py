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

This module is the entry point (``load_checkpoint``); the procedures live in ``read_cpu`` and
``read_memory``, the release model in ``reader``, results and the shared steps in ``loading``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.domain.checkpoint.detect import CPU, normalise_manager
from app.domain.checkpoint.loading import DEFAULT_STATE_DIR, LoadResult
from app.domain.checkpoint.read_cpu import load_cpu_checkpoint
from app.domain.checkpoint.read_memory import load_memory_checkpoint
from app.domain.checkpoint.reader import Reader


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

"""The normalised ``cpu_manager_state``: what every format version maps to, and its
conformance form (follows the fields of pkg/kubelet/cm/cpumanager/state/checkpoint.go and
state.go, v1.17 to v1.37; spec ``checkpoints.md`` §5 and the conformance README §4.2).

``CPUCheckpointState.from_dict`` validates a state given by a user or a test case and names the
bad field (``CheckpointStateError``); cpusets are parsed as ``cpuset.Parse`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.domain.checkpoint.errors import (
    CheckpointStateError,
    check_text,
    object_field,
    pod_entries_field,
)
from app.domain.checkpoint.gocpuset import GoCPUSetError, parse_cpuset
from app.domain.cpuset import CPUSet


@dataclass(frozen=True, slots=True)
class CPUCheckpointState:
    """What a ``cpu_manager_state`` holds, in the form every version maps to.

    * ``entries``: pod UID -> container name -> CPU set (V2 and later, or V1 after migration);
    * ``pod_entries``: pod UID -> the pod's CPU set (KEP-5526), ``None`` when absent (file
      version without them, or a reader that drops them);
    * ``container_entries``: V1's container ID -> CPU set, only for V1 content that has not
      been migrated (a <= 1.17 reader, or a state to be written as V1).

    Treat the mappings as read-only.
    """

    policy_name: str
    default_cpu_set: CPUSet = field(default_factory=CPUSet)
    entries: Mapping[str, Mapping[str, CPUSet]] = field(default_factory=dict)
    pod_entries: Mapping[str, CPUSet] | None = None
    container_entries: Mapping[str, CPUSet] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The conformance normalised form (README §4.2; V1 entries keyed by container ID)."""
        out: dict[str, Any] = {
            "policyName": self.policy_name,
            "defaultCpuSet": str(self.default_cpu_set),
        }
        if self.container_entries is not None and not self.entries:
            out["entries"] = {cid: str(c) for cid, c in sorted(self.container_entries.items())}
        else:
            out["entries"] = {
                pod: {name: str(c) for name, c in sorted(containers.items())}
                for pod, containers in sorted(self.entries.items())
            }
        if self.pod_entries is not None:
            out["podEntries"] = {pod: str(c) for pod, c in sorted(self.pod_entries.items())}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CPUCheckpointState:
        """Build from the normalised form; ``entries`` values that are strings are V1 entries
        (container ID -> cpuset). Raises ``CheckpointStateError`` naming the bad field."""
        if not isinstance(d, Mapping):
            raise CheckpointStateError("a cpu_manager_state must be an object")
        policy = d.get("policyName", "")
        if not isinstance(policy, str):
            raise CheckpointStateError("policyName must be a string")
        check_text(policy, "policyName")
        default = _state_cpuset(d.get("defaultCpuSet", ""), "defaultCpuSet")
        entries, v1 = _entries(object_field(d, "entries"))
        # {"cpuSet": "..."} as written in files
        pod_entries = pod_entries_field(d, lambda v: v.get("cpuSet", ""), _state_cpuset)
        return cls(
            policy_name=policy,
            default_cpu_set=default,
            entries=entries,
            pod_entries=pod_entries,
            container_entries=v1 if v1 else None,
        )

    def all_pod_uids(self) -> list[str]:
        return sorted(set(self.entries) | set(self.pod_entries or {}))


def _entries(
    raw: Mapping[str, Any],
) -> tuple[dict[str, dict[str, CPUSet]], dict[str, CPUSet]]:
    """``entries`` in the V2 form (pod -> container -> cpuset) or the V1 form (container ID ->
    cpuset), never both."""
    entries: dict[str, dict[str, CPUSet]] = {}
    v1: dict[str, CPUSet] = {}
    for key, value in raw.items():
        check_text(key, "entries key")
        if isinstance(value, str):
            v1[key] = _state_cpuset(value, f"entries[{key!r}]")
        elif isinstance(value, Mapping):
            inner: dict[str, CPUSet] = {}
            for name, text in value.items():
                check_text(name, f"entries[{key!r}] key")
                inner[name] = _state_cpuset(text, f"entries[{key!r}][{name!r}]")
            entries[key] = inner
        else:
            raise CheckpointStateError(
                f"entries[{key!r}] must be a cpuset (V1) or an object of cpusets"
            )
    if v1 and entries:
        raise CheckpointStateError(
            "entries mixes V1 (container ID -> cpuset) and V2 (pod -> container) forms"
        )
    return entries, v1


def _state_cpuset(value: Any, what: str) -> CPUSet:
    if isinstance(value, CPUSet):
        return value
    if not isinstance(value, str):
        raise CheckpointStateError(f"{what} must be a cpuset string, got {type(value).__name__}")
    try:
        return parse_cpuset(value)
    except GoCPUSetError as exc:
        raise CheckpointStateError(f"{what}: invalid cpuset {value!r}: {exc}") from None

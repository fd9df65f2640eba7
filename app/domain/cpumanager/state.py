"""CPU manager state (follows pkg/kubelet/cm/cpumanager/state/state.go and state_mem.go, v1.37).

``CPUManagerState`` is the in-memory state the static policy works on:

* ``default_cpuset``: the node shared pool (``defaultCPUSet``);
* ``assignments[pod_uid][container_name]``: container CPU sets (``ContainerCPUAssignments``);
* ``pod_entries[pod_uid]``: pod-level CPU sets, the KEP-5526 bubble (``PodCPUAssignments``).

It is a mutable container: policies change it through its writers only. ``copy()`` is cheap
(CPU sets are immutable; the pods' container maps are copied on write), so a caller can admit
a pod on a copy and keep it only on success. Reading and
writing state files is the checkpoint package's job; ``to_dict``/``from_dict`` use the
normalised shape of the conformance README (``defaultCpuSet``, ``entries``, ``podEntries``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from app.domain.cpuset import CPUSet, CPUSetError
from app.domain.pod.model import drop_container_entry

ContainerCPUAssignments = dict[str, dict[str, CPUSet]]
PodCPUAssignments = dict[str, CPUSet]


class CPUStateFormatError(ValueError):
    """A state description could not be read; the message names the offending field."""


class CPUManagerState:
    """``stateMemory``: default set, container assignments and pod entries."""

    __slots__ = ("_assigned", "_owned", "assignments", "default_cpuset", "pod_entries")

    def __init__(
        self,
        default_cpuset: CPUSet | None = None,
        assignments: Mapping[str, Mapping[str, CPUSet]] | None = None,
        pod_entries: Mapping[str, CPUSet] | None = None,
    ) -> None:
        self.default_cpuset: CPUSet = default_cpuset if default_cpuset is not None else CPUSet()
        self.pod_entries: PodCPUAssignments = dict(pod_entries or {})
        self._take_assignments(assignments or {})

    def _take_assignments(self, assignments: Mapping[str, Mapping[str, CPUSet]]) -> None:
        self.assignments: ContainerCPUAssignments = {
            pod: dict(containers) for pod, containers in assignments.items()
        }
        # Copy-on-write: the pods whose container maps this state alone holds; ``copy``
        # shares the others, so a writer copies a pod's map before changing it.
        self._owned: set[str] = set(self.assignments)
        # The union of every assignment as a mask, or ``None`` until asked again.
        self._assigned: int | None = None

    def _own(self, pod_uid: str) -> dict[str, CPUSet]:
        """The container map of ``pod_uid`` that this state may change (made if missing)."""
        containers = self.assignments.get(pod_uid)
        if containers is None or pod_uid not in self._owned:
            containers = self.assignments[pod_uid] = dict(containers or {})
            self._owned.add(pod_uid)
        return containers

    # -- reader ---------------------------------------------------------------------
    def get_cpu_set(self, pod_uid: str, container_name: str) -> CPUSet | None:
        """``GetCPUSet``: the container's assignment, or ``None`` (Go's ``ok == false``)."""
        return self.assignments.get(pod_uid, {}).get(container_name)

    def get_default_cpu_set(self) -> CPUSet:
        return self.default_cpuset

    def get_cpu_set_or_default(self, pod_uid: str, container_name: str) -> CPUSet:
        cset = self.get_cpu_set(pod_uid, container_name)
        return self.default_cpuset if cset is None else cset

    def get_cpu_assignments(self) -> ContainerCPUAssignments:
        """A copy of all container assignments (``GetCPUAssignments`` clones too)."""
        return {pod: dict(containers) for pod, containers in self.assignments.items()}

    def get_pod_cpu_set(self, pod_uid: str) -> CPUSet | None:
        """``GetPodCPUSet``: the pod-level set, or ``None`` when the pod has no entry."""
        return self.pod_entries.get(pod_uid)

    def get_pod_cpu_assignments(self) -> PodCPUAssignments:
        return dict(self.pod_entries)

    def iter_assignments(self) -> Iterator[tuple[str, str, CPUSet]]:
        """``(pod_uid, container_name, cpuset)`` in sorted order."""
        for pod in sorted(self.assignments):
            containers = self.assignments[pod]
            for name in sorted(containers):
                yield pod, name, containers[name]

    # -- writer ---------------------------------------------------------------------
    def set_cpu_set(self, pod_uid: str, container_name: str, cset: CPUSet) -> None:
        containers = self._own(pod_uid)
        replaced = containers.get(container_name)
        containers[container_name] = cset
        if self._assigned is not None:
            self._assigned = None if replaced is not None else self._assigned | cset.mask

    def set_default_cpu_set(self, cset: CPUSet) -> None:
        self.default_cpuset = cset

    def set_cpu_assignments(self, assignments: Mapping[str, Mapping[str, CPUSet]]) -> None:
        self._take_assignments(assignments)

    def delete(self, pod_uid: str, container_name: str) -> None:
        """``Delete``: drop one container; an emptied pod disappears from the map."""
        if pod_uid in self.assignments:
            self._own(pod_uid)
            drop_container_entry(self.assignments, pod_uid, container_name)
            self._assigned = None

    def clear_state(self) -> None:
        self.default_cpuset = CPUSet()
        self._take_assignments({})
        self.pod_entries = {}

    def set_pod_cpu_set(self, pod_uid: str, cset: CPUSet) -> None:
        self.pod_entries[pod_uid] = cset

    def set_pod_cpu_assignments(self, entries: Mapping[str, CPUSet]) -> None:
        self.pod_entries = dict(entries)

    def delete_pod(self, pod_uid: str) -> None:
        """``DeletePod``: drop the pod-level entry only (container assignments stay)."""
        self.pod_entries.pop(pod_uid, None)

    # -- whole-state helpers ----------------------------------------------------------
    def copy(self) -> CPUManagerState:
        """An independent state equal to this one, in time independent of the number of
        pods: the two share the pods' container maps until either writes to one."""
        twin = CPUManagerState.__new__(CPUManagerState)
        twin.default_cpuset = self.default_cpuset
        twin.assignments = dict(self.assignments)
        twin.pod_entries = dict(self.pod_entries)
        twin._owned = set()
        twin._assigned = self._assigned
        self._owned = set()
        return twin

    def restore(self, other: CPUManagerState) -> None:
        """Make this state equal to ``other`` (used to roll back a failed admission)."""
        self.default_cpuset = other.default_cpuset
        self._take_assignments(other.assignments)
        self.pod_entries = dict(other.pod_entries)

    def assigned_cpus(self) -> CPUSet:
        """Union of every container assignment."""
        if self._assigned is None:
            mask = 0
            for containers in self.assignments.values():
                for cset in containers.values():
                    mask |= cset.mask
            self._assigned = mask
        return CPUSet.from_mask(self._assigned)

    def pod_entry_cpus(self) -> CPUSet:
        mask = 0
        for cset in self.pod_entries.values():
            mask |= cset.mask
        return CPUSet.from_mask(mask)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CPUManagerState):
            return NotImplemented
        return (
            self.default_cpuset == other.default_cpuset
            and self.assignments == other.assignments
            and self.pod_entries == other.pod_entries
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"CPUManagerState(default={str(self.default_cpuset)!r}, "
            f"assignments={self.to_dict()['entries']!r}, "
            f"pod_entries={self.to_dict()['podEntries']!r})"
        )

    # -- normalised form ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "defaultCpuSet": str(self.default_cpuset),
            "entries": {
                pod: {name: str(cset) for name, cset in sorted(containers.items())}
                for pod, containers in sorted(self.assignments.items())
            },
            "podEntries": {pod: str(cset) for pod, cset in sorted(self.pod_entries.items())},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CPUManagerState:
        """Read ``{"defaultCpuSet", "entries", "podEntries"}`` (missing parts are empty)."""
        if not isinstance(d, Mapping):
            raise CPUStateFormatError("a CPU manager state must be an object")
        default = _cpuset(d.get("defaultCpuSet", ""), "defaultCpuSet")
        entries = d.get("entries")
        entries = {} if entries is None else entries
        if not isinstance(entries, Mapping):
            raise CPUStateFormatError("entries must map pod UIDs to containers")
        assignments: ContainerCPUAssignments = {}
        for pod, containers in entries.items():
            if not isinstance(containers, Mapping):
                raise CPUStateFormatError(f"entries.{pod} must map container names to cpusets")
            assignments[str(pod)] = {
                str(name): _cpuset(text, f"entries.{pod}.{name}")
                for name, text in containers.items()
            }
        pod_entries_raw = d.get("podEntries")
        pod_entries_raw = {} if pod_entries_raw is None else pod_entries_raw
        if not isinstance(pod_entries_raw, Mapping):
            raise CPUStateFormatError("podEntries must map pod UIDs to cpusets")
        pod_entries = {
            str(pod): _cpuset(text, f"podEntries.{pod}") for pod, text in pod_entries_raw.items()
        }
        return cls(default, assignments, pod_entries)


def _cpuset(value: Any, field: str) -> CPUSet:
    if isinstance(value, CPUSet):
        return value
    if value is None:
        return CPUSet()
    if not isinstance(value, str):
        raise CPUStateFormatError(f"{field}: a cpuset must be given as text, got {value!r}")
    try:
        return CPUSet.parse(value)
    except CPUSetError as exc:
        raise CPUStateFormatError(f"{field}: {exc}") from None

"""What one kubelet release does with a state file: its verdict (spec ``checkpoints.md`` §8,
``users.md`` §5.3), from the release's ``LoadResult`` (``readers``) and the file's content.

Verdicts:

* ``compatible``: the release starts with the file's content;
* ``compatible-with-loss``: it starts, but without something the file holds: pod-level entries
  dropped by a gate-on reader (1.36 reading a 1.37 file), pod entries a gate-off reader ignores
  while the pod's resources are not covered by its containers, or an inline part that differs
  from ``data``;
* ``will-fail``: the kubelet refuses to start; ``error`` is its text: the reader refuses the
  file, or the policy's ``Start`` refuses what the reader read (``startup.start_error``: the
  file is read but the kubelet does not start, e.g. 1.36 on a 1.37 file with pod-level pods);
* ``policy-mismatch``: the file reads, but its policy differs from the configured one.

The inspector (``verdict``) and the converter (``convert``) both judge with ``verdict_for_result``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain import releases
from app.domain.checkpoint.content import State
from app.domain.checkpoint.cpu_state import CPUCheckpointState
from app.domain.checkpoint.detect import CPU, MEMORY, VersionInfo
from app.domain.checkpoint.loading import CORRUPT, LoadResult
from app.domain.checkpoint.memory_state import Block, MemoryCheckpointState
from app.domain.checkpoint.reader import Reader
from app.domain.checkpoint.startup import SAFELY_RESTORES, start_error
from app.domain.cpuset import CPUSet
from app.domain.units import format_bytes

COMPATIBLE = "compatible"
COMPATIBLE_WITH_LOSS = "compatible-with-loss"
WILL_FAIL = "will-fail"
POLICY_MISMATCH = "policy-mismatch"
VERDICTS = (COMPATIBLE, COMPATIBLE_WITH_LOSS, WILL_FAIL, POLICY_MISMATCH)


@dataclass(frozen=True, slots=True)
class TargetVerdict:
    """What one kubelet release does with the file."""

    target: str
    label: str
    release: str
    gate: bool
    verdict: str
    loaded_as: str | None = None
    lost: tuple[str, ...] = ()
    error: str | None = None
    message: str | None = None
    notes: tuple[str, ...] = ()
    why: str | None = None  # one line: why the kubelet refuses (``will-fail``/``policy-mismatch``)
    lost_pods: tuple[str, ...] = ()  # UIDs of the pods whose pod entries are in ``lost``
    #: ``lost`` with the pods named and sizes humanised (when the pods' names were given)
    lost_named: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "label": self.label,
            "release": self.release,
            "gate": self.gate,
            "verdict": self.verdict,
            "loadedAs": self.loaded_as,
            "lost": list(self.lost),
            "error": self.error,
            "message": self.message,
            "notes": list(self.notes),
            "why": self.why,
            "lostPods": list(self.lost_pods),
            "lostNamed": list(self.lost_named or self.lost),
        }


def _fmt_blocks(blocks: Sequence[Block], human: bool) -> str:
    return ", ".join(
        f"{b.type} {format_bytes(b.size) if human else f'{b.size} bytes'} on NUMA "
        f"{','.join(map(str, b.numa_affinity)) or '-'}"
        for b in blocks
    )


def describe_pod_entry(state: State, uid: str, names: Mapping[str, str] | None = None) -> str:
    """A pod entry as a loss: ``podEntries[UID] (cpuSet 4-7)``; with ``names`` (uid ->
    ``namespace/name``, the node's pods) the pod is named and sizes are humanised:
    ``podEntries of databases/db (memory 16 GiB on NUMA 0)``."""
    name = (names or {}).get(uid)
    who = f"podEntries of {name}" if name else f"podEntries[{uid}]"
    if isinstance(state, CPUCheckpointState):
        cset = (state.pod_entries or {}).get(uid, CPUSet())
        return f"{who} (cpuSet {str(cset) or 'empty'})"
    assert isinstance(state, MemoryCheckpointState)
    blocks = (state.pod_entries or {}).get(uid, ())
    return f"{who} ({_fmt_blocks(blocks, name is not None) or 'no blocks'})"


def uncovered_pod_entry(state: State, uid: str) -> str | None:
    """What of a pod entry no container entry of the pod accounts for (``None``: covered)."""
    if isinstance(state, CPUCheckpointState):
        pod = (state.pod_entries or {}).get(uid, CPUSet())
        held = CPUSet().union(*state.entries.get(uid, {}).values())
        rest = pod - held
        return f"CPUs {rest} of pod {uid}" if rest else None
    assert isinstance(state, MemoryCheckpointState)
    pod_totals: dict[str, int] = {}
    for b in (state.pod_entries or {}).get(uid, ()):
        pod_totals[b.type] = pod_totals.get(b.type, 0) + b.size
    held_bytes: dict[str, int] = {}
    for blocks in state.entries.get(uid, {}).values():
        for b in blocks:
            held_bytes[b.type] = held_bytes.get(b.type, 0) + b.size
    diff = [f"{t} {n} bytes" for t, n in sorted(pod_totals.items()) if held_bytes.get(t, 0) != n]
    return f"{', '.join(diff)} of pod {uid}" if diff else None


def state_differences(content: State, read: State) -> list[str]:
    out: list[str] = []
    if content.policy_name != read.policy_name:
        out.append(
            f"policyName: the file's data has {content.policy_name!r}, read {read.policy_name!r}"
        )
    if isinstance(content, CPUCheckpointState) and isinstance(read, CPUCheckpointState):
        if content.container_entries is not None:
            return out
        if content.default_cpu_set != read.default_cpu_set:
            out.append(
                f"defaultCpuSet: the file's data has {str(content.default_cpu_set)!r}, read "
                f"{str(read.default_cpu_set)!r}"
            )
        if dict(content.entries) != dict(read.entries):
            out.append("entries: the container entries read differ from the file's data")
    elif isinstance(content, MemoryCheckpointState) and isinstance(read, MemoryCheckpointState):
        if dict(content.machine_state) != dict(read.machine_state):
            out.append("machineState: the machine state read differs from the file's data")
        if dict(content.entries) != dict(read.entries):
            out.append("entries: the container entries read differ from the file's data")
    return out


def _version_notes(r: Reader, info: VersionInfo | None, synthetic: bool) -> list[str]:
    """What is uncertain or conditional about ``r`` reading a file of this version."""
    notes: list[str] = []
    if info is not None and info.manager == CPU and info.version == "V1":
        if r.line == releases.NEWEST_CHECKPOINT_LINE:
            notes.append(
                f"uncertain: whether {r.line} still falls back to V1 files is not confirmed "
                f"upstream; modelled on the {r.line} loader, whose oldest version is V2"
            )
        elif r.line != releases.OLDEST_CHECKPOINT_FAMILY and synthetic:
            notes.append(
                "V1 entries are migrated with the runtime's container list: every container ID "
                "must still exist on the node"
            )
    if info is not None and info.manager == MEMORY and r.line == releases.GATE_SINCE:
        notes.append(f"uncertain: whether {r.line} accepts a zero memory checksum (modelled: no)")
    return notes


def _dropped_pod_entries(
    content: State, dropped: list[str], gate: bool, notes: list[str]
) -> tuple[str, list[str], tuple[str, ...]]:
    """(verdict, lost, lost pod UIDs) for the file's pod entries the release does not read; a
    release with the gate off loses only budgets no container entry holds (noted in
    ``notes``)."""
    if gate:
        return (
            COMPATIBLE_WITH_LOSS,
            [describe_pod_entry(content, uid) for uid in dropped],
            tuple(dropped),
        )
    notes.append(
        "pod-level entries are ignored by this release (PodLevelResourceManagers off): "
        + ", ".join(dropped)
    )
    uncovered = [u for u in (uncovered_pod_entry(content, uid) for uid in dropped) if u]
    if not uncovered:
        return COMPATIBLE, [], ()
    notes.append("not held by any container entry: " + "; ".join(uncovered))
    return (
        COMPATIBLE_WITH_LOSS,
        [describe_pod_entry(content, uid) for uid in dropped],
        tuple(dropped),
    )


def verdict_for_result(
    result: LoadResult,
    content: State | None,
    info: VersionInfo | None,
    synthetic: bool,
    *,
    machine: State | None = None,
    names: Mapping[str, str] | None = None,
) -> TargetVerdict:
    """The verdict of ``result``'s release on a file holding ``content``; ``machine`` is the
    state whose CPUs and memory tables describe the machine (default: ``content``; a
    conversion passes the file it converted, whose pod entries the new version may drop);
    ``names`` (uid -> ``namespace/name``) gives ``lost_named`` (``lost`` stays the inspector's
    words, UIDs and bytes)."""
    r = result.reader
    notes = [*result.notes, *_version_notes(r, info, synthetic)]
    if not result.accepted:
        return _verdict(
            result,
            content,
            names,
            POLICY_MISMATCH if result.policy_mismatch else WILL_FAIL,
            error=result.error,
            message=result.message,
            notes=tuple(notes),
            why=_why_refused(result, content, info),
        )
    if result.ignored or result.state is None or content is None:
        return _verdict(result, content, names, COMPATIBLE, notes=tuple(notes))
    verdict, details = _verdict_on_read(r, result.state, content, machine or content, notes)
    return _verdict(result, content, names, verdict, **details)


def _verdict(
    result: LoadResult,
    content: State | None,
    names: Mapping[str, str] | None,
    verdict: str,
    **kw: Any,
) -> TargetVerdict:
    """The ``TargetVerdict`` of ``result``'s reader; lost pod entries also named by ``names``."""
    r = result.reader
    if names and kw.get("lost_pods") and content is not None:
        plain = {describe_pod_entry(content, u): u for u in kw["lost_pods"]}
        kw["lost_named"] = tuple(
            describe_pod_entry(content, plain[x], names) if x in plain else x
            for x in kw.get("lost", ())
        )
    return TargetVerdict(
        r.key, r.label, r.release, r.gate, verdict, loaded_as=result.loaded_as, **kw
    )


def _verdict_on_read(
    r: Reader, read: State, content: State, machine: State, notes: list[str]
) -> tuple[str, dict[str, Any]]:
    """The verdict on a file the release read: what it lost (pod entries it does not read,
    anything else that differs) and whether its policy's ``Start`` accepts what it read."""
    file_pods = content.pod_entries or {}
    kept = read.pod_entries or {}
    dropped = [uid for uid in sorted(file_pods) if uid not in kept]
    lost: list[str] = []
    lost_pods: tuple[str, ...] = ()
    verdict = COMPATIBLE
    if dropped:
        verdict, lost, lost_pods = _dropped_pod_entries(content, dropped, r.gate, notes)
    stale = sorted(set(kept) - set(file_pods))
    if stale:
        notes.append(
            "pod entries restored that the file's current content does not hold (left over "
            "from a failed newer-format attempt): " + ", ".join(stale)
        )
    differences = state_differences(content, read)
    if differences:
        verdict = COMPATIBLE_WITH_LOSS
        lost.extend(differences)
    failure = start_error(machine, read, r.gate)
    if failure is None:
        return verdict, {"lost": tuple(lost), "lost_pods": lost_pods, "notes": tuple(notes)}
    if dropped:
        notes.append(SAFELY_RESTORES)
    return WILL_FAIL, {
        "lost": tuple(lost),
        "lost_pods": lost_pods,
        "error": failure,
        "message": failure,
        "notes": tuple(notes),
        "why": _why_not_started(_name(r), read, bool(dropped), r.gate),
    }


def _name(r: Reader) -> str:
    """``1.35``, ``1.37 gate off``: the kubelet as a sentence names it."""
    return r.key.replace("-gate-", " gate ")


def _why_refused(result: LoadResult, content: State | None, info: VersionInfo | None) -> str:
    """One line: why the release's reader refuses the file."""
    r = result.reader
    name = _name(r)
    if result.policy_mismatch:
        if content is None:
            return "the configured policy differs from the file's"
        return (
            f"the file was written under policy {content.policy_name!r}; a kubelet configured "
            "with another policy refuses it"
        )
    version = f" {info.version}" if info is not None else ""
    if result.error == CORRUPT and content is not None and content.pod_entries:
        return f"{name} cannot read `podEntries`, so its checksum check of this{version} file fails"
    if result.error == CORRUPT:
        return f"the checksum {name} computes does not match the one stored in the file"
    return f"{name} cannot read this{version} file: {result.error}"


def _why_not_started(label: str, read: State, dropped: bool, gate: bool) -> str:
    """One line: why the policy's ``Start`` refuses what the reader read."""
    without = "without its pod entries" if dropped or (read.pod_entries and not gate) else "as is"
    if isinstance(read, CPUCheckpointState):
        return (
            f"{label} reads the file {without}, so validateState finds CPUs that no entry it "
            "keeps holds"
        )
    return (
        f"{label} reads the file {without}, so the machine state it recomputes from the "
        "container entries differs from the stored one"
    )

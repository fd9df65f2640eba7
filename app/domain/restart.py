"""A kubelet restart rehearsed on a node's state files: a kubelet of one release starts on the
files another (or the same) release wrote, and re-admits the node's pods.

What happens, in the kubelet's order (pkg/kubelet/cm/container_manager_linux.go ``Start``,
cpumanager/cpu_manager.go ``Start``/``Allocate``, memorymanager/memory_manager.go
``Start``/``Allocate``, pkg/kubelet/kubelet.go ``HandlePodAdditions``):

1. the CPU manager, then the memory manager, read their file with the release's reader and
   validate it (``node.state.start_managers``; the release reader models are
   ``app.domain.checkpoint.readers``). A refusal stops the kubelet: ``started`` is false,
   ``error`` the kubelet's text, ``recovery`` the documented way out (kubelet docs "Changing
   the CPU Manager Policy": drain, remove the state files, restart);
2. the pods come back through admission in their admission order. Both managers skip a
   container whose assignment is already in the state ("container already present in
   state, skipping"), so container-level assignments are *kept*; a pod-level CPU set or memory
   allocation is *restored* only by releases carrying kubernetes#141041 / kubernetes#141077
   (``app.domain.releases``), while 1.36/1.37 allocate such a pod anew from what is free
   (``reallocated``, or ``rejected`` when it no longer fits);
3. a rejected pod is not active: the stale-state cleanup that each manager's ``Allocate``
   runs first (``removeStaleState``) gives its checkpointed CPUs and memory back before the
   next pod is admitted (``Node.release_resources``).

``lost`` lists what the release's reader dropped from the files, in the inspector's words
(``checkpoint/target_verdict.py``: ``podEntries[UID] (cpuSet 2-5)``, ...). Before/after CPU
sets are the state files' entries (``None`` when a container has none: it runs in a shared
pool).

Outcomes per pod: ``rejected`` (admission failed); ``reallocated`` (an entry found in the
files changed, or the pod held nothing there and was given exclusive resources now);
``restored`` (a pod-level allocation found in the files was restored as it was, missing
container entries computed inside it); ``kept`` otherwise (everything found is unchanged).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.domain import releases
from app.domain.checkpoint import (
    CPU_FILE_NAME,
    MEMORY_FILE_NAME,
    CPUCheckpointState,
    InspectionReport,
    MemoryCheckpointState,
    inspect,
)
from app.domain.checkpoint.loading import LoadResult
from app.domain.checkpoint.reader import Reader
from app.domain.checkpoint.startup import SAFELY_RESTORES
from app.domain.cpuset import CPUSet
from app.domain.feature_gates import is_known, locked_value
from app.domain.kubelet_config import (
    RELEASES,
    KubeletConfig,
    KubeletConfigError,
    kubelet_config_from_dict,
)
from app.domain.node.model import Node
from app.domain.node.state import check_managers, check_pod_list, start_managers
from app.domain.node.state_files import (
    GATE,
    NodeStateError,
    render_state_files,
    state_file_versions,
)
from app.domain.pod.model import Pod
from app.domain.topology.model import CPUTopology

KEPT = "kept"
RESTORED = "restored"
REALLOCATED = "reallocated"
REJECTED = "rejected"
OUTCOMES = (KEPT, RESTORED, REALLOCATED, REJECTED)

#: A memory block as compared here: (NUMA affinity, resource, bytes).
BlockKey = tuple[tuple[int, ...], str, int]


class RestartInputError(ValueError):
    """The files and the pod record cannot describe one node (not a kubelet decision)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class GateRefusal:
    """A feature gate the configuration sets and the kubelet of ``release`` refuses at start-up
    (cmd/kubelet/app/server.go: the kubelet exits with ``error``); ``change`` says what to change
    in the configuration."""

    gate: str
    error: str
    change: str

    def to_dict(self) -> dict[str, str]:
        return {"gate": self.gate, "error": self.error, "change": self.change}


@dataclass(frozen=True, slots=True)
class TargetConfig:
    """A configuration for a target release: what the kubelet accepts (``config``, once the
    ``refusals`` are changed) and the gates as configured (the refused ones included)."""

    config: KubeletConfig
    refusals: tuple[GateRefusal, ...] = ()
    configured_gates: Mapping[str, bool] = field(default_factory=dict)


def config_for_release(base: Mapping[str, Any], release: str) -> TargetConfig:
    """The configuration ``base`` (KubeletConfiguration spelling) for ``release``. Where the
    release refuses a feature gate ``base`` sets — one it does not know (yet, or any more) or
    one locked to another value — the refusal is recorded, the gate changed as it says (left
    out, or set to its locked value) and the check repeated, in the kubelet's order. A gate no
    release knows, and every other problem, raises ``KubeletConfigError``."""
    doc = dict(base)
    configured = dict(doc.get("featureGates") or {})
    refusals: list[GateRefusal] = []
    while True:
        try:
            config = kubelet_config_from_dict(doc, release)
        except KubeletConfigError as err:
            refusals.append(_refusal(err, doc, release))
            continue
        gates = {g: config.gate(g) for g in ("PodLevelResources", GATE)}
        gates.update({g: bool(v) for g, v in configured.items() if g in gates})
        return TargetConfig(config, tuple(refusals), gates)


def _refusal(err: KubeletConfigError, doc: dict[str, Any], release: str) -> GateRefusal:
    """The refusal ``err`` is, with ``doc`` changed as it says; re-raises ``err`` otherwise."""
    gate = err.field.removeprefix("featureGates.")
    gates = dict(doc.get("featureGates") or {})
    if not err.field.startswith("featureGates.") or gate not in gates:
        raise err
    if not any(is_known(gate, r) for r in RELEASES):
        raise err  # a name no kubelet knows: bad input, not an answer
    locked = locked_value(gate, release)
    if not is_known(gate, release):
        gates.pop(gate)
        change = f"remove {gate} from featureGates (kubelet {release} does not know it)"
    elif locked is not None and gates[gate] != locked:
        gates[gate] = locked
        change = (
            f"set featureGates.{gate} to {'true' if locked else 'false'} "
            f"(locked in kubelet {release})"
        )
    else:
        raise err
    doc.pop("featureGates", None)
    if gates:
        doc["featureGates"] = gates
    return GateRefusal(gate, err.message, change)


#: Stands for the node's name in recovery steps written without it (the inspector's).
NODE_PLACEHOLDER = "NODE"


def with_node_names(step: str, nodes: list[str]) -> str:
    """A recovery step written without the node's name, with ``nodes`` in its commands."""
    names = " ".join(nodes)
    for command in ("kubectl drain", "kubectl uncordon"):
        step = step.replace(f"{command} {NODE_PLACEHOLDER}", f"{command} {names}")
    if len(nodes) > 1:  # one step for several nodes speaks of them all
        step = step.replace("the node (", "the nodes (").replace("the node's", "each node's")
    return step


def recovery_steps(state_dir: str, release: str, node: str | None) -> tuple[str, ...]:
    """The documented way to start a kubelet that refuses its state files (kubelet docs
    "Changing the CPU Manager Policy"); ``node``: the node's name (``None``: not known)."""
    where = f"{state_dir.rstrip('/')}/" if state_dir else ""
    name = node or NODE_PLACEHOLDER
    return (
        f"drain the node (kubectl drain {name} --ignore-daemonsets)",
        "stop the kubelet",
        f"remove {where}{CPU_FILE_NAME} and {where}{MEMORY_FILE_NAME}",
        f"start the kubelet (release {release}): it writes new state files and admits the "
        "node's pods afresh",
        f"uncordon the node (kubectl uncordon {name})",
    )


@dataclass(frozen=True, slots=True)
class ContainerRestart:
    name: str
    before: CPUSet | None
    after: CPUSet | None
    memory_before: tuple[BlockKey, ...] = ()
    memory_after: tuple[BlockKey, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "before": _text(self.before),
            "after": _text(self.after),
            "memory": {"before": _blocks(self.memory_before), "after": _blocks(self.memory_after)},
        }


@dataclass(frozen=True, slots=True)
class PodRestart:
    uid: str
    namespace: str
    name: str
    outcome: str
    reason: str = ""
    message: str = ""
    budget_before: CPUSet | None = None
    budget_after: CPUSet | None = None
    memory_before: tuple[BlockKey, ...] = ()
    memory_after: tuple[BlockKey, ...] = ()
    containers: tuple[ContainerRestart, ...] = ()
    leaked_cpus: CPUSet | None = None  # rejected while these CPUs were leaked (#140989)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.key,
            "uid": self.uid,
            "outcome": self.outcome,
            "reason": self.reason or None,
            "message": self.message or None,
            "podBudget": {"before": _text(self.budget_before), "after": _text(self.budget_after)},
            "podMemory": {
                "before": _blocks(self.memory_before),
                "after": _blocks(self.memory_after),
            },
            "containers": [c.to_dict() for c in self.containers],
            "leakedCpus": _text(self.leaked_cpus),
        }


@dataclass(slots=True)
class RestartResult:
    """What the restarted kubelet did; ``node`` is the node it runs (``None`` if it did not
    start)."""

    release: str
    gates: dict[str, bool]
    started: bool
    error: str | None = None
    recovery: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    pods: tuple[PodRestart, ...] = ()
    node: Node | None = None
    previous_release: str | None = None
    lost_named: tuple[str, ...] = ()  # ``lost`` with the pods named and sizes humanised
    lost_pods: tuple[str, ...] = ()  # ``namespace/name`` of the pods whose entries are lost
    notes: tuple[str, ...] = ()
    refusals: tuple[GateRefusal, ...] = ()
    once_changed: RestartResult | None = None  # the restart once the refused gates are changed
    leaked_cpus: CPUSet = field(default_factory=CPUSet)
    warnings: tuple[str, ...] = ()

    @property
    def all_kept(self) -> bool:
        return (
            self.started
            and not self.lost
            and not self.leaked_cpus
            and all(p.outcome in (KEPT, RESTORED) for p in self.pods)
        )

    @property
    def exit_code(self) -> int:
        return 0 if self.all_kept else 1

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(OUTCOMES, 0)
        for p in self.pods:
            out[p.outcome] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "previousRelease": self.previous_release,
            "featureGates": dict(self.gates),
            "started": self.started,
            "error": self.error,
            "recovery": list(self.recovery),
            "lost": list(self.lost_named or self.lost),
            "lostPods": list(self.lost_pods),
            "notes": list(self.notes),
            "summary": self.counts(),
            "pods": [p.to_dict() for p in self.pods],
            "leakedCpus": str(self.leaked_cpus),
            "warnings": list(self.warnings),
            "featureGatesRefused": [r.to_dict() for r in self.refusals],
            "onceChanged": None if self.once_changed is None else self.once_changed.to_dict(),
        }


def _text(s: CPUSet | None) -> str | None:
    return None if s is None else str(s)


def _blocks(blocks: Sequence[BlockKey]) -> list[dict[str, Any]]:
    return [{"numaAffinity": list(n), "type": t, "size": size} for n, t, size in blocks]


def _keys(blocks: Sequence[Any] | None) -> tuple[BlockKey, ...]:
    return tuple((tuple(b.numa_affinity), b.type, b.size) for b in blocks or ())


# -- what the files hold ----------------------------------------------------------------------


@dataclass(slots=True)
class _Before:
    cpu: CPUCheckpointState | None = None
    memory: MemoryCheckpointState | None = None

    def cpus(self, uid: str, name: str) -> CPUSet | None:
        return None if self.cpu is None else self.cpu.entries.get(uid, {}).get(name)

    def budget(self, uid: str) -> CPUSet | None:
        return None if self.cpu is None else (self.cpu.pod_entries or {}).get(uid)

    def memory_of(self, uid: str, name: str) -> tuple[BlockKey, ...]:
        return () if self.memory is None else _keys(self.memory.entries.get(uid, {}).get(name))

    def pod_memory(self, uid: str) -> tuple[BlockKey, ...]:
        return () if self.memory is None else _keys((self.memory.pod_entries or {}).get(uid))


#: Formats that carry pod-level entries (a gate-off reader ignores them).
_POD_FORMATS = {CPU_FILE_NAME: ("V3", "V4"), MEMORY_FILE_NAME: ("V2", "V3")}


def _reads_everything(name: str, result: LoadResult, config: KubeletConfig) -> bool:
    """Whether the release read the file in the format it writes itself, so that what it read
    is the file's whole content (nothing to ask the inspector)."""
    versions = state_file_versions(config)
    own = versions.cpu if name == CPU_FILE_NAME else versions.memory
    return result.loaded_as == own and (config.gate(GATE) or own not in _POD_FORMATS[name])


def _inspect_for_release(
    content: str | bytes,
    name: str,
    config: KubeletConfig,
    state_dir: str,
    names: Mapping[str, str] | None,
) -> InspectionReport:
    """The inspector's report on one file with the release's reader as the only target."""
    policy = config.cpu_manager_policy if name == CPU_FILE_NAME else config.memory_manager_policy
    reader = Reader(config.release, config.gate(GATE))
    return inspect(
        content,
        name,
        configured_policy=policy,
        targets=(reader.with_policy(policy),),
        state_dir=state_dir or "/var/lib/kubelet",
        pod_names=names,
        findings=False,  # its content and verdict only
    )


def _read_before(
    files: Mapping[str, str | bytes | None],
    loaded: Mapping[str, LoadResult],
    config: KubeletConfig,
    state_dir: str,
    names: Mapping[str, str] | None = None,
) -> tuple[_Before, list[str], list[str], list[str]]:
    """The files' own content (whatever the release makes of it) and what the release's
    reader drops from it (the inspector's verdict for the release)."""
    before = _Before()
    lost: list[str] = []
    named: list[str] = []
    lost_uids: list[str] = []
    for name in (CPU_FILE_NAME, MEMORY_FILE_NAME):
        content = files.get(name)
        if content is None:
            continue
        result = loaded.get(name)
        state: Any = None
        if result is not None and _reads_everything(name, result, config):
            state = result.state
        else:
            report = _inspect_for_release(content, name, config, state_dir, names)
            state = report.state
            for verdict in report.verdicts:
                lost.extend(f"{name}: {text}" for text in verdict.lost)
                named.extend(f"{name}: {text}" for text in verdict.lost_named or verdict.lost)
                lost_uids.extend(u for u in verdict.lost_pods if u not in lost_uids)
        if isinstance(state, CPUCheckpointState):
            before.cpu = state
        elif isinstance(state, MemoryCheckpointState):
            before.memory = state
    return before, lost, named, lost_uids


def _record_losses(
    result: RestartResult,
    files: Mapping[str, str | bytes | None],
    loaded: Mapping[str, LoadResult],
    config: KubeletConfig,
    state_dir: str,
    names: Mapping[str, str],
) -> tuple[_Before, list[str]]:
    """``_read_before`` with what the release drops written into ``result``; returns the
    files' content and the uids of the pods whose entries are dropped."""
    before, lost, named, lost_uids = _read_before(files, loaded, config, state_dir, names)
    result.lost, result.lost_named = tuple(lost), tuple(named)
    result.lost_pods = tuple(names[u] for u in lost_uids if u in names)
    return before, lost_uids


# -- the restart ----------------------------------------------------------------------------


def restart_node(
    topology: CPUTopology,
    config: KubeletConfig,
    files: Mapping[str, str | bytes | None],
    pods: Sequence[tuple[Pod, float]] | None,
    *,
    state_dir: str = "",
    name: str = "simulated",
    previous_release: str | None = None,
    clock: Callable[[], float] | None = None,
    pod_names: Mapping[str, str] | None = None,
) -> RestartResult:
    """Start a kubelet of ``config.release`` on ``files`` and re-admit ``pods`` (admission
    order, with their admission times; ``None``: the pods' specs are not known, only the
    start-up is rehearsed, and ``pod_names``, uid -> ``namespace/name``, names the pods of
    lost entries when known). Raises ``KubeletConfigError`` for a configuration
    the node cannot take and ``RestartInputError`` when the files and the pods disagree."""
    node = Node(name, topology, config, clock=clock or time.time)
    try:
        by_uid = check_pod_list(pods or ())
    except NodeStateError as err:
        raise RestartInputError(err.message) from None
    names = {uid: pod.key for uid, (pod, _) in by_uid.items()}
    if pods is None and pod_names:
        names = dict(pod_names)
    known = None if pods is None else set(by_uid)
    result, before = _start_up(
        config,
        files,
        lambda: start_managers(node, files, known, state_dir),
        state_dir,
        name,
        names,
        previous_release,
    )
    if before is None:
        return result
    result.node = node
    _readmit_pods(result, node, by_uid.values(), before, state_dir)
    return result


def _start_up(
    config: KubeletConfig,
    files: Mapping[str, str | bytes | None],
    start: Callable[[], Mapping[str, LoadResult]],
    state_dir: str,
    name: str,
    names: Mapping[str, str],
    previous_release: str | None,
) -> tuple[RestartResult, _Before | None]:
    """Step 1 of the restart: the managers started by ``start`` (their readers' results), and
    what the release's readers drop; with the files' content when the kubelet started."""
    gates = {g: config.gate(g) for g in ("PodLevelResources", GATE)}
    result = RestartResult(config.release, gates, False, previous_release=previous_release)
    try:
        loaded = start()
    except NodeStateError as err:
        if err.manager == "pods":
            raise RestartInputError(err.message) from None
        result.error = err.message
        result.recovery = recovery_steps(state_dir, config.release, name)
        lost_uids = _record_losses(result, files, {}, config, state_dir, names)[1]
        if lost_uids and "could not restore state" not in err.message:
            result.notes = (SAFELY_RESTORES,)  # read without the pod entries, then refused
        return result, None
    before = _record_losses(result, files, loaded, config, state_dir, names)[0]
    result.started = True
    return result, before


#: Nodes that judge start-ups (``start_up``) by machine and configuration: a fleet repeats a
#: few, and building a node's managers cost a tenth of a fleet's upgrade check. A judge is
#: never changed (``check_managers``), so it is shared.
_judges: dict[tuple[int, int], tuple[CPUTopology, KubeletConfig, Node]] = {}
_JUDGES_KEPT = 64


def _judge(topology: CPUTopology, config: KubeletConfig) -> Node:
    """A node of ``topology`` under ``config`` that only judges start-ups."""
    key = (id(topology), id(config))
    kept = _judges.get(key)
    if kept is not None and kept[0] is topology and kept[1] is config:
        return kept[2]
    node = Node("start-up", topology, config)
    if len(_judges) >= _JUDGES_KEPT:
        _judges.clear()
    _judges[key] = (topology, config, node)
    return node


def start_up(
    target: TargetConfig,
    topology: CPUTopology,
    files: Mapping[str, str | bytes | None],
    *,
    state_dir: str = "",
    name: str = "simulated",
    pod_names: Mapping[str, str] | None = None,
) -> RestartResult:
    """``restart_for`` with the pods not known (``pod_names`` names the pods of lost
    entries), without the node that results (``node`` stays ``None``): whether a kubelet of
    the target starts on ``files``, its error and recovery, and what its readers drop."""
    config = target.config
    judge = _judge(topology, config)
    result, _ = _start_up(
        config,
        files,
        lambda: check_managers(judge, files, state_dir),
        state_dir,
        name,
        dict(pod_names or {}),
        None,
    )
    return _with_refusals(target, result)


def _readmit_pods(
    result: RestartResult,
    node: Node,
    pods: Iterable[tuple[Pod, float]],
    before: _Before,
    state_dir: str,
) -> None:
    """Re-admit ``pods`` in admission order on the started ``node``, then look for the CPUs
    the re-admissions leaked."""
    order = sorted(pods, key=lambda item: item[1])  # stable: record order on ties
    result.pods = tuple(_readmit(node, pod, at, before) for pod, at in order)
    result.leaked_cpus = leaked_cpus(node)
    if result.leaked_cpus:
        result.warnings = _leak_warnings(node, result.leaked_cpus, state_dir, node.name)


def leaked_cpus(node: Node) -> CPUSet:
    """CPUs no one owns any more: neither in the node shared pool nor in any container's or
    pod's entry (kubernetes#140989: in 1.36 and 1.37 a re-admitted pod-level pod gets a new
    CPU set and its old one is never given back; fixed in 1.38 by kubernetes#141041)."""
    policy = node.cpu_policy
    if policy is None:
        return CPUSet()
    everything = node.topology.all_cpus
    if policy.options.strict_cpu_reservation:
        everything = everything - policy.reserved_cpus
    state = node.cpu_state
    return everything - (state.default_cpuset | state.assigned_cpus() | state.pod_entry_cpus())


def _leak_warnings(node: Node, leaked: CPUSet, state_dir: str, name: str) -> tuple[str, ...]:
    """What the leak means for the next start: the files this kubelet writes, started on by
    the same release (the start-up model run on them)."""
    again = Node(name, node.topology, node.config)
    try:
        start_managers(again, render_state_files(node), None, state_dir)
    except NodeStateError as err:
        steps = "; ".join(recovery_steps(state_dir, node.config.release, name))
        return (
            f"CPUs {leaked} are leaked (kubernetes#140989): the next kubelet start on the files "
            f"this restart writes fails: {err.message}",
            "the way out before the next restart: a kubelet carrying kubernetes#141041 "
            f"({releases.INTRODUCED[releases.CPU_POD_RESTORE]}) restores pod-level CPU sets "
            f"instead of leaking them; or {steps}",
        )
    return (f"CPUs {leaked} are leaked (kubernetes#140989): no one can use them until a restart",)


def restart_for(
    target: TargetConfig,
    topology: CPUTopology,
    files: Mapping[str, str | bytes | None],
    pods: Sequence[tuple[Pod, float]] | None,
    **kw: Any,
) -> RestartResult:
    """``restart_node`` under ``target``: when the release refuses a gate of the
    configuration, the kubelet does not start (``error`` is its text), ``recovery`` says what
    to change, and ``once_changed`` is the restart with the configuration changed so."""
    return _with_refusals(target, restart_node(topology, target.config, files, pods, **kw))


def _with_refusals(target: TargetConfig, result: RestartResult) -> RestartResult:
    """``result`` (the kubelet under ``target.config``) as the configuration's refusals
    leave it: the result itself when the release refuses no gate."""
    if not target.refusals:
        return result
    steps = [f"change the kubelet configuration: {r.change}" for r in target.refusals]
    if result.started:
        steps.append(f"then the kubelet {result.release} starts (see onceChanged)")
    else:
        steps.append(f"then the kubelet {result.release} still does not start: {result.error}")
        steps.extend(result.recovery)
    return RestartResult(
        result.release,
        dict(target.configured_gates),
        False,
        error=target.refusals[0].error,
        recovery=tuple(steps),
        previous_release=result.previous_release,
        refusals=target.refusals,
        once_changed=result,
    )


def _readmit(node: Node, pod: Pod, admitted_at: float, before: _Before) -> PodRestart:
    answer = node.readmit(pod, admitted_at)
    leaked: CPUSet | None = None
    if not answer.admitted:
        leaked = leaked_cpus(node) or None  # CPUs the pod might have had (#140989)
        node.release_resources(pod)  # removeStaleState before the next Allocate
    containers = _container_restarts(node, pod, before, answer.admitted)
    budget_after = node.cpu_state.get_pod_cpu_set(pod.uid) if answer.admitted else None
    pod_mem_after: tuple[BlockKey, ...] = ()
    if answer.admitted and node.memory is not None:
        pod_mem_after = _keys(node.memory.state.get_pod_memory_blocks(pod.uid))
    restart = PodRestart(
        pod.uid,
        pod.namespace,
        pod.name,
        REJECTED,
        answer.reason,
        answer.message,
        before.budget(pod.uid),
        budget_after,
        before.pod_memory(pod.uid),
        pod_mem_after,
        containers,
        leaked,
    )
    if not answer.admitted:
        return restart
    return replace(restart, outcome=_outcome(restart, node.config.release))


def _container_restarts(
    node: Node, pod: Pod, before: _Before, admitted: bool
) -> tuple[ContainerRestart, ...]:
    """Each container's CPUs and memory blocks before the restart and after re-admission
    (none after when the pod was rejected)."""
    containers = []
    for c in (*pod.init_containers, *pod.containers):
        after = node.cpu_state.get_cpu_set(pod.uid, c.name) if admitted else None
        mem_after: tuple[BlockKey, ...] = ()
        if admitted and node.memory is not None:
            mem_after = _keys(node.memory.state.get_memory_blocks(pod.uid, c.name))
        containers.append(
            ContainerRestart(
                c.name,
                before.cpus(pod.uid, c.name),
                after,
                before.memory_of(pod.uid, c.name),
                mem_after,
            )
        )
    return tuple(containers)


def _outcome(p: PodRestart, release: str) -> str:
    pairs: list[tuple[Any, Any]] = [(p.budget_before, p.budget_after)]
    pairs.append((p.memory_before or None, p.memory_after or None))
    for c in p.containers:
        pairs.append((c.before, c.after))
        pairs.append((c.memory_before or None, c.memory_after or None))
    if any(b is not None and a != b for b, a in pairs):
        return REALLOCATED
    if all(b is None for b, _ in pairs) and any(a is not None for _, a in pairs):
        return REALLOCATED  # nothing in the files: allocated afresh
    restores = (
        p.budget_before is not None and releases.has(release, releases.CPU_POD_RESTORE)
    ) or (bool(p.memory_before) and releases.has(release, releases.MEMORY_POD_RESTORE))
    return RESTORED if restores else KEPT

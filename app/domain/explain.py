"""Why a pod was rejected: the numbers behind a kubelet admission decision.

Given a ``Node`` in the state it had when the pod was judged, ``explain_rejection`` computes
what the kubelet's managers saw and said, in the order the kubelet asks them
(pkg/kubelet/cm/topologymanager/scope_container.go and scope_pod.go, v1.37):

* per NUMA node, the CPUs the static policy could still hand out (its default cpuset minus the
  reserved CPUs, ``GetAvailableCPUs`` in policy_static.go) and the free memory of every type
  (the memory manager's machine state);
* per admission unit (the whole pod under scope ``pod``, each container in order under scope
  ``container``) every hint provider's hints per resource (CPU manager first, then memory
  manager, their registration order in container_manager_linux.go) and the policy's merged
  hint with its admit verdict; under scope ``container`` the containers before the failing one
  are allocated first, as the kubelet does, so later hints see their CPUs taken;
* the smallest changes that would have been admitted on that same state: fewer CPUs (per
  container with exclusive CPUs and for the pod budget), removing one pod that was on the node,
  and another topology manager policy or scope;
* the known differences between the documentation and the code the verdict falls under
  (``app.domain.doc_divergences``).

The node passed in is used as a scratch copy: the hint replay allocates on it. Suggestions are
judged with ``Node.dry_run`` on copies rebuilt from the node's own state files
(``node.state.restore_node``), so every "would fit" is the engine's verdict, not an estimate.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.admission import AdmissionError
from app.domain.cpuset import CPUSet
from app.domain.doc_divergences import Divergence, divergences_for
from app.domain.node.model import Node, NodeError
from app.domain.node.state import restore_node
from app.domain.node.state_files import NodeStateError, render_state_files
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Pod, PodManifestError
from app.domain.pod.qos import is_pod_level_resources_set, pod_qos_class
from app.domain.quantity import parse_quantity
from app.domain.topologymanager.hint import ProviderHints, TopologyHint
from app.domain.topologymanager.scope import ContainerScope, PodScope, all_containers
from app.domain.units import binary_quantity

TM_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TM_SCOPES = ("container", "pod")
# Dry runs one "fewer CPUs" search may spend (each is a full admission on a copy).
MAX_CPU_TRIES = 48
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class NumaFree:
    numa_node: int
    cpus: int  # CPUs of the NUMA node
    free_cpus: CPUSet  # what exclusive requests could still get there
    free_memory: dict[str, int]  # resource -> free bytes (memory manager machine state)


@dataclass(frozen=True, slots=True)
class ProviderAnswer:
    provider: str  # "CPU manager" | "memory manager" | the provider's class name
    # resource -> hints; None = no preference; [] = no possible placement
    hints: dict[str, list[TopologyHint] | None]


@dataclass(frozen=True, slots=True)
class UnitHints:
    """One merge of the topology manager: the whole pod, or one container."""

    unit: str  # "pod" or the container's name
    providers: tuple[ProviderAnswer, ...]
    merged: TopologyHint
    admit: bool
    error: str = ""  # reason: message of an allocation that failed after the merge


@dataclass(frozen=True, slots=True)
class Suggestion:
    kind: str  # "fewer-cpus" | "remove-pod" | "policy"
    text: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Explanation:
    policy: str
    scope: str
    pod_level: bool  # admitted through the pod-level resource managers (a pod budget)
    requested_cpus: int  # exclusive CPUs the pod asks for (pod budget, else its containers)
    requested_memory: dict[str, int]
    numa: tuple[NumaFree, ...]
    units: tuple[UnitHints, ...]
    verdict: tuple[bool, str, str]  # admitted, reason, message (replayed)
    suggestions: tuple[Suggestion, ...]
    # Known documentation/code differences the verdict falls under (app.domain.doc_divergences)
    divergences: tuple[Divergence, ...] = ()


def provider_name(provider: object) -> str:
    name = type(provider).__name__
    return {"_CPUProvider": "CPU manager", "MemoryManager": "memory manager"}.get(name, name)


def numa_free(node: Node) -> tuple[NumaFree, ...]:
    snap = node.snapshot()
    available = snap.default_cpuset - snap.reserved_cpus
    memory = {m.numa_id: {k: t.free for k, t in m.memory_map.items()} for m in snap.memory}
    topo = node.topology
    return tuple(
        NumaFree(
            numa_node=n,
            cpus=topo.cpus_in_numa_nodes([n]).size(),
            free_cpus=available & topo.cpus_in_numa_nodes([n]),
            free_memory=memory.get(n, {}),
        )
        for n in topo.numa_node_ids()
    )


def _exclusive_cpus(pod: Pod, pod_level: bool) -> int:
    if pod_level and pod.resources is not None:
        return pod.resources.request("cpu").milli_value() // 1000
    if pod_qos_class(pod) != "Guaranteed":
        return 0
    total = 0
    for c in pod.containers:
        milli = c.cpu_request_milli()
        if milli and milli % 1000 == 0:
            total += milli // 1000
    return total


def _memory_requests(pod: Pod, pod_level: bool) -> dict[str, int]:
    out: dict[str, int] = {}
    if pod_level and pod.resources is not None:
        items = [pod.resources.requests]
    else:
        items = [c.resources.requests for c in pod.containers]
    for requests in items:
        for name, q in requests.items():
            if name == "memory" or name.startswith("hugepages-"):
                out[name] = out.get(name, 0) + q.value()
    return out


def _answers(
    hints: Sequence[ProviderHints | None], providers: Sequence[object]
) -> tuple[ProviderAnswer, ...]:
    return tuple(
        ProviderAnswer(provider_name(p), dict(h) if h is not None else {})
        for p, h in zip(providers, hints, strict=True)
    )


def replay_hints(node: Node, pod: Pod) -> tuple[UnitHints, ...]:
    """The topology manager's merges for ``pod`` on ``node`` (which it allocates on)."""
    scope = node.topology_manager.scope
    providers = list(scope.hint_providers)
    units: list[UnitHints] = []
    if isinstance(scope, PodScope):
        hints = scope.accumulate_providers_hints(pod)
        merged, admit = scope.policy.merge(hints)
        units.append(UnitHints("pod", _answers(hints, providers), merged, admit))
    elif isinstance(scope, ContainerScope):
        for container in all_containers(pod):
            hints = scope.accumulate_providers_hints(pod, container)
            merged, admit = scope.policy.merge(hints)
            error = ""
            if admit:
                scope.set_topology_hints(pod.uid, container.name, merged)
                try:
                    scope.allocate_aligned_resources(pod, container)
                except AdmissionError as err:
                    error = f"{err.reason}: {err.message}"
            units.append(
                UnitHints(container.name, _answers(hints, providers), merged, admit, error)
            )
            if not admit or error:
                break
    return tuple(units)


# -- what would fit --------------------------------------------------------------------------


def copy_node(node: Node, build: Callable[[Any], Node], config: Any | None = None) -> Node | None:
    """A fresh node (``build(config)``) holding ``node``'s pods and allocations, restored from
    its state files as a restarting kubelet would; ``None`` when that kubelet would refuse."""
    scratch = build(config if config is not None else node.config)
    pods = [(p, node.admitted_at.get(uid, 0.0)) for uid, p in node.pods.items()]
    try:
        restore_node(scratch, render_state_files(node), pods)
    except (NodeStateError, NodeError, ValueError):
        return None
    return scratch


def _fits(node: Node, pod: Pod) -> bool:
    try:
        return node.dry_run(pod).admitted
    except NodeError:
        return False


def _with_cpu(
    manifest: dict[str, Any], target: str, cpus: int, scale_memory: tuple[int, int] | None = None
) -> dict[str, Any]:
    """``manifest`` with ``target``'s (a container, or ``"pod"``) cpu set to ``cpus``; with
    ``scale_memory=(new, old)`` its memory scaled by ``new/old`` too (whole MiB)."""
    m = copy.deepcopy(manifest)
    spec = m["spec"]
    if target == "pod":
        holders = [spec["resources"]]
    else:
        holders = [
            c["resources"]
            for c in spec.get("initContainers", []) + spec["containers"]
            if c["name"] == target
        ]
    for res in holders:
        for part in ("requests", "limits"):
            values = res.get(part, {})
            if "cpu" in values:
                values["cpu"] = str(cpus)
            if scale_memory is not None and "memory" in values:
                new, old = scale_memory
                mib = parse_quantity(values["memory"]).value() * new // old // MIB
                values["memory"] = binary_quantity(max(1, mib) * MIB)
    return m


def _cpu_targets(pod: Pod, pod_level: bool) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    if pod_level and pod.resources is not None:
        milli = pod.resources.request("cpu").milli_value()
        if milli and milli % 1000 == 0:
            out.append(("pod", milli // 1000))
    for c in (*pod.init_containers, *pod.containers):
        milli = c.cpu_request_milli()
        if milli >= 2000 and milli % 1000 == 0:
            out.append((c.name, milli // 1000))
    return out


def fewer_cpus(
    node: Node, pod: Pod, manifest: dict[str, Any], pod_level: bool, gate: bool
) -> list[Suggestion]:
    """Per CPU request of the pod, the largest smaller whole number that would be admitted."""
    out: list[Suggestion] = []
    for target, current in _cpu_targets(pod, pod_level):
        what = "the pod budget (spec.resources)" if target == "pod" else target
        # CPUs alone first; then CPUs with memory in proportion (a budget split by both).
        for scaled in (False, True):
            k = _largest_fitting(node, manifest, target, current, scaled, gate)
            if k is None:
                continue
            text = f"{k} CPUs instead of {current} for {what}"
            if scaled:
                text += f", with its memory scaled to {k}/{current}"
            out.append(
                Suggestion(
                    "fewer-cpus",
                    text + " would be admitted",
                    {"target": target, "cpus": k, "was": current, "memoryScaled": scaled},
                )
            )
            break
    return out


def _largest_fitting(
    node: Node, manifest: dict[str, Any], target: str, current: int, scaled: bool, gate: bool
) -> int | None:
    for tries, k in enumerate(range(current - 1, 0, -1)):
        if tries >= MAX_CPU_TRIES:
            return None
        try:
            variant = pod_from_manifest(
                _with_cpu(manifest, target, k, (k, current) if scaled else None),
                pod_level_resources_enabled=gate,
            )
        except (PodManifestError, ValueError, KeyError):
            continue
        if _fits(node, variant):
            return k
    return None


def remove_one(node: Node, pod: Pod, build: Callable[[Any], Node]) -> list[Suggestion]:
    out: list[Suggestion] = []
    for uid, other in list(node.pods.items()):
        scratch = copy_node(node, build)
        if scratch is None:
            break
        scratch.remove(uid)
        if _fits(scratch, pod):
            out.append(
                Suggestion(
                    "remove-pod",
                    f"with pod {other.key} gone, its CPUs and memory would make room",
                    {"pod": other.key},
                )
            )
    return out


def other_policies(node: Node, pod: Pod, build: Callable[[Any], Node]) -> list[Suggestion]:
    out: list[Suggestion] = []
    config = node.config
    for policy in TM_POLICIES:
        for scope in TM_SCOPES:
            if (policy, scope) == (config.topology_manager_policy, config.topology_manager_scope):
                continue
            if policy == "none" and scope != config.topology_manager_scope:
                continue  # the scope means nothing without a policy
            other = dataclasses.replace(
                config, topology_manager_policy=policy, topology_manager_scope=scope
            )
            try:
                scratch = copy_node(node, build, other)
            except (ValueError, NodeError):
                continue
            if scratch is not None and _fits(scratch, pod):
                out.append(
                    Suggestion(
                        "policy",
                        f"topology manager policy {policy} with scope {scope} would admit it",
                        {"policy": policy, "scope": scope},
                    )
                )
    return out


def explain_rejection(
    node: Node,
    pod: Pod,
    manifest: dict[str, Any],
    build: Callable[[Any], Node],
) -> Explanation:
    """Explain how ``node`` (its state at decision time) judges ``pod``. ``build(config)``
    makes a fresh node of the same machine with that kubelet configuration."""
    config = node.config
    gate = config.gate("PodLevelResources")
    pod_level = config.pod_level_resource_managers and is_pod_level_resources_set(pod)
    free = numa_free(node)
    suggestions: list[Suggestion] = []
    suggestions += fewer_cpus(node, pod, manifest, pod_level, gate)
    suggestions += remove_one(node, pod, build)
    suggestions += other_policies(node, pod, build)
    verdict = node.dry_run(pod)
    units = replay_hints(node, pod)
    return Explanation(
        policy=config.topology_manager_policy,
        scope=config.topology_manager_scope,
        pod_level=pod_level,
        requested_cpus=_exclusive_cpus(pod, pod_level),
        requested_memory=_memory_requests(pod, pod_level),
        numa=free,
        units=units,
        verdict=(verdict.admitted, verdict.reason, verdict.message),
        suggestions=tuple(suggestions),
        divergences=()
        if verdict.admitted
        else divergences_for(config, pod, verdict.reason, verdict.message),
    )

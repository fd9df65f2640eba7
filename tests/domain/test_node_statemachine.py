"""A state machine over simulated nodes: random machines, kubelet configurations and pods, random
admit / dry-run / remove sequences, with DESIGN.md §6 invariants checked after every step.

Invariants (``check_invariants``):

* **Exclusive sets.** Long-running containers (sidecars and app containers) hold pairwise
  disjoint exclusive CPU sets (isolation ``container``). A regular init container's CPUs may be
  handed on to later containers of its *own* pod (the kubelet's reuse), never to another pod.
* **CPU partition.** With ``R`` the reserved CPUs, ``D`` the default set (node shared pool),
  ``P`` the pod entries (KEP-5526 budgets) and ``E`` the assignments of pods without a pod
  entry: without ``strict-cpu-reservation`` ``R ⊆ D`` and ``R``, ``D − R``, every pod entry and
  ``E`` partition the machine's CPUs; with it ``R ∩ D = ∅`` and ``R``, ``D``, the pod entries and
  ``E`` partition them. Every container of a pod with a pod entry lies inside it. With CPU policy
  ``none``: ``D`` is every CPU and nothing is assigned.
* **Memory.** Per NUMA node and resource ``free + reserved == allocatable`` and both are ≥ 0;
  per resource, the machine's reserved bytes equal the pods' blocks (the pod-level blocks of a
  pod with a pod entry, else its containers' blocks).
* **No side effects.** A rejected admission or a dry run leaves the node's state unchanged; a
  dry run answers what ``admit`` then answers; removing the pod just admitted restores the
  state from before.
* **Memory hints.** The memory manager's ``calculate_hints`` (computed incrementally for
  speed) equals a plain loop-over-nodes version on the node's current machine state.
* **CPU hints.** ``generate_cpu_topology_hints`` (per-NUMA counts, for speed) equals a plain
  intersection-per-mask version.
* **Round trip.** The state files the node's kubelet release writes, restored into a fresh node
  through that release's readers and the managers' start-up validation (``node_state``), give
  the same state and the same file bytes — except where the kubelet itself cannot restart:
  with ``strict-cpu-reservation`` the default set can be emptied by exclusive allocations, and
  ``validateState`` then fails with ``default cpuset cannot be empty``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from app.domain.cpumanager.hints import generate_cpu_topology_hints, is_hint_socket_aligned
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfigError, kubelet_config_from_dict
from app.domain.memorymanager.policy_static import StaticPolicy
from app.domain.node.model import Node
from app.domain.node.pods import pods_document, pods_from_document
from app.domain.node.state import restore_node
from app.domain.node.state_files import NodeStateError, render_state_files
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import Pod
from app.domain.presets import get_preset
from app.domain.topology.model import CPUTopology
from app.domain.topology.spec import parse_topology_spec
from app.domain.topologymanager.bitmask import bits, iterate_bitmasks
from app.domain.topologymanager.hint import TopologyHint
from tests.domain.memorymanager.test_mm_calculate_hints_reference import (
    reference as reference_memory_hints,
)

PRESETS = (
    "topoSingleSocketHT",
    "topoDualSocketHT",
    "topoDualSocketNoHT",
    "topoDualSocketMultiNumaPerSocketHT",
)


@st.composite
def topologies(draw: st.DrawFn) -> CPUTopology:
    if draw(st.booleans()):
        return get_preset(draw(st.sampled_from(PRESETS)))
    spec = (
        f"sockets={draw(st.integers(1, 2))},numa_per_socket={draw(st.integers(1, 2))},"
        f"cores_per_numa={draw(st.integers(2, 4))},threads_per_core={draw(st.integers(1, 2))},"
        f"memory_per_numa={draw(st.sampled_from(['4Gi', '6Gi', '8Gi']))},"
        f"hugepages_1Gi_per_numa={draw(st.integers(0, 1))}"
    )
    return parse_topology_spec(spec)


OPTION_SETS: tuple[dict[str, str], ...] = (
    {},
    {"full-pcpus-only": "true"},
    {"distribute-cpus-across-numa": "true"},
    {"strict-cpu-reservation": "true"},
    {"full-pcpus-only": "true", "strict-cpu-reservation": "true"},
)


@st.composite
def configs(draw: st.DrawFn, family: str = "any") -> dict[str, Any]:
    """``family``: ``pod-scope`` (static CPU, gate on, scope pod), ``container-scope`` (static
    CPU, gate on, scope container) or ``any``."""
    pod_level = family != "any"
    release = draw(st.sampled_from(["1.36", "1.37"] if pod_level else ["1.35", "1.36", "1.37"]))
    scopes = {"pod-scope": ["pod"], "container-scope": ["container"]}.get(
        family, ["container", "pod"]
    )
    doc: dict[str, Any] = {
        "cpuManagerPolicy": draw(st.sampled_from(["static"] if pod_level else ["static", "none"])),
        "topologyManagerPolicy": draw(
            st.sampled_from(["none", "best-effort", "restricted", "single-numa-node"])
        ),
        "topologyManagerScope": draw(st.sampled_from(scopes)),
        "kubeReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
    }
    if doc["cpuManagerPolicy"] == "static":
        doc["cpuManagerPolicyOptions"] = dict(draw(st.sampled_from(OPTION_SETS)))
        if draw(st.booleans()):
            doc["reservedSystemCPUs"] = draw(st.sampled_from(["0", "0-1"]))
        else:
            doc["kubeReserved"]["cpu"] = draw(st.sampled_from(["1", "1500m", "2"]))
    if draw(st.booleans()):
        doc["memoryManagerPolicy"] = "Static"
        doc["reservedMemory"] = [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]
    if release != "1.35":
        doc["featureGates"] = {"PodLevelResourceManagers": pod_level or draw(st.booleans())}
    return {"release": release, "doc": doc}


GUARANTEED_KINDS = ("gu-int", "gu-int", "gu-frac")
ANY_KINDS = ("none", "gu-int", "gu-int", "gu-frac", "gu-mem", "burstable")


@st.composite
def container_resources(draw: st.DrawFn, kinds: tuple[str, ...]) -> dict[str, Any] | None:
    kind = draw(st.sampled_from(kinds))
    memory = draw(st.sampled_from(["128Mi", "256Mi", "512Mi", "1Gi"]))
    if kind == "none":
        return None
    if kind == "gu-int":
        res = {"cpu": str(draw(st.integers(1, 3))), "memory": memory}
        return {"requests": res, "limits": res}
    if kind == "gu-frac":
        res = {"cpu": draw(st.sampled_from(["500m", "1500m"])), "memory": memory}
        return {"requests": res, "limits": res}
    if kind == "gu-mem":
        return {"limits": {"memory": memory}}
    return {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}


def _milli(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(q) * 1000


def _mib(q: str) -> int:
    return int(q[:-2]) * (1024 if q.endswith("Gi") else 1)


@st.composite
def pod_manifests(draw: st.DrawFn, name: str) -> dict[str, Any]:
    # classic Guaranteed pods, pods with a pod-level budget, or anything at all
    profile = draw(st.sampled_from(["classic", "classic", "pod-level", "pod-level", "any"]))
    kinds = GUARANTEED_KINDS if profile == "classic" else ANY_KINDS

    def container(i: int, prefix: str) -> dict[str, Any]:
        c: dict[str, Any] = {"name": f"{prefix}{i}"}
        res = draw(container_resources(kinds))
        if res is not None:
            c["resources"] = res
        return c

    apps = [container(i, "app") for i in range(draw(st.integers(1, 3)))]
    inits = []
    for i in range(draw(st.integers(0, 2))):
        c = container(i, "init")
        if draw(st.booleans()):
            c["restartPolicy"] = "Always"
        inits.append(c)
    spec: dict[str, Any] = {"containers": apps}
    if inits:
        spec["initContainers"] = inits
    if profile == "pod-level" or (profile == "any" and draw(st.booleans())):
        # A pod-level budget at least as large as what the containers request (the API server
        # validates that), sometimes fractional, sometimes not Guaranteed.
        def req(c: dict[str, Any], key: str) -> str:
            res = c.get("resources") or {}
            return (res.get("requests") or res.get("limits") or {}).get(key, "0")

        long_running = apps + [c for c in inits if c.get("restartPolicy") == "Always"]
        regular_inits = [c for c in inits if c.get("restartPolicy") != "Always"]
        cpu = sum(_milli(req(c, "cpu")) for c in long_running)
        cpu = max([cpu] + [_milli(req(c, "cpu")) for c in regular_inits])
        mem = sum(_mib(req(c, "memory")) if req(c, "memory") != "0" else 0 for c in long_running)
        mem = max(
            [mem] + [_mib(req(c, "memory")) for c in regular_inits if req(c, "memory") != "0"]
        )
        cpu += draw(st.sampled_from([0, 0, 1000, 2000, 500]))
        cpu = max(cpu, 1000)
        mem += draw(st.sampled_from([0, 0, 256, 1024]))
        mem = max(mem, 256)
        budget = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
        if draw(st.integers(0, 4)) == 0:
            spec["resources"] = {"requests": budget, "limits": {"cpu": f"{cpu + 1000}m"}}
        else:
            spec["resources"] = {"requests": budget, "limits": budget}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }


def state_key(node: Node) -> tuple[str, str, tuple[str, ...]]:
    cpu = json.dumps(node.cpu_state.to_dict(), sort_keys=True)
    mem = json.dumps(node.memory.state.to_dict() if node.memory else None, sort_keys=True)
    return cpu, mem, tuple(node.pods)


def allocation_key(result: Any) -> Any:
    alloc = result.allocation
    if alloc is None:
        return (result.admitted, result.reason, result.message)
    return (result.admitted, alloc.pod_cpuset, alloc.pod_memory, alloc.containers)


def check_cpu_partition(node: Node) -> None:
    topo = node.topology
    state = node.cpu_state
    if node.cpu_policy is None:
        assert state.default_cpuset == topo.all_cpus and not state.assignments
        return
    reserved = node.cpu_policy.reserved_cpus
    default = state.default_cpuset
    strict = node.cpu_policy.options.strict_cpu_reservation
    parts: list[CPUSet] = [reserved]
    if strict:
        assert not (reserved & default), "strictly reserved CPUs in the default set"
        parts.append(default)
    else:
        assert reserved.is_subset_of(default), "reserved CPUs missing from the default set"
        parts.append(default - reserved)
    classic = 0
    for uid, containers in state.assignments.items():
        entry = state.pod_entries.get(uid)
        for name, cset in containers.items():
            if entry is not None:
                assert cset.is_subset_of(entry), f"{uid}/{name} outside its pod entry"
            else:
                classic |= cset.mask
    parts.extend(state.pod_entries.values())
    parts.append(CPUSet.from_mask(classic))
    union = 0
    for part in parts:
        assert not (union & part.mask), f"CPU pools overlap: {CPUSet.from_mask(union & part.mask)}"
        union |= part.mask
    assert union == topo.all_cpus.mask, (
        f"CPUs unaccounted: {topo.all_cpus - CPUSet.from_mask(union)}"
    )


def check_exclusive_sets(node: Node) -> None:
    snap = node.snapshot()
    owner: dict[int, str] = {}
    for pod in snap.pods:
        for c in pod.containers:
            if c.isolation != "container":
                continue
            for cpu in c.cpuset:
                other = owner.get(cpu)
                key = f"{pod.uid}/{c.name}"
                if other is not None:
                    other_pod = other.split("/")[0]
                    # only a regular init container may share CPUs, and only within its pod
                    assert other_pod == pod.uid, f"CPU {cpu} held by {other} and {key}"
                    regular = {x.name for x in pod.containers if x.kind == "init"}
                    assert other.split("/", 1)[1] in regular or c.name in regular, (
                        f"CPU {cpu} held by {other} and {key}"
                    )
                owner[cpu] = key


def check_memory(node: Node) -> None:
    if node.memory is None:
        return
    state = node.memory.state
    reserved_total: dict[str, int] = {}
    for numa, s in state.machine_state.items():
        for name, t in s.memory_map.items():
            assert t.free + t.reserved == t.allocatable, f"NUMA {numa} {name}: {t}"
            assert t.free >= 0 and t.reserved >= 0, f"NUMA {numa} {name}: {t}"
            reserved_total[name] = reserved_total.get(name, 0) + t.reserved
    charged: dict[str, int] = {}
    for uid in set(state.assignments) | set(state.pod_entries):
        blocks = state.pod_entries.get(uid)
        if blocks is None:
            blocks = tuple(b for bs in state.assignments.get(uid, {}).values() for b in bs)
        for b in blocks:
            charged[b.type] = charged.get(b.type, 0) + b.size
    for name, total in reserved_total.items():
        assert total == charged.get(name, 0), f"{name}: reserved {total}, blocks {charged}"


def reference_cpu_hints(
    topology: CPUTopology, available: CPUSet, reusable: CPUSet, request: int, by_socket: bool
) -> list[TopologyHint]:
    """``generateCPUTopologyHints`` the plain way (an intersection per mask)."""
    ids = topology.numa_node_ids()
    min_size = len(ids)
    masks = []
    for mask in iterate_bitmasks(ids):
        cpus = topology.cpus_in_numa_nodes(bits(mask))
        if cpus.size() >= request and mask.bit_count() < min_size:
            min_size = mask.bit_count()
        if not reusable.is_subset_of(cpus):
            continue
        if reusable.size() + (available & cpus).size() < request:
            continue
        masks.append(mask)
    return [
        TopologyHint(
            m,
            (by_socket and is_hint_socket_aligned(topology, m, min_size))
            or m.bit_count() == min_size,
        )
        for m in masks
    ]


class NodeMachine(RuleBasedStateMachine):
    """Any configuration (see ``configs``); subclasses pin a configuration family."""

    family = "any"
    admitted = Bundle("admitted")

    def __init__(self) -> None:
        super().__init__()
        self.node: Node | None = None
        self.counter = 0

    @initialize(topology=topologies(), data=st.data())
    def build(self, topology: CPUTopology, data: st.DataObject) -> None:
        cfg = data.draw(configs(self.family))
        try:
            config = kubelet_config_from_dict(cfg["doc"], cfg["release"])
            self.node = Node("sm", topology, config, clock=lambda: 1.0)
        except KubeletConfigError:
            assume(False)

    def _pod(self, data: st.DataObject) -> Pod:
        assert self.node is not None
        self.counter += 1
        manifest = data.draw(pod_manifests(f"p{self.counter}"))
        return pod_from_manifest(
            manifest, pod_level_resources_enabled=self.node.config.gate("PodLevelResources")
        )

    @rule(target=admitted, data=st.data())
    def admit(self, data: st.DataObject) -> str:
        assert self.node is not None
        pod = self._pod(data)
        before = state_key(self.node)
        result = self.node.admit(pod)
        if not result.admitted:
            assert state_key(self.node) == before, "a rejected admission changed the state"
            return "rejected"  # a placeholder the remove rule skips
        return pod.uid

    @rule(data=st.data())
    def dry_run(self, data: st.DataObject) -> None:
        assert self.node is not None
        pod = self._pod(data)
        before = state_key(self.node)
        answer = self.node.dry_run(pod)
        assert state_key(self.node) == before, "a dry run changed the state"
        result = self.node.admit(pod)
        assert allocation_key(answer) == allocation_key(result)
        if result.admitted:
            self.node.remove(pod.uid)
        assert state_key(self.node) == before

    @rule(data=st.data())
    def admit_then_remove(self, data: st.DataObject) -> None:
        assert self.node is not None
        pod = self._pod(data)
        before = state_key(self.node)
        if self.node.admit(pod).admitted:
            self.node.remove(pod.key)
        assert state_key(self.node) == before, "remove after admit did not restore the state"

    @rule(uid=consumes(admitted))
    def remove(self, uid: str) -> None:
        assert self.node is not None
        if uid != "rejected":
            self.node.remove(uid)

    @rule(
        memory=st.sampled_from([0, 256, 1024, 3072, 6144, 12288]),
        hugepages=st.sampled_from([0, 0, 1024, 2048]),
    )
    def hints_match_reference(self, memory: int, hugepages: int) -> None:
        assert self.node is not None
        if self.node.memory is None:
            return
        requested = {"memory": memory * 1024**2}
        if hugepages:
            requested["hugepages-1Gi"] = hugepages * 1024**2
        policy = self.node.memory.policy
        assert isinstance(policy, StaticPolicy)
        machine = self.node.memory.state.machine_state
        probe = pod_from_manifest(
            {"metadata": {"name": "probe"}, "spec": {"containers": [{"name": "c"}]}}
        )
        assert policy.calculate_hints(machine, probe, requested) == reference_memory_hints(
            machine, requested, None
        )

    @rule(request=st.integers(1, 12), n_reusable=st.integers(0, 3))
    def cpu_hints_match_reference(self, request: int, n_reusable: int) -> None:
        assert self.node is not None
        policy = self.node.cpu_policy
        if policy is None:
            return
        available = policy.get_available_cpus(self.node.cpu_state)
        reusable = CPUSet(list(available)[:n_reusable])
        available = available - reusable
        by_socket = policy.options.align_by_socket
        topo = self.node.topology
        assert generate_cpu_topology_hints(
            topo, available, reusable, request, by_socket
        ) == reference_cpu_hints(topo, available, reusable, request, by_socket)

    @rule()
    def round_trip(self) -> None:
        assert self.node is not None
        node = self.node
        files = render_state_files(node)
        pods = pods_from_document(
            json.loads(json.dumps(pods_document(node))),
            pod_level_resources_enabled=node.config.gate("PodLevelResources"),
        )
        assert [p for p, _ in pods] == list(node.pods.values())
        fresh = Node(node.name, node.topology, node.config, clock=lambda: 1.0)
        state = node.cpu_state
        if node.cpu_policy is not None and not state.default_cpuset and state.assignments:
            # strict-cpu-reservation lets the last shared CPU go to a container; the kubelet's
            # validateState then refuses its own file at the next start.
            with pytest.raises(NodeStateError, match="default cpuset cannot be empty"):
                restore_node(fresh, files, pods, "/var/lib/kubelet")
            return
        restore_node(fresh, files, pods, "/var/lib/kubelet")
        assert state_key(fresh) == state_key(node)
        assert render_state_files(fresh) == files

    @invariant()
    def check_all_invariants(self) -> None:
        if self.node is None:
            return
        check_cpu_partition(self.node)
        check_exclusive_sets(self.node)
        check_memory(self.node)


class PodScopeMachine(NodeMachine):
    family = "pod-scope"


class ContainerScopeMachine(NodeMachine):
    family = "container-scope"


SETTINGS = settings(
    max_examples=50,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# Three machines so each configuration family gets its share of examples (the generator
# otherwise settles on a few configurations per run).
NodeMachine.TestCase.settings = SETTINGS
PodScopeMachine.TestCase.settings = SETTINGS
ContainerScopeMachine.TestCase.settings = SETTINGS
test_any_configuration = NodeMachine.TestCase
test_pod_scope = PodScopeMachine.TestCase
test_container_scope = ContainerScopeMachine.TestCase

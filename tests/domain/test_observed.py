"""app/domain/observed/: reading observed state files, joining checkpoint UIDs with
PodResources pods, stale entries, and the observed snapshot against the engine's own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.checkpoint import (
    CPUCheckpointState,
    MemoryCheckpointState,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint.memory_state import Block as CheckpointBlock
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig
from app.domain.memorymanager.state import Block
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.observed import (
    UID_ONLY_NAMESPACE,
    Observation,
    ObservedNode,
    SourceStatus,
    build_observed_node,
    infer_config,
    match_pods,
    read_state_file,
)
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.podresources import (
    ContainerMemory,
    ContainerResources,
    PodResources,
    TopologyInfo,
    build_allocatable_response,
    build_list_response,
)
from app.domain.presets import get_preset
from app.domain.quantity import Quantity
from app.domain.snapshot import NodeSnapshot, PodAllocation
from app.services import demo
from tests.helpers import POD_SCOPE

ROOT = "/var/lib/kubelet"
CPU_FILE = "cpu_manager_state"
MEMORY_FILE = "memory_manager_state"

CONTAINER_SCOPE = """\
cpuManagerPolicy: static
topologyManagerPolicy: best-effort
reservedSystemCPUs: "0,1"
"""
NONE_POLICY = "cpuManagerPolicy: none\n"

# One pod-level pod with a single shared container (its set is one part of the bubble).
ONE_SHARED = """\
apiVersion: v1
kind: Pod
metadata: {name: one-shared, namespace: edge}
spec:
  resources:
    requests: {cpu: "4", memory: 2Gi}
    limits: {cpu: "4", memory: 2Gi}
  containers:
  - name: fast
    resources:
      requests: {cpu: "2", memory: 1Gi}
      limits: {cpu: "2", memory: 1Gi}
  - name: helper
"""


def engine_node(preset: str, config_text: str, manifests: Sequence[str]) -> Node:
    config = parse_kubelet_config_text(config_text, "1.37")
    node = Node("sim", get_preset(preset), config, clock=lambda: 100.0)
    for text in manifests:
        for pod in parse_pod_manifests(text, pod_level_resources_enabled=True):
            assert node.admit(pod).admitted, pod.key
    return node


def reading(manager: str, content: str | bytes | None, **kw: Any) -> Any:
    data = content.encode() if isinstance(content, str) else content
    return read_state_file(
        data, manager, path=f"{ROOT}/{CPU_FILE if manager == 'cpu' else MEMORY_FILE}",
        state_dir=ROOT, observed_at=5.0, **kw,
    )  # fmt: skip


def observe(
    node: Node,
    *,
    podresources: bool = True,
    pod_dirs: bool | tuple[str, ...] = True,
    config: bool = True,
    files: dict[str, str] | None = None,
    snapshot: NodeSnapshot | None = None,
) -> ObservedNode:
    snap = snapshot if snapshot is not None else node.snapshot()
    texts = files if files is not None else render_state_files(node)
    if pod_dirs is True:
        uids: tuple[str, ...] | None = tuple(p.uid for p in snap.pods)
    elif pod_dirs is False:
        uids = None
    else:
        uids = pod_dirs
    return build_observed_node(
        Observation(
            name="obs",
            observed_at=5.0,
            topology=node.topology,
            config=node.config if config else None,
            cpu=reading("cpu", texts.get(CPU_FILE)),
            memory=reading("memory", texts.get(MEMORY_FILE)),
            pod_uids=uids,
            list_response=build_list_response(snap) if podresources else None,
            allocatable=build_allocatable_response(snap) if podresources else None,
            sources=(SourceStatus("checkpoint", 5.0, True),),
        )
    )


def recorded(snapshot: NodeSnapshot) -> dict[str, Any]:
    """What the state files can tell of each pod: UID -> allocations (pods with entries)."""
    out: dict[str, Any] = {}
    for p in snapshot.pods:
        containers = {
            c.name: (str(c.cpuset), c.isolation, c.memory)
            for c in p.containers
            if c.cpuset or c.memory
        }
        if containers or p.pod_cpuset is not None or p.pod_memory:
            out[p.uid] = (
                None if p.pod_cpuset is None else str(p.pod_cpuset),
                p.pod_memory,
                containers,
            )
    return out


def names(snapshot: NodeSnapshot) -> dict[str, str]:
    return {p.uid: f"{p.namespace}/{p.name}" for p in snapshot.pods if p.uid}


POD_SCOPE_DEMO = (demo.DATABASE_POD, demo.ML_POD, demo.CLASSIC_POD, demo.BURSTABLE_POD)


@pytest.fixture(scope="module")
def pod_scope_node() -> Node:
    config = parse_kubelet_config_text(demo.POD_SCOPE_CONFIG, "1.37")
    node = Node("sim", get_preset("server-2s-4numa-128t"), config, clock=lambda: 100.0)
    for text in POD_SCOPE_DEMO:
        for pod in parse_pod_manifests(text):
            assert node.admit(pod).admitted
    return node


# -- the observed snapshot equals the engine's ------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "config", "manifests"),
    [
        pytest.param("server-2s-4numa-128t", demo.POD_SCOPE_CONFIG, POD_SCOPE_DEMO, id="pod-scope"),
        pytest.param(
            "topoDualSocketHT",
            demo.CONTAINER_SCOPE_CONFIG,
            (demo.CONTAINER_SCOPE_MIXED_POD, demo.GUARANTEED_TWO_POD),
            id="container-scope",
        ),
        pytest.param("topoDualSocketHT", POD_SCOPE, (ONE_SHARED,), id="one-shared-container"),
        pytest.param(
            "topoDualSocketHT", CONTAINER_SCOPE, (demo.GUARANTEED_TWO_POD,), id="v-static"
        ),
        pytest.param("topoDualSocketHT", NONE_POLICY, (demo.BURSTABLE_POD,), id="none-policy"),
    ],
)
def test_observed_snapshot_is_the_engines(preset: str, config: str, manifests: tuple[str]) -> None:
    node = engine_node(preset, config, manifests)
    snap = node.snapshot()
    observed = observe(node)
    got = observed.snapshot
    assert got is not None and got.simulated is False and got.source == "checkpoint"
    assert recorded(got) == recorded(snap)
    assert names(got) == {uid: key for uid, key in names(snap).items() if uid in recorded(snap)}
    assert {f"{p.namespace}/{p.name}" for p in got.pods} == {
        f"{p.namespace}/{p.name}" for p in snap.pods
    }
    assert got.reserved_cpus == snap.reserved_cpus
    assert got.default_cpuset == snap.default_cpuset
    assert got.memory == snap.memory
    assert observed.stale == () and not observed.stale_uids
    assert all(f.accepted and f.read_as == "1.37 gate on" for f in observed.files)
    assert not [n for n in observed.notes if "isolation" in n]


def test_memory_isolation_follows_podresources(pod_scope_node: Node) -> None:
    snap = pod_scope_node.snapshot()
    got = observe(pod_scope_node).snapshot
    assert got is not None
    want = {(p.uid, c.name): c.memory_isolation for p in snap.pods for c in p.containers}
    have = {(p.uid, c.name): c.memory_isolation for p in got.pods if p.uid for c in p.containers}
    assert have and all(want[k] == v for k, v in have.items())


def test_pods_without_entries_have_names_but_no_uid(pod_scope_node: Node) -> None:
    observed = observe(pod_scope_node)
    web = observed.identity("frontend", "web")
    assert web is not None and web.uid == "" and web.sources == ("podresources",)
    db = observed.identity("databases", "tightly-coupled-database")
    assert db is not None and db.uid and db.sources == ("checkpoint", "podresources")
    assert db.live_dir is True


def test_pods_are_sorted_so_tags_and_colours_stay_put(pod_scope_node: Node) -> None:
    snap = pod_scope_node.snapshot()
    shuffled = replace(snap, pods=tuple(reversed(snap.pods)))
    a = observe(pod_scope_node).snapshot
    b = observe(pod_scope_node, snapshot=shuffled).snapshot
    assert a is not None and b is not None
    assert [p.name for p in a.pods] == [p.name for p in b.pods]
    keys = [(p.namespace, p.name) for p in a.pods]
    assert keys == sorted(keys)


# -- without PodResources -------------------------------------------------------------------


def test_checkpoint_only_shows_uids_and_the_recorded_placement(pod_scope_node: Node) -> None:
    snap = pod_scope_node.snapshot()
    observed = observe(pod_scope_node, podresources=False)
    got = observed.snapshot
    assert got is not None
    assert recorded(got) == recorded(snap)  # two shared containers per bubble: told apart
    assert {p.namespace for p in got.pods} == {UID_ONLY_NAMESPACE}
    assert {p.name for p in got.pods} == set(recorded(snap))
    assert all(i.namespace is None and i.sources == ("checkpoint",) for i in observed.identities)
    assert observed.pools is not None and observed.pools.source == "checkpoint"
    # reserved CPUs: from the configuration's reservedSystemCPUs (PodResources is missing)
    assert got.reserved_cpus == CPUSet.parse("0,64")


def test_a_lone_shared_container_needs_podresources() -> None:
    node = engine_node("topoDualSocketHT", POD_SCOPE, (ONE_SHARED,))
    snap = node.snapshot()
    with_pr = observe(node).snapshot
    assert with_pr is not None
    assert {c.name: c.isolation for c in with_pr.pods[0].containers} == {
        "fast": "container",
        "helper": "pod",
    }
    observed = observe(node, podresources=False)
    got = observed.snapshot
    assert got is not None
    pod = got.pods[0]
    assert {c.name: str(c.cpuset) for c in pod.containers} == {
        c.name: str(c.cpuset) for c in snap.pods[0].containers
    }
    assert {c.isolation for c in pod.containers} == {"container"}
    assert any("does not report the isolation of fast, helper" in n for n in observed.notes)
    # without reservedSystemCPUs or PodResources the reserved CPUs are unknown, and said so
    assert got.reserved_cpus == CPUSet()
    assert any("reserved CPUs are unknown" in n for n in observed.notes)


# -- without the state files ------------------------------------------------------------------


def test_podresources_only_uses_the_consumer_arithmetic(pod_scope_node: Node) -> None:
    snap = pod_scope_node.snapshot()
    observed = observe(pod_scope_node, files={}, pod_dirs=False)
    got = observed.snapshot
    assert got is not None and got.source == "podresources"
    assert all(p.uid == "" for p in got.pods)
    want = {f"{p.namespace}/{p.name}": p for p in snap.pods}
    for p in got.pods:
        sim = want[f"{p.namespace}/{p.name}"]
        assert p.pod_cpuset == sim.pod_cpuset
        assert p.shared_pool() == sim.shared_pool()
        assert p.exclusive_cpus() == sim.exclusive_cpus()
        for c in p.containers:
            (s,) = [x for x in sim.containers if x.name == c.name]
            assert (c.isolation, c.cpuset) == (s.isolation, s.cpuset)
    # the default set: every CPU minus what pods hold (reserved CPUs are in it, as in the kubelet)
    assert got.default_cpuset == snap.default_cpuset
    assert got.memory == ()  # the machine state is only in memory_manager_state


def test_no_topology_means_no_snapshot(pod_scope_node: Node) -> None:
    node = pod_scope_node
    observed = build_observed_node(
        Observation(name="obs", observed_at=1.0, cpu=reading("cpu", None))
    )
    assert observed.snapshot is None and observed.pools is None
    assert observed.ready is False
    assert node.topology is not None


# -- stale entries ------------------------------------------------------------------------------


def _with_stale(node: Node, uid: str, cpus: str) -> dict[str, str]:
    """The node's state files plus a CPU entry and a memory entry for ``uid``."""
    from app.domain.node.state_files import cpu_checkpoint_state, memory_checkpoint_state

    cpu = cpu_checkpoint_state(node)
    taken = CPUSet.parse(cpus)
    cpu = CPUCheckpointState(
        cpu.policy_name,
        cpu.default_cpu_set - taken,
        {**cpu.entries, uid: {"ghost": taken}},
        cpu.pod_entries,
    )
    mem = memory_checkpoint_state(node)
    mem = MemoryCheckpointState(
        mem.policy_name,
        mem.machine_state,
        {**mem.entries, uid: {"ghost": (CheckpointBlock((1,), "memory", 1 << 30),)}},
        mem.pod_entries,
    )
    return {
        CPU_FILE: write_cpu_checkpoint(cpu, "V4"),
        MEMORY_FILE: write_memory_checkpoint(mem, "V3"),
    }


GHOST = "0b5e7c1d-dead-4bee-8000-000000000001"


@pytest.mark.parametrize(
    ("podresources", "pod_dirs", "stale"),
    [
        pytest.param(True, True, True, id="pods-dir-and-podresources"),
        pytest.param(False, True, True, id="pods-dir-only"),
        pytest.param(True, False, True, id="podresources-only"),
        pytest.param(False, False, None, id="neither-unknown"),
        pytest.param(True, "with-ghost-dir", False, id="dir-still-there"),
        pytest.param(False, "with-ghost-dir", False, id="dir-still-there-no-pr"),
    ],
)
def test_stale_entries(
    pod_scope_node: Node, podresources: bool, pod_dirs: bool | str, stale: bool | None
) -> None:
    files = _with_stale(pod_scope_node, GHOST, "20-21")
    uids: bool | tuple[str, ...] = pod_dirs if isinstance(pod_dirs, bool) else (
        *(p.uid for p in pod_scope_node.snapshot().pods),
        GHOST,
    )  # fmt: skip
    observed = observe(pod_scope_node, podresources=podresources, pod_dirs=uids, files=files)
    ghost = observed.identity(UID_ONLY_NAMESPACE, GHOST)
    assert ghost is not None and ghost.uid == GHOST
    assert ghost.stale is bool(stale)
    assert (GHOST in observed.stale_uids) is bool(stale)
    entries = [
        (s.file, s.container, str(s.cpus) if s.cpus is not None else None) for s in observed.stale
    ]
    if stale:
        assert entries == [(CPU_FILE, "ghost", "20-21"), (MEMORY_FILE, "ghost", None)]
        assert observed.stale_counts() == {CPU_FILE: 1, MEMORY_FILE: 1}
    else:
        assert entries == []
    if stale is None:
        assert any("stale entries cannot be told" in n for n in observed.notes)
    # the stale pod still owns its CPUs in the snapshot (the kubelet has not freed them)
    assert observed.snapshot is not None
    pod = observed.snapshot.pod(UID_ONLY_NAMESPACE, GHOST)
    assert pod is not None and pod.exclusive_cpus() == CPUSet.parse("20-21")
    # the live pods are untouched
    for p in observed.snapshot.pods:
        if p.uid and p.uid != GHOST:
            assert p.uid not in observed.stale_uids


# -- joining ----------------------------------------------------------------------------------


def _pr(
    name: str, containers: list[ContainerResources], cpu_ids: tuple[int, ...] = ()
) -> PodResources:
    return PodResources(name=name, namespace="ns", containers=tuple(containers), cpu_ids=cpu_ids)


def _mem(size: int, *numa: int) -> ContainerMemory:
    return ContainerMemory("memory", size, TopologyInfo.of(numa))


CPU_STATE = CPUCheckpointState(
    "static",
    CPUSet.parse("0,5-7"),
    {"uid-a": {"app": CPUSet.parse("1-2")}, "uid-b": {"main": CPUSet.parse("3"), "side": CPUSet.parse("4")}},
    {"uid-b": CPUSet.parse("3-4")},
)  # fmt: skip
MEM_STATE = MemoryCheckpointState(
    "Static",
    {},
    {
        "uid-m1": {"c": (CheckpointBlock((0,), "memory", 100),)},
        "uid-m2": {"c": (CheckpointBlock((0,), "memory", 100),)},
        "uid-m3": {"c": (CheckpointBlock((1,), "memory", 100),)},
    },
)


@pytest.mark.parametrize(
    ("pods", "want", "ambiguous"),
    [
        pytest.param(
            [_pr("a", [ContainerResources("app", cpu_ids=(2, 1))])],
            {"uid-a": "a"},
            set(),
            id="container-cpuset-unsorted",
        ),
        pytest.param(
            [_pr("b", [ContainerResources("main", cpu_ids=(3,)), ContainerResources("side")], (4, 3))],
            {"uid-b": "b"},
            set(),
            id="pod-level-cpus-and-a-slice",
        ),
        pytest.param(
            [_pr("a", [ContainerResources("app", cpu_ids=(1, 2, 5))])],
            {},
            set(),
            id="different-cpuset-no-join",
        ),
        pytest.param(
            [_pr("x", [ContainerResources("other", cpu_ids=(1, 2))])],
            {},
            set(),
            id="other-container-name-no-join",
        ),
        pytest.param(
            [_pr("b", [ContainerResources("main", cpu_ids=(3,))], (3, 4, 5))],
            {},
            set(),
            id="pod-level-conflict-no-join",
        ),
        pytest.param(
            [_pr("m1", [ContainerResources("c", memory=(_mem(100, 0),))]),
             _pr("m3", [ContainerResources("c", memory=(_mem(100, 1),))])],
            {"uid-m3": "m3"},
            {"uid-m1", "uid-m2"},
            id="identical-memory-is-ambiguous",
        ),
        pytest.param(
            [_pr("empty", [ContainerResources("c")])],
            {},
            set(),
            id="nothing-reported-no-join",
        ),
    ],
)  # fmt: skip
def test_match_pods(pods: list[PodResources], want: dict[str, str], ambiguous: set[str]) -> None:
    m = match_pods(CPU_STATE, MEM_STATE, pods)
    assert {uid: pods[i].name for uid, i in m.matched.items()} == want
    assert set(m.ambiguous) == ambiguous


def test_ambiguous_pods_are_not_stale_without_a_pods_dir() -> None:
    observed = build_observed_node(
        Observation(
            name="obs",
            observed_at=1.0,
            topology=get_preset("topoDualSocketHT"),
            config=KubeletConfig(cpu_manager_policy="static", memory_manager_policy="Static"),
            memory=reading("memory", write_memory_checkpoint(MEM_STATE, "V3")),
            list_response=build_list_response_of(
                _pr("m1", [ContainerResources("c", memory=(_mem(100, 0),))]),
                _pr("m2", [ContainerResources("c", memory=(_mem(100, 0),))]),
            ),
        )
    )
    by_uid = {i.uid: i for i in observed.identities if i.uid}
    assert not by_uid["uid-m1"].stale and not by_uid["uid-m2"].stale
    assert by_uid["uid-m3"].stale  # no candidate at all
    assert any("fit several PodResources pods" in n for n in observed.notes)


def build_list_response_of(*pods: PodResources) -> Any:
    from app.domain.podresources import ListPodResourcesResponse

    return ListPodResourcesResponse(tuple(pods))


# -- reading the state files --------------------------------------------------------------------


def test_read_state_file_newest_reader_and_checksums(pod_scope_node: Node) -> None:
    text = render_state_files(pod_scope_node)[CPU_FILE]
    r = reading("cpu", text)
    f = r.file
    assert (f.present, f.accepted, f.version, f.family, f.read_as) == (
        True, True, "V4", "1.37", "1.37 gate on",
    )  # fmt: skip
    assert f.refused_by == () and f.problem is None
    assert {c.status for c in f.checksums} == {"valid"}
    assert isinstance(r.state, CPUCheckpointState) and r.state.pod_entries
    assert f.to_dict()["source"] == "checkpoint" and f.to_dict()["observedAt"] == 5.0


def _corrupt(text: str) -> str:
    """Change one CPU id inside the V4 data string (the checksums no longer match)."""
    marker = '\\"defaultCpuSet\\":\\"0,'
    assert marker in text
    return text.replace(marker, '\\"defaultCpuSet\\":\\"0-1,', 1)


def test_corrupt_checkpoint_is_shown_with_the_kubelet_text(pod_scope_node: Node) -> None:
    text = _corrupt(render_state_files(pod_scope_node)[CPU_FILE])
    f = reading("cpu", text).file
    assert f.refused_by and f.refused_by[0][0] == "1.37 gate on"
    assert f.error == "could not load v4 checkpoint: checkpoint is corrupted"
    assert f.message == (
        "could not restore state from checkpoint: could not load v4 checkpoint: checkpoint is "
        "corrupted, please drain this node and delete the CPU manager checkpoint file "
        '"/var/lib/kubelet/cpu_manager_state" before restarting Kubelet'
    )
    assert "invalid" in {c.status for c in f.checksums}
    assert f.problem is not None and "checkpoint is corrupted" in f.problem
    # A 1.36 kubelet reads the intact inline part: shown, with the 1.37 refusal kept.
    assert (f.accepted, f.read_as) == (True, "1.36 gate on")
    assert [r for r, _ in f.refused_by] == ["1.37 gate on", "1.37 gate off"]
    assert f.problem.startswith("cpu_manager_state: refused by kubelet 1.37 gate on (")
    assert f.problem.endswith("shown as read by kubelet 1.36 gate on")


def test_truncated_checkpoint_is_refused_by_every_kubelet(pod_scope_node: Node) -> None:
    text = render_state_files(pod_scope_node)[MEMORY_FILE][:200]
    r = reading("memory", text)
    assert r.state is None and not r.file.accepted and r.file.read_as is None
    assert len(r.file.refused_by) == 5  # every reader but <=1.17, which has no memory manager
    assert r.file.message is not None
    assert r.file.message.startswith("could not restore state from checkpoint: ")
    assert '"/var/lib/kubelet/memory_manager_state"' in r.file.message
    assert r.file.problem == f"memory_manager_state: {r.file.message}"


def test_older_file_read_as_the_newest_kubelet_reads_it(pod_scope_node: Node) -> None:
    from app.domain.node.state_files import cpu_checkpoint_state

    state = cpu_checkpoint_state(pod_scope_node)
    v2 = write_cpu_checkpoint(
        CPUCheckpointState(state.policy_name, state.default_cpu_set, state.entries), "V2"
    )
    f = reading("cpu", v2).file
    assert (f.version, f.accepted, f.read_as, f.refused_by) == ("V2", True, "1.37 gate on", ())
    v1 = write_cpu_checkpoint(
        CPUCheckpointState("static", CPUSet.parse("0-3"), {}, None, {"cid-1": CPUSet.parse("4")}),
        "V1",
    )
    f1 = reading("cpu", v1).file
    assert f1.version == "V1" and f1.refused_by and f1.refused_by[0][0] == "1.37 gate on"
    assert f1.accepted and f1.read_as == "≤1.17"


@pytest.mark.parametrize(
    ("content", "read_error", "present", "problem"),
    [
        pytest.param(None, None, False, None, id="absent"),
        pytest.param(None, "/var/lib/kubelet/cpu_manager_state: permission denied", True, "permission denied", id="unreadable"),
        pytest.param(b"not json", None, True, "invalid character", id="not-json"),
        pytest.param(b"", None, True, "unexpected end of JSON input", id="empty"),
    ],
)  # fmt: skip
def test_bad_or_missing_files_never_raise(
    content: bytes | None, read_error: str | None, present: bool, problem: str | None
) -> None:
    f = reading("cpu", content, read_error=read_error).file
    assert f.present is present and not f.accepted
    if problem is None:
        assert f.problem is None
    else:
        assert f.problem is not None and problem in f.problem


@pytest.mark.parametrize(
    ("cpu_version", "memory_version", "pod_level", "release"),
    [
        pytest.param("V4", "V3", True, "1.37", id="1.37"),
        pytest.param("V3", "V2", True, "1.36", id="1.36-gate-on"),
        pytest.param("V2", "V1", False, "1.35", id="older"),
        pytest.param(None, None, False, "1.37", id="no-files"),
    ],
)
def test_infer_config(
    pod_scope_node: Node,
    cpu_version: str | None,
    memory_version: str | None,
    pod_level: bool,
    release: str,
) -> None:
    from app.domain.node.state_files import cpu_checkpoint_state, memory_checkpoint_state

    cpu = mem = None
    if cpu_version is not None and memory_version is not None:
        cs = cpu_checkpoint_state(pod_scope_node)
        ms = memory_checkpoint_state(pod_scope_node)
        if not pod_level:
            cs = CPUCheckpointState(cs.policy_name, cs.default_cpu_set, cs.entries)
            ms = MemoryCheckpointState(ms.policy_name, ms.machine_state, ms.entries)
        cpu = reading("cpu", write_cpu_checkpoint(cs, cpu_version))
        mem = reading("memory", write_memory_checkpoint(ms, memory_version))
    got_release, config = infer_config(cpu, mem)
    assert got_release == release == config.release
    assert config.pod_level_resource_managers is pod_level
    assert config.topology_manager_scope == ("pod" if pod_level else "container")
    if cpu is not None:
        assert (config.cpu_manager_policy, config.memory_manager_policy) == ("static", "Static")


def test_without_a_config_the_files_policies_are_shown(pod_scope_node: Node) -> None:
    observed = observe(pod_scope_node, config=False)
    assert observed.config_inferred
    assert observed.snapshot is not None
    c = observed.snapshot.config
    assert (c.cpu_manager_policy, c.memory_manager_policy, c.topology_manager_scope) == (
        "static", "Static", "pod",
    )  # fmt: skip
    assert any("no kubelet configuration was read" in n for n in observed.notes)


def test_policy_mismatch_is_noted(pod_scope_node: Node) -> None:
    node = pod_scope_node
    snap = node.snapshot()
    cfg = replace(node.config, cpu_manager_policy="none")
    observed = build_observed_node(
        Observation(
            name="obs",
            observed_at=1.0,
            topology=node.topology,
            config=cfg,
            cpu=reading("cpu", render_state_files(node)[CPU_FILE]),
            list_response=build_list_response(snap),
        )
    )
    assert any("records policy 'static'" in n for n in observed.notes)


# -- property: any pods the engine admits come back the same way --------------------------------


def _res(cpu: str | None, memory: str | None, *, limits: bool = True) -> ResourceRequirements:
    block = {k: Quantity.parse(v) for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return ResourceRequirements(block, block if limits else {})


@st.composite
def admissible_pods(draw: st.DrawFn) -> Pod:
    """Pods the 12-CPU box often admits: classic Guaranteed, Guaranteed with a non-integral cpu
    (memory only), Burstable, and pod-level bubbles with slices, shared containers, sidecars
    and regular init containers."""
    uid = draw(st.uuids(version=4)).hex
    kind = draw(st.sampled_from(["classic", "fractional", "burstable", "bubble"]))
    mem = draw(st.sampled_from(["128Mi", "256Mi"]))
    inits: list[Container] = []
    if draw(st.booleans()):
        inits.append(Container("init", _res("1", mem) if kind != "burstable" else _res(None, None)))
    if kind == "classic":
        apps = [
            Container(f"c{i}", _res(draw(st.sampled_from(["1", "2"])), mem))
            for i in range(draw(st.integers(1, 2)))
        ]
        resources = None
    elif kind == "fractional":
        apps = [Container("c0", _res("500m", mem))]
        resources = None
    elif kind == "burstable":
        apps = [Container("c0", _res("250m", None, limits=False))]
        resources = None
    else:
        n_slices = draw(st.integers(0, 2))
        n_shared = draw(st.integers(0, 2))
        apps = [Container(f"x{i}", _res("1", mem)) for i in range(n_slices)]
        apps += [Container(f"s{i}") for i in range(n_shared)]
        if draw(st.booleans()):
            inits.append(
                Container(
                    "side",
                    draw(st.sampled_from([_res("1", mem), ResourceRequirements()])),
                    "Always",
                )
            )
        if not apps:
            apps = [Container("s0")]
        resources = _res(str(n_slices + draw(st.integers(0, 2)) + 1), "1Gi")
    return Pod(uid, f"p-{uid[:8]}", "ns", tuple(apps), tuple(inits), resources)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(admissible_pods(), min_size=1, max_size=5), st.booleans())
def test_observed_equals_simulated_for_random_pods(pods: list[Pod], podresources: bool) -> None:
    config = parse_kubelet_config_text(POD_SCOPE, "1.37")
    node = Node("sim", get_preset("topoDualSocketHT"), config, clock=lambda: 1.0)
    for pod in pods:
        node.admit(pod)
    snap = node.snapshot()
    observed = observe(node, podresources=podresources)
    got = observed.snapshot
    assert got is not None
    want, have = recorded(snap), recorded(got)

    # Placement is exact; an isolation label may differ only where the sources cannot tell
    # (a lone shared container without PodResources, a regular init container sharing a
    # listed container's CPUs), and then a note names the container.
    def placement(r: dict[str, Any]) -> dict[str, Any]:
        return {
            uid: (pc, pm, {n: (cs, m) for n, (cs, _iso, m) in containers.items()})
            for uid, (pc, pm, containers) in r.items()
        }

    assert placement(have) == placement(want)
    for p in got.pods:
        if not p.uid:
            continue  # known to PodResources only: nothing recorded to compare
        label = (
            f"pod {p.namespace}/{p.name}"
            if p.namespace != UID_ONLY_NAMESPACE
            else f"pod UID {p.uid}"
        )
        for c in p.containers:
            if c.isolation != _isolation_in(snap.pods, p.uid, c.name):
                assert any(n.startswith(label) and c.name in n for n in observed.notes), c.name
                # what PodResources lists (sidecars, app containers) is never inferred
                assert not podresources or c.kind == "init", c.name
    if podresources:
        # every recorded pod is named, unless its allocations fit several pods (then noted)
        named = names(got)
        for uid, key in names(snap).items():
            if uid in want and named[uid] != key:
                assert named[uid] == f"{UID_ONLY_NAMESPACE}/{uid}"
                assert any(
                    uid in n and "fit several PodResources pods" in n for n in observed.notes
                )
        assert not observed.stale
    assert got.default_cpuset == snap.default_cpuset
    assert got.reserved_cpus == snap.reserved_cpus or not podresources
    assert got.memory == snap.memory
    assert observed.stale == ()


def _isolation_in(pods: Sequence[PodAllocation], uid: str, name: str) -> str | None:
    for p in pods:
        if p.uid == uid:
            for c in p.containers:
                if c.name == name:
                    return c.isolation
    return None


def test_block_conversion_keeps_numa_order() -> None:
    r = reading(
        "memory",
        write_memory_checkpoint(
            MemoryCheckpointState(
                "Static", {}, {"u": {"c": (CheckpointBlock((1, 0), "hugepages-2Mi", 4 << 20),)}}
            ),
            "V3",
        ),
    )
    observed = build_observed_node(
        Observation(name="o", observed_at=1.0, topology=get_preset("topoDualSocketHT"), memory=r)
    )
    assert observed.snapshot is not None
    (pod,) = observed.snapshot.pods
    assert pod.containers[0].memory == (Block((1, 0), "hugepages-2Mi", 4 << 20),)

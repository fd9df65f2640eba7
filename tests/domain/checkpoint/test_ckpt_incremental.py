"""Incremental state-file writing (app.domain.checkpoint.incremental,
state_files.StateFilesWriter): after every admission and removal, on every release's formats,
the bytes equal a full render (issue 20 point 8)."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint import (
    CPUCheckpointState,
    MemoryCheckpointState,
    NUMANodeState,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint.incremental import CheckpointWriter
from app.domain.cpuset import CPUSet
from app.domain.node.state_files import (
    StateFilesWriter,
    _Kept,
    memory_checkpoint_state,
    render_state_files,
    state_file_versions,
)
from app.services.demo import SERVER_CONFIG, bubble_pod, classic_pod
from app.services.nodes.inputs import (
    build_engine_node,
    parse_config,
    parse_manifests,
    resolve_topology,
)
from tests.domain.checkpoint.test_ckpt_codecs import cpu_states, memory_states


def _pod(rng: random.Random, i: int) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return bubble_pod(f"bubble-{i}", "apps", 2, {"main": 1}, ("proxy",))
    if kind == 1:
        return classic_pod(f"classic-{i}", "telco", str(rng.choice([1, 2, 4])), "1Gi")
    if kind == 2:
        return bubble_pod(f"db-{i}", "data", 4, {"engine": 2, "cache": 1}, ())
    if kind == 3:
        return classic_pod(f"huge-{i}", "batch", "2", f"{rng.choice([2, 40, 90])}Gi")
    return (
        f"metadata: {{name: web-{i}, namespace: web}}\n"
        "spec: {containers: [{name: nginx, resources: {requests: {cpu: 500m}}}]}\n"
    )


NO_MANAGER_GATE = SERVER_CONFIG.replace("  PodLevelResourceManagers: true\n", "")
CASES = [
    ("1.37", SERVER_CONFIG),
    ("1.37", NO_MANAGER_GATE),
    ("1.36", SERVER_CONFIG),
    ("1.36", NO_MANAGER_GATE),
    ("1.35", NO_MANAGER_GATE),
    (
        "1.37",
        NO_MANAGER_GATE.replace("cpuManagerPolicy: static", "cpuManagerPolicy: none").replace(
            "memoryManagerPolicy: Static", "memoryManagerPolicy: None"
        ),
    ),
]
SERVER = "server-2s-8numa-512t"
# 12 NUMA nodes: Go's JSON orders the machine state's keys as text (0, 1, 10, 11, 2...),
# go-spew as numbers.
TWELVE_NUMA = "sockets=2,numa_per_socket=6,cores_per_numa=4,threads_per_core=2"


def _on_twelve_numa(config_text: str) -> str:
    # No topology manager policy: merging hints over 12 NUMA nodes is slow and beside the point.
    return (
        config_text.replace('"0-1,256-257"', '"0-1,48-49"')
        .replace("topologyManagerPolicy: restricted", "topologyManagerPolicy: none")
        .replace(
            "topologyManagerScope: pod\n",
            "topologyManagerScope: pod\n"
            'topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: "12"\n',
        )
    )


@pytest.mark.parametrize(
    ("release", "config_text", "topology_name"),
    [
        *[(release, text, SERVER) for release, text in CASES],
        ("1.37", _on_twelve_numa(SERVER_CONFIG), TWELVE_NUMA),
        ("1.36", _on_twelve_numa(SERVER_CONFIG), TWELVE_NUMA),
        ("1.35", _on_twelve_numa(NO_MANAGER_GATE), TWELVE_NUMA),
    ],
)
def test_incremental_files_equal_a_full_render_after_every_step(
    release: str, config_text: str, topology_name: str
) -> None:
    _, topology = resolve_topology(topology_name)
    config = parse_config(config_text, release)
    node = build_engine_node("inc", topology, config, time.time)
    writer = StateFilesWriter()
    rng = random.Random(release + str(len(config_text)))
    versions = state_file_versions(config)
    assert writer.render(node) == render_state_files(node)
    for i in range(70):
        if node.pods and rng.random() < 0.3:
            node.remove(rng.choice(list(node.pods)))
        else:
            for pod in parse_manifests(_pod(rng, i), config):
                node.admit(pod)
        assert writer.render(node) == render_state_files(node), (versions, i)
    assert node.pods


def test_unchanged_pods_are_not_encoded_again() -> None:
    _, topology = resolve_topology("server-2s-8numa-512t")
    config = parse_config(SERVER_CONFIG, "1.37")
    node = build_engine_node("inc", topology, config, time.time)
    for i in range(6):
        for pod in parse_manifests(classic_pod(f"p{i}", "ns", "2", "1Gi"), config):
            node.admit(pod)
    writer = StateFilesWriter()
    writer.render(node)
    kept = {id(item) for m in writer._writer._cpu + writer._writer._memory for item in m.current}
    machine = writer._writer._machine
    kept_numa = {id(item) for item in machine.current}
    for pod in parse_manifests(classic_pod("new", "ns", "2", "1Gi"), config):
        node.admit(pod)
    assert writer.render(node) == render_state_files(node)
    now = [item for m in writer._writer._cpu + writer._writer._memory for item in m.current]
    assert len([item for item in now if id(item) not in kept]) == 2  # the new pod's CPU, memory
    # The machine state: only the NUMA node the pod's memory came from is encoded again.
    assert len(machine.current) == 8
    assert len([item for item in machine.current if id(item) not in kept_numa]) == 1


def test_unchanged_numa_node_states_are_not_converted_again() -> None:
    _, topology = resolve_topology("server-2s-8numa-512t")
    config = parse_config(SERVER_CONFIG, "1.37")
    node = build_engine_node("inc", topology, config, time.time)
    kept = _Kept()
    before = memory_checkpoint_state(node, kept)
    for pod in parse_manifests(classic_pod("new", "ns", "2", "1Gi"), config):
        node.admit(pod)
    after = memory_checkpoint_state(node, kept)
    assert after == memory_checkpoint_state(node)
    reused = [n for n, s in after.machine_state.items() if s is before.machine_state[n]]
    assert len(reused) == 7  # the pod's memory came from one NUMA node


def test_one_writer_follows_a_node_through_releases() -> None:
    """A restarted node keeps its writer: the kept items serve every format version."""
    _, topology = resolve_topology("server-2s-8numa-512t")
    writer = StateFilesWriter()
    manifests = [_pod(random.Random(9), i) for i in range(12)]
    for release, text in [*CASES, *reversed(CASES)]:
        config = parse_config(text, release)
        node = build_engine_node("inc", topology, config, time.time)
        for manifest in manifests:
            for pod in parse_manifests(manifest, config):
                node.admit(pod)
        assert writer.render(node) == render_state_files(node), (release, len(text))


_cpu_writes = st.lists(
    st.tuples(
        st.one_of(cpu_states(pod_entries=True), cpu_states(pod_entries=False)),
        st.sampled_from(["V2", "V3", "V4"]),
    ),
    min_size=1,
    max_size=4,
)
_memory_writes = st.lists(
    st.tuples(
        st.one_of(memory_states(pod_entries=True), memory_states(pod_entries=False)),
        st.sampled_from(["V1", "V2", "V3"]),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(_cpu_writes)
def test_one_writer_writes_any_cpu_states_as_the_full_writer(
    writes: list[tuple[CPUCheckpointState, str]],
) -> None:
    """Any policy name (a NUL in it included), default set, map present, empty or absent."""
    writer = CheckpointWriter()
    for state, version in [*writes, *writes]:
        expected = write_cpu_checkpoint(state, version)
        assert writer.cpu(state, version) == expected
        assert writer.cpu(state, version) == expected  # nothing changed: the last text


@settings(max_examples=60, deadline=None)
@given(_memory_writes)
def test_one_writer_writes_any_memory_states_as_the_full_writer(
    writes: list[tuple[MemoryCheckpointState, str]],
) -> None:
    writer = CheckpointWriter()
    for state, version in [*writes, *writes]:
        expected = write_memory_checkpoint(state, version)
        assert writer.memory(state, version) == expected
        assert writer.memory(state, version) == expected


@pytest.mark.parametrize(
    "policy",
    ["static\x00", "\x00entries\x00:map[]", "\x00defaultCpuSet\x00", "\x00machineState\x00"],
)
def test_a_policy_name_holding_a_marker_is_written_in_full(policy: str) -> None:
    cpu = CPUCheckpointState(policy, CPUSet.parse("0-3"), {"pod": {"c": CPUSet([5])}}, {})
    machine = {0: NUMANodeState(1, {}, (0,))}
    memory = MemoryCheckpointState(policy, machine, {"pod": {"c": ()}}, None)
    writer = CheckpointWriter()
    for version in ("V2", "V3", "V4"):
        assert writer.cpu(cpu, version) == write_cpu_checkpoint(cpu, version)
    for version in ("V1", "V2", "V3"):
        assert writer.memory(memory, version) == write_memory_checkpoint(memory, version)


def test_many_changed_pods_at_once_are_written_as_the_full_writer() -> None:
    """More changes than are put in place (the kept order is sorted again), then a few."""
    states = [
        CPUCheckpointState(
            "static",
            CPUSet.parse("0-3"),
            {f"{prefix}{i:02}": {"c": CPUSet([4 + i])} for i in range(count)},
            {f"{prefix}{i:02}": CPUSet([4 + i]) for i in range(0, count, 3)},
        )
        for prefix, count in [("a", 20), ("b", 30), ("a", 21), ("a", 19), ("b", 2)]
    ]
    writer = CheckpointWriter()
    for state in states:
        for version in ("V4", "V3"):
            assert writer.cpu(state, version) == write_cpu_checkpoint(state, version)

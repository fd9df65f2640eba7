"""``app.domain.restart``: properties of a kubelet restart on the files its own release wrote
(nothing moves, the same bytes are written again), outcomes per pod, rejected pods' CPUs
returned, and the start-up refusal's shape."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.kubelet_config import RELEASES
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.presets import get_preset
from app.domain.restart import (
    KEPT,
    NODE_PLACEHOLDER,
    REJECTED,
    RESTORED,
    RestartInputError,
    RestartResult,
    _judge,
    config_for_release,
    recovery_steps,
    restart_for,
    restart_node,
    start_up,
    with_node_names,
)
from app.services.demo import bubble_pod, classic_pod
from tests.helpers import POD_SCOPE, SMALL

CLASSIC = """\
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
kubeReserved: {cpu: "1", memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
- numaNode: 0
  limits: {memory: 2148Mi}
"""

SHAPES = st.lists(
    st.tuples(st.sampled_from(["bubble", "classic", "burstable"]), st.integers(1, 3)),
    min_size=1,
    max_size=6,
)


def manifest(i: int, shape: str, n: int, pod_level: bool) -> str:
    if shape == "bubble" and pod_level:
        return bubble_pod(f"b{i}", "apps", n + 1, {"main": n}, ("side",))
    if shape == "burstable":
        return (
            f"metadata: {{name: w{i}, namespace: web}}\n"
            "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
        )
    return classic_pod(f"c{i}", "telco", str(n), "1Gi")


def filled(config_text: str, release: str, shapes: list[tuple[str, int]]) -> Node:
    config = parse_kubelet_config_text(config_text, release)
    node = Node("n", get_preset(SMALL), config, clock=lambda: 1.0)
    for i, (shape, n) in enumerate(shapes):
        for pod in parse_pod_manifests(manifest(i, shape, n, config.pod_level_resource_managers)):
            node.admit(pod)
    return node


def restart_same(node: Node, release: str | None = None) -> tuple[RestartResult, dict[str, str]]:
    files = render_state_files(node)
    config = node.config
    if release is not None:
        config = parse_kubelet_config_text(
            POD_SCOPE if config.pod_level_resource_managers else CLASSIC, release
        )
    pods = [(p, node.admitted_at[uid]) for uid, p in node.pods.items()]
    return restart_node(node.topology, config, files, pods, name="n"), files


@pytest.mark.parametrize("release", RELEASES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=SHAPES)
def test_container_level_restart_keeps_everything_and_rewrites_the_same_bytes(
    release: str, shapes: list[tuple[str, int]]
) -> None:
    node = filled(CLASSIC, release, shapes)
    result, files = restart_same(node)
    assert result.started and result.lost == ()
    assert {p.outcome for p in result.pods} <= {KEPT}
    assert result.node is not None and render_state_files(result.node) == files


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=SHAPES)
def test_138_restores_its_own_pod_level_pods_byte_for_byte(shapes: list[tuple[str, int]]) -> None:
    node = filled(POD_SCOPE, "1.38", shapes)
    result, files = restart_same(node)
    assert result.started and result.exit_code == 0
    outcomes = {p.uid: p.outcome for p in result.pods}
    for uid in node.pods:
        want = RESTORED if node.cpu_state.get_pod_cpu_set(uid) is not None else KEPT
        assert outcomes[uid] == want
    assert result.node is not None and render_state_files(result.node) == files


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=SHAPES)
def test_137_rejections_give_every_cpu_back(shapes: list[tuple[str, int]]) -> None:
    """1.37 allocates pod-level pods anew after a restart; whatever it rejects leaves nothing
    behind, and the CPUs still add up to the machine."""
    node = filled(POD_SCOPE, "1.37", shapes)
    result, _ = restart_same(node)
    after = result.node
    assert after is not None and after.memory is not None
    state = after.cpu_state
    for p in result.pods:
        if p.outcome == REJECTED:
            assert p.uid not in after.pods
            assert p.uid not in state.assignments and state.get_pod_cpu_set(p.uid) is None
            assert after.memory.state.get_pod_memory_blocks(p.uid) is None
    held = [c for e in state.assignments.values() for c in e.values()]
    held += [c for c in state.pod_entries.values()]
    union = state.default_cpuset.union(*held)
    assert union.is_subset_of(node.topology.all_cpus)


def test_upgrade_to_138_restores_what_137_wrote() -> None:
    node = filled(POD_SCOPE, "1.37", [("bubble", 2), ("classic", 2), ("burstable", 1)])
    result, _ = restart_same(node, "1.38")
    assert [p.outcome for p in result.pods] == [RESTORED, KEPT, KEPT]
    assert result.exit_code == 0


def test_recorded_pods_must_cover_the_files() -> None:
    node = filled(POD_SCOPE, "1.38", [("bubble", 2), ("classic", 1)])
    files = render_state_files(node)
    first = next(iter(node.pods.values()))
    with pytest.raises(RestartInputError, match="not among the recorded pods"):
        restart_node(node.topology, node.config, files, [(first, 0.0)])
    twice = [(first, 0.0), (first, 1.0)]
    with pytest.raises(RestartInputError, match="listed twice"):
        restart_node(node.topology, node.config, files, twice)


def test_a_refused_start_keeps_no_node_and_names_the_steps() -> None:
    node = filled(POD_SCOPE, "1.38", [("bubble", 2)])
    files = render_state_files(node)
    files["cpu_manager_state"] = files["cpu_manager_state"][:-5]  # truncated
    result = restart_node(node.topology, node.config, files, [], state_dir="/var/lib/kubelet")
    assert not result.started and result.node is None and result.pods == ()
    assert result.error is not None and result.error.startswith("start cpu manager error: ")
    assert "/var/lib/kubelet/cpu_manager_state" in result.recovery[2]
    assert result.exit_code == 1


# -- kubernetes#140989: a re-allocated pod-level pod leaks its old CPUs (1.36, 1.37) ----------

LEAK_CONFIG = {
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0",
    "memoryManagerPolicy": "None",
    "topologyManagerPolicy": "best-effort",
    "topologyManagerScope": "pod",
    "featureGates": {"PodLevelResources": True, "PodLevelResourceManagers": True},
}


def _leak_case(
    release: str, cpus: int = 6, pods: tuple[tuple[str, str], ...] = (("t", "1-2"),)
) -> RestartResult:
    """``TestPodLevelResourcesReallocationAfterRestart``: pods of budget 2 (one container of 2
    CPUs) were admitted on ``pods``' CPUs; a kubelet of ``release`` restarts on those files."""
    from app.domain.checkpoint import CPUCheckpointState, write_cpu_checkpoint
    from app.domain.cpuset import CPUSet
    from app.domain.kubelet_config import kubelet_config_from_dict
    from app.domain.pod.manifest import pod_from_conformance
    from app.domain.topology.model import CPUInfo, CPUTopology

    topology = CPUTopology([CPUInfo(i, i, 0, 0, 0) for i in range(cpus)], name=f"uniform-{cpus}")
    held = CPUSet().union(*(CPUSet.parse(c) for _, c in pods))
    state = CPUCheckpointState(
        "static",
        topology.all_cpus - held,
        {uid: {"container1": CPUSet.parse(c)} for uid, c in pods},
        {uid: CPUSet.parse(c) for uid, c in pods},
    )
    res = {"cpu": "2", "memory": "1Gi"}
    ctr = {"cpu": "2", "memory": "100Mi"}
    records = [
        (
            pod_from_conformance(
                {
                    "uid": uid,
                    "resources": {"requests": res, "limits": dict(res)},
                    "containers": [{"name": "container1", "requests": ctr, "limits": ctr}],
                }
            ),
            float(i),
        )
        for i, (uid, _) in enumerate(pods)
    ]
    config = kubelet_config_from_dict(LEAK_CONFIG, release)
    files = {"cpu_manager_state": write_cpu_checkpoint(state, "V4")}
    return restart_node(topology, config, files, records, name="n6", state_dir="/d")


def test_137_reallocation_leaks_the_old_cpus_and_warns_about_the_next_start() -> None:
    result = _leak_case("1.37")
    assert result.started and [p.outcome for p in result.pods] == ["reallocated"]
    assert str(result.leaked_cpus) == "1-2"
    assert result.to_dict()["leakedCpus"] == "1-2" and result.exit_code == 1
    # the model proves it: the next start on the files this kubelet writes fails
    assert (
        "the next kubelet start on the files this restart writes fails: start cpu manager "
        'error: current set of available CPUs "0-5" doesn\'t match'
    ) in result.warnings[0]
    assert "kubernetes#141041" in result.warnings[1] and "kubectl drain n6" in result.warnings[1]


def test_138_restores_and_leaks_nothing() -> None:
    result = _leak_case("1.38")
    assert [p.outcome for p in result.pods] == [RESTORED]
    assert result.to_dict()["leakedCpus"] == "" and result.warnings == ()


def test_a_pod_rejected_while_cpus_are_leaked_says_so() -> None:
    """t moves to 5-6 and leaks 1-2; u then finds one CPU free and is rejected."""
    result = _leak_case("1.37", 8, (("t", "1-2"), ("u", "3-4")))
    t, u = result.pods
    assert (t.outcome, str(t.budget_after), t.leaked_cpus) == ("reallocated", "5-6", None)
    assert u.outcome == REJECTED and str(u.leaked_cpus) == "1-2"
    assert u.to_dict()["leakedCpus"] == "1-2" and t.to_dict()["leakedCpus"] is None
    assert str(result.leaked_cpus) == "1-2"


def test_recovery_steps_name_the_node_or_say_where_its_name_goes() -> None:
    """Issue 21 point 2: the documented recovery names the node when it is known; written
    without it (the inspector's), ``with_node_names`` puts the nodes in its commands."""
    named = recovery_steps("/var/lib/kubelet", "1.35", "worker-1")
    assert named[0] == "drain the node (kubectl drain worker-1 --ignore-daemonsets)"
    assert named[-1] == "uncordon the node (kubectl uncordon worker-1)"
    blank = recovery_steps("/var/lib/kubelet", "1.35", None)
    assert all(NODE_PLACEHOLDER not in s for s in named)
    assert [with_node_names(s, ["worker-1"]) for s in blank] == list(named)
    steps = "; ".join(blank)
    both = with_node_names(steps, ["a", "b"])
    assert "kubectl drain a b --ignore-daemonsets" in both and "kubectl uncordon a b)" in both
    assert NODE_PLACEHOLDER not in both
    # One step for several nodes speaks of them all.
    assert "drain the nodes (kubectl drain a b" in both and "uncordon the nodes (" in both
    assert "admits each node's pods afresh" in both and "the node " not in both


@pytest.mark.parametrize("to", RELEASES)
@pytest.mark.parametrize("pod_level", [False, True])
def test_a_start_up_is_the_restart_without_pods_and_leaves_its_judge_as_it_was(
    to: str, pod_level: bool
) -> None:
    """``start_up`` answers as ``restart_for`` without pods (started or not, error,
    recovery, losses, refusals) but for the node that results; the node kept to judge
    start-ups is not changed by judging files that hold pods."""
    release = RELEASES[-1] if pod_level else RELEASES[0]
    node = filled(POD_SCOPE if pod_level else CLASSIC, release, [("classic", 2), ("bubble", 2)])
    files = render_state_files(node)
    names = {uid: p.key for uid, p in node.pods.items()}
    target = config_for_release(node.config.to_dict(), to)
    kw: dict[str, Any] = {"state_dir": "/var/lib/kubelet", "name": "n", "pod_names": names}
    judge = _judge(node.topology, target.config)
    before = (judge.cpu_state.to_dict(), judge.memory.state.to_dict() if judge.memory else None)
    for _ in range(2):  # the second with the judge kept
        started = start_up(target, node.topology, files, **kw)
        rehearsed = restart_for(target, node.topology, files, None, **kw)
        expected = {**rehearsed.to_dict(), "previousRelease": None}
        assert started.node is None and started.to_dict() == expected
        assert _judge(node.topology, target.config) is judge
    assert node.pods  # files that name pods were judged
    after = (judge.cpu_state.to_dict(), judge.memory.state.to_dict() if judge.memory else None)
    assert after == before

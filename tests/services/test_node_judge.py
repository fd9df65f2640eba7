"""The one judge of pods against a node (``app.services.nodes.judge``): conflicts in one order,
a dry run never touches the node, several pods are judged in order on a scratch copy, and an
admission of the same pods gives the same verdicts."""

from __future__ import annotations

import pytest

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.node.model import Node
from app.domain.node.state_files import render_state_files
from app.domain.pod.model import Pod
from app.domain.presets import get_preset
from app.services.demo import classic_pod
from app.services.nodes.errors import PodConflictError
from app.services.nodes.judge import PodsOnNode, judge, scratch_copy
from tests.helpers import POD_SCOPE, SMALL


def _node() -> Node:
    config = parse_kubelet_config_text(POD_SCOPE, "1.37")
    node = Node("judged", get_preset(SMALL), config, clock=lambda: 5.0)
    for pod in _pods(classic_pod("held", "ns", "4", "1Gi")):
        assert node.admit(pod).admitted
    return node


def _pods(*manifests: str) -> list[Pod]:
    return [p for m in manifests for p in parse_pod_manifests(m)]


BATCH = (
    classic_pod("a", "j", "2", "1Gi"),
    classic_pod("b", "j", "4", "1Gi"),
    classic_pod("c", "j", "6", "1Gi"),  # 11 allocatable - 4 held - 2 - 4 = 1 left: rejected
)


def test_a_dry_run_of_several_pods_is_the_admission_of_them_and_keeps_nothing() -> None:
    node = _node()
    files = render_state_files(node)
    dry = judge(node, _pods(*BATCH))
    assert render_state_files(node) == files and len(node.pods) == 1  # untouched
    real = judge(node, _pods(*BATCH), commit=True)
    assert [(r.admitted, r.reason) for r in dry] == [(r.admitted, r.reason) for r in real]
    assert [r.admitted for r in real] == [True, True, False]
    assert len(node.pods) == 3


def test_one_pod_is_asked_of_the_node_itself_without_a_copy() -> None:
    node = _node()
    copies: list[Node] = []

    def scratch() -> Node:
        copies.append(scratch_copy(node))
        return copies[-1]

    (result,) = judge(node, _pods(classic_pod("one", "j", "2", "1Gi")), scratch=scratch)
    assert result.admitted and copies == []
    judge(node, _pods(*BATCH[:2]), scratch=scratch)
    assert len(copies) == 1 and len(copies[0].pods) == 3  # the held pod and the two judged


@pytest.mark.parametrize(
    ("manifests", "field", "message"),
    [
        pytest.param(
            (classic_pod("held", "ns", "1", "1Gi"),),
            "metadata.name",
            "pod ns/held is already on node judged",
            id="name-on-the-node",
        ),
        pytest.param(
            (classic_pod("x", "j", "1", "1Gi"), classic_pod("x", "j", "1", "1Gi")),
            "metadata.name",
            "pod j/x is already on node judged",
            id="name-twice-in-the-batch",
        ),
    ],
)
def test_conflicts_name_first(manifests: tuple[str, ...], field: str, message: str) -> None:
    node = _node()
    with pytest.raises(PodConflictError) as err:
        judge(node, _pods(*manifests))
    assert (err.value.field, err.value.message) == (field, message)


def test_a_uid_on_the_node_under_another_name_is_a_uid_conflict() -> None:
    node = _node()
    held = next(iter(node.pods.values()))
    existing = PodsOnNode(frozenset(), frozenset({held.uid}))
    pod = _pods(classic_pod("renamed", "ns", "1", "1Gi"))[0]
    with pytest.raises(PodConflictError) as err:
        judge(node, [pod], existing=PodsOnNode(frozenset(), frozenset({pod.uid})))
    assert err.value.field == "metadata.uid"
    assert judge(node, [pod], existing=existing)[0].admitted  # another uid: judged

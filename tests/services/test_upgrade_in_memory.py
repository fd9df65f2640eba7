"""A simulated node's upgrade verdict is judged on its files in memory
(``app.services.upgrade.check_files``: ``check_root_content`` without the files' tables and
consistency details, the pair's check on the decoded states, inspection reports kept per
parsed file and shared with the start-up model). The same verdict the slow way: the node's
files written as a real kubelet root dir on disk, ``check_root_dir`` reading them with every
detail, the start-up model without the pods' names, nothing kept between checks. Over a slice
of the demo fleet, for every release and ``PodLevelResourceManagers`` setting."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.domain.checkpoint.gojson_scan import forget
from app.domain.kubelet_config import RELEASES
from app.domain.node.state_files import GATE
from app.domain.restart import restart_for
from app.services.checkpoints import check_root_dir
from app.services.nodes.demo_fleet import DemoFleet
from app.services.nodes.errors import NodeInputError
from app.services.nodes.target_config import restart_config
from app.services.upgrade import (
    KUBELET_ROOT,
    NodeFiles,
    UpgradeInputError,
    _lost_pods,
    check_files,
    node_verdict,
    with_start,
)

#: 20 nodes of the 5,000-node demo fleet (every 250th).
SHARD, SHARDS = 7, 250


@pytest.fixture(scope="module")
def nodes() -> list[NodeFiles]:
    fleet = DemoFleet(5000)
    fleet.build(SHARD, SHARDS)
    out = [sim.node_files() for sim in fleet.list()]
    assert any(n.pods for n in out) and any(not n.pods for n in out)
    assert {n.release for n in out} == set(RELEASES)
    return out


def _renamed(doc: Any, old: str, new: str) -> Any:
    if isinstance(doc, str):
        return doc.replace(old, new)
    if isinstance(doc, list):
        return [_renamed(x, old, new) for x in doc]
    if isinstance(doc, dict):
        return {k: _renamed(v, old, new) for k, v in doc.items()}
    return doc


def _on_disk(node: NodeFiles, release: str, gate: bool | None, tmp: Path) -> dict[str, Any]:
    """The node's verdict from its files on disk, under ``tmp`` (shown as the kubelet's)."""
    try:
        target, _ = restart_config(node.config_text, node.release, release, gate)
    except NodeInputError as exc:
        raise UpgradeInputError(exc.message, exc.field or "kubeletConfig") from None
    start = restart_for(
        target, node.topology, node.files, None, state_dir=KUBELET_ROOT, name=node.name
    )
    root = tmp / node.name
    (root / "pods").mkdir(parents=True)
    for name, content in node.files.items():
        if content is not None:
            (root / name).write_bytes(content.encode() if isinstance(content, str) else content)
    (root / "config.yaml").write_text(node.config_text or "{}\n")
    for uid in node.pods:
        os.mkdir(root / "pods" / uid)
    check = check_root_dir(root, release, gate=target.config.gate(GATE), pod_names=node.pods)
    doc = _renamed(node_verdict(node.name, check), str(root), KUBELET_ROOT)
    doc["lostPods"] = _lost_pods(doc, node.name, node.pods)
    return with_start(doc, start)


@pytest.mark.parametrize("gate", [None, True, False])
@pytest.mark.parametrize("release", RELEASES)
def test_in_memory_verdict_is_the_on_disk_one(
    nodes: list[NodeFiles], release: str, gate: bool | None, tmp_path: Path
) -> None:
    judged = 0
    for node in nodes:
        forget()
        try:
            slow = _on_disk(node, release, gate, tmp_path)
        except UpgradeInputError as exc:
            with pytest.raises(UpgradeInputError) as refused:
                check_files(node, release, gate)
            assert (refused.value.message, refused.value.field) == (exc.message, exc.field)
            continue
        forget()
        assert check_files(node, release, gate) == slow, node.name
        assert check_files(node, release, gate) == slow, node.name  # from the kept reports
        judged += 1
    assert judged, "every node refused the question: nothing compared"

"""The demo fleet workers' fit shared between nodes in the same free state
(``app.services.fleet.workers._fit_entries``): every node's entry (rank, bits, row bytes) is
the one its own dry run gives (``DemoFleet.dry_run_all`` on every node, scored), but for the dry
run's own batch id and time, for pods of every kind and every scoring strategy, and for a pod
whose name a node's pod already has (a conflict: asked of that node itself)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from app.domain.kubelet_config import DEFAULT_RELEASE, KubeletConfig
from app.services.demo import bubble_pod, classic_pod
from app.services.encoded_json import json_bytes
from app.services.fleet import workers
from app.services.fleet.ranked import kind
from app.services.fleet.rows import fit_result
from app.services.fleet.score import LEAST_ALLOCATED, STRATEGIES, fit_order, scored
from app.services.nodes.demo_fleet import SEED, DemoFleet
from app.services.nodes.inputs import parse_manifests
from app.services.watch import without_keys

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_fleet_fit import BURSTABLE  # the bench's Burstable pod

#: A slice of the 5,000-node demo fleet (one shard of 10): 500 nodes.
SHARD, SHARDS = 4, 10
INIT = """\
apiVersion: v1
kind: Pod
metadata: {name: with-init, namespace: default}
spec:
  initContainers:
  - {name: setup, image: busybox, resources: {requests: {cpu: "4", memory: 1Gi}, limits: {cpu: "4", memory: 1Gi}}}
  containers:
  - {name: app, image: busybox, resources: {requests: {cpu: "2", memory: 3Gi}, limits: {cpu: "2", memory: 3Gi}}}
  - {name: side, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}}
"""
SHAPES = {
    "guaranteed 2": classic_pod("fit-2", "default", "2", "2Gi"),
    "guaranteed 8": classic_pod("fit-8", "default", "8", "8Gi"),
    "guaranteed 30, 60Gi": classic_pod("fit-30", "default", "30", "60Gi"),
    "pod-level": bubble_pod("fit-bubble", "default", 4, {"app": 2}, ("side",)),
    "init containers": INIT,
    "burstable": BURSTABLE,
    # a name the demo workloads use: some nodes already have this pod
    "conflict": classic_pod("guaranteed-0", "apps", "2", "2Gi"),
}
#: Per dry run, not per node state: the batch id and the time of the dry run.
VOLATILE = ("batch", "admittedAt")


def _stable(doc: Any) -> Any:
    return without_keys(doc, VOLATILE)


@pytest.fixture(scope="module")
def fleet() -> DemoFleet:
    # this process plays a worker
    workers._start(5000, SEED, SHARD, workers.shard_owners(5000, SEED, SHARDS))
    return workers._shard()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_shared_fit_entries_are_each_nodes_own(fleet: DemoFleet, shape: str, strategy: str) -> None:
    manifest = SHAPES[shape]
    pod = parse_manifests(manifest, KubeletConfig(release=DEFAULT_RELEASE))[0]
    own = [
        scored(fit_result(name, doc), pod, strategy, workers._basis_of)
        for name, doc in fleet.dry_run_all(manifest)
    ]
    shared = workers._fit_entries(fleet, manifest, pod, strategy)
    assert [e[0] for e in shared] == [fit_order(r) for r in own]
    assert [e[1] for e in shared] == [kind(r) for r in own]
    batches = set()
    for (_, _, body), theirs in zip(shared, own, strict=True):
        mine = json.loads(body)
        assert _stable(mine) == _stable(theirs), theirs["node"]
        if "batch" in theirs:  # an error answer has none
            theirs = {**theirs, "batch": mine["batch"]}
        assert body == json_bytes(theirs), theirs["node"]
        batches.add(mine.get("batch"))
    assert len(batches - {None}) == sum(1 for r in own if "batch" in r)  # each its own
    if shape == "conflict":
        assert any(r["reason"] == "AlreadyExists" for r in own) or any(
            "already" in (r.get("message") or "") for r in own
        )


def test_nodes_in_one_state_are_dry_run_once(fleet: DemoFleet) -> None:
    states = {workers._states[n.name] for n in fleet.list()}
    assert len(states) < len(fleet.list()) * 0.8, "the slice has few nodes in the same state"
    asked: list[int] = []
    run_all = fleet.dry_run_all

    def counting(manifest: str, nodes: Any = None) -> Any:
        asked.append(len(nodes) if nodes is not None else len(fleet.list()))
        return run_all(manifest, nodes)

    fleet.dry_run_all = counting  # type: ignore[method-assign]
    try:
        manifest = SHAPES["guaranteed 2"]
        pod = parse_manifests(manifest, KubeletConfig(release=DEFAULT_RELEASE))[0]
        workers._fit_entries(fleet, manifest, pod, LEAST_ALLOCATED)
    finally:
        del fleet.dry_run_all
    assert asked == [len(states)]

"""Fleet fit ranking (``app.services.fleet.score``) against the scheduler plugin's own vectors
(kubernetes-sigs/scheduler-plugins pkg/noderesourcetopology/score_test.go: a pod of 2 CPUs and
20 MiB on the three two-NUMA nodes of ``defaultNUMANodes``, single-numa-node container scope),
and the ranked fit through the hub's routes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.contracts.summary import NodeSummaryV1
from app.domain.kubelet_config import DEFAULT_RELEASE, KubeletConfig
from app.domain.pod.model import Pod
from app.services.demo import classic_pod
from app.services.fleet.score import (
    BALANCED_ALLOCATION,
    LEAST_ALLOCATED,
    MAX_NODE_SCORE,
    MOST_ALLOCATED,
    MULTI_NUMA,
    SHARED_CPUS,
    ScoreBasis,
    effective_request,
    node_score,
    placement_flags,
)
from app.services.nodes.inputs import parse_manifests
from app.web.app import create_app
from tests.helpers import make_settings

MI = 1024 * 1024
YAML = {"Content-Type": "application/yaml"}


def _pod(manifest: str) -> Pod:
    return parse_manifests(manifest, KubeletConfig(release=DEFAULT_RELEASE))[0]


def _node(
    cpus: int, memory: int, *, policy: str = "single-numa-node", scope: str = "container"
) -> ScoreBasis:
    """A node of two NUMA zones, each offering ``cpus`` CPUs and ``memory`` bytes, as its
    score reads its summary."""
    row = {
        "total": cpus,
        "reserved": 0,
        "nodeShared": cpus,
        "podShared": 0,
        "exclusive": 0,
        "available": cpus,
        "memory": [{"resource": "memory", "allocatable": memory, "reserved": 0, "free": memory}],
    }
    summary = NodeSummaryV1.model_validate(
        {
            "node": "n",
            "source": "simulation",
            "simulated": True,
            "release": "1.37",
            "policies": {
                "cpuManagerPolicy": "static",
                "memoryManagerPolicy": "Static",
                "topologyManagerPolicy": policy,
                "topologyManagerScope": scope,
                "podLevelResources": False,
                "podLevelResourceManagers": False,
            },
            "topology": {
                "name": "t",
                "sockets": 1,
                "numaNodes": 2,
                "cpus": 2 * cpus,
                "memoryBytes": 2 * memory,
            },
            "numa": [{"numaNode": 0, **row}, {"numaNode": 1, **row}],
            "pods": 0,
            "rejected": 0,
        }
    )
    return ScoreBasis.of(summary)


NODE1, NODE2, NODE3 = _node(4, 500 * MI), _node(2, 50 * MI), _node(6, 60 * MI)
POD = _pod(classic_pod("pod1", "default", "2", "20Mi"))


@pytest.mark.parametrize(
    ("strategy", "node", "score"),
    [
        # score_test.go, TestNodeResourceScorePlugin: the node each strategy elects.
        pytest.param(MOST_ALLOCATED, NODE2, 70, id="most-allocated-node2"),
        pytest.param(BALANCED_ALLOCATION, NODE3, 100, id="balanced-node3"),
        pytest.param(LEAST_ALLOCATED, NODE1, 73, id="least-allocated-node1"),
        # TestNodeResourcePartialDataScorePlugin: Node1 under each strategy.
        pytest.param(MOST_ALLOCATED, NODE1, 27, id="most-allocated-node1"),
        pytest.param(BALANCED_ALLOCATION, NODE1, 89, id="balanced-node1"),
    ],
)
def test_the_plugins_own_vectors(strategy: str, node: ScoreBasis, score: int) -> None:
    assert node_score(strategy, POD, node) == score


@pytest.mark.parametrize("strategy", [LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION])
def test_each_strategy_elects_the_node_the_plugin_elects(strategy: str) -> None:
    scores = {
        name: node_score(strategy, POD, n)
        for name, n in (("Node1", NODE1), ("Node2", NODE2), ("Node3", NODE3))
    }
    elected = {LEAST_ALLOCATED: "Node1", MOST_ALLOCATED: "Node2", BALANCED_ALLOCATION: "Node3"}
    assert max(scores, key=lambda k: scores[k]) == elected[strategy]


def test_only_guaranteed_pods_on_single_numa_node_nodes_are_scored() -> None:
    burstable = _pod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n"
        "  - name: c\n    resources: {requests: {cpu: 500m}}\n"
    )
    assert node_score(LEAST_ALLOCATED, burstable, NODE1) == MAX_NODE_SCORE
    restricted = _node(4, 500 * MI, policy="restricted")
    assert node_score(LEAST_ALLOCATED, POD, restricted) == 0
    # Pod scope scores the pod's effective request once; a pod too big for any NUMA node: 0.
    pod_scope = _node(4, 500 * MI, scope="pod")
    assert node_score(LEAST_ALLOCATED, POD, pod_scope) == 73
    assert node_score(LEAST_ALLOCATED, _pod(classic_pod("x", "d", "5", "1Gi")), pod_scope) == 0


def test_effective_request_is_the_plugins_not_the_kubelets() -> None:
    # GetPodEffectiveRequest: app containers add up, the largest init container wins where
    # larger; no sidecar rule.
    app = [{"cpu": 2, "memory": 10}, {"cpu": 1}]
    init = [{"cpu": 4}, {"cpu": 1, "memory": 5}]
    assert effective_request(app, init) == {"cpu": 4, "memory": 10}


def test_placement_flags() -> None:
    exclusive = {"allocation": {"containers": [{"isolation": "container"}]}, "numaNodes": [0]}
    assert placement_flags(exclusive) == []
    shared = {"allocation": {"containers": [{"isolation": "host"}]}, "numaNodes": [0, 1]}
    assert placement_flags(shared) == [SHARED_CPUS, MULTI_NUMA]


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp: Path = tmp_path_factory.mktemp("fit-rank")
    app = create_app(make_settings(tmp, hub=True, demo_fleet=24))
    with TestClient(app) as client:
        assert app.state.hub.fleet.ready.wait(60)
        yield client


def _fit(hub: TestClient, strategy: str) -> list[dict[str, Any]]:
    pod = classic_pod("rank", "default", "2", "1Gi").encode()
    r = hub.post("/api/v1/fleet/fit", content=pod, headers=YAML, params={"strategy": strategy})
    assert r.status_code == 200, r.text
    assert r.json()["strategy"] == strategy
    results: list[dict[str, Any]] = r.json()["results"]
    return results


@pytest.mark.parametrize("strategy", [LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION])
def test_the_fleet_fit_is_ranked_best_first(hub: TestClient, strategy: str) -> None:
    rows = _fit(hub, strategy)
    fits = [r for r in rows if r["admitted"]]
    assert fits and rows[: len(fits)] == fits  # every fit before every refusal
    keys = [(-r["score"], len(r["flags"])) for r in fits]
    assert keys == sorted(keys)
    pod = _pod(classic_pod("rank", "default", "2", "1Gi"))
    fleet = hub.app.state.hub  # type: ignore[attr-defined]
    for r in fits:
        basis = ScoreBasis.of(fleet.summary_of(r["node"], None))
        assert r["score"] == node_score(strategy, pod, basis)
        assert r["flags"] == placement_flags(r)
    assert all(r["score"] is None for r in rows[len(fits) :])


def test_the_fit_page_and_its_json_twin_rank_the_same(hub: TestClient) -> None:
    manifest = classic_pod("rank", "default", "2", "1Gi")
    params = {"manifest": manifest, "strategy": MOST_ALLOCATED, "show": "all", "limit": 5}
    twin = hub.get("/fleet/fit.json", params=params)
    assert twin.status_code == 200, twin.text
    view = twin.json()
    api = _fit(hub, MOST_ALLOCATED)
    assert [r["node"] for r in view["results"]] == [r["node"] for r in api[:5]]
    assert view["total"] == 24 and view["matched"] == 24 and len(view["results"]) == 5
    assert view["fits"] == sum(1 for r in api if r["admitted"])
    page = hub.get("/fleet/fit", params=params)
    assert page.status_code == 200
    assert page.text.index(api[0]["node"]) < page.text.index(api[4]["node"])
    assert 'rel="next"' in page.text
    bad = hub.get("/fleet/fit.json", params={**params, "strategy": "Random"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "strategy"
    api_bad = hub.post(
        "/api/v1/fleet/fit", content=manifest.encode(), headers=YAML, params={"strategy": "x"}
    )
    assert api_bad.status_code == 422 and api_bad.json()["error"]["field"] == "strategy"

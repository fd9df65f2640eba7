"""The rejection page of the demo's pod-level case, ``ml/empty-shared-pool`` (issue 21 point 6):
it names the actual cause (no CPU left for the pod shared pool), describes the pod as "a 4-CPU
budget of which 3+1 are exclusive", does not answer "enough here alone?" next to "no possible
placement", and the reason the engine gives per topology manager policy is the one the
kubelet's policy_static.go gives (GetPodTopologyHints: an empty hint list, so restricted and
single-numa-node reject with TopologyAffinityError; best-effort reaches AllocatePod, which
rejects with EmptyPodSharedPoolError), in every release with pod-level resource managers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.services.demo import EMPTY_SHARED_POOL_POD
from tests.helpers import SMALL

YAML = {"Content-Type": "application/yaml"}
CONFIG = """\
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: {policy}
topologyManagerScope: pod
kubeReserved: {{cpu: "1", memory: 1Gi}}
systemReserved: {{memory: 1Gi}}
reservedMemory:
- numaNode: 0
  limits: {{memory: 2148Mi}}
featureGates: {{PodLevelResources: true, PodLevelResourceManagers: true}}
"""


def rejected_view(client: TestClient, policy: str, release: str) -> tuple[dict, str]:  # type: ignore[type-arg]
    r = client.post(
        "/api/v1/nodes",
        json={
            "name": "n",
            "topology": SMALL,
            "kubeletConfig": CONFIG.format(policy=policy),
            "release": release,
        },
    )
    assert r.status_code == 201, r.text
    r = client.post("/api/v1/nodes/n/pods", content=EMPTY_SHARED_POOL_POD, headers=YAML)
    assert r.status_code == 200 and r.json()["admitted"] is False, r.text
    (event,) = client.get("/nodes/n/history.json").json()["events"]
    return client.get(event["explainUrl"] + ".json").json(), client.get(event["explainUrl"]).text


@pytest.mark.parametrize("release", ["1.36", "1.37", "1.38"])
@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        ("single-numa-node", "TopologyAffinityError"),
        ("restricted", "TopologyAffinityError"),
        ("best-effort", "EmptyPodSharedPoolError"),
    ],
)
def test_the_reason_follows_the_kubelets_code_and_the_cause_is_named(
    client: TestClient, policy: str, release: str, reason: str
) -> None:
    view, html = rejected_view(client, policy, release)
    assert view["reason"] == reason and view["replayMatches"] is True
    if reason == "EmptyPodSharedPoolError":
        assert view["message"] == (
            "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving "
            "no cpus for shared containers"
        )
    cpu, memory = view["budgets"]
    assert cpu["text"] == "a 4-CPU budget of which 3+1 are exclusive"
    assert [(s["container"], s["amount"]) for s in cpu["exclusive"]] == [
        ("main-app", 3),
        ("metrics-sidecar", 1),
    ]
    assert cpu["shared"] == ["logging-sidecar"]
    assert memory["text"] == "a 4 GiB memory budget of which 3 GiB+1 GiB are exclusive"
    assert "leaving no memory for shared containers" in memory["violation"]
    cause = view["cause"]
    assert cause.startswith(
        "No CPU left for the pod shared pool: the exclusive containers main-app (3), "
        "metrics-sidecar (1) take the whole 4-CPU budget, and logging-sidecar must run in the "
        "pod shared pool."
    )
    assert "No memory left for the pod shared pool" in cause
    assert reason in cause
    # The page: the cause in the verdict box, the budget as asked, no "enough here alone? yes".
    assert '<p class="rejection-cause" id="cause"><strong>Cause:</strong> No CPU left' in html
    assert "a 4-CPU budget of which 3+1 are exclusive" in html
    assert "4 exclusive CPUs" not in html
    assert "CPUs yes" not in html and "not the question" in html


def test_a_pod_without_a_budget_problem_keeps_the_numa_answer(client: TestClient) -> None:
    """A classic Guaranteed pod that does not fit: the per-NUMA answer stays, no cause."""
    r = client.post(
        "/api/v1/nodes",
        json={
            "name": "n",
            "topology": SMALL,
            "kubeletConfig": CONFIG.format(policy="single-numa-node"),
            "release": "1.37",
        },
    )
    assert r.status_code == 201
    big = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: x}\nspec:\n  containers:\n"
        "  - name: c\n    resources: {limits: {cpu: '8', memory: 1Gi}}\n"
    )
    assert (
        client.post("/api/v1/nodes/n/pods", content=big, headers=YAML).json()["admitted"] is False
    )
    (event,) = client.get("/nodes/n/history.json").json()["events"]
    view = client.get(event["explainUrl"] + ".json").json()
    assert view["cause"] == "" and view["budgets"] == []
    assert "CPUs no" in client.get(event["explainUrl"]).text

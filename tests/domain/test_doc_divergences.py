"""Rejections the documentation describes otherwise (app/domain/doc_divergences.py), matched
on the engine's own verdicts for the tutorial's pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.domain.doc_divergences import TUTORIAL_URL, divergences_for, upstream_url
from app.domain.kubelet_config import KubeletConfig
from app.domain.node.model import Node
from app.domain.pod.model import Pod
from app.domain.presets import get_preset

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def pod(name: str) -> Pod:
    (p,) = parse_pod_manifests((FIXTURES / "pods" / "scenarios" / f"{name}.yaml").read_text())
    return p


def config(name: str, policy: str = "single-numa-node", release: str = "1.37") -> KubeletConfig:
    text = (FIXTURES / "kubelet" / f"{name}.yaml").read_text()
    text = text.replace(
        "topologyManagerPolicy: single-numa-node", f"topologyManagerPolicy: {policy}"
    )
    return parse_kubelet_config_text(text, release)


@pytest.mark.parametrize("policy", ["single-numa-node", "restricted", "best-effort"])
def test_container_scope_mixed_rejection_names_the_memory_manager(policy: str) -> None:
    # 1.36: before kubernetes#138770 the memory manager runs Allocate for the containers that
    # request no memory (this test ran on 1.37 before #138770 was modelled).
    cfg = config("container-scope-single-numa", policy, "1.36")
    p = pod("container-scope-mixed")
    result = Node("n", get_preset("topoDualSocketHT"), cfg).admit(p)
    assert not result.admitted
    (d,) = divergences_for(cfg, p, result.reason, result.message)
    assert d.key == "container-scope-memory-default-hint"
    assert d.upstream_file == "pkg/kubelet/cm/memorymanager/policy_static.go"
    assert d.upstream_url == (
        "https://github.com/kubernetes/kubernetes/blob/release-1.36/"
        "pkg/kubelet/cm/memorymanager/policy_static.go"
    )
    assert d.docs_url == TUTORIAL_URL
    assert "worker-1, worker-2" in d.code_does
    assert ("default hint is not found" in d.code_does) == (policy == "single-numa-node")


@pytest.mark.parametrize("release", ["1.37", "1.38"])
@pytest.mark.parametrize("policy", ["single-numa-node", "restricted", "best-effort"])
def test_container_scope_mixed_is_admitted_from_1_37(policy: str, release: str) -> None:
    """kubernetes#138770: as the v1.37 tutorial shows it, Running; no divergence is left."""
    cfg = config("container-scope-single-numa", policy, release)
    p = pod("container-scope-mixed")
    result = Node("n", get_preset("topoDualSocketHT"), cfg).admit(p)
    assert result.admitted, result.message
    message = "Allocate failed due to [memorymanager] failed to get the default NUMA affinity"
    assert divergences_for(cfg, p, "UnexpectedAdmissionError", message) == ()


def test_the_alternatives_it_names_admit_the_pod() -> None:
    p = pod("container-scope-mixed")
    topo = get_preset("topoDualSocketHT")
    assert Node("n", topo, config("pod-scope-single-numa")).admit(p).admitted
    text = (FIXTURES / "kubelet" / "container-scope-single-numa.yaml").read_text()
    no_mm = text.replace("memoryManagerPolicy: Static", "memoryManagerPolicy: None")
    assert Node("n", topo, parse_kubelet_config_text(no_mm, "1.37")).admit(p).admitted


def test_other_memory_rejections_are_not_matched() -> None:
    cfg = config("container-scope-single-numa")
    too_big = parse_pod_manifests(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  containers:\n  - name: c\n"
        "    resources: {limits: {cpu: '2', memory: 200Gi}}\n"
    )[0]
    result = Node("n", get_preset("topoDualSocketHT"), cfg).admit(too_big)
    assert not result.admitted
    assert divergences_for(cfg, too_big, result.reason, result.message) == ()
    # The same message on a pod without pod-level resources is no documented case either.
    message = "Allocate failed due to [memorymanager] failed to get the default NUMA affinity"
    assert divergences_for(cfg, too_big, "UnexpectedAdmissionError", message) == ()


def test_empty_shared_pool_reason_differs_only_under_best_effort() -> None:
    p = pod("empty-shared-pool")
    topo = get_preset("topoDualSocketHT")
    verdicts = {}
    for policy in ("single-numa-node", "best-effort"):
        cfg = config("pod-scope-single-numa", policy)
        r = Node("n", topo, cfg).admit(p)
        verdicts[policy] = (r.reason, [d.key for d in divergences_for(cfg, p, r.reason, r.message)])
    assert verdicts == {
        "single-numa-node": ("TopologyAffinityError", []),
        "best-effort": ("EmptyPodSharedPoolError", ["empty-shared-pool-best-effort"]),
    }


def test_upstream_link_follows_the_release() -> None:
    assert (
        upstream_url("a/b.go", "1.38")
        == "https://github.com/kubernetes/kubernetes/blob/master/a/b.go"
    )
    assert upstream_url("a/b.go", "1.35").endswith("/blob/release-1.35/a/b.go")

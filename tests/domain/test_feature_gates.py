"""The kubelet's start-up check of featureGates per release (app/domain/feature_gates.py)."""

from __future__ import annotations

import pytest

from app.domain.feature_gate_tables import GATE_RELEASES, KNOWN, LOCKED, SNAPSHOT_1_34
from app.domain.feature_gates import KUBELET_PREFIX, check_feature_gates
from app.domain.kubelet_config import KubeletConfigError, kubelet_config_from_dict


def verdict(gates: dict[str, bool], release: str) -> str | None:
    problem = check_feature_gates(gates, release, {})
    return None if problem is None else problem.message


@pytest.mark.parametrize("release", GATE_RELEASES)
def test_manager_gates_are_known_in_every_release(release: str) -> None:
    for name in (
        "CPUManagerPolicyAlphaOptions",
        "CPUManagerPolicyBetaOptions",
        "TopologyManagerPolicyAlphaOptions",
        "TopologyManagerPolicyBetaOptions",
        "TopologyManagerPolicyOptions",
        "PodLevelResources",
        "MemoryManager",
        "KubeletPodResourcesGet",
    ):
        assert name in KNOWN[release], name


@pytest.mark.parametrize(
    ("gates", "release", "expected"),
    [
        ({"NoSuchGate": True}, "1.37", "unrecognized feature gate: NoSuchGate"),
        ({"NoSuchGate": False}, "1.35", "unrecognized feature gate: NoSuchGate"),
        (
            {"PodLevelResourceManagers": False},
            "1.35",
            "unrecognized feature gate: PodLevelResourceManagers",
        ),
        ({"CPUManager": True}, "1.35", "unrecognized feature gate: CPUManager"),
        ({"SidecarContainers": True}, "1.37", "unrecognized feature gate: SidecarContainers"),
        (
            {"MemoryManager": False},
            "1.36",
            "cannot set feature gate MemoryManager to false, feature is locked to true",
        ),
        (
            {"KubeletPodResourcesListUseActivePods": False},
            "1.38",
            "cannot set feature gate KubeletPodResourcesListUseActivePods to false, "
            "feature is locked to true",
        ),
        (
            {"MemoryManager": False, "CPUManagerPolicyOptions": False},
            "1.37",
            "[cannot set feature gate MemoryManager to false, feature is locked to true, "
            "cannot set feature gate CPUManagerPolicyOptions to false, feature is locked to true]",
        ),
        (
            {"ClusterTrustBundleProjection": True},
            "1.36",
            "ClusterTrustBundleProjection is enabled, but depends on features that are "
            "disabled: [ClusterTrustBundle]",
        ),
    ],
    ids=[
        "unknown",
        "unknown-even-false",
        "not-yet-in-1.35",
        "removed-before-1.35",
        "removed-in-1.37",
        "locked",
        "locked-in-master",
        "two-locked-aggregate",
        "dependency",
    ],
)
def test_kubelet_refusals(gates: dict[str, bool], release: str, expected: str) -> None:
    assert verdict(gates, release) == KUBELET_PREFIX + expected


def test_unknown_stops_before_locked_errors() -> None:
    assert verdict({"MemoryManager": False, "Nope": True}, "1.37") == (
        KUBELET_PREFIX + "unrecognized feature gate: Nope"
    )


@pytest.mark.parametrize(
    ("gates", "release"),
    [
        ({"PodLevelResourceManagers": True, "PodLevelResources": True}, "1.36"),
        ({"SidecarContainers": True}, "1.36"),
        ({"KubeletPodResourcesListUseActivePods": False}, "1.37"),
        ({"MemoryManager": True, "CPUManagerPolicyAlphaOptions": True}, "1.38"),
        ({"ClusterTrustBundleProjection": True, "ClusterTrustBundle": True}, "1.35"),
        ({"AllAlpha": False, "AllBeta": True}, "1.37"),
    ],
)
def test_accepted(gates: dict[str, bool], release: str) -> None:
    assert verdict(gates, release) is None


def test_tables_are_consistent() -> None:
    assert len(SNAPSHOT_1_34) > 150
    for release in GATE_RELEASES:
        assert KNOWN[release]
    for name, (since, _value) in LOCKED.items():
        assert any(name in KNOWN[r] for r in GATE_RELEASES), name
        assert since.count(".") == 1


def test_kubelet_config_names_the_field_and_keeps_the_kubelet_text() -> None:
    with pytest.raises(KubeletConfigError) as info:
        kubelet_config_from_dict(
            {"featureGates": {"TopologyManagerPolicyOptions": True, "Bogus": True}}, "1.37"
        )
    assert info.value.field == "featureGates.Bogus"
    assert str(info.value.message) == KUBELET_PREFIX + "unrecognized feature gate: Bogus"


@pytest.mark.parametrize(
    ("name", "first", "gone"),
    [
        pytest.param("ContainerRestartRules", "1.35", None, id="alpha-in-1.34-missing-from-snapshot"),
        pytest.param("ShardedListAndWatch", "1.36", None, id="alpha-1.36"),
        pytest.param("KubeProxyIPVS", "1.37", None, id="added-1.37"),
        pytest.param("InPlacePodVerticalScalingAllocatedStatus", None, "1.35", id="removed-1.35"),
        pytest.param("UserNamespacesPodSecurityStandards", None, "1.36", id="removed-1.36"),
        pytest.param("CSIMigrationPortworx", None, "1.36", id="portworx-removed-1.36"),
    ],
)  # fmt: skip
def test_gate_lifetimes_per_release(name: str, first: str | None, gone: str | None) -> None:
    known = [r for r in GATE_RELEASES if name in KNOWN[r]]
    if first is not None:
        assert known == [r for r in GATE_RELEASES if r >= first]
        before = [r for r in GATE_RELEASES if r < first]
        for r in before:
            assert verdict({name: True}, r) == KUBELET_PREFIX + f"unrecognized feature gate: {name}"
    if gone is not None:
        assert known == [r for r in GATE_RELEASES if r < gone]
        assert verdict({name: False}, gone) == (
            KUBELET_PREFIX + f"unrecognized feature gate: {name}"
        )


@pytest.mark.parametrize(
    ("name", "release"),
    [("InPlacePodVerticalScaling", "1.35"), ("UserNamespacesSupport", "1.36"),
     ("KubeletPSI", "1.36"), ("DRAAdminAccess", "1.36")],
)  # fmt: skip
def test_gates_locked_in_1_35_and_1_36(name: str, release: str) -> None:
    earlier = GATE_RELEASES[GATE_RELEASES.index(release) - 1] if release != "1.35" else None
    assert verdict({name: False}, release) == (
        KUBELET_PREFIX + f"cannot set feature gate {name} to false, feature is locked to true"
    )
    assert verdict({name: True}, release) is None
    if earlier is not None:
        assert verdict({name: False}, earlier) is None

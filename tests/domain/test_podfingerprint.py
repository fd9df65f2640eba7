"""The NRT pod fingerprint equals k8stopologyawareschedwg/podfingerprint's on its own vectors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from app.domain.podfingerprint import (
    METHOD_ALL,
    METHOD_WITH_EXCLUSIVE_RESOURCES,
    fingerprint,
    has_exclusive_resources,
    sign,
    xxh64,
)
from app.domain.podresources import (
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    NUMANode,
    PodResources,
    TopologyInfo,
)

VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "podfingerprint" / "pods.json"
LIBRARY_SIGNATURE = "pfp0v001e477a4e3b2fc0ec6"  # podfingerprint_test.go "correct fingerprint"


def _library_pods() -> list[tuple[str, str]]:
    return [(p["namespace"], p["name"]) for p in json.loads(VECTORS.read_text())]


@pytest.mark.parametrize(
    ("data", "seed", "digest"),
    [
        pytest.param(b"", 0, 0xEF46DB3751D8E999, id="empty"),
        pytest.param(b"a", 0, 0xD24EC4F1A98C6E5B, id="one-byte"),
        pytest.param(b"abc", 0, 0x44BC2CF5AD770999, id="three-bytes"),
    ],
)
def test_xxh64_reference_digests(data: bytes, seed: int, digest: int) -> None:
    assert xxh64(data, seed) == digest


def test_the_library_vector() -> None:
    pods = _library_pods()
    assert len(pods) == 259
    assert sign(pods) == LIBRARY_SIGNATURE


def test_order_does_not_matter_but_membership_does() -> None:
    pods = _library_pods()
    shuffled = pods[:]
    random.Random(7).shuffle(shuffled)
    assert sign(shuffled) == LIBRARY_SIGNATURE
    assert sign(pods[1:]) != LIBRARY_SIGNATURE
    # the wrong-fingerprint case of the library's own table
    assert sign(pods) != "pfp0v001e477abb123fc0ec1"


def test_empty_set_has_a_signature() -> None:
    assert sign([]) == "pfp0v001" + xxh64(b"").to_bytes(8, "big").hex()


def _pod(name: str, **container: object) -> PodResources:
    return PodResources(
        name=name, namespace="ns", containers=(ContainerResources(name="c", **container),)
    )  # type: ignore[arg-type]


ON_NUMA_0 = TopologyInfo(nodes=(NUMANode(id=0),))
ANY_NUMA = TopologyInfo(nodes=(NUMANode(id=-1),))


@pytest.mark.parametrize(
    ("pod", "exclusive"),
    [
        pytest.param(_pod("shared"), False, id="no-exclusive-resources"),
        pytest.param(_pod("cpus", cpu_ids=(0, 2)), True, id="exclusive-cpus"),
        pytest.param(
            _pod("mem", memory=(ContainerMemory("memory", 1 << 30, ON_NUMA_0),)),
            True,
            id="pinned-memory",
        ),
        pytest.param(
            _pod("mem-any", memory=(ContainerMemory("memory", 1 << 30, ANY_NUMA),)),
            False,
            id="memory-any-numa",
        ),
        pytest.param(
            _pod("dev", devices=(ContainerDevices("vendor/gpu", ("g0",), ON_NUMA_0),)),
            True,
            id="device-with-affinity",
        ),
        pytest.param(
            _pod("dev-no-topo", devices=(ContainerDevices("vendor/gpu", ("g0",), None),)),
            False,
            id="device-without-topology",
        ),
        pytest.param(
            _pod("dev-no-ids", devices=(ContainerDevices("vendor/gpu", (), ON_NUMA_0),)),
            False,
            id="device-without-ids",
        ),
    ],
)
def test_which_pods_have_exclusive_resources(pod: PodResources, exclusive: bool) -> None:
    assert has_exclusive_resources(pod) is exclusive


def test_methods_choose_the_pods() -> None:
    pods = [_pod("shared"), _pod("cpus", cpu_ids=(4,))]
    assert fingerprint(pods, METHOD_ALL) == sign([("ns", "shared"), ("ns", "cpus")])
    assert fingerprint(pods, METHOD_WITH_EXCLUSIVE_RESOURCES) == sign([("ns", "cpus")])
    with pytest.raises(ValueError, match="unsupported pod fingerprint method"):
        fingerprint(pods, "some")

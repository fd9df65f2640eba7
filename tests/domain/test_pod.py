"""Pods, QoS, pod-level resources and pod parsing (app/domain/pod/model.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from app.domain.pod.manifest import pod_from_conformance, pod_from_manifest, synthetic_uid
from app.domain.pod.model import (
    Container,
    Pod,
    PodManifestError,
    ResourceList,
    ResourceRequirements,
    hugepage_size_bytes,
    is_overcommit_allowed,
)
from app.domain.pod.qos import (
    QOS_BEST_EFFORT,
    QOS_BURSTABLE,
    QOS_GUARANTEED,
    compute_pod_qos,
    is_container_equivalent_qos_guaranteed,
    is_pod_level_limits_set,
    is_pod_level_requests_set,
    is_pod_level_resources_set,
    pod_qos_class,
    resource_qos,
)
from app.domain.pod.requests import (
    aggregate_container_limits,
    aggregate_container_requests,
    pod_requests,
)
from app.domain.quantity import Quantity
from tests.strategies import pod_to_conformance, pods

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"  # the in-repo corpus


def rr(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None):
    return ResourceRequirements(requests or {}, limits or {})


def c(name: str, requests=None, limits=None, restart_policy: str | None = None) -> Container:
    return Container(name, rr(requests, limits), restart_policy)


def pod(
    containers: list[Container],
    init: list[Container] | None = None,
    resources: ResourceRequirements | None = None,
    qos: str | None = None,
) -> Pod:
    return Pod("uid-1", "p", "default", tuple(containers), tuple(init or ()), resources, qos)


G = {"cpu": "1", "memory": "1Gi"}  # guaranteed-like block


# -- QoS ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "gate", "expected"),
    [
        (pod([c("a")]), True, QOS_BEST_EFFORT),
        (pod([c("a", G, G)]), True, QOS_GUARANTEED),
        (pod([c("a", G, G), c("b", G, G)]), True, QOS_GUARANTEED),
        (
            pod([c("a", {"cpu": "2000m", "memory": "1Gi"}, {"cpu": "2", "memory": "1024Mi"})]),
            True,
            QOS_GUARANTEED,
        ),
        (pod([c("a", {"cpu": "1"}, {"cpu": "2"})]), True, QOS_BURSTABLE),
        (pod([c("a", {"cpu": "1"})]), True, QOS_BURSTABLE),
        (pod([c("a", {"cpu": "1"}, {"cpu": "1"})]), True, QOS_BURSTABLE),  # memory 0 vs cpu > 0
        (pod([c("a", G, G), c("b")]), True, QOS_BURSTABLE),  # Guaranteed mixed with BestEffort
        (pod([c("a", G, G)], init=[c("i")]), True, QOS_BURSTABLE),
        (pod([c("a")], init=[c("i", G, G)]), True, QOS_BURSTABLE),
        (pod([c("a", {"cpu": "0", "memory": "0"}, {"cpu": "0"})]), True, QOS_BEST_EFFORT),
        (pod([c("a", {"hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"})]), True, QOS_BEST_EFFORT),
        (pod([c("a", {"example.com/gpu": "1"}, {"example.com/gpu": "1"})]), True, QOS_BEST_EFFORT),
        (
            pod([c("a", {**G, "hugepages-1Gi": "1Gi"}, {**G, "hugepages-1Gi": "2Gi"})]),
            True,
            QOS_GUARANTEED,
        ),
        # pod-level resources decide alone when the gate is on
        (pod([c("a")], resources=rr(G, G)), True, QOS_GUARANTEED),
        (pod([c("a", G, G)], resources=rr({"cpu": "1"}, {"cpu": "2"})), True, QOS_BURSTABLE),
        (pod([c("a", G, G)], resources=rr()), True, QOS_BEST_EFFORT),
        (
            pod([c("a", G, G)], resources=rr({"hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"})),
            True,
            QOS_BEST_EFFORT,
        ),
        # ... and are ignored when it is off
        (pod([c("a")], resources=rr(G, G)), False, QOS_BEST_EFFORT),
        (pod([c("a", G, G)], resources=rr({"cpu": "1"}, {"cpu": "2"})), False, QOS_GUARANTEED),
        # status.qosClass wins
        (pod([c("a")], qos=QOS_GUARANTEED), True, QOS_GUARANTEED),
    ],
    ids=[
        "no-resources",
        "guaranteed",
        "two-guaranteed",
        "equal-in-other-units",
        "request-below-limit",
        "request-only",
        "cpu-only",
        "guaranteed-and-besteffort",
        "besteffort-init",
        "guaranteed-init-besteffort-app",
        "zeros",
        "hugepages-only",
        "extended-only",
        "hugepages-ignored",
        "pod-level-guaranteed",
        "pod-level-burstable",
        "pod-level-empty",
        "pod-level-hugepages-only",
        "gate-off-pod-level-ignored",
        "gate-off-containers-decide",
        "status-qos",
    ],
)
def test_pod_qos_class(p: Pod, gate: bool, expected: str) -> None:
    assert pod_qos_class(p, pod_level_resources_enabled=gate) == expected


def test_compute_ignores_status_and_empty_pod_is_besteffort() -> None:
    assert compute_pod_qos(pod([c("a")], qos=QOS_GUARANTEED)) == QOS_BEST_EFFORT
    assert compute_pod_qos(Pod("u", "n", "ns", ())) == QOS_BEST_EFFORT
    assert resource_qos(rr({"memory": "1Gi"}, {"memory": "1Gi"})) == QOS_BURSTABLE


@pytest.mark.parametrize(
    ("resources", "requests_set", "limits_set"),
    [
        (None, False, False),
        (rr(), False, False),
        (rr({"cpu": "1"}), True, False),
        (rr(limits={"memory": "1Gi"}), False, True),
        (rr({"hugepages-1Gi": "1Gi"}), True, False),
        (rr({"ephemeral-storage": "1Gi"}, {"example.com/gpu": "1"}), False, False),
    ],
    ids=["nil", "empty", "cpu-request", "memory-limit", "hugepages", "unsupported-only"],
)
def test_pod_level_resources_set(resources, requests_set: bool, limits_set: bool) -> None:
    p = pod([c("a")], resources=resources)
    assert is_pod_level_requests_set(p) is requests_set
    assert is_pod_level_limits_set(p) is limits_set
    assert is_pod_level_resources_set(p) is (requests_set or limits_set)


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        (c("a", G, G), True),
        (c("a", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}), True),
        (c("a", {"cpu": "1"}, {"cpu": "1"}), False),
        (c("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}), False),
        (c("a", {"cpu": "0", "memory": "0"}, {"cpu": "0", "memory": "0"}), False),
        (c("a", G, {"cpu": "1"}), False),
        (c("a"), False),
        (c("a", {**G, "hugepages-2Mi": "2Mi"}, G), True),
    ],
    ids=[
        "equal",
        "fractional-cpu",
        "no-memory",
        "cpu-differs",
        "zeros",
        "memory-limit-missing",
        "empty",
        "hugepage-ignored",
    ],
)
def test_is_container_equivalent_qos_guaranteed(container: Container, expected: bool) -> None:
    assert is_container_equivalent_qos_guaranteed(container) is expected


# -- aggregation ----------------------------------------------------------------------


def test_aggregate_requests_with_sidecars_and_init_containers() -> None:
    # KEP-753: app 1 + sidecars (1 + 2) = 4; the init container after sidecar-1 peaks at 1 + 5 = 6.
    p = pod(
        [c("app", {"cpu": "1", "memory": "1Gi"})],
        init=[
            c("side-1", {"cpu": "1"}, restart_policy="Always"),
            c("init", {"cpu": "5", "memory": "512Mi"}),
            c("side-2", {"cpu": "2", "memory": "1Gi"}, restart_policy="Always"),
        ],
    )
    assert aggregate_container_requests(p) == {
        "cpu": Quantity.parse("6"),
        "memory": Quantity.parse("2Gi"),
    }
    assert aggregate_container_limits(p) == {}
    assert pod_requests(p) == aggregate_container_requests(p)


def test_pod_requests_prefer_pod_level_requests() -> None:
    p = pod(
        [c("a", {"cpu": "1", "example.com/gpu": "1"})], resources=rr({"cpu": "4"}, {"cpu": "4"})
    )
    assert pod_requests(p) == {"cpu": Quantity.parse("4"), "example.com/gpu": Quantity.parse("1")}
    assert pod_requests(p, pod_level_resources_enabled=False)["cpu"] == Quantity.parse("1")


# -- values ---------------------------------------------------------------------------


def test_resource_list_is_an_immutable_sorted_mapping() -> None:
    rl = ResourceList({"memory": "1Gi", "cpu": 2, "hugepages-2Mi": Quantity.parse("4Mi")})
    assert list(rl) == ["cpu", "hugepages-2Mi", "memory"]
    assert rl == {
        "cpu": Quantity.parse("2000m"),
        "memory": Quantity.parse("1Gi"),
        "hugepages-2Mi": Quantity.parse("4Mi"),
    }
    assert rl != {"cpu": Quantity.parse("2")}
    assert hash(rl) == hash(ResourceList({"cpu": "2", "memory": "1024Mi", "hugepages-2Mi": "4Mi"}))
    assert rl.quantity("example.com/gpu").is_zero()
    assert rl.to_text() == {"cpu": "2", "hugepages-2Mi": "4Mi", "memory": "1Gi"}
    assert repr(ResourceList({"cpu": "1"})) == "ResourceList({'cpu': '1'})"
    with pytest.raises(AttributeError):
        rl._items = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        rl["cpu"] = Quantity.parse("1")  # type: ignore[index]
    with pytest.raises(PodManifestError, match="resource names are strings"):
        ResourceList({1: "1"})  # type: ignore[dict-item]


def test_container_and_pod_helpers() -> None:
    app = c("app", {"cpu": "1500m", "memory": "1Gi", "hugepages-1Gi": "2Gi"}, {"cpu": "2"})
    side = c("side", restart_policy="Always")
    init = c("init")
    p = Pod("u", "n", "ns", [app], [init, side])  # lists become tuples
    assert isinstance(p.containers, tuple) and isinstance(p.init_containers, tuple)
    assert p.key == "ns/n"
    assert [x.name for x in p.all_containers()] == ["init", "side", "app"]
    assert p.sidecars() == (side,)
    assert side.is_sidecar and not init.is_sidecar and not app.is_sidecar
    assert p.find_container("side") is side and p.find_container("nope") is None
    assert p.is_init_container("init") and not p.is_init_container("app")
    assert p.is_regular_init_container("init") and not p.is_regular_init_container("side")
    assert app.cpu_request_milli() == 1500 and app.cpu_limit_milli() == 2000
    assert app.memory_request_bytes() == 2**30
    assert app.hugepage_requests() == {"hugepages-1Gi": 2 * 2**30}
    assert app.requests_for("example.com/gpu").is_zero() and str(app.limits_for("cpu")) == "2"
    assert rr().is_empty() and not app.resources.is_empty()
    assert hash(p) == hash(Pod("u", "n", "ns", (app,), (init, side)))


@pytest.mark.parametrize(
    ("name", "size"),
    [("hugepages-2Mi", 2 * 2**20), ("hugepages-1Gi", 2**30), ("hugepages-64Ki", 65536)],
)
def test_hugepage_size_bytes(name: str, size: int) -> None:
    assert hugepage_size_bytes(name) == size


@pytest.mark.parametrize("name", ["memory", "hugepages-abc"])
def test_hugepage_size_bytes_rejects_other_names(name: str) -> None:
    with pytest.raises(PodManifestError, match="is an invalid hugepage name"):
        hugepage_size_bytes(name)


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("cpu", True),
        ("memory", True),
        ("hugepages-2Mi", False),
        ("example.com/gpu", False),
        ("kubernetes.io/x", True),
    ],
)
def test_is_overcommit_allowed(name: str, allowed: bool) -> None:
    assert is_overcommit_allowed(name) is allowed


# -- conformance form -----------------------------------------------------------------


def test_pod_from_conformance() -> None:
    p = pod_from_conformance(
        {
            "uid": "pod1",
            "resources": {
                "requests": {"cpu": "4", "memory": "4Gi"},
                "limits": {"cpu": "4", "memory": "4Gi"},
            },
            "init_containers": [
                {"name": "init-0", "requests": {}, "limits": {}, "restart_policy": "Always"}
            ],
            "containers": [{"name": "app-0", "requests": {"cpu": "2"}, "limits": {"cpu": "2"}}],
        }
    )
    assert (p.uid, p.name, p.namespace) == ("pod1", "pod1", "default")
    assert p.init_containers[0].is_sidecar
    assert p.containers[0].resources == rr({"cpu": "2"}, {"cpu": "2"})
    assert p.resources == rr({"cpu": "4", "memory": "4Gi"}, {"cpu": "4", "memory": "4Gi"})
    # no defaulting in this form: the memory-manager shape has only uid and containers
    mm = pod_from_conformance(
        {"uid": "u", "containers": [{"name": "c", "limits": {"memory": "1Gi"}}]}
    )
    assert mm.resources is None and mm.init_containers == ()
    assert mm.containers[0].resources.requests == {}


@pytest.mark.parametrize(
    ("data", "field", "detail"),
    [
        ([], "", "expected a mapping, got a list"),
        ({"containers": [{"name": "a"}]}, "uid", "expected a string, got null"),
        ({"uid": "u"}, "containers", "Required value"),
        ({"uid": "u", "containers": {}}, "containers", "expected a list, got a mapping"),
        ({"uid": "u", "containers": [{"name": ""}]}, "containers[0].name", "Required value"),
        ({"uid": "u", "containers": [5]}, "containers[0]", "expected a mapping, got a number (5)"),
        (
            {"uid": "u", "containers": [{"name": "a", "requests": {"cpu": "x"}}]},
            "containers[0].requests.cpu",
            'invalid quantity "x"',
        ),
        (
            {"uid": "u", "containers": [{"name": "a"}], "init_containers": [{"name": "a"}]},
            "containers[0].name",
            'Duplicate value: "a"',
        ),
        (
            {"uid": "u", "containers": [{"name": "a"}], "resources": {"limits": []}},
            "resources.limits",
            "expected a mapping, got a list",
        ),
        (
            {"uid": "u", "containers": [{"name": "a", "restart_policy": 1}]},
            "containers[0].restart_policy",
            "expected a string",
        ),
        (
            {"uid": "u", "containers": [{"name": "a"}], "qos_class": "Gold"},
            "qos_class",
            "unknown QoS class",
        ),
    ],
    ids=[
        "list",
        "no-uid",
        "no-containers",
        "containers-mapping",
        "empty-name",
        "container-number",
        "bad-quantity",
        "duplicate",
        "limits-list",
        "policy-number",
        "qos",
    ],
)
def test_pod_from_conformance_errors(data: Any, field: str, detail: str) -> None:
    with pytest.raises(PodManifestError) as exc:
        pod_from_conformance(data)
    assert exc.value.field == field
    assert detail in exc.value.detail
    assert str(exc.value).startswith(f"{field}: " if field else detail)


def conformance_pods_in_files() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            if "uid" in o and "containers" in o:
                found.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for path in sorted(CONFORMANCE.glob("*.json")):
        walk(json.loads(path.read_text())["cases"])
    return found


def test_every_conformance_pod_parses() -> None:
    raw = conformance_pods_in_files()
    assert len(raw) > 100
    for d in raw:
        p = pod_from_conformance(d)
        assert p.uid == d["uid"] and len(p.containers) == len(d["containers"])


@settings(max_examples=60, deadline=None)
@given(pods())
def test_conformance_form_round_trips(p: Pod) -> None:
    back = pod_from_conformance(pod_to_conformance(p))
    assert back == Pod(p.uid, p.uid, "default", p.containers, p.init_containers, p.resources)


@settings(max_examples=60, deadline=None)
@given(pods(pod_level=False))
def test_container_qos_aggregation_property(p: Pod) -> None:
    classes = {resource_qos(x.resources) for x in p.all_containers()}
    expected = classes.pop() if len(classes) == 1 else QOS_BURSTABLE
    assert compute_pod_qos(p) == expected


@settings(max_examples=60, deadline=None)
@given(pods(pod_level=True))
def test_pod_level_block_decides_qos(p: Pod) -> None:
    assert p.resources is not None
    assert compute_pod_qos(p) == resource_qos(p.resources)


# -- manifests ------------------------------------------------------------------------


def manifest(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta}, "spec": spec}


def test_manifest_basics_and_defaulting() -> None:
    p = pod_from_manifest(
        manifest(
            {
                "initContainers": [
                    {
                        "name": "side",
                        "restartPolicy": "Always",
                        "resources": {"limits": {"cpu": "1"}},
                    },
                    {"name": "init", "restartPolicy": "Never"},
                ],
                "containers": [
                    {
                        "name": "app",
                        "image": "ignored",
                        "restartPolicy": "Always",
                        "resources": {
                            "requests": {"cpu": "1"},
                            "limits": {"cpu": 2, "memory": " 1Gi ", "example.com/gpu": 1},
                        },
                    }
                ],
                "nodeName": "ignored",
            },
            uid="abc",
            labels={"x": "y"},
        )
    )
    assert (p.uid, p.name, p.namespace) == ("abc", "p", "default")
    side, init = p.init_containers
    assert side.is_sidecar and side.resources.requests == {"cpu": Quantity.parse("1")}
    assert init.restart_policy == "Never" and not init.is_sidecar
    app = p.containers[0]
    assert app.restart_policy is None  # a regular container's restartPolicy is not kept
    assert app.resources.requests == {
        "cpu": Quantity.parse("1"),
        "memory": Quantity.parse("1Gi"),
        "example.com/gpu": Quantity.parse("1"),
    }
    assert p.resources is None and p.qos_class is None


@pytest.mark.parametrize(
    ("pod_resources", "containers", "expected"),
    [
        # limits only: requests default to limits
        (
            {"limits": {"cpu": "4", "memory": "4Gi"}},
            [{"name": "a"}],
            ({"cpu": "4", "memory": "4Gi"}, {"cpu": "4", "memory": "4Gi"}),
        ),
        # container requests aggregate into pod-level requests (sidecar-aware)
        (
            {"limits": {"cpu": "8", "memory": "8Gi"}},
            [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "2"}}},
            ],
            ({"cpu": "3", "memory": "1Gi"}, {"cpu": "8", "memory": "8Gi"}),
        ),
        # explicit pod-level requests are kept
        (
            {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
            [{"name": "a", "resources": {"requests": {"cpu": "1500m"}}}],
            ({"cpu": "1"}, {"cpu": "2"}),
        ),
        # requests only: nothing to default (pod-level limit defaulting is kubernetes#137616, still open)
        (
            {"requests": {"cpu": "2", "memory": "1Gi"}},
            [{"name": "a", "resources": {"limits": {"cpu": "1"}}}],
            ({"cpu": "2", "memory": "1Gi"}, {}),
        ),
        # hugepage pod limits default from the containers, then requests from limits
        (
            {"limits": {"cpu": "2", "memory": "2Gi"}},
            [
                {"name": "a", "resources": {"limits": {"hugepages-2Mi": "4Mi"}}},
                {"name": "b", "resources": {"limits": {"hugepages-2Mi": "2Mi"}}},
            ],
            (
                {"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "6Mi"},
                {"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "6Mi"},
            ),
        ),
        # ... but not when the pod requests that hugepage size
        (
            {"requests": {"hugepages-2Mi": "2Mi"}},
            [{"name": "a", "resources": {"limits": {"hugepages-2Mi": "4Mi"}}}],
            ({"hugepages-2Mi": "2Mi"}, {}),
        ),
        # extended resources are not pod-level resources
        (
            {"limits": {"cpu": "1", "example.com/gpu": "1"}},
            [{"name": "a", "resources": {"limits": {"example.com/gpu": "1"}}}],
            ({"cpu": "1"}, {"cpu": "1", "example.com/gpu": "1"}),
        ),
        # empty spec.resources stays empty (and non-nil)
        ({}, [{"name": "a", "resources": {"limits": {"cpu": "1"}}}], ({}, {})),
    ],
    ids=[
        "limits-only",
        "aggregate",
        "explicit",
        "requests-only",
        "hugepage-limits",
        "hugepage-requested",
        "extended",
        "empty",
    ],
)
def test_pod_level_defaulting(
    pod_resources: dict[str, Any], containers: list[dict[str, Any]], expected
) -> None:
    p = pod_from_manifest(manifest({"resources": pod_resources, "containers": containers}))
    assert p.resources == rr(*expected)


def test_pod_level_defaulting_needs_the_gate() -> None:
    m = manifest({"resources": {"limits": {"cpu": "4"}}, "containers": [{"name": "a"}]})
    assert pod_from_manifest(m, pod_level_resources_enabled=False).resources == rr(
        limits={"cpu": "4"}
    )


def test_uid_namespace_and_generate_name() -> None:
    a = pod_from_manifest(
        {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
    )
    b = pod_from_manifest(
        {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
    )
    assert a.uid == b.uid == synthetic_uid("ns", "x") != synthetic_uid("default", "x")
    assert uuid.UUID(a.uid).version == 4 and str(uuid.UUID(a.uid)) == a.uid
    g = pod_from_manifest(
        {"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c"}]}}
    )
    assert g.name.startswith("web-") and len(g.name) == len("web-") + 5 and g.namespace == "default"
    s = pod_from_manifest(
        manifest({"containers": [{"name": "c"}]}) | {"status": {"qosClass": "Burstable"}}
    )
    assert pod_qos_class(s) == QOS_BURSTABLE


@pytest.mark.parametrize(
    ("obj", "field", "detail"),
    [
        ("pod", "", "expected a mapping, got a string"),
        ({"kind": "Deployment"}, "kind", 'expected "Pod", got a string ("Deployment")'),
        ({"apiVersion": "apps/v1", "kind": "Pod"}, "apiVersion", 'expected "v1"'),
        (
            {"metadata": {}, "spec": {"containers": [{"name": "c"}]}},
            "metadata.name",
            "Required value",
        ),
        (
            {"metadata": {"name": 5}, "spec": {"containers": [{"name": "c"}]}},
            "metadata.name",
            "expected a string, got a number (5)",
        ),
        (
            {"metadata": {"name": "p", "namespace": ["x"]}, "spec": {}},
            "metadata.namespace",
            "expected a string, got a list",
        ),
        ({"metadata": {"name": "p", "uid": 7}, "spec": {}}, "metadata.uid", "expected a string"),
        ({"metadata": "x", "spec": {}}, "metadata", "expected a mapping"),
        ({"metadata": {"name": "p"}}, "spec", "expected a mapping, got null"),
        (manifest({}), "spec.containers", "Required value"),
        (manifest({"containers": "c"}), "spec.containers", "expected a list, got a string"),
        (
            manifest({"containers": [{"name": "a"}, "b"]}),
            "spec.containers[1]",
            "expected a mapping, got a string",
        ),
        (
            manifest({"containers": [{"image": "x"}]}),
            "spec.containers[0].name",
            "Required value",
        ),
        (
            manifest({"containers": [{"name": True}]}),
            "spec.containers[0].name",
            "expected a string, got a boolean",
        ),
        (
            manifest({"containers": [{"name": "a"}, {"name": "a"}]}),
            "spec.containers[1].name",
            'Duplicate value: "a"',
        ),
        (
            manifest({"initContainers": [{"name": "a"}], "containers": [{"name": "a"}]}),
            "spec.containers[0].name",
            'Duplicate value: "a"',
        ),
        (
            manifest({"containers": [{"name": "a", "resources": []}]}),
            "spec.containers[0].resources",
            "expected a mapping, got a list",
        ),
        (
            manifest({"containers": [{"name": "a", "resources": {"requests": "1"}}]}),
            "spec.containers[0].resources.requests",
            "expected a mapping",
        ),
        (
            manifest(
                {
                    "containers": [
                        {"name": "a"},
                        {"name": "b", "resources": {"limits": {"cpu": "abc"}}},
                    ]
                }
            ),
            "spec.containers[1].resources.limits.cpu",
            'invalid quantity "abc"',
        ),
        (
            manifest({"containers": [{"name": "a", "resources": {"limits": {"cpu": True}}}]}),
            "spec.containers[0].resources.limits.cpu",
            "invalid quantity: expected text or a number, got a boolean",
        ),
        (
            manifest({"containers": [{"name": "a", "resources": {"limits": {"cpu": None}}}]}),
            "spec.containers[0].resources.limits.cpu",
            "got null",
        ),
        (
            manifest(
                {"containers": [{"name": "a", "resources": {"limits": {"cpu": float("nan")}}}]}
            ),
            "spec.containers[0].resources.limits.cpu",
            "invalid quantity nan",
        ),
        (
            manifest({"containers": [{"name": "a", "resources": {"limits": {"": "1"}}}]}),
            "spec.containers[0].resources.limits",
            "resource names are non-empty strings",
        ),
        (
            manifest({"containers": [{"name": "a", "resources": {"requests": {"cpu": "-1"}}}]}),
            "spec.containers[0].resources.requests.cpu",
            "must be greater than or equal to 0",
        ),
        (
            manifest(
                {
                    "containers": [
                        {
                            "name": "a",
                            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                        }
                    ]
                }
            ),
            "spec.containers[0].resources.requests.cpu",
            'Invalid value: "2": must be less than or equal to cpu limit of 1',
        ),
        (
            manifest(
                {
                    "initContainers": [{"name": "i", "restartPolicy": 1}],
                    "containers": [{"name": "a"}],
                }
            ),
            "spec.initContainers[0].restartPolicy",
            "expected a string",
        ),
        (
            manifest({"initContainers": {}, "containers": [{"name": "a"}]}),
            "spec.initContainers",
            "expected a list",
        ),
        (
            manifest({"resources": {"limits": {"memory": "1Gb"}}, "containers": [{"name": "a"}]}),
            "spec.resources.limits.memory",
            'invalid quantity "1Gb"',
        ),
        (
            manifest(
                {
                    "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}},
                    "containers": [{"name": "a"}],
                }
            ),
            "spec.resources.requests.cpu",
            "must be less than or equal to cpu limit of 2",
        ),
        (
            manifest({"containers": [{"name": "a"}]}) | {"status": {"qosClass": "Gold"}},
            "status.qosClass",
            "unknown QoS class",
        ),
    ],
    ids=lambda v: None,
)
def test_manifest_errors_name_the_field(obj: Any, field: str, detail: str) -> None:
    with pytest.raises(PodManifestError) as exc:
        pod_from_manifest(obj)
    assert exc.value.field == field
    assert detail in exc.value.detail
    assert str(exc.value) == (f"{field}: {exc.value.detail}" if field else exc.value.detail)


def test_manifest_quantity_error_message() -> None:
    obj = manifest(
        {"containers": [{"name": "a"}, {"name": "b", "resources": {"limits": {"cpu": "abc"}}}]}
    )
    with pytest.raises(PodManifestError) as exc:
        pod_from_manifest(obj)
    assert str(exc.value).startswith(
        'spec.containers[1].resources.limits.cpu: invalid quantity "abc": quantities must match'
    )


def to_manifest(p: Pod) -> dict[str, Any]:
    def container(x: Container, init: bool) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": x.name,
            "resources": {
                "requests": x.resources.requests.to_text(),
                "limits": x.resources.limits.to_text(),
            },  # type: ignore[attr-defined]
        }
        if init and x.restart_policy:
            d["restartPolicy"] = x.restart_policy
        return d

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
        "spec": {
            "initContainers": [container(x, True) for x in p.init_containers],
            "containers": [container(x, False) for x in p.containers],
        },
    }


@settings(max_examples=60, deadline=None)
@given(pods(pod_level=False))
def test_manifest_defaulting_property(p: Pod) -> None:
    back = pod_from_manifest(to_manifest(p))
    assert (back.uid, back.name, back.namespace) == (p.uid, p.name, p.namespace)
    for before, after in zip(p.all_containers(), back.all_containers(), strict=True):
        assert after.name == before.name and after.restart_policy == before.restart_policy
        assert after.resources.limits == before.resources.limits
        # requests: as given, plus limits where a request was missing
        assert after.resources.requests == {**before.resources.limits, **before.resources.requests}
    assert pod_qos_class(back) in (QOS_GUARANTEED, QOS_BURSTABLE, QOS_BEST_EFFORT)


def test_pods_survive_copy_deepcopy_and_pickle() -> None:
    import copy
    import pickle

    pod = pod_from_manifest(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "uid": "u1"},
            "spec": {
                "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
                "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}],
            },
        }
    )
    for clone in (copy.copy(pod), copy.deepcopy(pod), pickle.loads(pickle.dumps(pod))):
        assert clone == pod
        assert (
            clone.containers[0].resources.requests["cpu"]
            == pod.containers[0].resources.limits["cpu"]
        )
        assert pod_qos_class(clone) == pod_qos_class(pod)

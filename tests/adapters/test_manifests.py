"""Pod manifest text: YAML, JSON, multi-document, v1 Lists (app/adapters/manifests.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.adapters.manifests import ManifestSyntaxError, parse_pod_manifests
from app.domain.pod.model import PodManifestError
from app.domain.pod.qos import (
    QOS_BEST_EFFORT,
    QOS_BURSTABLE,
    QOS_GUARANTEED,
    is_container_equivalent_qos_guaranteed,
    is_pod_level_resources_set,
    pod_qos_class,
)
from app.domain.quantity import Quantity

PODS = Path(__file__).resolve().parents[1] / "fixtures" / "pods"


def read(name: str) -> str:
    return (PODS / name).read_text()


@pytest.mark.parametrize(
    ("fixture", "keys", "qos"),
    [
        ("guaranteed.yaml", ["prod/db"], [QOS_GUARANTEED]),
        ("burstable.yaml", ["default/web"], [QOS_BURSTABLE]),
        ("besteffort.yaml", ["jobs/batch"], [QOS_BEST_EFFORT]),
        ("sidecar.yaml", ["default/with-sidecar"], [QOS_GUARANTEED]),
        ("pod-level.yaml", ["ml/bubble", "ml/half-cpu"], [QOS_GUARANTEED, QOS_GUARANTEED]),
        ("list.json", ["default/a", "default/b"], [QOS_GUARANTEED, QOS_BURSTABLE]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_fixtures(fixture: str, keys: list[str], qos: list[str]) -> None:
    pods = parse_pod_manifests(read(fixture))
    assert [p.key for p in pods] == keys
    assert [pod_qos_class(p) for p in pods] == qos


def test_guaranteed_fixture_details() -> None:
    (pod,) = parse_pod_manifests(read("guaranteed.yaml"))
    assert pod.uid == "8a4c6f0e-2b7d-4d1e-9f3a-5c6b7d8e9f01"
    postgres, exporter = pod.containers
    assert postgres.resources.requests == postgres.resources.limits  # defaulted from limits
    assert postgres.hugepage_requests() == {"hugepages-2Mi": 512 * 2**20}
    assert postgres.cpu_request_milli() == 4000 and exporter.cpu_request_milli() == 500


def test_sidecar_fixture() -> None:
    (pod,) = parse_pod_manifests(read("sidecar.yaml"))
    assert [c.name for c in pod.init_containers] == ["migrate", "proxy"]
    assert [c.is_sidecar for c in pod.init_containers] == [False, True]


def test_pod_level_fixture() -> None:
    bubble, half = parse_pod_manifests(read("pod-level.yaml"))
    assert is_pod_level_resources_set(bubble) and is_pod_level_resources_set(half)
    assert bubble.resources is not None
    assert bubble.resources.requests == {
        "cpu": Quantity.parse("4"),
        "memory": Quantity.parse("8Gi"),
    }
    trainer, logger = bubble.containers
    assert is_container_equivalent_qos_guaranteed(trainer)
    assert not is_container_equivalent_qos_guaranteed(logger)
    # exclusive memory but shared CPUs (allocation.md §5.2 example)
    (main,) = half.containers
    assert is_container_equivalent_qos_guaranteed(main) and main.cpu_request_milli() == 500


def test_json_list_with_tabs_numbers_and_status() -> None:
    a, b = parse_pod_manifests(read("list.json"))
    assert a.uid == "11111111-1111-4111-8111-111111111111" and a.qos_class == QOS_GUARANTEED
    assert a.containers[0].resources.requests["cpu"] == Quantity.parse("2")
    assert b.containers[0].resources.requests["cpu"] == Quantity.parse("500m")
    assert b.uid != a.uid


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = "---\n" + read("burstable.yaml") + "\n---\n# nothing\n---\n" + read("besteffort.yaml")
    assert [p.name for p in parse_pod_manifests(text)] == ["web", "batch"]


def test_empty_text_has_no_pods() -> None:
    assert parse_pod_manifests("") == []
    assert parse_pod_manifests("---\n---\n") == []


def test_json_array_and_nested_list() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}}
    nested = {
        "kind": "List",
        "items": [pod, {"kind": "PodList", "items": [pod | {"metadata": {"name": "y"}}]}],
    }
    assert [p.name for p in parse_pod_manifests(json.dumps([pod, nested]))] == ["x", "x", "y"]
    assert parse_pod_manifests(json.dumps({"kind": "List", "items": None})) == []


def test_yaml_flow_style_that_is_not_json() -> None:
    text = "{kind: Pod, metadata: {name: f}, spec: {containers: [{name: c}]}}"
    assert [p.name for p in parse_pod_manifests(text)] == ["f"]


def test_pod_level_limits_alone_default_requests_from_the_containers() -> None:
    text = read("pod-level.yaml").replace(
        '    requests:\n      cpu: "4"\n      memory: 8Gi\n', "", 1
    )
    bubble = parse_pod_manifests(text)[0]
    assert bubble.resources is not None
    assert bubble.resources.requests == {
        "cpu": Quantity.parse("2"),
        "memory": Quantity.parse("4Gi"),
    }
    assert pod_qos_class(bubble) == QOS_BURSTABLE
    # the gate is passed through: without it nothing is defaulted at pod level
    off = parse_pod_manifests(text, pod_level_resources_enabled=False)[0]
    assert off.resources is not None and off.resources.requests == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "kind: List\nitems:\n- kind: Pod\n  metadata: {name: a}\n  spec: {containers: [{name: c, resources: {limits: {cpu: abc}}}]}\n",
            'items[0].spec.containers[0].resources.limits.cpu: invalid quantity "abc"',
        ),
        (
            read("burstable.yaml")
            + "\n---\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c}, {name: c}]}\n",
            'document 2: spec.containers[1].name: Duplicate value: "c"',
        ),
        ('[{"kind": "Pod"}, 3]', "[0].metadata.name: Required value"),
        (
            '[{"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}, 3]',
            "[1]: expected a mapping, got a number (3)",
        ),
        ("kind: List\nitems: {a: 1}\n", "items: expected a list"),
        ("kind: Service\n", 'kind: expected "Pod", got a string ("Service")'),
        ("- 1\n", "[0]: expected a mapping"),
        ("just text\n", "expected a mapping, got a string"),
    ],
    ids=[
        "list-item-field",
        "second-document",
        "array-item",
        "array-number",
        "items-mapping",
        "kind",
        "yaml-list",
        "scalar",
    ],
)
def test_errors_carry_the_path(text: str, message: str) -> None:
    with pytest.raises(PodManifestError) as exc:
        parse_pod_manifests(text)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Pod\nspec: [\n", "invalid YAML at line 3, column 1"),
        ("a: b: c\n", "invalid YAML at line 1, column 5"),
        ('{"kind": "Pod"', "invalid YAML"),
    ],
    ids=["unclosed", "mapping-values", "bad-json"],
)
def test_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(ManifestSyntaxError) as exc:
        parse_pod_manifests(text)
    assert str(exc.value).startswith(message)
    assert exc.value.field == ""


def test_non_text_input() -> None:
    with pytest.raises(ManifestSyntaxError, match="must be a string"):
        parse_pod_manifests(b"kind: Pod")  # type: ignore[arg-type]

"""PodResources messages: dataclasses ⇄ protobuf ⇄ canonical JSON, wire format, generated code."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.fixtures` under bare pytest

from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.podresources_cache import PodResourcesCache, get_pod_json, list_response_json
from app.adapters.podresources_json import (
    PodResourcesJSONError,
    allocatable_json,
    message_from_bytes,
    message_from_dict,
    message_to_dict,
    message_to_json,
)
from app.adapters.podresources_pb import from_message, to_message
from app.domain.podresources import (
    AllocatableResourcesResponse,
    CDIDevice,
    ClaimResource,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    DynamicResource,
    GetPodResourcesRequest,
    GetPodResourcesResponse,
    ListPodResourcesResponse,
    NUMANode,
    PodNotFoundError,
    PodResources,
    TopologyInfo,
    build_list_response,
)
from tests.fixtures.podresources import snapshots as S

ROOT = Path(__file__).resolve().parents[2]

GOLDEN = ROOT / "tests" / "fixtures" / "podresources"

# -- the spec's examples (podresources.md §9) -----------------------------------------------------

KEP_SCENARIO_1 = """
{"podResources": [{
  "name": "pod", "namespace": "default",
  "containers": [
    {"name": "exclusive-container", "cpuIds": ["12", "23", "30"],
     "memory": [{"memoryType": "memory", "size": "1073741824", "topology": {"nodes": [{"ID": "1"}]}}]},
    {"name": "pod-shared-pool-container"}],
  "cpuIds": ["12", "23", "30", "31", "32"],
  "memory": [{"memoryType": "memory", "size": "2147483648", "topology": {"nodes": [{"ID": "1"}]}}]}]}
"""

ALLOCATABLE_EXAMPLE = """
{"devices": [
   {"resourceName": "vendor.example/nic", "deviceIds": ["0000:3b:00.2"], "topology": {"nodes": [{}]}},
   {"resourceName": "vendor.example/nic", "deviceIds": ["0000:d8:00.2"], "topology": {"nodes": [{"ID": "1"}]}}],
 "cpuIds": ["2", "3", "4", "5"],
 "memory": [
   {"memoryType": "memory", "size": "63350767616", "topology": {"nodes": [{}]}},
   {"memoryType": "hugepages-1Gi", "size": "4294967296", "topology": {"nodes": [{"ID": "1"}]}}]}
"""


def _numa(*ids: int) -> TopologyInfo:
    return TopologyInfo(tuple(NUMANode(i) for i in ids))


def test_kep_scenario_one_prints_exactly_as_the_spec() -> None:
    value = ListPodResourcesResponse(
        (
            PodResources(
                "pod",
                "default",
                (
                    ContainerResources(
                        "exclusive-container",
                        cpu_ids=(12, 23, 30),
                        memory=(ContainerMemory("memory", 1073741824, _numa(1)),),
                    ),
                    ContainerResources("pod-shared-pool-container"),
                ),
                cpu_ids=(12, 23, 30, 31, 32),
                memory=(ContainerMemory("memory", 2147483648, _numa(1)),),
            ),
        )
    )
    assert message_to_dict(value) == json.loads(KEP_SCENARIO_1)
    assert message_from_dict(ListPodResourcesResponse, json.loads(KEP_SCENARIO_1)) == value


def test_allocatable_example_round_trips() -> None:
    doc = json.loads(ALLOCATABLE_EXAMPLE)
    value = message_from_dict(AllocatableResourcesResponse, doc)
    assert value.devices[0] == ContainerDevices("vendor.example/nic", ("0000:3b:00.2",), _numa(0))
    assert value.memory[0].topology == _numa(0)  # {} is NUMA node 0
    assert message_to_dict(value) == doc


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ContainerResources("pod-shared-pool-container"), {"name": "pod-shared-pool-container"}),
        (NUMANode(0), {}),
        (NUMANode(3), {"ID": "3"}),
        (ListPodResourcesResponse(), {}),
        (ContainerMemory("memory", 0, TopologyInfo()), {"memoryType": "memory", "topology": {}}),
        (ContainerMemory("memory", 5, None), {"memoryType": "memory", "size": "5"}),
        (ClaimResource(share_id=""), {"shareId": ""}),
        (ClaimResource(share_id=None), {}),
        (
            ClaimResource((CDIDevice("vendor.com/gpu=gpudevice1"),), "drv", "pool", "dev", "s1"),
            {
                "cdiDevices": [{"name": "vendor.com/gpu=gpudevice1"}],
                "driverName": "drv",
                "poolName": "pool",
                "deviceName": "dev",
                "shareId": "s1",
            },
        ),
        (
            DynamicResource("claim", "ns", ()),
            {"claimName": "claim", "claimNamespace": "ns"},
        ),
        (GetPodResourcesRequest("x", "y"), {"podName": "x", "podNamespace": "y"}),
        (GetPodResourcesResponse(PodResources()), {"podResources": {}}),
        (GetPodResourcesResponse(None), {}),
    ],
    ids=[
        "empty-container",
        "numa-0",
        "numa-3",
        "empty-response",
        "set-empty-topology",
        "unset-topology",
        "share-id-empty",
        "share-id-unset",
        "claim-resource",
        "dynamic-resource",
        "get-request",
        "get-empty-pod",
        "get-unset-pod",
    ],
)
def test_canonical_json(value: object, expected: dict) -> None:
    assert message_to_dict(value) == expected
    assert message_from_dict(type(value), expected) == value


def test_json_text_uses_the_canonical_names() -> None:
    text = message_to_json(build_list_response(S.docs_pod_scope()))
    assert '"cpuIds": [' in text and '"memoryType"' in text and '"ID": "1"' in text
    assert "cpu_ids" not in text and '"id"' not in text


@pytest.mark.parametrize(
    "doc",
    [{"cpu_ids": ["1", 2]}, {"cpuIds": [1, "2"]}],
    ids=["proto-names-and-numbers", "json-names-mixed"],
)
def test_parser_accepts_proto_names_and_numbers(doc: dict) -> None:
    assert message_from_dict(AllocatableResourcesResponse, doc).cpu_ids == (1, 2)


@pytest.mark.parametrize(
    "doc",
    [{"cpuIDs": ["1"]}, {"devices": [{"topology": {"nodes": [{"id": "1"}]}}]}, {"cpuIds": "x"}],
    ids=["cpuIDs", "lower-case-id", "not-a-list"],
)
def test_parser_rejects_unknown_names(doc: dict) -> None:
    with pytest.raises(PodResourcesJSONError, match="AllocatableResourcesResponse"):
        message_from_dict(AllocatableResourcesResponse, doc)


def test_parser_rejects_a_non_object() -> None:
    with pytest.raises(PodResourcesJSONError, match="expected a JSON object"):
        message_from_dict(ListPodResourcesResponse, ["x"])  # type: ignore[arg-type]


def test_unknown_value_types_are_refused() -> None:
    with pytest.raises(TypeError):
        to_message(object())
    with pytest.raises(TypeError):
        from_message(object())  # type: ignore[arg-type]


# -- golden files: the documentation's pod-level examples -----------------------------------------


def _golden(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text())


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("docs-pod-scope-list.json", lambda: list_response_json(S.docs_pod_scope())),
        (
            "docs-pod-scope-get.json",
            lambda: get_pod_json(S.docs_pod_scope(), "default", "tightly-coupled-database"),
        ),
        ("docs-pod-scope-1.36-list.json", lambda: list_response_json(S.docs_pod_scope("1.36"))),
        (
            "docs-pod-scope-gate-off-list.json",
            lambda: list_response_json(S.docs_pod_scope(gate=False)),
        ),
        ("docs-container-scope-list.json", lambda: list_response_json(S.docs_container_scope())),
        ("two-numa-allocatable.json", lambda: allocatable_json(S.docs_pod_scope())),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_golden(name: str, make) -> None:  # type: ignore[no-untyped-def]
    assert make() == _golden(name)


def test_golden_pod_scope_by_hand() -> None:
    """The essentials of the pod-scope golden file, written out independently."""
    pod = _golden("docs-pod-scope-list.json")["podResources"][0]
    assert [c["name"] for c in pod["containers"]] == [
        "metrics-exporter",
        "backup-agent",
        "database",
    ]
    assert pod["containers"][0] == {"name": "metrics-exporter"}
    assert pod["containers"][1] == {"name": "backup-agent"}
    assert pod["containers"][2]["cpuIds"] == ["16", "17", "18", "48", "49", "50"]
    assert pod["cpuIds"] == ["16", "17", "18", "19", "48", "49", "50", "51"]
    assert pod["memory"] == [
        {"memoryType": "memory", "size": str(16 * 1024**3), "topology": {"nodes": [{"ID": "1"}]}}
    ]


def test_get_unknown_pod() -> None:
    with pytest.raises(PodNotFoundError, match=r"^pod nope in namespace default not found$"):
        get_pod_json(S.docs_pod_scope(), "default", "nope")


# -- wire format (podresources.md §8) -------------------------------------------------------------


def _fields(data: bytes) -> list[tuple[int, int, bytes | int]]:
    """Top-level (field number, wire type, payload) of a serialised message."""

    def varint(i: int) -> tuple[int, int]:
        shift = value = 0
        while True:
            b = data[i]
            value |= (b & 0x7F) << shift
            i += 1
            if not b & 0x80:
                return value, i
            shift += 7

    out: list[tuple[int, int, bytes | int]] = []
    i = 0
    while i < len(data):
        key, i = varint(i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 2:
            length, i = varint(i)
            out.append((number, wire_type, data[i : i + length]))
            i += length
        elif wire_type == 0:
            value, i = varint(i)
            out.append((number, wire_type, value))
        else:  # pragma: no cover - not used by these messages
            raise AssertionError(f"unexpected wire type {wire_type}")
    return out


def test_pod_cpu_ids_are_packed_as_in_the_spec() -> None:
    data = to_message(PodResources(cpu_ids=(1, 2, 300))).SerializeToString()
    assert data == bytes.fromhex("22040102ac02")
    assert _fields(data) == [(4, 2, bytes.fromhex("0102ac02"))]


def test_container_cpu_ids_are_packed() -> None:
    data = to_message(ContainerResources("c", cpu_ids=(16, 17, 48))).SerializeToString()
    fields = _fields(data)
    assert (3, 2, bytes([16, 17, 48])) in fields
    assert not any(number == 3 and wire_type == 0 for number, wire_type, _ in fields)


def test_builder_output_is_packed_on_the_wire() -> None:
    pod = build_list_response(S.docs_pod_scope()).pod_resources[0]
    pod_fields = _fields(to_message(pod).SerializeToString())
    assert [f for f in pod_fields if f[0] == 4] == [(4, 2, bytes([16, 17, 18, 19, 48, 49, 50, 51]))]
    database = [f for f in pod_fields if f[0] == 3][2][2]
    assert (3, 2, bytes([16, 17, 18, 48, 49, 50])) in _fields(database)  # type: ignore[arg-type]


def test_unpacked_cpu_ids_are_accepted() -> None:
    unpacked = bytes.fromhex("2001") + bytes.fromhex("2002") + bytes.fromhex("20ac02")
    assert message_from_bytes(PodResources, unpacked).cpu_ids == (1, 2, 300)


def test_numa_node_zero_and_empty_topology_on_the_wire() -> None:
    assert to_message(TopologyInfo((NUMANode(0),))).SerializeToString() == bytes.fromhex("0a00")
    present = to_message(ContainerMemory("memory", 1, TopologyInfo())).SerializeToString()
    absent = to_message(ContainerMemory("memory", 1, None)).SerializeToString()
    assert present == absent + bytes.fromhex("1a00")
    assert message_from_bytes(ContainerMemory, present).topology == TopologyInfo()
    assert message_from_bytes(ContainerMemory, absent).topology is None


def test_share_id_presence_on_the_wire() -> None:
    assert to_message(ClaimResource(share_id="")).SerializeToString() == bytes.fromhex("2a00")
    assert to_message(ClaimResource()).SerializeToString() == b""


def test_pod_level_fields_are_unknown_fields_for_an_older_client() -> None:
    """A pre-1.37 PodResources (fields 1-3 only) skips fields 4 and 5."""
    data = to_message(build_list_response(S.docs_pod_scope()).pod_resources[0]).SerializeToString()
    old = [f for f in _fields(data) if f[0] <= 3]
    assert len(old) == 5  # name, namespace, three containers
    assert message_from_bytes(PodResources, data).cpu_ids == tuple(S.DB_BUDGET)


def test_dynamic_resource_never_writes_field_1() -> None:
    data = to_message(DynamicResource("c", "ns", (ClaimResource(),))).SerializeToString()
    assert [f[0] for f in _fields(data)] == [2, 3, 4]
    assert "class_name" not in pb.DynamicResource.DESCRIPTOR.fields_by_name
    assert 1 not in pb.DynamicResource.DESCRIPTOR.fields_by_number


def test_invalid_wire_data() -> None:
    with pytest.raises(PodResourcesJSONError, match="invalid wire data"):
        message_from_bytes(PodResources, b"\x22\x05\x01")


# -- descriptor: the 1.37 interface ----------------------------------------------------------------


def test_descriptor_matches_the_1_37_interface() -> None:
    assert pb.DESCRIPTOR.package == "v1"
    service = pb.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert [m.name for m in service.methods] == ["List", "GetAllocatableResources", "Get"]
    numbers = {
        name: {f.name: f.number for f in pb.DESCRIPTOR.message_types_by_name[name].fields}
        for name in pb.DESCRIPTOR.message_types_by_name
    }
    assert numbers["PodResources"] == {
        "name": 1,
        "namespace": 2,
        "containers": 3,
        "cpu_ids": 4,
        "memory": 5,
    }
    assert numbers["ContainerResources"] == {
        "name": 1,
        "devices": 2,
        "cpu_ids": 3,
        "memory": 4,
        "dynamic_resources": 5,
    }
    assert numbers["ClaimResource"]["share_id"] == 5
    assert pb.ClaimResource.DESCRIPTOR.fields_by_name["share_id"].has_presence
    assert pb.NUMANode.DESCRIPTOR.fields_by_name["ID"].json_name == "ID"


# -- the per-pod cache gives what whole-message conversion gives ----------------------------------


def test_cached_list_equals_whole_message_conversion() -> None:
    cache = PodResourcesCache()
    snap = S.snapshot((S.db_pod(), S.mixed_pod(), S.db_pod("other", "db2")))
    whole = to_message(build_list_response(snap))
    assert cache.list_wire(snap) == whole.SerializeToString()
    assert cache.list_json(snap) == json_format.MessageToDict(whole)
    assert cache.list_response(snap) == build_list_response(snap)
    assert len(cache) == 3
    assert cache.list_json(snap) == json_format.MessageToDict(whole)  # warm
    assert len(cache) == 3


def test_cache_keys_on_options_and_bounds_its_size() -> None:
    cache = PodResourcesCache(maxsize=2)
    pod = S.db_pod()
    assert cache.list_json(S.snapshot((pod,))) != cache.list_json(
        S.snapshot((pod,), S.config("pod", release="1.36"))
    )
    cache.list_json(S.snapshot((S.mixed_pod(),)))
    assert len(cache) == 2


def test_cached_get_wire_is_a_get_response() -> None:
    snap = S.docs_pod_scope()
    data = PodResourcesCache().get_wire(snap, "default", "tightly-coupled-database")
    response = pb.GetPodResourcesResponse.FromString(data)
    assert from_message(response.pod_resources) == build_list_response(snap).pod_resources[0]


# -- round trip property --------------------------------------------------------------------------

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
_ids = st.lists(st.integers(0, 2**63 - 1), max_size=4).map(tuple)
_topology = st.one_of(
    st.none(), st.lists(st.integers(0, 2**63 - 1), max_size=3).map(lambda ns: _numa(*ns))
)
_memory = st.builds(ContainerMemory, _names, st.integers(0, 2**64 - 1), _topology)
_devices = st.builds(ContainerDevices, _names, st.lists(_names, max_size=2).map(tuple), _topology)
_claims = st.builds(
    ClaimResource,
    st.lists(st.builds(CDIDevice, _names), max_size=2).map(tuple),
    _names,
    _names,
    _names,
    st.one_of(st.none(), _names),
)
_containers = st.builds(
    ContainerResources,
    _names,
    st.lists(_devices, max_size=2).map(tuple),
    _ids,
    st.lists(_memory, max_size=2).map(tuple),
    st.lists(
        st.builds(DynamicResource, _names, _names, st.lists(_claims, max_size=2).map(tuple)),
        max_size=2,
    ).map(tuple),
)
_pods = st.builds(
    PodResources,
    _names,
    _names,
    st.lists(_containers, max_size=3).map(tuple),
    _ids,
    st.lists(_memory, max_size=2).map(tuple),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_pods, max_size=3).map(lambda ps: ListPodResourcesResponse(tuple(ps))))
def test_round_trip_through_json_and_wire(value: ListPodResourcesResponse) -> None:
    assert message_from_dict(ListPodResourcesResponse, message_to_dict(value)) == value
    wire = to_message(value).SerializeToString()
    assert message_from_bytes(ListPodResourcesResponse, wire) == value
    assert json.loads(message_to_json(value)) == message_to_dict(value)


# -- generated code is up to date -----------------------------------------------------------------


def test_generated_modules_are_up_to_date(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    subprocess.run(
        ["sh", str(ROOT / "scripts" / "gen_proto.sh"), str(out)],
        check=True,
        capture_output=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    committed = ROOT / "app" / "adapters" / "grpc" / "generated"
    names = ["__init__.py", "api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py"]
    match, mismatch, errors = filecmp.cmpfiles(committed, out, names, shallow=False)
    assert (mismatch, errors) == ([], []), "run scripts/gen_proto.sh and commit the result"
    assert sorted(match) == sorted(names)


def test_cache_hits_equal_pods_and_rebuilds_changed_ones() -> None:
    cache = PodResourcesCache()
    pod = S.db_pod()
    first = cache.list_json(S.snapshot((pod,)))
    equal = replace(pod, containers=tuple(replace(c) for c in pod.containers))
    assert equal is not pod
    assert cache.list_json(S.snapshot((equal,))) is not first  # a new top-level dict
    assert len(cache) == 1
    changed = replace(pod, containers=pod.containers[:2])
    assert [
        c["name"] for c in cache.list_json(S.snapshot((changed,)))["podResources"][0]["containers"]
    ] == [
        "metrics-exporter",
        "backup-agent",
    ]
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0

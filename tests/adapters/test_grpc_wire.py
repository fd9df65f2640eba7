"""The client's own PodResources decoding (``app.adapters.grpc.wire``) reads what protobuf's
generated messages write, as protobuf reads it: random messages encoded by protobuf decode to
the dataclasses protobuf decodes them to, and so do the encodings protobuf accepts but never
writes (unpacked repeated ints, unknown fields, a message field given twice)."""

from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from app.adapters.grpc import wire
from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.podresources_pb import from_message, to_message
from app.domain import podresources as pr

texts = st.text(max_size=8)
int64s = st.integers(-(2**63), 2**63 - 1)
ids = st.lists(st.one_of(st.integers(0, 600), int64s), max_size=6).map(tuple)
topologies = st.none() | st.builds(
    pr.TopologyInfo, st.lists(st.builds(pr.NUMANode, int64s), max_size=3).map(tuple)
)
memories = st.builds(pr.ContainerMemory, texts, st.integers(0, 2**64 - 1), topologies)
devices = st.builds(pr.ContainerDevices, texts, st.lists(texts, max_size=3).map(tuple), topologies)
claims = st.builds(
    pr.ClaimResource,
    st.lists(st.builds(pr.CDIDevice, texts), max_size=2).map(tuple),
    texts,
    texts,
    texts,
    st.none() | texts,
)
dynamics = st.builds(pr.DynamicResource, texts, texts, st.lists(claims, max_size=2).map(tuple))
containers = st.builds(
    pr.ContainerResources,
    texts,
    st.lists(devices, max_size=2).map(tuple),
    ids,
    st.lists(memories, max_size=2).map(tuple),
    st.lists(dynamics, max_size=2).map(tuple),
)
pods = st.builds(
    pr.PodResources,
    texts,
    texts,
    st.lists(containers, max_size=3).map(tuple),
    ids,
    st.lists(memories, max_size=2).map(tuple),
)
allocatables = st.builds(
    pr.AllocatableResourcesResponse,
    st.lists(devices, max_size=3).map(tuple),
    ids,
    st.lists(memories, max_size=3).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(pods, max_size=4))
def test_list_answers_decode_as_protobuf_decodes_them(listed: list[pr.PodResources]) -> None:
    data = pb.ListPodResourcesResponse(pod_resources=[to_message(p) for p in listed])
    encoded = data.SerializeToString()
    decoded = [wire.pod(b) for b in wire.listed_pods(encoded)]
    assert decoded == [from_message(m) for m in data.pod_resources] == listed
    # Each pod's bytes are those protobuf writes for it alone (the client's cache key).
    assert wire.listed_pods(encoded) == [m.SerializeToString() for m in data.pod_resources]


@settings(max_examples=100, deadline=None)
@given(allocatables)
def test_allocatable_answers_decode_as_protobuf_decodes_them(
    answer: pr.AllocatableResourcesResponse,
) -> None:
    encoded = to_message(answer).SerializeToString()
    assert wire.allocatable(encoded) == from_message(
        pb.AllocatableResourcesResponse.FromString(encoded)
    )
    assert wire.allocatable(encoded) == answer


@given(st.builds(pr.GetPodResourcesRequest, texts, texts))
def test_get_requests_are_the_bytes_protobuf_writes(request: pr.GetPodResourcesRequest) -> None:
    assert wire.get_request(request) == to_message(request).SerializeToString()


def test_a_get_answer_with_and_without_its_pod() -> None:
    pod = pr.PodResources("p", "ns", cpu_ids=(3,))
    assert wire.got_pod(b"") is None
    found = wire.got_pod(
        pb.GetPodResourcesResponse(pod_resources=to_message(pod)).SerializeToString()
    )
    assert found is not None and wire.pod(found) == pod
    # Set but empty: a pod with every field at its default (protobuf's HasField is true).
    assert wire.got_pod(b"\x0a\x00") == b""


def _both(cls: type, data: bytes) -> tuple[object, object]:
    """What protobuf and the client decode ``data`` to."""
    decoders = {pb.PodResources: wire.pod, pb.AllocatableResourcesResponse: wire.allocatable}
    return from_message(cls.FromString(data)), decoders[cls](data)


@pytest.mark.parametrize(
    "data",
    [
        # cpu_ids unpacked (field 4 as varints) and packed, mixed: all kept, in order.
        b"\x20\x05\x22\x02\x01\x02\x20\x07",
        # -1 as int64: ten bytes of varint.
        b"\x20" + b"\xff" * 9 + b"\x01",
        # Unknown fields of every wire type, a group among them, then the name.
        b"\x48\x01\x51"
        + b"\x00" * 8
        + b"\x5a\x01x\x65"
        + b"\x00" * 4
        + b"\x6b\x70\x01\x6c\x0a\x01n",
        # The name on the wrong wire type (varint): skipped as unknown; the last name wins.
        b"\x08\x05\x0a\x01a\x0a\x01b",
        # A container's memory topology given twice: merged (its nodes concatenated).
        b"\x1a\x10\x22\x0e\x1a\x04\x0a\x02\x08\x01\x1a\x04\x0a\x02\x08\x02\x10\x07",
    ],
    ids=["unpacked", "negative", "unknown", "wrong-wire-type", "merged"],
)
def test_encodings_protobuf_accepts_but_does_not_write(data: bytes) -> None:
    expected, decoded = _both(pb.PodResources, data)
    assert decoded == expected


@pytest.mark.parametrize(
    "data",
    [
        b"\x0a\x05ab",  # truncated string
        b"\x20\xff",  # truncated varint
        b"\x0a\x02\xff\xfe",  # not UTF-8
        b"\x00\x01",  # field number 0
        b"\x0f",  # wire type 7
        b"\x6b\x08\x01",  # unterminated group
    ],
)
def test_what_protobuf_refuses_is_refused(data: bytes) -> None:
    with pytest.raises(DecodeError):
        pb.PodResources.FromString(data)
    with pytest.raises(wire.WireError):
        wire.pod(data)

"""PodResources v1: dataclasses ⇄ protobuf messages ⇄ canonical proto3 JSON.

The JSON is what ``google.protobuf.json_format`` prints for the generated messages (the
mapping of podresources.md §9): lowerCamelCase ``json_name``s (``NUMANode.ID`` stays
``"ID"``), 64-bit integers as strings, defaults omitted, set-but-empty messages as ``{}``,
``shareId`` printed whenever it is set. Nothing here writes JSON by hand.

The message classes come from ``app.adapters.grpc.generated.api_pb2`` (generated from
``proto/podresources/v1/api.proto`` by ``scripts/gen_proto.sh``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from app.adapters.grpc.generated import api_pb2 as pb
from app.domain.podresources import (
    AllocatableResourcesRequest,
    AllocatableResourcesResponse,
    BuildOptions,
    CDIDevice,
    ClaimResource,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    DynamicResource,
    GetPodResourcesRequest,
    GetPodResourcesResponse,
    ListPodResourcesRequest,
    ListPodResourcesResponse,
    NUMANode,
    PodNotFoundError,
    PodResources,
    TopologyInfo,
    build_allocatable_response,
    build_pod_resources_with,
)
from app.domain.snapshot import NodeSnapshot, PodAllocation

__all__ = [
    "DEFAULT_CACHE",
    "PodNotFoundError",
    "PodResourcesCache",
    "PodResourcesJSONError",
    "allocatable_json",
    "from_message",
    "get_pod_json",
    "list_response_json",
    "message_from_bytes",
    "message_from_dict",
    "message_to_dict",
    "message_to_json",
    "to_message",
]


class PodResourcesJSONError(ValueError):
    """A JSON document or wire payload that is not a valid PodResources message."""


# -- dataclass -> protobuf ----------------------------------------------------------------


def _topology_pb(t: TopologyInfo) -> pb.TopologyInfo:
    return pb.TopologyInfo(nodes=[pb.NUMANode(ID=n.id) for n in t.nodes])


def _memory_pb(m: ContainerMemory) -> pb.ContainerMemory:
    msg = pb.ContainerMemory(memory_type=m.memory_type, size=m.size)
    if m.topology is not None:
        msg.topology.SetInParent()
        for n in m.topology.nodes:
            msg.topology.nodes.add(ID=n.id)
    return msg


def _devices_pb(d: ContainerDevices) -> pb.ContainerDevices:
    msg = pb.ContainerDevices(resource_name=d.resource_name, device_ids=d.device_ids)
    if d.topology is not None:
        msg.topology.SetInParent()
        for n in d.topology.nodes:
            msg.topology.nodes.add(ID=n.id)
    return msg


def _claim_pb(c: ClaimResource) -> pb.ClaimResource:
    msg = pb.ClaimResource(
        cdi_devices=[pb.CDIDevice(name=d.name) for d in c.cdi_devices],
        driver_name=c.driver_name,
        pool_name=c.pool_name,
        device_name=c.device_name,
    )
    if c.share_id is not None:
        msg.share_id = c.share_id
    return msg


def _dynamic_pb(d: DynamicResource) -> pb.DynamicResource:
    return pb.DynamicResource(
        claim_name=d.claim_name,
        claim_namespace=d.claim_namespace,
        claim_resources=[_claim_pb(c) for c in d.claim_resources],
    )


def _container_pb(c: ContainerResources) -> pb.ContainerResources:
    return pb.ContainerResources(
        name=c.name,
        devices=[_devices_pb(d) for d in c.devices],
        cpu_ids=c.cpu_ids,
        memory=[_memory_pb(m) for m in c.memory],
        dynamic_resources=[_dynamic_pb(d) for d in c.dynamic_resources],
    )


def _pod_pb(p: PodResources) -> pb.PodResources:
    return pb.PodResources(
        name=p.name,
        namespace=p.namespace,
        containers=[_container_pb(c) for c in p.containers],
        cpu_ids=p.cpu_ids,
        memory=[_memory_pb(m) for m in p.memory],
    )


def _list_pb(r: ListPodResourcesResponse) -> pb.ListPodResourcesResponse:
    return pb.ListPodResourcesResponse(pod_resources=[_pod_pb(p) for p in r.pod_resources])


def _allocatable_pb(r: AllocatableResourcesResponse) -> pb.AllocatableResourcesResponse:
    return pb.AllocatableResourcesResponse(
        devices=[_devices_pb(d) for d in r.devices],
        cpu_ids=r.cpu_ids,
        memory=[_memory_pb(m) for m in r.memory],
    )


def _get_pb(r: GetPodResourcesResponse) -> pb.GetPodResourcesResponse:
    msg = pb.GetPodResourcesResponse()
    if r.pod_resources is not None:
        msg.pod_resources.CopyFrom(_pod_pb(r.pod_resources))
    return msg


_TO_PB: dict[type, Callable[[Any], Message]] = {
    NUMANode: lambda n: pb.NUMANode(ID=n.id),
    TopologyInfo: _topology_pb,
    ContainerMemory: _memory_pb,
    ContainerDevices: _devices_pb,
    CDIDevice: lambda d: pb.CDIDevice(name=d.name),
    ClaimResource: _claim_pb,
    DynamicResource: _dynamic_pb,
    ContainerResources: _container_pb,
    PodResources: _pod_pb,
    ListPodResourcesRequest: lambda _: pb.ListPodResourcesRequest(),
    ListPodResourcesResponse: _list_pb,
    AllocatableResourcesRequest: lambda _: pb.AllocatableResourcesRequest(),
    AllocatableResourcesResponse: _allocatable_pb,
    GetPodResourcesRequest: lambda r: pb.GetPodResourcesRequest(
        pod_name=r.pod_name, pod_namespace=r.pod_namespace
    ),
    GetPodResourcesResponse: _get_pb,
}


def to_message(value: Any) -> Message:
    """The generated protobuf message for one of the dataclasses of app.domain.podresources."""
    convert = _TO_PB.get(type(value))
    if convert is None:
        raise TypeError(f"not a PodResources message value: {type(value).__name__}")
    return convert(value)


# -- protobuf -> dataclass ----------------------------------------------------------------


def _topology_dc(msg: pb.TopologyInfo) -> TopologyInfo:
    return TopologyInfo(tuple(NUMANode(n.ID) for n in msg.nodes))


def _memory_dc(msg: pb.ContainerMemory) -> ContainerMemory:
    topology = _topology_dc(msg.topology) if msg.HasField("topology") else None
    return ContainerMemory(msg.memory_type, msg.size, topology)


def _devices_dc(msg: pb.ContainerDevices) -> ContainerDevices:
    topology = _topology_dc(msg.topology) if msg.HasField("topology") else None
    return ContainerDevices(msg.resource_name, tuple(msg.device_ids), topology)


def _claim_dc(msg: pb.ClaimResource) -> ClaimResource:
    return ClaimResource(
        cdi_devices=tuple(CDIDevice(d.name) for d in msg.cdi_devices),
        driver_name=msg.driver_name,
        pool_name=msg.pool_name,
        device_name=msg.device_name,
        share_id=msg.share_id if msg.HasField("share_id") else None,
    )


def _dynamic_dc(msg: pb.DynamicResource) -> DynamicResource:
    return DynamicResource(
        msg.claim_name, msg.claim_namespace, tuple(_claim_dc(c) for c in msg.claim_resources)
    )


def _container_dc(msg: pb.ContainerResources) -> ContainerResources:
    return ContainerResources(
        name=msg.name,
        devices=tuple(_devices_dc(d) for d in msg.devices),
        cpu_ids=tuple(msg.cpu_ids),
        memory=tuple(_memory_dc(m) for m in msg.memory),
        dynamic_resources=tuple(_dynamic_dc(d) for d in msg.dynamic_resources),
    )


def _pod_dc(msg: pb.PodResources) -> PodResources:
    return PodResources(
        name=msg.name,
        namespace=msg.namespace,
        containers=tuple(_container_dc(c) for c in msg.containers),
        cpu_ids=tuple(msg.cpu_ids),
        memory=tuple(_memory_dc(m) for m in msg.memory),
    )


_FROM_PB: dict[type, Callable[[Any], Any]] = {
    pb.NUMANode: lambda m: NUMANode(m.ID),
    pb.TopologyInfo: _topology_dc,
    pb.ContainerMemory: _memory_dc,
    pb.ContainerDevices: _devices_dc,
    pb.CDIDevice: lambda m: CDIDevice(m.name),
    pb.ClaimResource: _claim_dc,
    pb.DynamicResource: _dynamic_dc,
    pb.ContainerResources: _container_dc,
    pb.PodResources: _pod_dc,
    pb.ListPodResourcesRequest: lambda _: ListPodResourcesRequest(),
    pb.ListPodResourcesResponse: lambda m: ListPodResourcesResponse(
        tuple(_pod_dc(p) for p in m.pod_resources)
    ),
    pb.AllocatableResourcesRequest: lambda _: AllocatableResourcesRequest(),
    pb.AllocatableResourcesResponse: lambda m: AllocatableResourcesResponse(
        devices=tuple(_devices_dc(d) for d in m.devices),
        cpu_ids=tuple(m.cpu_ids),
        memory=tuple(_memory_dc(x) for x in m.memory),
    ),
    pb.GetPodResourcesRequest: lambda m: GetPodResourcesRequest(m.pod_name, m.pod_namespace),
    pb.GetPodResourcesResponse: lambda m: GetPodResourcesResponse(
        _pod_dc(m.pod_resources) if m.HasField("pod_resources") else None
    ),
}

# dataclass type -> generated message class
_PB_CLASS: dict[type, type[Message]] = {
    NUMANode: pb.NUMANode,
    TopologyInfo: pb.TopologyInfo,
    ContainerMemory: pb.ContainerMemory,
    ContainerDevices: pb.ContainerDevices,
    CDIDevice: pb.CDIDevice,
    ClaimResource: pb.ClaimResource,
    DynamicResource: pb.DynamicResource,
    ContainerResources: pb.ContainerResources,
    PodResources: pb.PodResources,
    ListPodResourcesRequest: pb.ListPodResourcesRequest,
    ListPodResourcesResponse: pb.ListPodResourcesResponse,
    AllocatableResourcesRequest: pb.AllocatableResourcesRequest,
    AllocatableResourcesResponse: pb.AllocatableResourcesResponse,
    GetPodResourcesRequest: pb.GetPodResourcesRequest,
    GetPodResourcesResponse: pb.GetPodResourcesResponse,
}

T = TypeVar("T")


def from_message(msg: Message) -> Any:
    """The dataclass value of a generated protobuf message."""
    convert = _FROM_PB.get(type(msg))
    if convert is None:
        raise TypeError(f"not a PodResources v1 message: {type(msg).__name__}")
    return convert(msg)


# -- JSON and wire bytes ------------------------------------------------------------------


def message_to_dict(value: Any) -> dict[str, Any]:
    """Canonical proto3 JSON (as a dict) of a dataclass value or a generated message."""
    msg = value if isinstance(value, Message) else to_message(value)
    return json_format.MessageToDict(msg)


def message_to_json(value: Any, indent: int | None = None) -> str:
    """Canonical proto3 JSON text of a dataclass value or a generated message."""
    msg = value if isinstance(value, Message) else to_message(value)
    return json_format.MessageToJson(msg, indent=indent)


def message_from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Parse canonical JSON (JSON names or proto names) into the dataclass ``cls``."""
    pb_cls = _PB_CLASS.get(cls)
    if pb_cls is None:
        raise TypeError(f"not a PodResources message type: {cls.__name__}")
    if not isinstance(data, Mapping):
        raise PodResourcesJSONError(
            f"{cls.__name__}: expected a JSON object, got {type(data).__name__}"
        )
    try:
        msg = json_format.ParseDict(dict(data), pb_cls())
    except json_format.ParseError as exc:
        raise PodResourcesJSONError(f"{cls.__name__}: {exc}") from None
    result: T = from_message(msg)
    return result


def message_from_bytes(cls: type[T], data: bytes) -> T:
    """Decode wire bytes (packed or unpacked repeated ints, unknown fields skipped)."""
    pb_cls = _PB_CLASS.get(cls)
    if pb_cls is None:
        raise TypeError(f"not a PodResources message type: {cls.__name__}")
    msg = pb_cls()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise PodResourcesJSONError(f"{cls.__name__}: invalid wire data: {exc}") from None
    result: T = from_message(msg)
    return result


# -- per-pod cache ------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_POD_RESOURCES_TAG = b"\x0a"  # field 1, wire type 2 in both List and Get responses


class _Entry:
    """One pod's answer in its three forms; the wire and JSON forms are made on demand."""

    __slots__ = ("_json", "_wire", "value")

    def __init__(self, value: PodResources) -> None:
        self.value = value
        self._wire: bytes | None = None
        self._json: dict[str, Any] | None = None

    def wire(self) -> bytes:
        if self._wire is None:
            self._wire = _pod_pb(self.value).SerializeToString()
        return self._wire

    def field(self) -> bytes:
        """The pod as a length-delimited ``pod_resources = 1`` field of a response."""
        wire = self.wire()
        return _POD_RESOURCES_TAG + _varint(len(wire)) + wire

    def json(self) -> dict[str, Any]:
        if self._json is None:
            self._json = json_format.MessageToDict(_pod_pb(self.value))
        return self._json


class PodResourcesCache:
    """Per-pod memo of PodResources answers, keyed by the pod's value and the kubelet options.

    Snapshots are immutable values and a node's pods rarely change between two requests, so
    ``List`` reuses what was computed for unchanged pods: the dataclass, its serialised
    bytes and its canonical JSON. A response is assembled from per-pod pieces exactly as
    protobuf encodes a repeated field (each element as its own length-delimited field 1),
    and json_format renders a repeated message field element by element, so the result is
    identical to converting the whole message at once (tests check both).

    The JSON fragments are shared between calls: treat returned dicts as read-only.
    Thread-safe; bounded (least recently used entries are dropped).
    """

    def __init__(self, maxsize: int = 8192) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[tuple[BuildOptions, PodAllocation], _Entry] = OrderedDict()
        # Fast path for the very same PodAllocation object: no hashing of the whole pod.
        # The stored pod keeps its id from being reused while the entry lives.
        self._by_id: dict[tuple[BuildOptions, int], tuple[PodAllocation, _Entry]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_id.clear()

    def _lookup(self, options: BuildOptions, pod: PodAllocation) -> _Entry | None:
        """Find a cached entry; the caller holds the lock."""
        same = self._by_id.get((options, id(pod)))
        if same is not None and same[0] is pod:
            return same[1]
        found = self._entries.get((options, pod))
        if found is not None:
            self._entries.move_to_end((options, pod))
            self._by_id[(options, id(pod))] = (pod, found)
        return found

    def _store(self, options: BuildOptions, pod: PodAllocation, made: _Entry) -> None:
        """Insert a new entry and evict the oldest; the caller holds the lock."""
        self._entries[(options, pod)] = made
        self._by_id[(options, id(pod))] = (pod, made)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
        if len(self._by_id) > 2 * self.maxsize:
            self._by_id.clear()

    def entries(self, options: BuildOptions, pods: tuple[PodAllocation, ...]) -> list[_Entry]:
        """The entries of ``pods`` in order, building the missing ones."""
        with self._lock:
            found = [self._lookup(options, p) for p in pods]
        missing = [i for i, e in enumerate(found) if e is None]
        if not missing:
            return found  # type: ignore[return-value]
        made = {i: _Entry(build_pod_resources_with(options, pods[i])) for i in missing}
        with self._lock:
            for i, entry in made.items():
                self._store(options, pods[i], entry)
        return [e if e is not None else made[i] for i, e in enumerate(found)]

    def entry(self, options: BuildOptions, pod: PodAllocation) -> _Entry:
        return self.entries(options, (pod,))[0]

    def _entries_of(self, snapshot: NodeSnapshot) -> list[_Entry]:
        return self.entries(BuildOptions.from_snapshot(snapshot), snapshot.pods)

    def _pod_entry(self, snapshot: NodeSnapshot, namespace: str, name: str) -> _Entry:
        pod = snapshot.pod(namespace, name)
        if pod is None:
            raise PodNotFoundError(namespace, name)
        return self.entry(BuildOptions.from_snapshot(snapshot), pod)

    def list_response(self, snapshot: NodeSnapshot) -> ListPodResourcesResponse:
        return ListPodResourcesResponse(tuple(e.value for e in self._entries_of(snapshot)))

    def list_wire(self, snapshot: NodeSnapshot) -> bytes:
        """Serialised ``ListPodResourcesResponse``."""
        return b"".join(e.field() for e in self._entries_of(snapshot))

    def list_json(self, snapshot: NodeSnapshot) -> dict[str, Any]:
        pods = [e.json() for e in self._entries_of(snapshot)]
        return {"podResources": pods} if pods else {}

    def get_wire(self, snapshot: NodeSnapshot, namespace: str, name: str) -> bytes:
        """Serialised ``GetPodResourcesResponse``; raises PodNotFoundError."""
        return self._pod_entry(snapshot, namespace, name).field()

    def get_json(self, snapshot: NodeSnapshot, namespace: str, name: str) -> dict[str, Any]:
        return {"podResources": self._pod_entry(snapshot, namespace, name).json()}


DEFAULT_CACHE = PodResourcesCache()


def list_response_json(snapshot: NodeSnapshot) -> dict[str, Any]:
    """``List`` of a node as canonical JSON (per-pod pieces are shared: read-only)."""
    return DEFAULT_CACHE.list_json(snapshot)


def allocatable_json(snapshot: NodeSnapshot) -> dict[str, Any]:
    """``GetAllocatableResources`` of a node as canonical JSON."""
    return message_to_dict(build_allocatable_response(snapshot))


def get_pod_json(snapshot: NodeSnapshot, namespace: str, name: str) -> dict[str, Any]:
    """``Get`` of one pod as canonical JSON; raises PodNotFoundError for an unknown pod."""
    return DEFAULT_CACHE.get_json(snapshot, namespace, name)

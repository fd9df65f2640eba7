"""PodResources v1: dataclasses ⇄ protobuf messages ⇄ canonical proto3 JSON.

The JSON is what ``google.protobuf.json_format`` prints for the generated messages (the
mapping of podresources.md §9): lowerCamelCase ``json_name``s (``NUMANode.ID`` stays
``"ID"``), 64-bit integers as strings, defaults omitted, set-but-empty messages as ``{}``,
``shareId`` printed whenever it is set. Nothing here writes JSON by hand: every key and value
comes from json_format; the per-pod cache and ``_JSONMemo`` only put json_format's output for
the elements of repeated message fields back in their places (what json_format itself does,
element by element), and tests compare the result with whole-message conversion.

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


# Messages are built in place (``repeated.add(...)``, ``SetInParent``) rather than from lists
# of child messages: upb copies a child passed to a constructor, so in-place is about twice
# as fast. Empty repeated fields are not touched (an empty field is the same as an unset one).


def _set_topology(msg: Any, t: TopologyInfo) -> None:
    """Set ``msg.topology`` (present even with no nodes)."""
    topology = msg.topology
    topology.SetInParent()
    nodes = topology.nodes
    for n in t.nodes:
        nodes.add(ID=n.id)


def _add_memory(repeated: Any, memory: tuple[ContainerMemory, ...]) -> None:
    for m in memory:
        msg = repeated.add(memory_type=m.memory_type, size=m.size)
        if m.topology is not None:
            _set_topology(msg, m.topology)


def _memory_pb(m: ContainerMemory) -> pb.ContainerMemory:
    msg = pb.ContainerMemory(memory_type=m.memory_type, size=m.size)
    if m.topology is not None:
        _set_topology(msg, m.topology)
    return msg


def _devices_pb(d: ContainerDevices) -> pb.ContainerDevices:
    msg = pb.ContainerDevices(resource_name=d.resource_name, device_ids=d.device_ids)
    if d.topology is not None:
        _set_topology(msg, d.topology)
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


def _fill_container(msg: Any, c: ContainerResources, *, memory: bool = True) -> None:
    """The fields of ``c`` but ``name`` and ``cpu_ids`` (set by the caller) into ``msg``;
    ``memory=False`` leaves ``memory`` out."""
    if c.devices:
        msg.devices.extend([_devices_pb(d) for d in c.devices])
    if memory and c.memory:
        _add_memory(msg.memory, c.memory)
    if c.dynamic_resources:
        msg.dynamic_resources.extend([_dynamic_pb(d) for d in c.dynamic_resources])


def _container_pb(c: ContainerResources) -> pb.ContainerResources:
    msg = pb.ContainerResources(name=c.name, cpu_ids=c.cpu_ids)
    _fill_container(msg, c)
    return msg


def _pod_pb(p: PodResources) -> pb.PodResources:
    msg = pb.PodResources(name=p.name, namespace=p.namespace, cpu_ids=p.cpu_ids)
    if p.containers:
        repeated = msg.containers
        for c in p.containers:
            _fill_container(repeated.add(name=c.name, cpu_ids=c.cpu_ids), c)
    if p.memory:
        _add_memory(msg.memory, p.memory)
    return msg


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


# -- JSON of a pod, container by container ----------------------------------------------


def _fields_in_order(message_class: Any) -> tuple[tuple[int, str], ...]:
    """(field number, JSON name) of a message's fields, in field-number order."""
    fields = sorted(message_class.DESCRIPTOR.fields, key=lambda f: f.number)
    return tuple((f.number, f.json_name) for f in fields)


def _field_number(message_class: Any, name: str) -> int:
    number: int = message_class.DESCRIPTOR.fields_by_name[name].number
    return number


_POD_FIELDS = _fields_in_order(pb.PodResources)
_POD_CONTAINERS = _field_number(pb.PodResources, "containers")
_POD_MEMORY = _field_number(pb.PodResources, "memory")
_CONTAINER_FIELDS = _fields_in_order(pb.ContainerResources)
_CONTAINER_MEMORY = _field_number(pb.ContainerResources, "memory")


def _splice(
    shell: dict[str, Any], fields: tuple[tuple[int, str], ...], lists: dict[int, list[Any]]
) -> dict[str, Any]:
    """``shell`` (a message's JSON printed without some repeated message fields) with those
    fields' element lists put back in their places; an empty list stays out, as in proto3."""
    out: dict[str, Any] = {}
    for number, name in fields:
        items = lists.get(number)
        if items is None:
            if name in shell:
                out[name] = shell[name]
        elif items:
            out[name] = items
    return out


class _JSONMemo:
    """Canonical JSON of pods from json_format, with the repeated parts memoised by value.

    json_format prints a message's set fields in field-number order and a repeated message
    field element by element (each element exactly as ``MessageToDict`` of it). So a pod
    printed without its ``containers`` and ``memory``, with the lists of its elements' JSON
    put back in their places, is the same dict with its keys in the same order (tests check
    it against whole-message conversion); the same holds for a container and its
    ``memory``. Elements repeat a lot on a node: memory entries (a type, a size, a NUMA node)
    and containers without CPU ids (a sidecar's or a shared-pool container's name, nothing
    else), so each distinct one is printed once. The dicts are shared: read-only.

    Bounded: a memo that outgrows ``limit`` entries starts again empty.
    """

    def __init__(self, limit: int = 32768) -> None:
        self.limit = limit
        self._memory: dict[ContainerMemory, dict[str, Any]] = {}
        self._containers: dict[ContainerResources, dict[str, Any]] = {}

    def clear(self) -> None:
        self._memory = {}
        self._containers = {}

    def memory(self, m: ContainerMemory) -> dict[str, Any]:
        found = self._memory.get(m)
        if found is None:
            found = json_format.MessageToDict(_memory_pb(m))
            if len(self._memory) >= self.limit:
                self._memory = {}
            self._memory[m] = found
        return found

    def _container(self, c: ContainerResources) -> dict[str, Any]:
        msg = pb.ContainerResources(name=c.name, cpu_ids=c.cpu_ids)
        _fill_container(msg, c, memory=False)
        shell = json_format.MessageToDict(msg)
        if not c.memory:
            return shell
        return _splice(
            shell, _CONTAINER_FIELDS, {_CONTAINER_MEMORY: [self.memory(m) for m in c.memory]}
        )

    def container(self, c: ContainerResources) -> dict[str, Any]:
        if c.cpu_ids:  # exclusive CPUs: no other container prints the same
            return self._container(c)
        found = self._containers.get(c)
        if found is None:
            found = self._container(c)
            if len(self._containers) >= self.limit:
                self._containers = {}
            self._containers[c] = found
        return found

    def pod(self, p: PodResources) -> dict[str, Any]:
        """``MessageToDict`` of the pod's message."""
        shell = json_format.MessageToDict(
            pb.PodResources(name=p.name, namespace=p.namespace, cpu_ids=p.cpu_ids)
        )
        if not p.containers and not p.memory:
            return shell
        lists = {
            _POD_CONTAINERS: [self.container(c) for c in p.containers],
            _POD_MEMORY: [self.memory(m) for m in p.memory],
        }
        return _splice(shell, _POD_FIELDS, lists)


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

    def json(self, memo: _JSONMemo) -> dict[str, Any]:
        if self._json is None:
            self._json = memo.pod(self.value)
        return self._json


class _PodKey:
    """``(options, pod)`` as a cache key that hashes the (deep) pod value once."""

    __slots__ = ("_hash", "options", "pod")

    def __init__(self, options: BuildOptions, pod: PodAllocation) -> None:
        self.options = options
        self.pod = pod
        self._hash = hash((options, pod))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _PodKey):
            return NotImplemented
        return self._hash == other._hash and self.options == other.options and self.pod == other.pod


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
        self._entries: OrderedDict[_PodKey, _Entry] = OrderedDict()
        # JSON of the repeated parts of pods (memory entries, CPU-less containers) by value,
        # so pods not seen before convert faster.
        self._json_memo = _JSONMemo(4 * maxsize)
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
            self._json_memo.clear()

    def _lookup(self, options: BuildOptions, pod: PodAllocation) -> _Entry | _PodKey:
        """A cached entry, or the key to store the pod's entry under; the caller holds the
        lock."""
        same = self._by_id.get((options, id(pod)))
        if same is not None and same[0] is pod:
            return same[1]
        key = _PodKey(options, pod)
        found = self._entries.get(key)
        if found is None:
            return key
        self._entries.move_to_end(key)
        self._by_id[(options, id(pod))] = (pod, found)
        return found

    def _store(self, key: _PodKey, made: _Entry) -> None:
        """Insert a new entry and evict the oldest; the caller holds the lock."""
        self._entries[key] = made
        self._by_id[(key.options, id(key.pod))] = (key.pod, made)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
        if len(self._by_id) > 2 * self.maxsize:
            self._by_id.clear()

    def entries(self, options: BuildOptions, pods: tuple[PodAllocation, ...]) -> list[_Entry]:
        """The entries of ``pods`` in order, building the missing ones."""
        with self._lock:
            found = [self._lookup(options, p) for p in pods]
        missing = [(i, key) for i, key in enumerate(found) if isinstance(key, _PodKey)]
        if not missing:
            return found  # type: ignore[return-value]
        made = {i: _Entry(build_pod_resources_with(options, key.pod)) for i, key in missing}
        with self._lock:
            for i, key in missing:
                self._store(key, made[i])
        return [made[i] if isinstance(e, _PodKey) else e for i, e in enumerate(found)]

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
        pods = [e.json(self._json_memo) for e in self._entries_of(snapshot)]
        return {"podResources": pods} if pods else {}

    def get_wire(self, snapshot: NodeSnapshot, namespace: str, name: str) -> bytes:
        """Serialised ``GetPodResourcesResponse``; raises PodNotFoundError."""
        return self._pod_entry(snapshot, namespace, name).field()

    def get_json(self, snapshot: NodeSnapshot, namespace: str, name: str) -> dict[str, Any]:
        entry = self._pod_entry(snapshot, namespace, name)
        return {"podResources": entry.json(self._json_memo)}


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

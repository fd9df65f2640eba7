"""Per-pod cache of PodResources answers built from a snapshot: the dataclass, its wire bytes
and its canonical proto3 JSON, reused while a pod's value and the kubelet options are
unchanged.

The JSON is what ``google.protobuf.json_format`` prints for the generated messages (the mapping
of podresources.md §9); nothing here writes JSON by hand: the per-pod cache and ``_JSONMemo``
only put json_format's output for the elements of repeated message fields back in their places
(what json_format itself does, element by element), and tests compare the result with
whole-message conversion. The messages are built as ``app.domain.podresources`` builds the
answers (pkg/kubelet/apis/podresources/server_v1.go) and converted by ``podresources_pb``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from google.protobuf import json_format

from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.podresources_pb import fill_container, memory_pb, pod_pb
from app.domain.podresources import (
    BuildOptions,
    ContainerMemory,
    ContainerResources,
    ListPodResourcesResponse,
    PodNotFoundError,
    PodResources,
    build_pod_resources_with,
)
from app.domain.snapshot import NodeSnapshot, PodAllocation

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
            found = json_format.MessageToDict(memory_pb(m))
            if len(self._memory) >= self.limit:
                self._memory = {}
            self._memory[m] = found
        return found

    def _container(self, c: ContainerResources) -> dict[str, Any]:
        msg = pb.ContainerResources(name=c.name, cpu_ids=c.cpu_ids)
        fill_container(msg, c, memory=False)
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
            self._wire = pod_pb(self.value).SerializeToString()
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


def get_pod_json(snapshot: NodeSnapshot, namespace: str, name: str) -> dict[str, Any]:
    """``Get`` of one pod as canonical JSON; raises PodNotFoundError for an unknown pod."""
    return DEFAULT_CACHE.get_json(snapshot, namespace, name)

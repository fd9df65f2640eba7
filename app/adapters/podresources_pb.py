"""PodResources v1 dataclasses (``app.domain.podresources``) to and from the generated
protobuf messages.

The message classes come from ``app.adapters.grpc.generated.api_pb2`` (generated from
``proto/podresources/v1/api.proto`` by ``scripts/gen_proto.sh``). ``to_message`` and
``from_message`` convert any message value; ``pod_pb``, ``memory_pb`` and ``fill_container`` are
the builders the per-pod cache (``podresources_cache``) reuses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message

from app.adapters.grpc.generated import api_pb2 as pb
from app.domain.podresources import (
    AllocatableResourcesRequest,
    AllocatableResourcesResponse,
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
    PodResources,
    TopologyInfo,
)

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


def memory_pb(m: ContainerMemory) -> pb.ContainerMemory:
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


def fill_container(msg: Any, c: ContainerResources, *, memory: bool = True) -> None:
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
    fill_container(msg, c)
    return msg


def pod_pb(p: PodResources) -> pb.PodResources:
    msg = pb.PodResources(name=p.name, namespace=p.namespace, cpu_ids=p.cpu_ids)
    if p.containers:
        repeated = msg.containers
        for c in p.containers:
            fill_container(repeated.add(name=c.name, cpu_ids=c.cpu_ids), c)
    if p.memory:
        _add_memory(msg.memory, p.memory)
    return msg


def _list_pb(r: ListPodResourcesResponse) -> pb.ListPodResourcesResponse:
    return pb.ListPodResourcesResponse(pod_resources=[pod_pb(p) for p in r.pod_resources])


def _allocatable_pb(r: AllocatableResourcesResponse) -> pb.AllocatableResourcesResponse:
    return pb.AllocatableResourcesResponse(
        devices=[_devices_pb(d) for d in r.devices],
        cpu_ids=r.cpu_ids,
        memory=[memory_pb(m) for m in r.memory],
    )


def _get_pb(r: GetPodResourcesResponse) -> pb.GetPodResourcesResponse:
    msg = pb.GetPodResourcesResponse()
    if r.pod_resources is not None:
        msg.pod_resources.CopyFrom(pod_pb(r.pod_resources))
    return msg


_TO_PB: dict[type, Callable[[Any], Message]] = {
    NUMANode: lambda n: pb.NUMANode(ID=n.id),
    TopologyInfo: _topology_pb,
    ContainerMemory: memory_pb,
    ContainerDevices: _devices_pb,
    CDIDevice: lambda d: pb.CDIDevice(name=d.name),
    ClaimResource: _claim_pb,
    DynamicResource: _dynamic_pb,
    ContainerResources: _container_pb,
    PodResources: pod_pb,
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
PB_CLASS: dict[type, type[Message]] = {
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


def from_message(msg: Message) -> Any:
    """The dataclass value of a generated protobuf message."""
    convert = _FROM_PB.get(type(msg))
    if convert is None:
        raise TypeError(f"not a PodResources v1 message: {type(msg).__name__}")
    return convert(msg)

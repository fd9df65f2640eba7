"""The fast paths of PodResources: the one-pass builder against the per-container rules, the
in-place message builders and the memoised, spliced JSON against whole-message
``json_format`` (same dict, keys in the same order)."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.podresources_cache import PodResourcesCache, _JSONMemo
from app.adapters.podresources_pb import to_message
from app.domain.cpuset import CPUSet
from app.domain.podresources import (
    BuildOptions,
    ContainerMemory,
    ContainerResources,
    ListPodResourcesResponse,
    PodResources,
    TopologyInfo,
    _has_exclusive_memory,
    build_list_response,
    build_pod_resources_with,
)
from app.domain.snapshot import ContainerAllocation, MemoryBlock, PodAllocation
from tests.adapters.test_grpc_json import _pods
from tests.fixtures.podresources import snapshots as S

# -- the builder --------------------------------------------------------------------------


def reference_pod(options: BuildOptions, pod: PodAllocation) -> PodResources:
    """The builder rule by rule, one container at a time."""

    def memory(blocks: tuple[MemoryBlock, ...]) -> tuple[ContainerMemory, ...]:
        return tuple(
            ContainerMemory(b.type, b.size, TopologyInfo.of(tuple(b.numa_affinity))) for b in blocks
        )

    def container(c: ContainerAllocation) -> ContainerResources:
        reports_cpus = c.isolation == "container" or (
            c.isolation == "pod" and not options.exclusive_only
        )
        cpu_ids = tuple(c.cpuset) if options.cpu_static and reports_cpus else ()
        reports_memory = not (
            options.exclusive_only and pod.has_pod_entry
        ) or _has_exclusive_memory(c)
        mem = memory(c.memory) if options.memory_static and reports_memory else ()
        return ContainerResources(name=c.name, cpu_ids=cpu_ids, memory=mem)

    containers = tuple(container(c) for c in pod.containers if c.kind == "sidecar") + tuple(
        container(c) for c in pod.containers if c.kind == "app"
    )
    cpu_ids: tuple[int, ...] = ()
    mem: tuple[ContainerMemory, ...] = ()
    if options.pod_level:
        if options.cpu_static and pod.pod_cpuset is not None:
            cpu_ids = tuple(pod.pod_cpuset)
        if options.memory_static:
            mem = memory(pod.pod_memory)
    return PodResources(pod.name, pod.namespace, containers, cpu_ids, mem)


_cpusets = st.frozensets(st.integers(0, 63), max_size=4).map(CPUSet)
_blocks = st.lists(
    st.builds(
        MemoryBlock,
        st.lists(st.integers(0, 3), min_size=1, max_size=2).map(tuple),
        st.sampled_from(["memory", "hugepages-2Mi"]),
        st.integers(0, 4).map(lambda g: g << 30),
    ),
    max_size=2,
).map(tuple)
_isolation = st.sampled_from(["container", "pod", "host"])
_container_allocations = st.builds(
    ContainerAllocation,
    st.sampled_from(["app", "log", "proxy", "init"]),
    st.sampled_from(["app", "sidecar", "init"]),
    _cpusets,
    _isolation,
    _blocks,
    st.sampled_from([0, 500, 1000, 2000]),
    st.sampled_from([0, 500, 1000, 2000]),
    st.one_of(st.none(), _isolation),
)
_pod_allocations = st.builds(
    PodAllocation,
    st.just("uid"),
    st.sampled_from(["a", "b"]),
    st.just("default"),
    st.sampled_from(["Guaranteed", "Burstable"]),
    st.lists(_container_allocations, max_size=5).map(tuple),
    st.one_of(st.none(), _cpusets),
    _blocks,
)
_options = st.builds(BuildOptions, st.booleans(), st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(_options, _pod_allocations)
def test_builder_follows_the_rules_container_by_container(
    options: BuildOptions, pod: PodAllocation
) -> None:
    assert build_pod_resources_with(options, pod) == reference_pod(options, pod)


# -- messages and JSON --------------------------------------------------------------------


def _plain_pod_pb(p: PodResources) -> pb.PodResources:
    """The pod message built from child messages (the straightforward way)."""

    def topology(t: TopologyInfo) -> pb.TopologyInfo:
        return pb.TopologyInfo(nodes=[pb.NUMANode(ID=n.id) for n in t.nodes])

    def memory(m: ContainerMemory) -> pb.ContainerMemory:
        msg = pb.ContainerMemory(memory_type=m.memory_type, size=m.size)
        if m.topology is not None:
            msg.topology.CopyFrom(topology(m.topology))
        return msg

    def container(c: ContainerResources) -> pb.ContainerResources:
        msg = to_message(c)
        assert isinstance(msg, pb.ContainerResources)
        del msg.memory[:]
        msg.memory.extend([memory(m) for m in c.memory])
        return msg

    return pb.PodResources(
        name=p.name,
        namespace=p.namespace,
        containers=[container(c) for c in p.containers],
        cpu_ids=p.cpu_ids,
        memory=[memory(m) for m in p.memory],
    )


def _text(d: Any) -> str:
    return json.dumps(d)  # key order included


@settings(max_examples=150, deadline=None)
@given(st.lists(_pods, max_size=4))
def test_spliced_json_is_whole_message_json(pods: list[PodResources]) -> None:
    memo = _JSONMemo(limit=3)  # tiny: the memo also starts over while converting
    for p in pods:
        whole = json_format.MessageToDict(_plain_pod_pb(p))
        assert to_message(p) == _plain_pod_pb(p)
        assert _text(memo.pod(p)) == _text(whole)
        assert _text(memo.pod(p)) == _text(whole)  # from the memo


@settings(max_examples=80, deadline=None)
@given(st.lists(_pod_allocations, max_size=4))
def test_cached_list_json_is_whole_message_json(pods: list[PodAllocation]) -> None:
    pods = [
        PodAllocation(
            f"uid-{i}",
            f"pod-{i}",
            p.namespace,
            p.qos_class,
            p.containers,
            p.pod_cpuset,
            p.pod_memory,
        )
        for i, p in enumerate(pods)
    ]
    snap = S.snapshot(tuple(pods))
    whole = json_format.MessageToDict(to_message(build_list_response(snap)))
    cache = PodResourcesCache()
    assert _text(cache.list_json(snap)) == _text(whole)
    assert _text(cache.list_json(snap)) == _text(whole)  # warm
    response = ListPodResourcesResponse(build_list_response(snap).pod_resources)
    assert cache.list_wire(snap) == to_message(response).SerializeToString()

"""PodResources speed on a 512-thread node holding 250 pods of 4 containers.

Prints the median and the best (ms) of:

* ``List`` built and serialised to canonical JSON (``list_response_json``): cold (empty
  per-pod cache), warm (unchanged snapshot), warm with one pod changed (a new snapshot
  sharing 249 pod objects), and warm with every pod a fresh but equal value (what a node
  that rebuilds its snapshot per request hands over) — target ≤ 5 ms;
* the same without the per-pod cache (builder + whole-message json_format), for reference;
* the client's decoding of a ``List`` answer (``app.adapters.grpc.wire``) beside protobuf's:
  every pod (cold), and the split into pods whose bytes key the client's cache (warm);
* a gRPC ``List`` round trip over a unix socket: raw stub (protobuf messages) and
  ``PodResourcesClient.list()`` (dataclasses) — target ≤ 5 ms.

The snapshot is built by hand (2 sockets x 4 NUMA nodes x 32 cores x 2 threads; half the
pods are pod-scope pods with a 2-CPU budget, one exclusive container and three in the pod
shared pool; the other half have two exclusive 1-CPU containers and two in the node shared
pool), so the figures measure PodResources alone, not admission.

    .venv/bin/python bench/bench_podresources.py [--runs N]
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc
from google.protobuf import json_format

from app.adapters.grpc import wire
from app.adapters.grpc.client import PodResourcesClient
from app.adapters.grpc.generated import api_pb2 as pb
from app.adapters.grpc.generated import api_pb2_grpc as pb_grpc
from app.adapters.grpc.ratelimit import TokenBucket
from app.adapters.grpc.server import PodResourcesServer
from app.adapters.podresources_cache import PodResourcesCache, list_response_json
from app.adapters.podresources_pb import from_message, to_message
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import kubelet_config_from_dict
from app.domain.podresources import build_list_response
from app.domain.snapshot import ContainerAllocation, MemoryBlock, NodeSnapshot, PodAllocation
from app.domain.topology.model import GIB, NUMANodeMemory, discover

TARGET_MS = 5.0
THREADS = 512
NUMA_NODES = 8
PODS = 250


def make_snapshot() -> NodeSnapshot:
    cores = THREADS // 2
    per_numa = cores // NUMA_NODES
    topology = discover(
        {
            n: [(n // 4, (c, c + cores), None) for c in range(n * per_numa, (n + 1) * per_numa)]
            for n in range(NUMA_NODES)
        },
        memory=[NUMANodeMemory(n, 128 * GIB) for n in range(NUMA_NODES)],
        name="bench-512",
    )
    config = kubelet_config_from_dict(
        {
            "cpuManagerPolicy": "static",
            "memoryManagerPolicy": "Static",
            "topologyManagerPolicy": "single-numa-node",
            "topologyManagerScope": "pod",
            "reservedSystemCPUs": f"0,{cores}",
            "featureGates": {"PodLevelResourceManagers": True},
        }
    )
    reserved = CPUSet([0, cores])
    free = [c for c in range(THREADS) if c not in (0, cores)]
    pods = []
    for i in range(PODS):
        a, b = free[2 * i], free[2 * i + 1]
        numa = topology.cpu_numa_node_id(a)
        own = (MemoryBlock((numa,), "memory", GIB),)
        if i % 2 == 0:
            pool = CPUSet([b])
            shared = (MemoryBlock((numa,), "memory", GIB),)
            containers = (
                ContainerAllocation("proxy", "sidecar", pool, "pod", shared),
                ContainerAllocation("main", "app", CPUSet([a]), "container", own, 1000, 1000),
                ContainerAllocation("logger", "app", pool, "pod", shared),
                ContainerAllocation("metrics", "app", pool, "pod", shared),
            )
            pods.append(
                PodAllocation(
                    f"uid-{i}",
                    f"pod-{i}",
                    f"ns-{i % 7}",
                    "Guaranteed",
                    containers,
                    pod_cpuset=CPUSet([a, b]),
                    pod_memory=(MemoryBlock((numa,), "memory", 2 * GIB),),
                    pod_level_cpu_milli=2000,
                )
            )
        else:
            containers = (
                ContainerAllocation("main", "app", CPUSet([a]), "container", own, 1000, 1000),
                ContainerAllocation("worker", "app", CPUSet([b]), "container", own, 1000, 1000),
                ContainerAllocation("logger", "app", CPUSet(), "host"),
                ContainerAllocation("metrics", "app", CPUSet(), "host"),
            )
            pods.append(
                PodAllocation(f"uid-{i}", f"pod-{i}", f"ns-{i % 7}", "Burstable", containers)
            )
    return NodeSnapshot(
        name="bench",
        simulated=True,
        topology=topology,
        config=config,
        reserved_cpus=reserved,
        default_cpuset=CPUSet(),
        pods=tuple(pods),
    )


def timings_ms(
    fn: Callable[[], object], runs: int, setup: Callable[[], object] | None = None
) -> tuple[float, float]:
    """``(median, best)`` of ``runs`` timed calls (``setup`` runs untimed before each). The
    best shows the cost without interference from other processes on a shared machine; the
    median is the figure the targets are stated for."""
    samples = []
    for _ in range(runs):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000, min(samples) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    runs = args.runs

    snapshot = make_snapshot()
    containers = sum(len(p.containers) for p in snapshot.pods)
    print(
        f"node: {snapshot.topology.num_cpus} CPUs, {len(snapshot.pods)} pods, {containers} containers"
    )

    results: list[tuple[str, tuple[float, float], float | None]] = []

    # -- List -> canonical JSON -----------------------------------------------------------------
    cache_holder: list[PodResourcesCache] = [PodResourcesCache()]
    results.append(
        (
            "List -> JSON, cold (empty per-pod cache)",
            timings_ms(
                lambda: cache_holder[0].list_json(snapshot),
                max(runs // 2, 10),
                setup=lambda: cache_holder.__setitem__(0, PodResourcesCache()),
            ),
            None,
        )
    )
    list_response_json(snapshot)
    results.append(
        ("List -> JSON, warm", timings_ms(lambda: list_response_json(snapshot), runs), TARGET_MS)
    )
    changed_holder: list[NodeSnapshot] = [snapshot]
    counter = [0]

    def one_pod_changed() -> None:
        counter[0] += 1
        pods = list(snapshot.pods)
        pods[counter[0] % len(pods)] = replace(pods[counter[0] % len(pods)], admitted_at=counter[0])
        changed_holder[0] = replace(snapshot, pods=tuple(pods), observed_at=counter[0])

    results.append(
        (
            "List -> JSON, warm, one pod changed",
            timings_ms(lambda: list_response_json(changed_holder[0]), runs, setup=one_pod_changed),
            TARGET_MS,
        )
    )
    fresh_holder: list[NodeSnapshot] = [snapshot]

    def fresh_equal_snapshot() -> None:
        fresh_holder[0] = replace(snapshot, pods=copy.deepcopy(snapshot.pods))

    results.append(
        (
            "List -> JSON, warm, every pod a fresh equal value",
            timings_ms(
                lambda: list_response_json(fresh_holder[0]), runs, setup=fresh_equal_snapshot
            ),
            TARGET_MS,
        )
    )
    results.append(
        (
            "List -> JSON without cache (reference)",
            timings_ms(
                lambda: json_format.MessageToDict(to_message(build_list_response(snapshot))),
                max(runs // 2, 10),
            ),
            None,
        )
    )

    # -- the client's decoding of a List answer: its own (app.adapters.grpc.wire) and protobuf's
    data = to_message(build_list_response(snapshot)).SerializeToString()
    results.append(
        (
            "List answer decoded, cold: wire.pod per pod",
            timings_ms(lambda: [wire.pod(p) for p in wire.listed_pods(data)], max(runs // 2, 10)),
            None,
        )
    )
    results.append(
        (
            "List answer decoded, cold: protobuf (reference)",
            timings_ms(
                lambda: [
                    from_message(m)
                    for m in pb.ListPodResourcesResponse.FromString(data).pod_resources
                ],
                max(runs // 2, 10),
            ),
            None,
        )
    )
    results.append(
        (
            "List answer split into pods (warm: cached by bytes)",
            timings_ms(lambda: wire.listed_pods(data), runs),
            None,
        )
    )
    results.append(
        (
            "protobuf parse + pod bytes (the keys before, reference)",
            timings_ms(
                lambda: [
                    m.SerializeToString()
                    for m in pb.ListPodResourcesResponse.FromString(data).pod_resources
                ],
                runs,
            ),
            None,
        )
    )

    # -- gRPC round trip ------------------------------------------------------------------------
    directory = tempfile.mkdtemp(prefix="npr-bench-", dir="/tmp")
    path = os.path.join(directory, "kubelet.sock")
    try:
        server = PodResourcesServer(
            lambda: snapshot, path, limiter=TokenBucket(rate=1e9, burst=10**9)
        )
        with (
            server,
            grpc.insecure_channel(
                f"unix:{path}", options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)]
            ) as channel,
        ):
            stub = pb_grpc.PodResourcesListerStub(channel)
            request = pb.ListPodResourcesRequest()
            for _ in range(5):
                stub.List(request)
            results.append(
                (
                    "gRPC List round trip, raw stub",
                    timings_ms(lambda: stub.List(request), runs),
                    TARGET_MS,
                )
            )
            with PodResourcesClient(path) as client:
                for _ in range(5):
                    client.list()
                results.append(
                    (
                        "gRPC List round trip, client.list() (dataclasses)",
                        timings_ms(client.list, runs),
                        TARGET_MS,
                    )
                )
            size = len(stub.List(request).SerializeToString())
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    width = max(len(name) for name, _, _ in results)
    print(f"{'':{width}}  {'median':>9}  {'best':>8}")
    for name, (ms, best), target in results:
        verdict = "" if target is None else ("  ok" if ms <= target else f"  OVER {target:g} ms")
        print(f"{name.ljust(width)}  {ms:6.2f} ms  {best:5.2f} ms{verdict}")
    print(f"List response: {size} bytes on the wire")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The pod-set fingerprint of NodeResourceTopology objects (follows
github.com/k8stopologyawareschedwg/podfingerprint ``podfingerprint.go`` at 929f98b, v001, and
resource-topology-exporter's ``podres/filter/numalocality`` ``Required`` for the
``with-exclusive-resources`` method).

The topology-aware scheduler's cache trusts an NRT object only once its
``nodeTopologyPodsFingerprint`` attribute equals the fingerprint of the pods it placed on the
node; ``nodeTopologyPodsFingerprintMethod`` says which pods count:

* ``all``: every pod PodResources lists;
* ``with-exclusive-resources``: pods with at least one container holding exclusive CPUs, a
  memory block pinned to a NUMA node, or a device with NUMA affinity (RTE's filter looks at
  containers only, not at 1.37's pod-level ``cpu_ids``/``memory``, and so do we).

A pod is its (namespace, name) pair. Each pair hashes to ``XXH64(name, seed=XXH64(namespace))``;
the hashes are sorted, each written as 8 little-endian bytes into one XXH64 stream (seed 0), and
the digest's 8 big-endian bytes are hex-encoded after ``pfp0`` + ``v001``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from app.domain.podresources import PodResources, TopologyInfo

PREFIX = "pfp0"
VERSION = "v001"
ATTRIBUTE = "nodeTopologyPodsFingerprint"
ATTRIBUTE_METHOD = "nodeTopologyPodsFingerprintMethod"
ANNOTATION = "topology.node.k8s.io/fingerprint"
METHOD_ALL = "all"
METHOD_WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"
METHODS = (METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES)

_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _MASK, 31) * _P1) & _MASK


def _merge(h: int, v: int) -> int:
    return (((h ^ _round(0, v)) * _P1) + _P4) & _MASK


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 of ``data`` (the xxHash specification, 64-bit variant)."""
    n = len(data)
    pos = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _MASK
        v2 = (seed + _P2) & _MASK
        v3 = seed & _MASK
        v4 = (seed - _P1) & _MASK
        while pos + 32 <= n:
            a, b, c, d = struct.unpack_from("<4Q", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while pos + 8 <= n:
        (lane,) = struct.unpack_from("<Q", data, pos)
        h = ((_rotl(h ^ _round(0, lane), 27) * _P1) + _P4) & _MASK
        pos += 8
    if pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = ((_rotl(h ^ ((word * _P1) & _MASK), 23) * _P2) + _P3) & _MASK
        pos += 4
    while pos < n:
        h = (_rotl(h ^ ((data[pos] * _P5) & _MASK), 11) * _P1) & _MASK
        pos += 1
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    h ^= h >> 32
    return h


def pod_hash(namespace: str, name: str) -> int:
    """One pod's hash: the name hashed with the namespace's hash as the seed."""
    return xxh64(name.encode("utf-8"), xxh64(namespace.encode("utf-8")))


def sign(pods: Iterable[tuple[str, str]]) -> str:
    """``Fingerprint.Sign()`` of a set of (namespace, name) pairs, in any order."""
    hashes = sorted(pod_hash(namespace, name) for namespace, name in pods)
    digest = xxh64(struct.pack(f"<{len(hashes)}Q", *hashes))
    return PREFIX + VERSION + digest.to_bytes(8, "big").hex()


def _has_numa_affinity(topology: TopologyInfo | None) -> bool:
    return topology is not None and any(node.id >= 0 for node in topology.nodes)


def has_exclusive_resources(pod: PodResources) -> bool:
    """RTE's ``numalocality.Required``: a container holds something pinned to NUMA nodes."""
    for container in pod.containers:
        if container.cpu_ids:
            return True
        if any(_has_numa_affinity(block.topology) for block in container.memory):
            return True
        if any(d.device_ids and _has_numa_affinity(d.topology) for d in container.devices):
            return True
    return False


def fingerprint(pods: Iterable[PodResources], method: str) -> str:
    """The ``nodeTopologyPodsFingerprint`` of the pods PodResources lists, for ``method``."""
    if method not in METHODS:
        raise ValueError(f"unsupported pod fingerprint method {method!r}; use one of {METHODS}")
    chosen = (p for p in pods if method == METHOD_ALL or has_exclusive_resources(p))
    return sign((p.namespace, p.name) for p in chosen)

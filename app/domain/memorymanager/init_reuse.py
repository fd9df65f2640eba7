"""Init-container memory reuse (``updatePodReusableMemory``,
``updateInitContainersMemoryBlocks``; follows pkg/kubelet/cm/memorymanager/policy_static.go, v1.37 and master as 1.38).

Regular init containers run one after another before the app containers, so the bytes one of
them holds can be reused by the containers that come after it on the same NUMA mask. The policy
keeps, per pod uid, per NUMA mask, per resource, the bytes still reusable (only for the pod
being admitted: other pods' entries are dropped); blocks of earlier init containers are then
shrunk by what a later container reused, so the blocks of a pod add up to what is really
reserved.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.memorymanager.hints import is_numa_affinities_equal
from app.domain.memorymanager.state import Block, MemoryManagerState
from app.domain.pod.model import Container, Pod
from app.domain.topologymanager.bitmask import mask_of

__all__ = [
    "ReusableMemory",
    "pod_reusable_memory",
    "update_init_containers_memory_blocks",
    "update_pod_reusable_memory",
]

# pod uid -> NUMA mask -> resource -> bytes reusable from regular init containers
ReusableMemory = dict[str, dict[int, dict[str, int]]]


def pod_reusable_memory(reusable: ReusableMemory, pod: Pod, mask: int, resource: str) -> int:
    return reusable.get(pod.uid, {}).get(mask, {}).get(resource, 0)


def update_pod_reusable_memory(
    reusable_memory: ReusableMemory, pod: Pod, container: Container, blocks: Iterable[Block]
) -> None:
    """``updatePodReusableMemory``: regular init containers offer their blocks for reuse;
    later containers consume it."""
    for uid in list(reusable_memory):
        if uid != pod.uid:
            del reusable_memory[uid]
    if pod.is_regular_init_container(container.name):
        by_mask = reusable_memory.setdefault(pod.uid, {})
        for b in blocks:
            per_type = by_mask.setdefault(mask_of(b.numa_affinity), {})
            if b.size > per_type.get(b.type, 0):
                per_type[b.type] = b.size
        return
    for b in blocks:
        mask = mask_of(b.numa_affinity)
        reusable = pod_reusable_memory(reusable_memory, pod, mask, b.type)
        if reusable != 0:
            per_type = reusable_memory[pod.uid][mask]
            per_type[b.type] = 0 if b.size >= reusable else reusable - b.size


def update_init_containers_memory_blocks(
    state: MemoryManagerState, pod: Pod, container: Container, blocks: Iterable[Block]
) -> None:
    """``updateInitContainersMemoryBlocks``: shrink earlier regular init containers' blocks
    of the same type and mask by what this container reused, so the blocks of a pod add
    up to what is really reserved."""
    for block in blocks:
        remaining = block.size
        for init in pod.init_containers:
            if init.name == container.name or remaining == 0:
                break
            if init.is_sidecar:
                continue
            init_blocks = state.get_memory_blocks(pod.uid, init.name)
            if not init_blocks:
                continue
            updated = list(init_blocks)
            for i, ib in enumerate(updated):
                if ib.size == 0 or ib.type != block.type:
                    continue
                if not is_numa_affinities_equal(ib.numa_affinity, block.numa_affinity):
                    continue
                if ib.size > remaining:
                    updated[i] = Block(ib.numa_affinity, ib.type, ib.size - remaining)
                    remaining = 0
                else:
                    remaining -= ib.size
                    updated[i] = Block(ib.numa_affinity, ib.type, 0)
            state.set_memory_blocks(pod.uid, init.name, updated)

"""Re-admission of a pod whose pod-level CPU set is already in the state (release 1.38).

Follows kubernetes#141041 (pkg/kubelet/cm/cpumanager/policy_static.go ``allocatePodForAdd`` on
upstream master, and the cases of policy_static_restore_test.go): after a kubelet restart the
pods go through admission again, and a 1.37 kubelet allocated a pod-level pod anew from the
default set - rejecting it ("not enough cpus available") or moving it and leaking its old
CPUs. Master instead:

* restores a *restorable* pod-level CPU set as it is: every container assignment found in
  the state is kept, and only the missing ones are computed, carved out of the pod's CPU set
  with the partitioning of a fresh allocation (regular init containers may reuse the pod's
  CPUs, sidecars keep theirs, app containers take from what the sidecars leave, containers
  without exclusive CPUs get the pod shared pool);
* if that fails, gives every CPU the pod holds back to the default set and reports the
  allocation error;
* treats a pod-level set as *stale* when it overlaps the default set (a release interrupted
  after the CPUs went back) or when the container assignments are not a prefix of the spec
  order (init containers, then app containers - the order they are written in; a hole is
  left over from an interrupted cleanup): the stale allocation goes back to the default set
  and the pod is allocated from scratch.

The functions take the policy's ``take_by_topology`` and ``guaranteed_cpus`` so this module
does not import the policy (no import circle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.pod.model import Container, Pod

EMPTY = CPUSet()

TakeFn = Callable[[CPUSet, int], CPUSet]
CountFn = Callable[[Pod, Container], int]


def _spec_order(pod: Pod) -> list[str]:
    return [c.name for c in (*pod.init_containers, *pod.containers)]


def restorable_pod_cpus(state: CPUManagerState, pod: Pod) -> CPUSet | None:
    """The pod's checkpointed CPU set when it can be restored, else ``None`` (absent or
    stale)."""
    pod_cpus = state.get_pod_cpu_set(pod.uid)
    if pod_cpus is None or pod_cpus & state.default_cpuset:
        return None
    entries = state.assignments.get(pod.uid, {})
    names = _spec_order(pod)
    if any(name not in names for name in entries):
        return None
    missing = False
    for name in names:
        if name not in entries:
            missing = True
        elif missing:
            return None  # a hole: not written by an interrupted admission
    return pod_cpus


def release_pod_allocation(state: CPUManagerState, pod_uid: str) -> None:
    """Give the pod's CPU set back to the default set and drop all its entries."""
    pod_cpus = state.get_pod_cpu_set(pod_uid) or EMPTY
    state.set_default_cpu_set(state.default_cpuset | pod_cpus)
    for name in list(state.assignments.get(pod_uid, {})):
        state.delete(pod_uid, name)
    state.delete_pod(pod_uid)


def drop_stale_pod_allocation(state: CPUManagerState, pod: Pod) -> None:
    """A stale pod-level allocation goes back to the default set before a fresh one."""
    release_pod_allocation(state, pod.uid)


def partition_pod_cpus(
    pod: Pod,
    pod_cpus: CPUSet,
    kept: Mapping[str, CPUSet],
    guaranteed: CountFn,
    take: TakeFn,
) -> dict[str, CPUSet]:
    """The container assignments missing from ``kept``, carved out of ``pod_cpus`` in spec
    order: the partitioning of a fresh pod-level allocation (nothing kept) and of a restore.

    Init containers with exclusive CPUs take theirs from the pod's CPUs minus the sidecars'
    so far (a regular one without shares that), app containers take theirs from what the
    sidecars leave, and every other container gets the pod shared pool that remains.
    """
    computed: dict[str, CPUSet] = {}
    sidecars = EMPTY
    for c in pod.init_containers:
        n = guaranteed(pod, c)
        have = kept.get(c.name)
        if n > 0:
            cset = have if have is not None else take(pod_cpus - sidecars, n)
            if have is None:
                computed[c.name] = cset
            if c.is_sidecar:
                sidecars = sidecars | cset
        elif not c.is_sidecar and have is None:
            computed[c.name] = pod_cpus - sidecars
    pool = pod_cpus - sidecars
    for c in pod.containers:
        n = guaranteed(pod, c)
        if n <= 0:
            continue
        have = kept.get(c.name)
        cset = have if have is not None else take(pool, n)
        if have is None:
            computed[c.name] = cset
        pool = pool - cset
    names = [name for name in _spec_order(pod) if name not in kept]
    return {name: computed.get(name, pool) for name in names}


def restore_pod(
    state: CPUManagerState,
    pod: Pod,
    pod_cpus: CPUSet,
    guaranteed: CountFn,
    take: TakeFn,
) -> dict[str, CPUSet]:
    """Keep what the state holds for ``pod`` and compute the missing container assignments
    inside ``pod_cpus``; returns what was computed. On an allocation error every CPU of the
    pod goes back to the default set and the error propagates."""
    kept = dict(state.assignments.get(pod.uid, {}))
    try:
        computed = partition_pod_cpus(pod, pod_cpus, kept, guaranteed, take)
    except Exception:
        release_pod_allocation(state, pod.uid)
        raise
    for name, cset in computed.items():
        state.set_cpu_set(pod.uid, name, cset)
    return computed

"""A deliberately naive second reading of upstream's CPU assignment, for differential tests.

It follows pkg/kubelet/cm/cpumanager/cpu_assignment.go and topology/topology.go (v1.37)
function by function with plain Python sets and dicts: ``Details`` is ``CPUDetails`` (CPU id ->
CPUInfo) and every query walks it, exactly as the Go methods do; nothing is cached or
precomputed. It shares no code with ``app.domain.cpumanager.cpu_assignment``, so a difference
between the two points at a slip in one of them. Go's slice sharing in ``iterateCombinations``
is modelled with an explicit backing array and Go's append growth (capacity 1, 2, 4, 8, ...).

Speed is irrelevant here; the fixtures are small.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable

from app.domain.topology.model import CPUInfo, CPUTopology

MAX_FLOAT64 = sys.float_info.max
BREAK, CONTINUE = "break", "continue"


class NotEnoughError(Exception):
    pass


class HangError(NotEnoughError):
    """A 1.35-1.37 kubelet loops forever here (kubernetes#140730): a remainder subset passes
    the raw CPU-sum check but its whole groups cannot hold the remainder."""

    def __init__(self, remainder: int) -> None:
        super().__init__(f"hang with {remainder} CPUs left")
        self.remainder = remainder


def go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class Details(dict[int, CPUInfo]):
    """``topology.CPUDetails``."""

    def keep_only(self, cpus: Iterable[int]) -> Details:
        keep = set(cpus)
        return Details({c: i for c, i in self.items() if c in keep})

    def cpus(self) -> set[int]:
        return set(self)

    def _ids(self, attr: str) -> set[int]:
        return {getattr(i, attr) for i in self.values()}

    def _where(self, attr: str, ids: Iterable[int], out: str | None) -> set[int]:
        want = set(ids)
        if out is None:
            return {c for c, i in self.items() if getattr(i, attr) in want}
        return {getattr(i, out) for i in self.values() if getattr(i, attr) in want}

    def numa_nodes(self) -> set[int]:
        return self._ids("numa_node_id")

    def sockets(self) -> set[int]:
        return self._ids("socket_id")

    def cores(self) -> set[int]:
        return self._ids("core_id")

    def cpus_in_numa_nodes(self, *ids: int) -> set[int]:
        return self._where("numa_node_id", ids, None)

    def cpus_in_sockets(self, *ids: int) -> set[int]:
        return self._where("socket_id", ids, None)

    def cpus_in_cores(self, *ids: int) -> set[int]:
        return self._where("core_id", ids, None)

    def cpus_in_uncore_caches(self, *ids: int) -> set[int]:
        return self._where("uncore_cache_id", ids, None)

    def sockets_in_numa_nodes(self, *ids: int) -> set[int]:
        return self._where("numa_node_id", ids, "socket_id")

    def numa_nodes_in_sockets(self, *ids: int) -> set[int]:
        return self._where("socket_id", ids, "numa_node_id")

    def cores_in_sockets(self, *ids: int) -> set[int]:
        return self._where("socket_id", ids, "core_id")

    def cores_in_numa_nodes(self, *ids: int) -> set[int]:
        return self._where("numa_node_id", ids, "core_id")

    def uncore_in_numa_nodes(self, *ids: int) -> set[int]:
        return self._where("numa_node_id", ids, "uncore_cache_id")

    def cores_needed_in_uncore_cache(self, n: int, *ids: int) -> set[int]:
        core_ids = sorted(self._where("uncore_cache_id", ids, "core_id"))
        return set(core_ids) if len(core_ids) <= n else set(core_ids[:n])

    def are_numa_nodes_in_same_socket(self, numas: Iterable[int]) -> bool:
        numas = list(numas)
        if any(n not in self.numa_nodes() for n in numas):
            return False
        return len(self.sockets_in_numa_nodes(*numas)) <= 1


def details_of(topo: CPUTopology) -> Details:
    return Details(topo.cpu_details)


def cpus_per_core(topo: CPUTopology) -> int:
    return topo.num_cpus // topo.num_cores if topo.num_cores else 0


def cpus_per_socket(topo: CPUTopology) -> int:
    return topo.num_cpus // topo.num_sockets if topo.num_sockets else 0


def cpus_per_uncore(topo: CPUTopology) -> int:
    return topo.num_cpus // topo.num_uncore_cache if topo.num_uncore_cache else 0


class Acc:
    """``cpuAccumulator``."""

    def __init__(
        self,
        topo: CPUTopology,
        available: Iterable[int],
        n: int,
        strategy: str,
        spread_by_topology: bool = False,
    ) -> None:
        self.topo = topo
        self.spread_by_topology = spread_by_topology
        self.all = details_of(topo)
        self.details = self.all.keep_only(available)
        self.need = n
        self.result: set[int] = set()
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes
        self.strategy = strategy

    def take(self, cpus: set[int]) -> None:
        self.result = self.result | cpus
        self.details = self.details.keep_only(self.details.cpus() - self.result)
        self.need -= len(cpus)

    def sort(self, ids: Iterable[int], get: Callable[..., set[int]]) -> list[int]:
        return sorted(ids, key=lambda i: (len(get(i)), i))

    def sort_numa(self) -> list[int]:
        d = self.details
        if self.numa_first:
            return self.sort(d.numa_nodes(), d.cpus_in_numa_nodes)
        out: list[int] = []
        for s in self.sort_sockets():
            out += self.sort(d.numa_nodes_in_sockets(s), d.cpus_in_numa_nodes)
        return out

    def sort_sockets(self) -> list[int]:
        d = self.details
        if not self.numa_first:
            return self.sort(d.sockets(), d.cpus_in_sockets)
        out: list[int] = []
        for n in self.sort_numa():
            out += self.sort(d.sockets_in_numa_nodes(n), d.cpus_in_sockets)
        return out

    def sort_cores(self) -> list[int]:
        d = self.details
        out: list[int] = []
        if self.numa_first:
            for s in self.sort_sockets():
                out += self.sort(d.cores_in_sockets(s), d.cpus_in_cores)
        else:
            for n in self.sort_numa():
                out += self.sort(d.cores_in_numa_nodes(n), d.cpus_in_cores)
        return out

    def sort_uncore(self) -> list[int]:
        d = self.details
        out: list[int] = []
        for n in self.sort_numa():
            out += self.sort(d.uncore_in_numa_nodes(n), d.cpus_in_uncore_caches)
        return out

    def sort_cpus(self) -> list[int]:
        d = self.details
        out: list[int] = []
        if self.strategy == "packed":
            for c in self.sort_cores():
                out += sorted(d.cpus_in_cores(c))
        elif self.spread_by_topology:  # 1.38, kubernetes#140766: round-robin over the cores
            for s in self.sort_sockets():
                per_core = [
                    sorted(d.cpus_in_cores(c))
                    for c in self.sort(d.cores_in_sockets(s), d.cpus_in_cores)
                ]
                for i in range(max((len(x) for x in per_core), default=0)):
                    out += [x[i] for x in per_core if i < len(x)]
        else:
            for s in self.sort_sockets():
                out += sorted(d.cpus_in_sockets(s))
        return out

    def free_numa(self) -> list[int]:
        return [
            n
            for n in self.sort_numa()
            if len(self.details.cpus_in_numa_nodes(n)) == len(self.all.cpus_in_numa_nodes(n))
        ]

    def free_sockets(self) -> list[int]:
        per = cpus_per_socket(self.topo)
        return [s for s in self.sort_sockets() if len(self.details.cpus_in_sockets(s)) == per]

    def free_cores(self) -> list[int]:
        per = cpus_per_core(self.topo)
        return [c for c in self.sort_cores() if len(self.details.cpus_in_cores(c)) == per]

    def free_uncore(self) -> list[int]:
        return [
            u
            for u in self.sort_uncore()
            if len(self.details.cpus_in_uncore_caches(u)) == len(self.all.cpus_in_uncore_caches(u))
        ]

    def satisfied(self) -> bool:
        return self.need < 1

    def failed(self) -> bool:
        return self.need > len(self.details)

    def _take_full(self, ids: list[int], get: Callable[..., set[int]]) -> None:
        for i in ids:
            cpus = get(i)
            if not self.need >= len(cpus):
                continue
            self.take(cpus)

    def take_full_numa(self) -> None:
        self._take_full(self.free_numa(), self.all.cpus_in_numa_nodes)

    def take_full_sockets(self) -> None:
        self._take_full(self.free_sockets(), self.all.cpus_in_sockets)

    def take_full_cores(self) -> None:
        self._take_full(self.free_cores(), self.all.cpus_in_cores)

    def take_full_uncore(self) -> None:
        self._take_full(self.free_uncore(), self.all.cpus_in_uncore_caches)

    def take_partial_uncore(self, uncore: int) -> None:
        cpc = cpus_per_core(self.topo)
        cores_needed = go_div(self.need + cpc - 1, cpc)
        free_cores = self.details.cores_needed_in_uncore_cache(cores_needed, uncore)
        free_cpus = self.details.cpus_in_cores(*free_cores)
        if self.need % 2 != 0 and cpc > 1:
            ordered = sorted(free_cpus)
            if len(ordered) > self.need:
                ordered = ordered[: len(free_cpus) - 1]
            free_cpus = set(ordered)
        if self.need == len(free_cpus):
            self.take(free_cpus)

    def take_uncore_cache(self) -> None:
        per = cpus_per_uncore(self.topo)
        for u in self.sort_uncore():
            if self.need >= per:
                self.take_full_uncore()
            if self.satisfied():
                return
            self.take_partial_uncore(u)
            if self.satisfied():
                return

    def take_remaining(self) -> None:
        for cpu in self.sort_cpus():
            self.take({cpu})
            if self.satisfied():
                return

    def range_numa(self, g: int) -> tuple[int, int]:
        num_numa = len(self.all.numa_nodes())
        numa_avail = len(self.details.numa_nodes())
        num_cpus = len(self.all)
        groups = go_div(num_cpus - 1, g) + 1
        per_numa = go_div(groups - 1, num_numa) + 1
        needed = go_div(self.need - 1, g) + 1
        return go_div(needed - 1, per_numa) + 1, min(needed, numa_avail)


def _not_enough(n: int, available: set[int]) -> NotEnoughError:
    return NotEnoughError(
        f"not enough cpus available to satisfy request: requested={n}, available={len(available)}"
    )


def packed(
    topo: CPUTopology,
    available: set[int],
    n: int,
    strategy: str,
    uncore: bool,
    spread_by_topology: bool = False,
) -> set[int]:
    """``takeByTopologyNUMAPacked``."""
    acc = Acc(topo, available, n, strategy, spread_by_topology)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        raise _not_enough(n, available)
    if acc.numa_first:
        acc.take_full_numa()
    else:
        acc.take_full_sockets()
    if acc.satisfied():
        return acc.result
    if acc.numa_first:
        acc.take_full_sockets()
    else:
        acc.take_full_numa()
    if acc.satisfied():
        return acc.result
    if uncore:
        acc.take_uncore_cache()
        if acc.satisfied():
            return acc.result
    if strategy != "spread":
        acc.take_full_cores()
        if acc.satisfied():
            return acc.result
    acc.take_remaining()
    if acc.satisfied():
        return acc.result
    raise NotEnoughError("failed to allocate cpus")


# -- Go slices for iterateCombinations ----------------------------------------------------------


class Slice:
    def __init__(self, arr: list[int], length: int) -> None:
        self.arr = arr
        self.len = length

    def append(self, v: int) -> Slice:
        if self.len < len(self.arr):
            self.arr[self.len] = v
            return Slice(self.arr, self.len + 1)
        cap = max(1, 2 * len(self.arr))
        arr = self.arr[: self.len] + [v] + [0] * (cap - self.len - 1)
        return Slice(arr, self.len + 1)

    def read(self) -> list[int]:
        return self.arr[: self.len]


def iterate_combinations(n: list[int], k: int, f: Callable[[Slice], str]) -> None:
    if k < 1:
        return

    def helper(k: int, start: int, accum: Slice) -> str:
        if k == 0:
            return f(accum)
        for i in range(start, len(n) - k + 1):
            if helper(k - 1, i + 1, accum.append(n[i])) == BREAK:
                return BREAK
        return CONTINUE

    helper(k, 0, Slice([], 0))


def go_round(x: float) -> float:
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def stddev(xs: list[int]) -> float:
    m = go_round(sum(float(x) for x in xs) / len(xs) * 1000) / 1000
    s = 0.0
    for x in xs:
        s += (float(x) - m) * (float(x) - m)
    return go_round(math.sqrt(s / len(xs)) * 1000) / 1000


def choose_combo(
    topo: CPUTopology,
    d: Details,
    numas: list[int],
    k: int,
    n: int,
    g: int,
    align_by_socket: bool,
    release: str | None = None,
    copy_best: bool = False,
) -> dict[str, object]:
    """One ``k`` of the combination search: the best combination (a Go slice, read late;
    a copy with ``copy_best``, 1.38). ``release``: a 1.35-1.37 kubelet (raw-sum checks, a
    remainder subset whose groups cannot hold the remainder hangs)."""
    best: dict[str, object] = {
        "balance": MAX_FLOAT64,
        "remainder": None,
        "combo": None,
        "one_socket": False,
    }

    def visit(combo_slice: Slice) -> str:
        combo = combo_slice.read()
        if best["balance"] == 0 and (not align_by_socket or best["one_socket"]):
            return BREAK
        if len(d.cpus_in_numa_nodes(*combo)) < n:
            return CONTINUE
        groups = 0
        for numa in combo:
            groups += len(d.cpus_in_numa_nodes(numa)) // g
        if release is None and groups * g < n:
            return CONTINUE
        distribution = n // len(combo) // g * g
        if align_by_socket:
            for numa in combo:
                distribution = min(distribution, len(d.cpus_in_numa_nodes(numa)) // g * g)
        for numa in combo:
            if len(d.cpus_in_numa_nodes(numa)) < distribution:
                return CONTINUE
        after: dict[int, int] = {}
        for numa in numas:
            after[numa] = len(d.cpus_in_numa_nodes(numa))
        for numa in combo:
            after[numa] -= distribution
        remainder = n - distribution * len(combo)
        remainder_combo = [numa for numa in combo if after[numa] >= g]
        local = {"balance": MAX_FLOAT64, "subset": None}
        if remainder == 0:
            local["balance"] = stddev(list(after.values()))
        kk = len(remainder_combo)
        while remainder > 0 and kk >= 1:

            def visit_subset(subset_slice: Slice) -> str:
                subset = subset_slice.read()
                rem = remainder
                aa = dict(after)
                if release is not None and sum(aa[x] for x in subset) < rem:
                    return CONTINUE
                if sum(aa[x] // g for x in subset) * g < rem:
                    if release is not None:
                        raise HangError(rem)
                    return CONTINUE
                while rem > 0:
                    before = rem
                    for x in subset:
                        if rem == 0:
                            break
                        if aa[x] < g:
                            continue
                        aa[x] -= g
                        rem -= g
                    if rem == before:
                        # Go spins forever here (a NUMA node listed twice is counted
                        # twice by the group check); stop where the engine stops.
                        break
                bal = stddev(list(aa.values()))
                if bal < local["balance"]:  # type: ignore[operator]
                    local["balance"] = bal
                    local["subset"] = Slice(subset, len(subset)) if copy_best else subset_slice
                return CONTINUE

            iterate_combinations(remainder_combo, kk, visit_subset)
            kk -= 1
        same = align_by_socket and details_of(topo).are_numa_nodes_in_same_socket(combo)
        better = local["balance"] < best["balance"]  # type: ignore[operator]
        if align_by_socket and same != best["one_socket"]:
            better = same
        if better:
            best["balance"] = local["balance"]
            best["remainder"] = local["subset"]
            best["combo"] = Slice(combo, len(combo)) if copy_best else combo_slice
            if align_by_socket:
                best["one_socket"] = same
        return CONTINUE

    iterate_combinations(numas, k, visit)
    return best


def distributed(
    topo: CPUTopology,
    available: set[int],
    n: int,
    g: int,
    strategy: str,
    align_by_socket: bool,
    *,
    release: str | None = None,
    copy_best: bool = False,
    min_numas_from_hint: int = 0,
    spread_by_topology: bool = False,
) -> set[int]:
    """``takeByTopologyNUMADistributed`` (newest code line: align-by-socket, group-rounded
    remainder check, distribution capped by what each chosen NUMA node still has).

    ``release`` (a 1.35-1.37 kubelet): raw CPU-sum checks and ``HangError`` where it would
    loop; ``copy_best`` (1.38, kubernetes#141238); ``min_numas_from_hint`` (1.38,
    kubernetes#139456); ``spread_by_topology`` (1.38, kubernetes#140766)."""
    sbt = spread_by_topology
    if n % g != 0:
        return packed(topo, available, n, strategy, False, sbt)
    acc = Acc(topo, available, n, strategy, sbt)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        raise _not_enough(n, available)
    numas = acc.sort_numa()
    lo, hi = acc.range_numa(g)
    if lo < min_numas_from_hint <= hi:
        lo = min_numas_from_hint
    d = acc.details
    for k in range(lo, hi + 1):
        best = choose_combo(topo, d, numas, k, n, g, align_by_socket, release, copy_best)
        if best["combo"] is None:
            continue
        combo = best["combo"].read()  # type: ignore[union-attr]
        distribution = n // len(combo) // g * g
        for numa in combo:
            distribution = min(distribution, len(acc.details.cpus_in_numa_nodes(numa)) // g * g)
        for numa in combo:
            try:
                cpus = packed(
                    topo, acc.details.cpus_in_numa_nodes(numa), distribution, strategy, False, sbt
                )
            except NotEnoughError:
                cpus = set()
            acc.take(cpus)
        remainder = n - distribution * len(combo)
        rem_slice = best["remainder"]
        rem_nodes = [] if rem_slice is None else rem_slice.read()  # type: ignore[union-attr]
        while remainder > 0:
            before = remainder
            for numa in rem_nodes:
                if remainder == 0:
                    break
                if len(acc.details.cpus_in_numa_nodes(numa)) < g:
                    continue
                try:
                    cpus = packed(
                        topo, acc.details.cpus_in_numa_nodes(numa), g, strategy, False, sbt
                    )
                except NotEnoughError:
                    cpus = set()
                acc.take(cpus)
                remainder -= g
            if remainder == before:
                break  # Go spins forever here; the engine reports the shortfall
        if acc.need > 0:
            raise NotEnoughError(
                f"accounting error, not enough CPUs allocated, remaining: {acc.need}"
            )
        if acc.need < 0:
            raise NotEnoughError(
                f"accounting error, too many CPUs allocated, remaining: {acc.need}"
            )
        return acc.result
    return packed(topo, available, n, strategy, False, sbt)


# -- staticPolicy (policy_static.go), over plain sets ------------------------------------------


class RefState:
    """``stateMemory``: default set, container assignments, pod entries (plain sets)."""

    def __init__(
        self,
        default: set[int],
        assignments: dict[str, dict[str, set[int]]] | None = None,
        pod_entries: dict[str, set[int]] | None = None,
    ) -> None:
        self.default = set(default)
        self.assignments = {p: dict(cs) for p, cs in (assignments or {}).items()}
        self.pod_entries = dict(pod_entries or {})

    def snapshot(self) -> tuple[object, ...]:
        return (
            frozenset(self.default),
            {p: {c: frozenset(s) for c, s in cs.items()} for p, cs in self.assignments.items()},
            {p: frozenset(s) for p, s in self.pod_entries.items()},
        )


class RefAllocationError(Exception):
    """An error ``Allocate``/``AllocatePod`` returns: ``kind`` is the admission reason or
    ``""`` for an untyped error; ``str(e)`` is the text."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class RefPolicy:
    """``staticPolicy``: construction, takeByTopology dispatch, allocateCPUs, Allocate,
    AllocatePod, RemoveContainer. Exclusive counts and the budget check come from callables
    (they only read the pod; the engine's versions are tested on their own)."""

    def __init__(
        self,
        topo: CPUTopology,
        num_reserved: int,
        explicit_reserved: set[int] | None,
        options: dict[str, bool],
        guaranteed: Callable[..., int],
        pod_guaranteed: Callable[..., int],
        budget_message: Callable[..., str | None],
        skipped: Callable[..., bool],
    ) -> None:
        self.topo = topo
        self.opts = options
        self.guaranteed = guaranteed
        self.pod_guaranteed = pod_guaranteed
        self.budget_message = budget_message
        self.skipped = skipped
        self.group = cpus_per_core(topo)
        self.reuse: dict[str, set[int]] = {}
        all_cpus = set(topo.cpu_details)
        if explicit_reserved:
            reserved = set(explicit_reserved)
        else:
            try:
                reserved = self.take_by_topology(all_cpus, num_reserved)
            except NotEnoughError:
                reserved = set()
        if len(reserved) != num_reserved:
            raise ValueError("reserve")
        self.reserved = reserved
        all_details = details_of(topo)
        self.reserved_physical = all_details.cpus_in_cores(
            *{topo.cpu_details[c].core_id for c in reserved}
        )

    def opt(self, name: str) -> bool:
        return bool(self.opts.get(name))

    def take_by_topology(self, available: set[int], n: int) -> set[int]:
        strategy = "spread" if self.opt("distribute-cpus-across-cores") else "packed"
        if self.opt("distribute-cpus-across-numa"):
            g = self.group if self.opt("full-pcpus-only") else 1
            # the AllocatePod code line passes no align-by-socket flag
            return distributed(self.topo, available, n, g, strategy, False)
        return packed(
            self.topo, available, n, strategy, self.opt("prefer-align-cpus-by-uncorecache")
        )

    def allocate_cpus(
        self, st: RefState, n: int, numa: list[int] | None, reusable: set[int]
    ) -> set[int]:
        allocatable = (st.default - self.reserved) | reusable
        result: set[int] = set()
        d = details_of(self.topo)
        if numa is not None:
            if self.opt("align-by-socket"):
                aligned: set[int] = set()
                for s in d.sockets_in_numa_nodes(*numa):
                    aligned |= allocatable & d.cpus_in_sockets(s)
            else:
                aligned = set()
                for x in numa:
                    aligned |= allocatable & d.cpus_in_numa_nodes(x)
            result |= self.take_by_topology(aligned, min(n, len(aligned)))
        result |= self.take_by_topology(allocatable - result, n - len(result))
        st.default = st.default - result
        return result

    def enforce_smt(self, st: RefState, n: int) -> None:
        if not self.opt("full-pcpus-only"):
            return
        if n % self.group != 0:
            raise RefAllocationError(
                "SMTAlignmentError",
                f"SMT Alignment Error: requested {n} cpus not multiple cpus per core = "
                f"{self.group}",
            )
        physical = len(st.default - self.reserved_physical)
        if n > physical:
            raise RefAllocationError(
                "SMTAlignmentError",
                "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
                f"{physical}, requested CPUs = {n}, CPUs per core = {self.group}",
            )

    def update_reuse(self, pod: object, container: object, cset: set[int]) -> None:
        uid = pod.uid  # type: ignore[attr-defined]
        for other in list(self.reuse):
            if other != uid:
                del self.reuse[other]
        self.reuse.setdefault(uid, set())
        for init in pod.init_containers:  # type: ignore[attr-defined]
            if init.name == container.name:  # type: ignore[attr-defined]
                if init.is_sidecar:
                    break
                self.reuse[uid] = self.reuse[uid] | cset
                return
        self.reuse[uid] = self.reuse[uid] - cset

    def allocate(self, st: RefState, pod: object, container: object, numa: list[int] | None):
        n = self.guaranteed(pod, container)
        if n == 0 or self.skipped(pod):
            return
        self.enforce_smt(st, n)
        uid, name = pod.uid, container.name  # type: ignore[attr-defined]
        if name in st.assignments.get(uid, {}):
            self.update_reuse(pod, container, st.assignments[uid][name])
            return
        try:
            cset = self.allocate_cpus(st, n, numa, self.reuse.get(uid, set()))
        except NotEnoughError as exc:
            raise RefAllocationError("", str(exc)) from None
        st.assignments.setdefault(uid, {})[name] = cset
        self.update_reuse(pod, container, cset)

    def allocate_pod(self, st: RefState, pod: object, numa: list[int] | None) -> None:
        """``AllocatePod``; on error the caller drops ``st`` (the engine rolls back)."""
        total = self.pod_guaranteed(pod)
        if total == 0:
            return
        message = self.budget_message(pod)
        if message is not None:
            raise RefAllocationError("EmptyPodSharedPoolError", message)
        self.enforce_smt(st, total)
        try:
            bubble = self.allocate_cpus(st, total, numa, set())
            st.pod_entries[pod.uid] = bubble  # type: ignore[attr-defined]
            recorded: dict[str, set[int]] = {}
            sidecar: set[int] = set()
            for c in pod.init_containers:  # type: ignore[attr-defined]
                x = self.guaranteed(pod, c)
                if x > 0:
                    cset = self.take_by_topology(bubble - sidecar, x)
                    recorded[c.name] = cset
                    if c.is_sidecar:
                        sidecar = sidecar | cset
                elif not c.is_sidecar:
                    recorded[c.name] = bubble - sidecar
            pool = bubble - sidecar
            for c in pod.containers:  # type: ignore[attr-defined]
                x = self.guaranteed(pod, c)
                if x > 0:
                    cset = self.take_by_topology(pool, x)
                    recorded[c.name] = cset
                    pool = pool - cset
        except NotEnoughError as exc:
            raise RefAllocationError("", str(exc)) from None
        for c in (*pod.init_containers, *pod.containers):  # type: ignore[attr-defined]
            st.assignments.setdefault(pod.uid, {})[c.name] = recorded.get(c.name, pool)  # type: ignore[attr-defined]

    def remove_container(self, st: RefState, uid: str, name: str, pod_level_gate: bool) -> None:
        if name not in st.assignments.get(uid, {}):
            return
        release = st.assignments[uid].pop(name)
        if not st.assignments[uid]:
            del st.assignments[uid]
        if pod_level_gate and uid in st.pod_entries:
            if not st.assignments.get(uid):
                st.default = st.default | st.pod_entries.pop(uid)
            return
        in_use: set[int] = set()
        for other, cset in st.assignments.get(uid, {}).items():
            if other != name:
                in_use |= cset
        st.default = st.default | (release - in_use)

"""Benchmark take-by-topology (app.domain.cpumanager.cpu_assignment); prints figures.

    .venv/bin/python bench/bench_cpu_assignment.py [--repeat N]

1. Median time of one take of 16 and 64 CPUs on a 512-CPU machine (2 sockets x 4 NUMA nodes
   x 32 cores x 2 threads), NUMA-packed and NUMA-distributed, on an idle machine and on a
   fragmented one (a third of the CPUs already handed out, fixed seed).
2. How the time grows with the machine, from 16 to 1,024 CPUs (taking 8 CPUs and a quarter of
   the machine).
3. The one-off cost of indexing a new topology object (cached afterwards).
4. Against the straight port (``tests/domain/cpumanager/cpumanager_audit_go_reference``:
   upstream's cpu_assignment.go read function by function over plain sets, every combination
   visited and every balance computed): CPU time (``time.process_time``) of one take by each,
   side by side with the ratio, for packed, spread (``spread38``: 1.38's round-robin over
   cores, kubernetes#140766) and distributed (groups of 1 and 2) takes of 16, 64 and 256
   CPUs on the 512- and 1,024-thread machines, idle and fragmented; every answer is checked
   to be the same. Both sides are timed alike (``cpu_ms``: the least of 5
   batches of about 50 ms each), so a straight-port take of under a millisecond is not one
   noisy call. Then the headline figure: a distributed take of 256 CPUs on the fragmented
   1,024-thread, 16-NUMA machine. ``--skip-reference`` leaves section 4 out (the straight
   port needs about two minutes).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from functools import partial

from _common import time_calls

from app.domain.cpumanager.cpu_assignment.distributed import (
    take_by_topology_numa_distributed as distributed,
)
from app.domain.cpumanager.cpu_assignment.packed import take_by_topology_numa_packed as packed
from app.domain.cpuset import CPUSet
from app.domain.topology.model import CPUInfo, CPUTopology
from tests.domain.cpumanager import cpumanager_audit_go_reference as straight


def machine(
    sockets: int, numa_per_socket: int, cores_per_numa: int, threads: int = 2
) -> CPUTopology:
    """Linux-style numbering: core i has threads i, i + cores, i + 2*cores, ..."""
    num_cores = sockets * numa_per_socket * cores_per_numa
    infos = []
    for core in range(num_cores):
        numa = core // cores_per_numa
        socket = numa // numa_per_socket
        uncore = core // max(1, cores_per_numa // 2)  # two L3 groups per NUMA node
        for t in range(threads):
            infos.append(CPUInfo(core + t * num_cores, core, socket, numa, uncore))
    return CPUTopology(infos, name=f"{sockets}s{numa_per_socket * sockets}n{num_cores * threads}t")


def median_us(fn: Callable[[], object], repeat: int) -> float:
    return time_calls(fn, repeat).median_us  # the warm-up call builds the per-topology index


def fragmented(topo: CPUTopology, share: float, seed: int = 7) -> CPUSet:
    rng = random.Random(seed)
    cpus = topo.all_cpus.ids()
    used = rng.sample(cpus, int(len(cpus) * share))
    return topo.all_cpus - CPUSet(used)


def cpu_ms(
    fn: Callable[[], object], budget_s: float = 0.05, rounds: int = 5, cap_s: float = 1.0
) -> float:
    """Least of ``rounds`` batches of CPU time per call, a batch lasting about ``budget_s``;
    fewer rounds only when they would take over ``cap_s`` (a straight-port take of seconds:
    one round). The same rule times both sides of a ratio."""
    t0 = time.process_time()
    fn()
    once = max(time.process_time() - t0, 1e-6)
    batch = max(1, int(budget_s / once))
    rounds = max(1, min(rounds, int(cap_s / (once * batch))))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(batch):
            fn()
        best = min(best, (time.process_time() - t0) / batch)
    return best * 1000


def against_straight_port() -> None:
    print("CPU time of one take, straight port vs ours (ms), ratio; same CPUs checked")
    print(
        f"{'machine':<9}{'state':<11}{'n':>4}  {'variant':<9}{'straight':>10}{'ours':>9}{'ratio':>8}"
    )
    ratios: dict[str, list[float]] = {}
    for topo in (machine(2, 4, 32), machine(2, 8, 32)):
        for state, avail in (("idle", topo.all_cpus), ("fragmented", fragmented(topo, 1 / 3))):
            plain = set(avail.ids())
            for n in (16, 64, 256):
                variants = {
                    "packed": (
                        partial(packed, topo, avail, n),
                        partial(straight.packed, topo, plain, n, "packed", False),
                    ),
                    "spread": (
                        partial(packed, topo, avail, n, "spread"),
                        partial(straight.packed, topo, plain, n, "spread", False),
                    ),
                    "spread38": (
                        partial(packed, topo, avail, n, "spread", spread_by_topology=True),
                        partial(straight.packed, topo, plain, n, "spread", False, True),
                    ),
                    "dist g=1": (
                        partial(distributed, topo, avail, n, 1),
                        partial(straight.distributed, topo, plain, n, 1, "packed", False),
                    ),
                    "dist g=2": (
                        partial(distributed, topo, avail, n, 2),
                        partial(straight.distributed, topo, plain, n, 2, "packed", False),
                    ),
                }
                for name, (ours, theirs) in variants.items():
                    assert sorted(ours()) == sorted(theirs()), (topo, state, n, name)
                    slow = cpu_ms(theirs)
                    fast = cpu_ms(ours)
                    ratios.setdefault(name, []).append(slow / fast)
                    print(
                        f"{topo.num_cpus:<9}{state:<11}{n:>4}  {name:<9}{slow:>10.2f}"
                        f"{fast:>9.3f}{slow / fast:>7.0f}x"
                    )
    print()
    for name, rs in ratios.items():
        print(
            f"{name:<9} ratio min {min(rs):.0f}x  median {statistics.median(rs):.0f}x  max {max(rs):.0f}x"
        )


def headline() -> None:
    topo = machine(2, 8, 32)
    avail = fragmented(topo, 1 / 3)
    for g in (1, 2):
        ms = cpu_ms(partial(distributed, topo, avail, 256, g), budget_s=0.2)
        print(
            f"distributed take of 256 CPUs (groups of {g}) on the fragmented 1,024-thread "
            f"16-NUMA machine: {ms:.2f} ms CPU"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--only-reference", action="store_true")
    args = parser.parse_args()
    repeat = args.repeat
    if args.only_reference:
        headline()
        against_straight_port()
        return

    big = machine(2, 4, 32)
    assert big.num_cpus == 512
    states = {"idle": big.all_cpus, "fragmented": fragmented(big, 1 / 3)}
    print(f"512-CPU machine {big!r}; median of {repeat} takes, microseconds")
    print(
        f"{'state':<11}{'n':>4}  {'packed':>9}{'spread':>9}{'uncore':>9}{'dist g=1':>10}{'dist g=2':>10}"
    )
    for state, avail in states.items():
        for n in (16, 64):
            row = [
                median_us(partial(packed, big, avail, n), repeat),
                median_us(partial(packed, big, avail, n, "spread"), repeat),
                median_us(partial(packed, big, avail, n, "packed", True), repeat),
                median_us(partial(distributed, big, avail, n, 1), repeat),
                median_us(partial(distributed, big, avail, n, 2), repeat),
            ]
            print(
                f"{state:<11}{n:>4}  {row[0]:>9.1f}{row[1]:>9.1f}{row[2]:>9.1f}"
                f"{row[3]:>10.1f}{row[4]:>10.1f}"
            )

    print()
    print("growth with machine size (idle machine), microseconds")
    print(f"{'cpus':>6}{'numa':>6}  {'packed 8':>9}{'packed 1/4':>11}{'dist 8':>9}{'dist 1/4':>10}")
    layouts = [(1, 1, 8), (1, 2, 8), (2, 2, 8), (2, 4, 8), (2, 4, 16), (2, 4, 32), (2, 8, 32)]
    for sockets, nps, cpn in layouts:
        topo = machine(sockets, nps, cpn)
        avail = topo.all_cpus
        quarter = topo.num_cpus // 4
        reps = max(20, repeat // 4)
        p8 = median_us(partial(packed, topo, avail, 8), reps)
        pq = median_us(partial(packed, topo, avail, quarter), reps)
        d8 = median_us(partial(distributed, topo, avail, 8, 2), reps)
        dq = median_us(partial(distributed, topo, avail, quarter, 2), reps)
        print(
            f"{topo.num_cpus:>6}{topo.num_numa_nodes:>6}  {p8:>9.1f}{pq:>11.1f}{d8:>9.1f}{dq:>10.1f}"
        )

    print()
    cold = []
    for _ in range(20):
        fresh = machine(2, 4, 32)
        t0 = time.perf_counter_ns()
        packed(fresh, fresh.all_cpus, 16)
        cold.append(time.perf_counter_ns() - t0)
    print(
        f"first take on a new 512-CPU topology object (builds the index): "
        f"{statistics.median(cold) / 1000:.1f} us"
    )
    print()
    headline()
    if not args.skip_reference:
        print()
        against_straight_port()


if __name__ == "__main__":
    main()

"""Benchmark take-by-topology (app.domain.cpumanager.cpu_assignment); prints figures.

    .venv/bin/python bench/bench_cpu_assignment.py [--repeat N]

1. Median time of one take of 16 and 64 CPUs on a 512-CPU machine (2 sockets x 4 NUMA nodes
   x 32 cores x 2 threads), NUMA-packed and NUMA-distributed, on an idle machine and on a
   fragmented one (a third of the CPUs already handed out, fixed seed).
2. How the time grows with the machine, from 16 to 1,024 CPUs (taking 8 CPUs and a quarter of
   the machine).
3. The one-off cost of indexing a new topology object (cached afterwards).
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
from app.domain.topology import CPUInfo, CPUTopology


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    repeat = args.repeat

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


if __name__ == "__main__":
    main()

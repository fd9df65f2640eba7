"""Benchmark the checkpoint codecs (app.domain.checkpoint); prints figures.

    .venv/bin/python bench/bench_checkpoint.py [--repeat N]

A 512-CPU, 8-NUMA-node node with 250 pods (every third one with pod-level resources, so with
pod entries): its ``cpu_manager_state`` as CPU V4 and its ``memory_manager_state`` twin as
memory V3; and the same node with 4 containers in every pod (the issue's "250 pods x 4"), as
memory V3. Median CPU times (``time.process_time``: independent of the load on the machine),
each run cold (the parsed trees and answers the reader keeps for the files it read last are
dropped first: ``gojson_scan.forget``), of:

1. verify + load as a 1.37 kubelet with the gate on (decode, ``dataChecksum``, restore);
2. render (write) of each file, checksums included;
3. for reference: reading the inline part as a 1.35 kubelet, and a full ``inspect`` (detection,
   every checksum, six release verdicts).

Targets from the issue: verify + load <= 10 ms and render <= 10 ms, for each file.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import cpu_time_calls

from app.domain.checkpoint import (
    Block,
    CPUCheckpointState,
    MemoryCheckpointState,
    MemoryTable,
    NUMANodeState,
    Reader,
    inspect,
    load_cpu_checkpoint,
    load_memory_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint.gojson_scan import forget
from app.domain.cpuset import CPUSet

GIB = 1024**3
PODS = 250
NUMA_NODES = 8
CPUS = 512


def states(containers: int = 0) -> tuple[CPUCheckpointState, MemoryCheckpointState]:
    """The bench node; ``containers`` > 0 gives every pod that many containers (each with
    its own CPUs and memory block, no pod-level resources) instead of the 1-2 mix."""
    entries: dict[str, dict[str, CPUSet]] = {}
    pod_entries: dict[str, CPUSet] = {}
    mem_entries: dict[str, dict[str, tuple[Block, ...]]] = {}
    mem_pods: dict[str, tuple[Block, ...]] = {}
    reserved = [0] * NUMA_NODES
    counts = [0] * NUMA_NODES
    cpu = 8  # 0-7 stay in the shared pool
    for i in range(PODS):
        uid = str(uuid.UUID(int=0xC0FFEE << 96 | i))
        numa = i % NUMA_NODES
        if containers:
            names = ("app", "sidecar", "proxy", "logs")[:containers]
            cpu_of = {name: CPUSet.range(cpu + 2 * k, cpu + 2 * k) for k, name in enumerate(names)}
            cpu += 2 * containers
            entries[uid] = cpu_of
            mem_entries[uid] = {name: (Block((numa,), "memory", GIB // 4),) for name in names}
            reserved[numa] += containers * (GIB // 4)
            counts[numa] += containers
            continue
        app = CPUSet.range(cpu, cpu + 1)
        cpu += 2
        block = Block((numa,), "memory", GIB)
        if i % 3 == 0:
            entries[uid] = {"app": app, "sidecar": app}
            pod_entries[uid] = app
            mem_entries[uid] = {"app": (block,), "sidecar": (Block((numa,), "memory", GIB // 2),)}
            mem_pods[uid] = (Block((numa,), "memory", GIB + GIB // 2),)
            reserved[numa] += GIB + GIB // 2
        else:
            entries[uid] = {"app": app}
            mem_entries[uid] = {"app": (block,)}
            reserved[numa] += GIB
        counts[numa] += 1
    default = CPUSet.range(0, CPUS - 1) - CPUSet().union(
        *(c for e in entries.values() for c in e.values())
    )
    cpu_state = CPUCheckpointState("static", default, entries, pod_entries)
    machine = {}
    for n in range(NUMA_NODES):
        total = 128 * GIB
        alloc = total - GIB - 8 * GIB
        machine[n] = NUMANodeState(
            counts[n],
            {
                "memory": MemoryTable(total, GIB, alloc, reserved[n], alloc - reserved[n]),
                "hugepages-2Mi": MemoryTable(4 * GIB, 0, 4 * GIB, 0, 4 * GIB),
                "hugepages-1Gi": MemoryTable(4 * GIB, 0, 4 * GIB, 0, 4 * GIB),
            },
            (n,),
        )
    mem_state = MemoryCheckpointState("Static", machine, mem_entries, mem_pods)
    return cpu_state, mem_state


def timings_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, best) CPU time of ``repeat`` runs after one warm-up run, each cold: the trees
    and answers kept for the last files read are dropped first (``forget``)."""

    def cold() -> object:
        forget()
        return fn()

    timing = cpu_time_calls(cold, repeat)
    return timing.median_ms, timing.best_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    cpu_state, mem_state = states()
    _, mem4_state = states(containers=4)
    cpu_text = write_cpu_checkpoint(cpu_state, "V4")
    mem_text = write_memory_checkpoint(mem_state, "V3")
    mem4_text = write_memory_checkpoint(mem4_state, "V3")
    r137 = Reader("1.37", True, "static")
    m137 = Reader("1.37", True, "Static")
    assert load_cpu_checkpoint(cpu_text, r137).state == cpu_state
    assert load_memory_checkpoint(mem_text, m137).state == mem_state
    assert load_memory_checkpoint(mem4_text, m137).state == mem4_state

    rows = [
        ("cpu_manager_state V4", len(cpu_text.encode())),
        ("memory_manager_state V3", len(mem_text.encode())),
        ("memory_manager_state V3 x4", len(mem4_text.encode())),
    ]
    print(
        f"{PODS} pods, {CPUS} CPUs, {NUMA_NODES} NUMA nodes; CPU time, median of {args.repeat} runs"
    )
    for name, size in rows:
        print(f"  {name:<26} {size:>8} bytes")
    print()
    heads = ("cpu V4", "memory V3", "memory V3 x4")
    print(f"{'operation (median / best, CPU ms)':<46}" + "".join(f"{h:>16}" for h in heads))
    figures: list[tuple[str, list[Callable[[], object]]]] = [
        (
            "verify + load (1.37, gate on)   [target 10]",
            [
                lambda: load_cpu_checkpoint(cpu_text, r137),
                lambda: load_memory_checkpoint(mem_text, m137),
                lambda: load_memory_checkpoint(mem4_text, m137),
            ],
        ),
        (
            "render / write                  [target 10]",
            [
                lambda: write_cpu_checkpoint(cpu_state, "V4"),
                lambda: write_memory_checkpoint(mem_state, "V3"),
                lambda: write_memory_checkpoint(mem4_state, "V3"),
            ],
        ),
        (
            "verify + load inline part (1.35)",
            [
                lambda: load_cpu_checkpoint(cpu_text, Reader("1.35", policy="static")),
                lambda: load_memory_checkpoint(mem_text, Reader("1.35", policy="Static")),
                lambda: load_memory_checkpoint(mem4_text, Reader("1.35", policy="Static")),
            ],
        ),
        (
            "inspect (6 release verdicts)",
            [lambda: inspect(cpu_text), lambda: inspect(mem_text), lambda: inspect(mem4_text)],
        ),
    ]
    for label, fns in figures:
        repeat = args.repeat if "inspect" not in label else max(5, args.repeat // 5)
        cells = [timings_ms(fn, repeat) for fn in fns]
        print(f"{label:<46}" + "".join(f"{m:>8.2f} / {b:>5.2f}" for m, b in cells))


if __name__ == "__main__":
    main()

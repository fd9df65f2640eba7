"""Real hub processes for the fleet benches (``bench_fleet_fit.py``, ``bench_fleet_upgrade.py``):
``numascope serve --hub --demo-fleet N`` of this checkout and of a reference (``--ref``, default
``main``: its tree exported with ``git archive`` into a temporary directory and put first on
``PYTHONPATH``, so the same virtualenv runs the old code), measured the same way.

Figures are CPU time of the whole process tree (the hub and its worker processes, from
``/proc``: the machine is shared, so wall time says more about the neighbours), wall time of
the one call, ``/healthz`` latency while the call runs (a probe every ``PROBE_EVERY`` seconds
from a thread of the bench) and the tree's memory (``tree_memory``: summed RSS, hub and
children apart, and PSS).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import _common  # noqa: F401  (the repository on sys.path)
import httpx

from tests.processes import Server, server_env

ROOT = Path(__file__).resolve().parent.parent
PROBE_EVERY = 0.02
TICKS = os.sysconf("SC_CLK_TCK")
READY_TIMEOUT = 1800.0


@contextlib.contextmanager
def reference_tree(ref: str) -> Iterator[Path]:
    """The source tree of git ``ref`` in a temporary directory (nothing of the repository is
    changed)."""
    with tempfile.TemporaryDirectory(prefix="numascope-ref-") as tmp:
        archive = Path(tmp) / "ref.tar"
        with archive.open("wb") as out:
            subprocess.run(
                ["git", "archive", ref, "app", "migrations", "static", "templates"],
                cwd=ROOT,
                stdout=out,
                check=True,
            )
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        yield Path(tmp)


def _tree(pid: int) -> list[int]:
    """``pid`` and every process under it."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(parents.get(p, []))
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid``'s live process tree."""
    total = 0
    for p in _tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


@dataclass(frozen=True)
class TreeMemory:
    """The memory of a hub's process tree in MiB, from each process's
    ``/proc/<pid>/smaps_rollup``: RSS (shared pages counted in every process that maps them:
    the headline figure) and PSS (shared pages divided among their sharers: closer to what
    the container's memory cgroup is charged), of the hub itself and of its children (the
    fleet workers and multiprocessing's resource tracker)."""

    hub_rss: float
    children_rss: float
    hub_pss: float
    children_pss: float

    @property
    def rss(self) -> float:
        return self.hub_rss + self.children_rss

    @property
    def pss(self) -> float:
        return self.hub_pss + self.children_pss

    def cells(self, when: str) -> dict[str, str]:
        """The bench's cells: the tree's RSS, its split and its PSS."""
        return {
            f"hub RSS {when} (MiB)": f"{self.rss:.0f}",
            f"  RSS hub / children {when}": f"{self.hub_rss:.0f} / {self.children_rss:.0f}",
            f"  PSS {when} (MiB)": f"{self.pss:.0f}",
        }


def _rollup_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; (0, 0) once it is gone."""
    rss = pss = 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, value = line.partition(":")
            if key == "Rss":
                rss = int(value.split()[0])
            elif key == "Pss":
                pss = int(value.split()[0])
    return rss, pss


def tree_memory(pid: int) -> TreeMemory:
    """The memory of ``pid`` (the hub) and of every process under it."""
    hub = _rollup_kib(pid)
    children = [_rollup_kib(p) for p in _tree(pid) if p != pid]
    return TreeMemory(
        hub[0] / 1024,
        sum(c[0] for c in children) / 1024,
        hub[1] / 1024,
        sum(c[1] for c in children) / 1024,
    )


@dataclass
class Probe:
    """``/healthz`` asked every ``PROBE_EVERY`` seconds from a thread, latencies kept."""

    url: str
    samples: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30.0, trust_env=False) as client:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                client.get("/healthz")
                self.samples.append(time.perf_counter() - t0)
                self._stop.wait(PROBE_EVERY)

    @contextlib.contextmanager
    def during(self) -> Iterator[Probe]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()

    def p99_ms(self) -> float:
        if not self.samples:
            return float("nan")
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


@dataclass
class Measured:
    """One call: wall seconds, CPU seconds of the hub's tree, ``/healthz`` p99 meanwhile."""

    wall: float
    cpu: float
    healthz_p99_ms: float
    body: dict[str, object]


def measure(hub: Server, method: str, path: str, **kw: object) -> Measured:
    pid = hub.proc.pid if hub.proc is not None else 0
    probe = Probe(hub.url)
    with probe.during():
        time.sleep(0.1)  # a few idle probes first
        cpu0, t0 = tree_cpu(pid), time.perf_counter()
        r = hub.client.request(method, path, timeout=600.0, **kw)  # type: ignore[arg-type]
        wall, cpu = time.perf_counter() - t0, tree_cpu(pid) - cpu0
    if r.status_code != 200:
        raise SystemExit(f"{method} {path}: HTTP {r.status_code}: {r.text[:300]}")
    return Measured(wall, cpu, probe.p99_ms(), r.json())


@contextlib.contextmanager
def hub_process(nodes: int, src: Path | None) -> Iterator[Server]:
    """A ready hub with ``--demo-fleet nodes`` running the code of ``src`` (``None``: this
    checkout), in a temporary directory of its own."""
    with tempfile.TemporaryDirectory(prefix="bench-hub-") as tmp:
        env = server_env(Path(tmp), hub="true", demo_fleet=str(nodes))
        if src is not None:
            env["PYTHONPATH"] = str(src)
        hub = Server(Path(tmp), env=env)
        with _running(hub):
            yield hub


@contextlib.contextmanager
def _running(hub: Server) -> Iterator[None]:
    hub.start()
    try:
        hub.wait_for(
            lambda: hub.client.get("/readyz", timeout=5.0).status_code == 200,
            "/readyz",
            READY_TIMEOUT,
        )
        time.sleep(1.0)
        yield
    finally:
        hub.close()


def versions(ref: str) -> Iterator[tuple[str, Path | None]]:
    """(label, source tree) of the reference (none for ``none``), then of this checkout."""
    if ref != "none":
        with reference_tree(ref) as tree:
            yield ref, tree
    yield "this", None


def compare(title: str, run: Callable[[int, Path | None], dict[str, str]]) -> None:
    """The benches' command line (``--nodes``, ``--ref``) and their table: per fleet size,
    ``run``'s cells for the reference and this checkout side by side."""
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--ref", default="main", help="git ref to compare with (none: skip)")
    args = parser.parse_args()
    for nodes in args.nodes:
        columns = {label: run(nodes, src) for label, src in versions(args.ref)}
        labels = list(columns)
        width = max(len(k) for k in columns[labels[-1]]) + 2
        print(f"\n{title}, hub --demo-fleet {nodes}")
        print(f"  {'':<{width}}" + "".join(f"{x:>12}" for x in labels))
        for key in columns[labels[-1]]:
            print(f"  {key:<{width}}" + "".join(f"{columns[x].get(key, '-'):>12}" for x in labels))

"""Shared by the bench scripts: the repository on ``sys.path``, a timing loop (median, p90,
best), throw-away app settings and the figure lines the web benches print.

A script imports it first (``from _common import ...``: the script's own folder is on
``sys.path`` when run as ``.venv/bin/python bench/bench_x.py``); importing it puts the
repository root on ``sys.path`` so ``app`` imports work.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Starlette's TestClient nudges towards the httpx2 package; httpx works as it is.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

    from app.services.nodes.service import NodeService
    from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Timing:
    """Durations of repeated calls, in nanoseconds."""

    samples: tuple[int, ...]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples) / 1e6

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples) / 1e3

    @property
    def p90_ms(self) -> float:
        return statistics.quantiles(self.samples, n=10)[-1] / 1e6

    @property
    def best_ms(self) -> float:
        return min(self.samples) / 1e6


def cpu_time_calls(fn: Callable[[], object], repeat: int) -> Timing:
    """Process CPU time of ``repeat`` calls after one untimed call: the machine's other load (a
    shared CI box) does not count, unlike wall-clock time."""
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.process_time_ns()
        fn()
        samples.append(time.process_time_ns() - t0)
    return Timing(tuple(samples))


def time_calls(fn: Callable[[], object], repeat: int, *, warmup: int = 1) -> Timing:
    """Time ``repeat`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(repeat):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    return Timing(tuple(samples))


def time_requests(
    client: TestClient,
    path: str,
    runs: int,
    headers: Mapping[str, str] | None = None,
    *,
    warmup: int = 0,
) -> Timing:
    """Time ``runs`` GET requests of ``path``; anything but 200 stops the bench."""

    def get() -> None:
        r = client.get(path, headers=dict(headers or {}))
        if r.status_code != 200:
            raise SystemExit(f"{path}: HTTP {r.status_code}")

    return time_calls(get, runs, warmup=warmup)


@contextmanager
def tmp_node_service() -> Iterator[NodeService]:
    """A started node service on ``tmp_settings`` (its database migrated)."""
    from app.adapters.db.engine import make_engine
    from app.adapters.db.migrate import upgrade_head
    from app.services.nodes.service import NodeService

    with tmp_settings() as settings:
        engine = make_engine(settings.database_url)
        upgrade_head(engine)
        service = NodeService(engine, state_dir=settings.state_dir)
        service.start()
        yield service


@contextmanager
def tmp_settings(**overrides: Any) -> Iterator[Settings]:
    """App settings on a temporary folder (SQLite file, no sysfs, no demo nodes)."""
    from app.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        values: dict[str, Any] = {
            "database_url": f"sqlite:///{Path(tmp) / 'bench.db'}",
            "sysfs_root": Path(tmp) / "no-sysfs",
            "cpuinfo": False,
            "state_dir": Path(tmp) / "nodes",
            "demo": False,
            # Starlette's TestClient sends "Host: testserver" (app.web.guard's allow-list).
            "allowed_hosts": ("testserver",),
        }
        values.update(overrides)
        yield Settings(**values)


def request_line(label: str, timing: Timing, size: int, width: int = 15) -> str:
    """``  label  median … ms  p90 … ms  min … ms  (… KiB)``"""
    return (
        f"  {label:<{width}} median {timing.median_ms:7.2f} ms  p90 {timing.p90_ms:7.2f} ms  "
        f"min {timing.best_ms:7.2f} ms  ({size / 1024:.0f} KiB)"
    )

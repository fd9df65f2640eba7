"""Start-up cost and memory of the node agent beside a bare FastAPI + uvicorn app (issue 20
pt 7: goal 64 MiB idle and 1 s of CPU from exec to ready).

The agent runs as the DaemonSet runs it (``serve --no-demo --observe --no-simulated``: no
database; without ``--publish-nrt``, there is no API server), beside the same agent with its
SQLite database (``serve --no-demo --observe``, the DaemonSet's agent before issue 20 pt 7),
on the fake host of ``bench_agent_memory`` (sysfs of ``server-2s-8numa-512t``, the state files
of ``--pods`` pods, a PodResources socket served from this process). The reference is ``bench/_bare_app.py`` under ``uvicorn``: the floor any FastAPI server starts from.

For each process, measured on the real process (``/proc/<pid>``):

* CPU seconds from exec to the first 200 of its ready probe (``/readyz``; the bare app has
  ``/healthz``): user + system time of the process and of the children it waited for (the
  agent migrates its database in a child, ``app.commands.serve.migrate_in_child``);
* idle RSS three seconds after ready;
* peak RSS (``VmHWM``) after ``--clients`` clients fetched the agent's node page, its JSON, the
  PodResources List, a pod page, ``/metrics`` and ``/readyz`` for ``--seconds`` seconds (the
  bare app: ``/bare``).

Every process runs from compiled bytecode, as in the image (pip compiles the package when it
installs it): ``app`` and the bare app are compiled once into a temporary
``PYTHONPYCACHEPREFIX`` before the runs. With ``--source`` they are compiled from source at
every start instead (``PYTHONDONTWRITEBYTECODE``, as a checkout runs them): about 0.15 s more
of the agent's CPU, which no deployed agent pays.

Run: ``.venv/bin/python bench/bench_agent_start.py [--pods 200] [--seconds 10] [--runs 3]
[--source]``.
CPU seconds do not depend much on the machine's load; the median of ``--runs`` starts is shown.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from _common import ROOT
from bench_agent_memory import load_for

from app.adapters.grpc.server import PodResourcesServer
from tests.live.agent_host import AGENT_ARGS, NODE, agent_env, build_host, rss_kib
from tests.processes import free_port

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Figures:
    start_cpu: float  # seconds
    idle_kib: int
    peak_kib: int
    requests: int


def cpu_seconds(pid: int) -> float:
    """User + system time of ``pid`` and of its waited-for children (``/proc/<pid>/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    # After the command name: state is field 3, utime/stime/cutime/cstime are fields 14-17.
    return sum(int(fields[i - 3]) for i in (14, 15, 16, 17)) / CLOCK_TICKS


def run_one(
    cmd: list[str],
    env: dict[str, str],
    url: str,
    probe: str,
    paths: list[str],
    args: argparse.Namespace,
) -> Figures:
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{cmd}: exited {proc.returncode}")
            try:
                if httpx.get(url + probe, timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{cmd}: not ready after 120 s")
            time.sleep(0.02)
        start_cpu = cpu_seconds(proc.pid)
        time.sleep(3)
        idle = rss_kib(proc.pid)
        counts = load_for(url, paths, args.seconds, args.clients)
        peak = rss_kib(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(30)
    return Figures(start_cpu, idle, peak, sum(counts))


def use_bytecode(pycache: Path | None) -> None:
    """Every measured process (they inherit this environment) reads ``app`` and ``bench``
    compiled in ``pycache``; ``None``: compiles them from source at each start."""
    if pycache is None:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
    else:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(pycache)


def compile_app(pycache: Path) -> None:
    """What ``pip install`` does for the image: every module of ``app`` (and the bare app)
    compiled, here into ``pycache`` so the checkout stays clean."""
    previous = sys.pycache_prefix
    sys.pycache_prefix = str(pycache)
    try:
        for tree in (ROOT / "app", ROOT / "bench"):
            compileall.compile_dir(tree, quiet=1)
    finally:
        sys.pycache_prefix = previous


def median(figures: list[Figures]) -> Figures:
    return Figures(
        statistics.median(f.start_cpu for f in figures),
        int(statistics.median(f.idle_kib for f in figures)),
        int(statistics.median(f.peak_kib for f in figures)),
        int(statistics.median(f.requests for f in figures)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--source", action="store_true", help="no bytecode: compile at start")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="agent-", dir="/tmp"))  # short: sun_path limit
    try:
        pycache = None if args.source else base / "pycache"
        if pycache is not None:
            compile_app(pycache)
        use_bytecode(pycache)
        node, root, sysfs = build_host(base, args.pods)
        snap = node.snapshot()
        sock = base / "pr.sock"
        body = base / "body.json"
        body.write_bytes(b'{"ok": true}')
        pod = snap.pods[0]
        agent_paths = [
            f"/nodes/{NODE}",
            f"/nodes/{NODE}.json",
            f"/api/v1/nodes/{NODE}/podresources",
            f"/nodes/{NODE}/pods/{pod.namespace}/{pod.name}",
            "/metrics",
            "/readyz",
        ]
        # name -> the serve arguments of that agent; the reference is the bare app.
        profiles = {
            "agent": AGENT_ARGS,
            "with db": ["--no-demo", "--observe"],  # the DaemonSet's agent before --no-simulated
        }
        figures: dict[str, list[Figures]] = {name: [] for name in [*profiles, "bare"]}
        with PodResourcesServer(lambda: snap, str(sock)):
            for run in range(args.runs):
                for name, serve_args in profiles.items():
                    data = base / f"data-{name}-{run}"  # a fresh data dir, as in a new pod
                    data.mkdir()
                    port = free_port()
                    cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
                    cmd += [*serve_args, "--log-level", "warning"]
                    env = agent_env(root, sysfs, sock, data)
                    figures[name].append(
                        run_one(cmd, env, f"http://127.0.0.1:{port}", "/readyz", agent_paths, args)
                    )
                port = free_port()
                cmd = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "bench")]
                cmd += ["_bare_app:app", "--port", str(port), "--log-level", "warning"]
                env = dict(os.environ, NUMASCOPE_BENCH_BODY=str(body))
                figures["bare"].append(
                    run_one(cmd, env, f"http://127.0.0.1:{port}", "/healthz", ["/bare"], args)
                )
        medians = {name: median(f) for name, f in figures.items()}
        print(
            f"node agent (serve {' '.join(AGENT_ARGS)}, server-2s-8numa-512t, {len(snap.pods)} "
            f"pods) beside the agent with its database and bare FastAPI + uvicorn; median of "
            f"{args.runs} starts, {'compiled at start' if args.source else 'from bytecode'}"
        )

        def row(label: str, values: list[str]) -> None:
            print(f"  {label:32}" + "".join(f" {v:>10}" for v in values))

        row("", list(medians))
        row("CPU from exec to ready (s)", [f"{m.start_cpu:.2f}" for m in medians.values()])
        row("idle RSS after ready (MiB)", [f"{m.idle_kib / 1024:.1f}" for m in medians.values()])
        row("peak RSS under load (MiB)", [f"{m.peak_kib / 1024:.1f}" for m in medians.values()])
        print(f"  ({args.clients} clients, {args.seconds:g} s)")
        row("requests answered under load", [str(m.requests) for m in medians.values()])
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

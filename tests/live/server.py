"""Real ``numascope serve`` processes for tests: a free localhost port, the settings in the
environment (as an operator sets them), readiness by polling ``/healthz``, kill -9, restart, and
which worker process owns a TCP connection (read from ``/proc``, for the many-worker tests).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port the kernel just handed out (bound to port 0, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    """One ``numascope serve`` process (and its uvicorn workers)."""

    tmp: Path
    env: dict[str, str]
    workers: int = 1
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.tmp / f"server-{self.starts}.log"

    def start(self, timeout: float = 90.0) -> ServerProcess:
        self.starts += 1
        cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)]
        if self.workers > 1:
            cmd += ["--workers", str(self.workers)]
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.kill9()
            raise
        return self

    def wait_ready(self, timeout: float) -> None:
        assert self.proc is not None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}:\n{self.log()}")
            try:
                ok = httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
                if ok and (self.workers == 1 or len(self.worker_pids()) == self.workers):
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server not ready after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes (the server itself with one worker)."""
        assert self.proc is not None
        if self.workers == 1:
            return [self.proc.pid]
        return children(self.proc.pid)

    def kill9(self) -> None:
        """SIGKILL the server and every worker at once, as an OOM kill or a power cut would."""
        assert self.proc is not None
        pids = [*self.worker_pids(), self.proc.pid] if self.workers > 1 else [self.proc.pid]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.kill9()


def server_env(tmp: Path, database_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a test server: its own database and state dir, no demo nodes, no
    observed node, quiet logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMASCOPE_")}
    env.update(
        NUMASCOPE_DATABASE_URL=database_url or f"sqlite:///{tmp / 'numascope.db'}",
        NUMASCOPE_STATE_DIR=str(tmp / "nodes"),
        NUMASCOPE_DEMO="false",
        NUMASCOPE_OBSERVE="false",
        NUMASCOPE_CPUINFO="false",
        NUMASCOPE_LOG_LEVEL="warning",
    )
    env.update({f"NUMASCOPE_{k.upper()}": v for k, v in extra.items()})
    return env


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:  # multiprocessing's helper, not a worker
            out.append(int(entry.name))
    return sorted(out)


def _socket_inode(server_port: int, client_port: int) -> str | None:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, remote, inode = parts[1], parts[2], parts[9]
            if int(local.rsplit(":", 1)[1], 16) == server_port and (
                int(remote.rsplit(":", 1)[1], 16) == client_port
            ):
                return inode
    return None


def connection_owner(pids: list[int], server_port: int, client_port: int) -> int | None:
    """Which of ``pids`` holds the server side of the connection from ``client_port``."""
    inode = _socket_inode(server_port, client_port)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        try:
            for fd in fd_dir.iterdir():
                try:
                    if os.readlink(fd) == target:
                        return pid
                except OSError:
                    continue
        except OSError:
            continue
    return None

"""Real ``numascope serve`` processes for tests and benches: the one way they are started.

``server_env(tmp, ...)`` is the environment of a server whose every path lies under ``tmp``
(its own SQLite file and state dir, no host sysfs, no kubelet, no demo nodes, no observed
node, quiet logs), without the caller's ``NUMASCOPE_*`` and ``KUBERNETES_*`` variables; extra
settings are given as ``name="value"`` for ``NUMASCOPE_NAME``. ``Server`` runs this checkout's
console script on a loopback address — 127.0.0.x for agents that share one port, as a headless
Service gives pod IPs — and waits for ``/healthz`` (and for every uvicorn worker); ``kill9()``
kills the server and its workers at once, as an OOM kill or a power cut would; ``start()``
again restarts on the same port. ``connection_owner`` tells which worker holds a TCP
connection (from ``/proc``), for the many-worker tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

NUMASCOPE = str(Path(sys.executable).with_name("numascope"))
START_TIMEOUT = 90.0


def free_port(hosts: Sequence[str] = ("127.0.0.1",)) -> int:
    """A TCP port the kernel handed out on the first of ``hosts`` and that is free on all."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((hosts[0], 0))
            port = int(s.getsockname()[1])
        try:
            for host in hosts[1:]:
                with socket.socket() as s:
                    s.bind((host, port))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no port free on all of {list(hosts)}")


def agent_hosts(first: int, count: int) -> list[str]:
    return [f"127.0.0.{first + i}" for i in range(count)]


def server_env(tmp: Path, database_url: str | None = None, **settings: str) -> dict[str, str]:
    """See the module docstring; ``settings`` win over the defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMASCOPE_", "KUBERNETES_"))}
    env.update(
        NUMASCOPE_DATABASE_URL=database_url or f"sqlite:///{tmp / 'numascope.db'}",
        NUMASCOPE_STATE_DIR=str(tmp / "nodes"),
        NUMASCOPE_SYSFS_ROOT=str(tmp / "no-sysfs"),
        NUMASCOPE_KUBELET_ROOT=str(tmp / "no-kubelet"),
        NUMASCOPE_PODRESOURCES_SOCKET=f"unix://{tmp / 'no-kubelet.sock'}",
        NUMASCOPE_CPUINFO="false",
        NUMASCOPE_DEMO="false",
        NUMASCOPE_OBSERVE="false",
        NUMASCOPE_LOG_LEVEL="warning",
    )
    env.update({f"NUMASCOPE_{k.upper()}": v for k, v in settings.items()})
    return env


@dataclass
class Server:
    """One ``numascope serve`` process (and its uvicorn workers)."""

    tmp: Path
    env: dict[str, str] | None = None  # None: server_env(tmp)
    args: Iterable[str] = ()
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free one
    workers: int = 1
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    starts: int = 0
    client: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True)
        if self.env is None:
            self.env = server_env(self.tmp)
        if not self.port:
            self.port = free_port([self.host])
        self.args = tuple(self.args)
        self.client = httpx.Client(base_url=self.url, timeout=30.0, trust_env=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.tmp / f"server-{self.starts}.log"

    # -- life -------------------------------------------------------------------------------
    def launch(self) -> Server:
        """Start without waiting (``wait_ready`` waits)."""
        self.starts += 1
        command = [NUMASCOPE, "serve", "--host", self.host, "--port", str(self.port)]
        if self.workers > 1:
            command += ["--workers", str(self.workers)]
        command += list(self.args)
        # Output to a file, not a pipe nobody drains (a full pipe would block the server).
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                command,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.tmp,
                start_new_session=True,
            )
        return self

    def start(self, timeout: float = START_TIMEOUT) -> Server:
        """Start and wait until it (and every worker) answers."""
        self.launch()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.kill9()
            raise
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        def ready() -> bool:
            answered = self.client.get("/healthz", timeout=2.0).status_code == 200
            return answered and (self.workers == 1 or len(self.worker_pids()) == self.workers)

        self.wait_for(ready, f"{self.url}/healthz", timeout)

    def wait_for(self, check: Callable[[], Any], what: str, deadline: float = START_TIMEOUT) -> Any:
        """Poll ``check`` until it returns something truthy (bounded; the process must live)."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(
                    f"numascope exited ({self.proc.returncode}) before {what}:\n{self.output()}"
                )
            try:
                value = check()
            except httpx.HTTPError:
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out after {deadline} s waiting for {what}:\n{self.output()}")

    def output(self, tail: int | None = None) -> str:
        """What the current run printed (its last ``tail`` characters)."""
        text = self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""
        return text if tail is None else text[-tail:]

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes (the server itself with one worker)."""
        assert self.proc is not None
        if self.workers == 1:
            return [self.proc.pid]
        return children(self.proc.pid)

    def kill9(self) -> None:
        """SIGKILL the server and every worker at once."""
        if self.proc is None or self.proc.poll() is not None:
            return
        pids = [*self.worker_pids(), self.proc.pid] if self.workers > 1 else [self.proc.pid]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> str:
        """Terminate (then kill) the process; what it printed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.output()

    def close(self) -> str:
        """``stop()`` and close the client: the server is done with for good."""
        out = self.stop()
        self.client.close()
        return out

    # -- the API, as a client does it -------------------------------------------------------
    def create_node(self, name: str, topology: str, config: str, release: str) -> dict[str, Any]:
        body = {"name": name, "topology": topology, "kubeletConfig": config, "release": release}
        r = self.client.post("/api/v1/nodes", json=body)
        assert r.status_code == 201, r.text
        return dict(r.json())

    def admit(self, node: str, manifest: str, *, dry_run: bool = False) -> httpx.Response:
        query = "?dryRun=true" if dry_run else ""
        return self.client.post(
            f"/api/v1/nodes/{node}/pods{query}",
            content=manifest.encode(),
            headers={"Content-Type": "application/yaml"},
        )

    def json(self, path: str, **params: Any) -> Any:
        r = self.client.get(path, params=params or None)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:500]}"
        return r.json()


@contextlib.contextmanager
def script_server(script: Path, host: str, ready: Path, *args: str) -> Iterator[str]:
    """A test's own HTTP server script (standard library only, standing for any program at an
    address): ``python SCRIPT HOST ARGS… READY``-style scripts take ``host``, ``args`` and the
    file they write their port to (``ready``, last); yields its root URL and kills it on exit."""
    proc = subprocess.Popen(
        [sys.executable, str(script), host, *args, str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(ready.exists)
        yield f"http://{host}:{ready.read_text()}"
    finally:
        proc.kill()
        proc.wait()


def wait_for(predicate: Any, timeout: float = 20.0, step: float = 0.05) -> Any:
    """Call ``predicate`` until it returns something truthy (returned) or time runs out."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(step)
    raise AssertionError(f"condition not met in {timeout} s (last value: {last!r})")


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (multiprocessing's resource tracker left out)."""
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
        if b"resource_tracker" not in cmdline:
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
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(fd) == target:
                    return pid
    return None

"""Real ``numascope serve`` processes for the fleet tests and benches: agents on loopback
addresses 127.0.0.x sharing one port (as a headless Service gives pod IPs), and hubs.

``free_port(hosts)`` binds port 0 on the first address and checks the port is free on the
others; ``Server.start`` runs the console script of this tree with its own SQLite file and
state dir under ``tmp`` and waits for ``/healthz``; ``kill()`` is ``kill -9``. Plain functions
and classes (the fixtures live in ``conftest.py``); ``bench/bench_hub_*.py`` use them too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

NUMASCOPE = str(Path(sys.executable).parent / "numascope")
START_TIMEOUT = 60.0


def free_port(hosts: Sequence[str]) -> int:
    """A TCP port that is free on every address of ``hosts``."""
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
    raise RuntimeError(f"no port free on all of {hosts}")


def agent_hosts(first: int, count: int) -> list[str]:
    return [f"127.0.0.{first + i}" for i in range(count)]


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a server whose every path is under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMASCOPE_")}
    env.update(
        NUMASCOPE_DATABASE_URL=f"sqlite:///{tmp / 'numascope.db'}",
        NUMASCOPE_STATE_DIR=str(tmp / "nodes"),
        NUMASCOPE_SYSFS_ROOT=str(tmp / "no-sysfs"),
        NUMASCOPE_KUBELET_ROOT=str(tmp / "no-kubelet"),
        NUMASCOPE_PODRESOURCES_SOCKET=f"unix://{tmp / 'no-kubelet.sock'}",
        NUMASCOPE_CPUINFO="false",
        NUMASCOPE_DEMO="false",
        NUMASCOPE_LOG_LEVEL="warning",
    )
    env.update(extra)
    return env


@dataclass
class Server:
    """One ``numascope serve`` process."""

    host: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    tmp: Path
    client: httpx.Client = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @classmethod
    def launch(
        cls,
        tmp: Path,
        host: str,
        port: int,
        args: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> Server:
        """Start without waiting (``wait_ready`` waits)."""
        tmp.mkdir(parents=True, exist_ok=True)
        log = tmp / "server.log"
        command = [NUMASCOPE, "serve", "--host", host, "--port", str(port), *args]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                command,
                env=dict(env) if env is not None else base_env(tmp),
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp,
                start_new_session=True,
            )
        client = httpx.Client(base_url=f"http://{host}:{port}", timeout=30.0, trust_env=False)
        return cls(host, port, proc, log, tmp, client)

    @classmethod
    def start(
        cls,
        tmp: Path,
        host: str,
        port: int,
        args: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> Server:
        server = cls.launch(tmp, host, port, args, env)
        server.wait_ready()
        return server

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.url} exited {self.proc.returncode}:\n{self.output()}")
            with contextlib.suppress(httpx.HTTPError):
                if self.client.get("/healthz", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.url} did not answer /healthz in {timeout} s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """``kill -9`` (the process only, by its id)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.client.close()

    # -- the API, as a client does it ---------------------------------------------------
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

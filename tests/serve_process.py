"""Real ``numascope serve`` processes for tests: the console script of this checkout's venv, an
environment without the caller's ``NUMASCOPE_*`` variables, its own database and state dir,
a free port on a loopback address, and a bounded wait until it answers ``/healthz``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

NUMASCOPE = Path(sys.executable).with_name("numascope")
DEADLINE = 90.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class ServeProcess:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def wait_for(self, check: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
        """Poll ``check`` until it returns something truthy (bounded; the process must live)."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"numascope exited ({self.proc.returncode}) before {what}: {self.output()}"
                )
            try:
                value = check()
            except httpx.HTTPError:
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.is_file() else ""

    def stop(self) -> str:
        """Terminate (then kill) the process; its output."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.output()


def start_serve(
    base: Path,
    args: Sequence[str],
    *,
    host: str = "127.0.0.1",
    env: Mapping[str, str] | None = None,
    wait: bool = True,
) -> ServeProcess:
    """``numascope serve --host HOST --port <free> ARGS`` with a database under ``base``."""
    base.mkdir(parents=True, exist_ok=True)
    port = free_port(host)
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("NUMASCOPE_", "KUBERNETES_"))},
        "NUMASCOPE_DATABASE_URL": f"sqlite:///{base / 'numascope.db'}",
        "NUMASCOPE_STATE_DIR": str(base / "nodes"),
        "NUMASCOPE_CPUINFO": "false",
        **(env or {}),
    }
    cmd = [str(NUMASCOPE), "serve", "--host", host, "--port", str(port), *args]
    log = base / f"serve-{port}.log"
    # Output to a file, not a pipe nobody drains (a full pipe would block the server).
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=environ, stdout=out, stderr=subprocess.STDOUT)
    served = ServeProcess(proc, f"http://{host}:{port}", log)
    if wait:
        served.wait_for(
            lambda: httpx.get(f"{served.url}/healthz", timeout=5).status_code == 200,
            f"{served.url}/healthz",
        )
    return served

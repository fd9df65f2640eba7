"""``numascope healthcheck`` (the image's HEALTHCHECK) against real ``numascope serve``
processes: it probes where the server really listens — ``serve --port N`` as deploy/ runs it,
whatever the probe's own ``NUMASCOPE_PORT`` says, and ``NUMASCOPE_PORT`` given to the server
only — and says unhealthy once the server is gone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from app.commands.healthcheck import serve_args
from tests.processes import NUMASCOPE, Server, free_port, server_env


def healthcheck(*args: str, port_env: str = "1") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMASCOPE_PORT": port_env}  # not the server's: must not matter
    return subprocess.run(
        [NUMASCOPE, "healthcheck", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_serve_with_a_port_flag_is_healthy_then_unhealthy_when_gone(tmp_path: Path) -> None:
    server = Server(tmp_path).start()  # `serve --host 127.0.0.1 --port N`
    assert server.proc is not None
    pid = str(server.proc.pid)
    try:
        done = healthcheck("--pid", pid)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"healthy: http://127.0.0.1:{server.port}/healthz"
    finally:
        server.stop()
    done = healthcheck("--pid", pid)
    assert done.returncode == 1
    assert done.stderr.startswith("numascope healthcheck: unhealthy: process ")


def test_the_port_from_the_servers_environment(tmp_path: Path) -> None:
    """The port in the server's NUMASCOPE_PORT and a wildcard bind: probed on loopback."""
    port = free_port()
    env = server_env(tmp_path, port=str(port), host="0.0.0.0")
    with (tmp_path / "out.log").open("wb") as out:
        proc = subprocess.Popen(
            [NUMASCOPE, "serve"], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    try:
        server = Server(tmp_path, env=env, port=port)
        server.wait_ready()
        done = healthcheck("--pid", str(proc.pid), port_env="8000")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"healthy: http://127.0.0.1:{port}/healthz"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_process_that_is_not_a_server(tmp_path: Path) -> None:
    done = healthcheck("--pid", str(os.getpid()))
    assert done.returncode == 1
    assert f"process {os.getpid()} is not a running `numascope serve`" in done.stderr
    bad = healthcheck("--timeout", "0")
    assert bad.returncode == 2
    assert "--timeout must be positive" in bad.stderr


def test_which_command_lines_are_a_server() -> None:
    venv = "/opt/numascope/bin"
    assert serve_args([f"{venv}/python", f"{venv}/numascope", "serve", "--port", "9"]) == [
        "serve",
        "--port",
        "9",
    ]
    assert serve_args(["python", "-m", "app.cli", "serve"]) == ["serve"]
    assert serve_args(["numascope", "healthcheck"]) is None
    assert serve_args(["python", "serve"]) is None
    assert serve_args([]) is None

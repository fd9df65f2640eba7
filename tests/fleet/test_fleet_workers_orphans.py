"""A hub killed outright (SIGKILL, as the OOM killer does) takes its fleet workers with it:
they cannot be told to stop, so each exits once its parent is gone
(``app.services.fleet.workers._exit_with``), instead of keeping its shard's memory."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.processes import Server, children, server_env


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_exit_when_the_hub_is_killed(tmp_path: Path) -> None:
    env = server_env(tmp_path, hub="true", demo_fleet="4", hub_fleet_workers="2")
    server = Server(tmp_path, env=env).start()
    try:
        server.wait_for(lambda: server.client.get("/readyz").status_code == 200, "/readyz", 300.0)
        assert server.proc is not None
        workers = children(server.proc.pid)
        assert len(workers) == 2, workers
        os.kill(server.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30.0
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "the workers outlived their hub"
    finally:
        server.close()

"""The fleet's upgrade readiness for one release as a job that fills in as answers arrive
(issue 20): the demo fleet's workers answer a chunk of nodes at a time
(``app.services.fleet.workers``) and the agents answer theirs, so the page shows "3,120 of
5,000 checked" and polls, while ``GET /api/v1/fleet/upgrade`` waits for the whole answer in
one call. A node not answered yet is a row with ``checked`` false ("pending"), which the drain
plan never counts as failing (``app.services.fleet.views.upgrade_view``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from app.services.fleet.rows import upgrade_error
from app.services.nodes.errors import NodeInputError

PENDING = "pending: not checked yet"

#: A node of the question: (name, agent URL; ``None``: the hub's demo fleet).
Target = tuple[str, str | None]


class UpgradeJob:
    """One upgrade-readiness check of the fleet (release, gate), as far as it got."""

    def __init__(self, release: str, gate: bool | None, targets: Sequence[Target]) -> None:
        self.release = release
        self.gate = gate
        self.targets = list(targets)
        self.rows: dict[Target, dict[str, Any]] = {}
        self.unreachable: list[dict[str, Any]] = []
        #: CPU seconds the answers took where they were computed (the workers).
        self.cpu = 0.0
        self.started = time.perf_counter()
        self.wall: float | None = None
        self.failure: NodeInputError | None = None
        self.stopped: str | None = None  # why the rest will not be checked
        self._done = asyncio.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def add(self, rows: Sequence[dict[str, Any]], cpu: float = 0.0) -> None:
        for row in rows:
            self.rows[(row["node"], row.get("agent"))] = row
        self.cpu += cpu

    def finish(self, *, failure: NodeInputError | None = None, stopped: str | None = None) -> None:
        """The job is over: complete, refused (``failure``: the question is wrong, a 422) or
        stopped (``stopped``: the nodes not answered are listed as not checked, saying why)."""
        self.failure = failure
        self.stopped = stopped
        self.wall = time.perf_counter() - self.started
        self._done.set()

    async def wait(self) -> None:
        await self._done.wait()
        if self.failure is not None:
            raise self.failure

    def answer(self) -> dict[str, Any]:
        """The ``UpgradeAnswer`` so far: every node's row, those not answered yet pending
        (``checked`` false), and the progress."""
        if self.failure is not None:
            raise self.failure
        why = PENDING if self.stopped is None else f"not checked: {self.stopped}"
        results = [
            self.rows.get(t) or {**upgrade_error(t[0], why, asked=False), "agent": t[1]}
            for t in self.targets
        ]
        results.sort(key=lambda r: (r["node"], r.get("agent") or ""))
        return {
            "release": self.release,
            "results": results,
            "unreachable": self.unreachable,
            "progress": {
                "checked": len(self.rows),
                "total": len(self.targets),
                "complete": self.done,
                "cpuSeconds": round(self.cpu, 3),
                "seconds": round(self.wall, 3) if self.wall is not None else None,
            },
        }

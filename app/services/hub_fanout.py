"""Fit and upgrade across the fleet (``POST /api/v1/fleet/fit``, ``GET /api/v1/fleet/upgrade``
and their pages): the question goes to every node, and each node's own engine decides. Remote nodes are asked
through their agents (``app.adapters.agents``), bounded by the hub's concurrency and a timeout
per call: a slow or failing agent gives an ``error`` result for its nodes, never an HTTP error
of the hub. The demo fleet's nodes (``app.services.nodes.demo_fleet``) answer in the hub's process,
in a worker thread, within the CPU time budget.

``FleetFanOut`` is a base of ``app.services.hub.Hub``, which provides the agents, the client
and the semaphore.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from app.adapters.agents import AgentClient, AgentError
from app.domain import deadline
from app.services.fleet_rows import fit_error, fit_result, upgrade_error, upgrade_result
from app.services.hub_agents import OK, AgentState
from app.services.nodes.demo_fleet import DemoFleet, SimulatedNode
from app.settings import Settings


class FleetFanOut(ABC):
    """The fan-out of ``Hub`` (see the module docstring)."""

    settings: Settings
    agents: dict[str, AgentState]
    fleet: DemoFleet

    @abstractmethod
    def client(self) -> AgentClient: ...
    @abstractmethod
    def semaphore(self) -> asyncio.Semaphore: ...

    def _targets(self) -> tuple[list[tuple[AgentState, str]], list[SimulatedNode]]:
        remote = [(a, n["node"]) for a in self.agents.values() if a.status == OK for n in a.nodes]
        return remote, list(self.fleet.list())

    async def _fan_out(
        self,
        remote: list[tuple[AgentState, str]],
        call: Callable[[AgentState, str], Awaitable[dict[str, Any]]],
        failed: Callable[[str, str], dict[str, Any]],
    ) -> list[dict[str, Any]]:
        async def one(agent: AgentState, node: str) -> dict[str, Any]:
            async with self.semaphore():
                try:
                    result = await asyncio.wait_for(
                        call(agent, node), self.settings.hub_agent_timeout * 2
                    )
                except AgentError as exc:
                    result = failed(node, exc.message)
                except TimeoutError:
                    result = failed(node, "timed out")
            result["agent"] = agent.url
            return result

        return list(await asyncio.gather(*(one(a, n) for a, n in remote)))

    async def fit(self, body: bytes, content_type: str, text: str) -> dict[str, Any]:
        remote, _ = self._targets()

        async def call(agent: AgentState, node: str) -> dict[str, Any]:
            answer = await self.client().dry_run(agent.url, node, body, content_type)
            return fit_result(node, answer.doc or {})

        def local() -> list[dict[str, Any]]:
            with deadline.within(self.settings.cpu_time_budget, "the fleet fit"):
                return [
                    {**fit_result(name, doc), "agent": None}
                    for name, doc in self.fleet.dry_run_all(text)
                ]

        local_task = asyncio.to_thread(local)
        remote_results, local_results = await asyncio.gather(
            self._fan_out(remote, call, fit_error), local_task
        )
        results = sorted(
            [*local_results, *remote_results], key=lambda r: (r["node"], r.get("agent") or "")
        )
        return {"results": results, "unreachable": self._unreachable()}

    async def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        remote, sims = self._targets()
        params: dict[str, str] = {"release": release}
        if gate is not None:
            params["podLevelResourceManagers"] = "true" if gate else "false"
        query = urlencode(params)

        async def call(agent: AgentState, node: str) -> dict[str, Any]:
            answer = await self.client().upgrade(agent.url, node, query)
            return upgrade_result(node, answer.doc or {})

        budget = self.settings.cpu_time_budget

        def local() -> list[dict[str, Any]]:
            # Nodes not reached within the budget say so; the checked ones are cached, so a
            # retry goes on where this one stopped.
            started = time.monotonic()
            out: list[dict[str, Any]] = []
            for n in sims:
                if time.monotonic() - started > budget:
                    message = f"not checked within the {budget:g} s time budget: ask again"
                    out.append({**upgrade_error(n.name, message), "agent": None})
                else:
                    out.append({**n.upgrade(release, gate), "agent": None})
            return out

        remote_results, local_results = await asyncio.gather(
            self._fan_out(remote, call, upgrade_error), asyncio.to_thread(local)
        )
        results = sorted(
            [*local_results, *remote_results], key=lambda r: (r["node"], r.get("agent") or "")
        )
        return {"release": release, "results": results, "unreachable": self._unreachable()}

    def _unreachable(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.agents.values() if a.status != OK]
